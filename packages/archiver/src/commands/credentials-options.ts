import { ArchiverError } from '../core/errors.js';
import { readPasswordLine } from '../core/password-file.js';
import type { Credentials } from '../oai/oai-client.js';

/** The HTTP Basic credentials of `--user NAME --password-file FILE`, which go together. */
export async function credentialsFromOptions(options: { user?: string; passwordFile?: string }): Promise<Credentials | undefined> {
  if ((options.user === undefined) !== (options.passwordFile === undefined)) {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', '--user and --password-file go together');
  }
  if (options.user === undefined) return undefined;
  return { user: options.user, password: await readPasswordLine(options.passwordFile!) };
}
