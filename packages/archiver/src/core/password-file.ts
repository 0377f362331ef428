import { readFile } from 'node:fs/promises';
import { ArchiverError } from './errors.js';

/** The first line of a password file: a password never appears on a command line or in `ps`. */
export async function readPasswordLine(file: string): Promise<string> {
  const text = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `cannot read the password file ${file}: ${error.code ?? error.message}`, { path: file });
  });
  return text.split(/\r?\n/)[0] ?? '';
}
