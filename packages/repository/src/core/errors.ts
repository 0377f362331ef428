/** Stable error codes of the repository. Callers switch on these, never on messages. */
export type RepositoryErrorCode = 'ERR_REPO_OPTIONS' | 'ERR_REPO_ROOT' | 'ERR_REPO_INDEX' | 'ERR_REPO_AUTH_FILE' | 'ERR_REPO_LISTEN' | 'ERR_REPO_PATH';

export interface RepositoryErrorDetails {
  /** What the user should do next (printed by the command after the message). */
  hint?: string;
  cause?: unknown;
}

/** The one error class of the repository package: a one-line message and a stable code. */
export class RepositoryError extends Error {
  readonly code: RepositoryErrorCode;
  readonly hint: string | undefined;

  constructor(code: RepositoryErrorCode, message: string, details: RepositoryErrorDetails = {}) {
    super(message.replace(/[\r\n]+/g, ' '), details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'RepositoryError';
    this.code = code;
    this.hint = details.hint;
  }
}

export function isRepositoryError(error: unknown): error is RepositoryError {
  return error instanceof RepositoryError;
}
