// The `--auth` file format is shared with `oaibag serve` (@oaibag/oai-pmh); here its problems
// become the repository's coded error, ERR_REPO_AUTH_FILE.
import { type AuthConfig, AuthFileError, loadAuthFile as loadShared, parseAuthFile as parseShared } from '@oaibag/oai-pmh';
import { RepositoryError } from '../core/errors.js';

export { type AuthConfig, emptyAuthConfig, normalizeUserName, type ProtectRule } from '@oaibag/oai-pmh';

export async function loadAuthFile(path: string): Promise<AuthConfig> {
  return repositoryErrors(() => loadShared(path));
}

export function parseAuthFile(text: string, fileName: string): AuthConfig {
  try {
    return parseShared(text, fileName);
  } catch (error) {
    throw asRepositoryError(error);
  }
}

async function repositoryErrors<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw asRepositoryError(error);
  }
}

function asRepositoryError(error: unknown): unknown {
  if (!(error instanceof AuthFileError)) return error;
  return new RepositoryError('ERR_REPO_AUTH_FILE', error.message, { ...(error.hint ? { hint: error.hint } : {}), cause: error.cause ?? error });
}
