/** Stable error codes of the DIDL codec. Callers switch on these, never on messages. */
export type DidlErrorCode =
  | 'ERR_DIDL_NOT_WELL_FORMED'
  | 'ERR_DIDL_DOCTYPE'
  | 'ERR_DIDL_TRUNCATED'
  | 'ERR_DIDL_ENCODING'
  | 'ERR_DIDL_NOT_DIDL'
  | 'ERR_DIDL_BAD_BASE64'
  | 'ERR_DIDL_UNSUPPORTED_ENCODING'
  | 'ERR_DIDL_LENGTH_MISMATCH'
  | 'ERR_DIDL_DIGEST_MISMATCH'
  | 'ERR_DIDL_NO_IDENTIFIER'
  | 'ERR_DIDL_REPEATED_IDENTIFIER'
  | 'ERR_DIDL_BAD_REF'
  | 'ERR_DIDL_BAD_HEADER'
  | 'ERR_DIDL_TOO_LARGE'
  | 'ERR_DIDL_XML_CHAR'
  | 'ERR_DIDL_INPUT'
  | 'ERR_DIDL_OUTPUT_EXISTS';

/** Where in the input document an error was found (1-based line and column). */
export interface DidlPosition {
  line: number;
  column: number;
}

export interface DidlErrorDetails {
  position?: DidlPosition | undefined;
  /** Identifier of the record the error belongs to, when known. */
  identifier?: string | undefined;
  /** For mismatches: what the record declared and what was found. */
  expected?: string | number | undefined;
  found?: string | number | undefined;
  hint?: string | undefined;
  cause?: unknown;
}

/**
 * The one error class of the codec. `message` is a single line that already names the
 * position and the record; `code` is stable.
 */
export class DidlError extends Error {
  readonly code: DidlErrorCode;
  readonly position: DidlPosition | undefined;
  readonly identifier: string | undefined;
  readonly expected: string | number | undefined;
  readonly found: string | number | undefined;
  readonly hint: string | undefined;

  constructor(code: DidlErrorCode, message: string, details: DidlErrorDetails = {}) {
    super(formatMessage(message, details), details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'DidlError';
    this.code = code;
    this.position = details.position;
    this.identifier = details.identifier;
    this.expected = details.expected;
    this.found = details.found;
    this.hint = details.hint;
  }
}

const MAX_MESSAGE = 1000;

function formatMessage(message: string, details: DidlErrorDetails): string {
  let text = message;
  if (details.identifier !== undefined) text += ` (record ${details.identifier})`;
  if (details.position) text += ` at line ${details.position.line}, column ${details.position.column}`;
  // One line, whatever the input put into the values we quote, and of a readable length
  // (a quoted value may be megabytes long). No \s* around the class: that is quadratic.
  text = text.replace(/[\r\n]+/g, ' ').trim();
  return text.length > MAX_MESSAGE ? `${text.slice(0, MAX_MESSAGE / 2)} … ${text.slice(-MAX_MESSAGE / 2)}` : text;
}

/** True for errors raised by the codec itself (as opposed to I/O or programming errors). */
export function isDidlError(error: unknown): error is DidlError {
  return error instanceof DidlError;
}
