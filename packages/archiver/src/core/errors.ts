/**
 * Stable error codes of the archiver. Callers (and the `oaibag` command, which maps them to
 * exit codes) switch on these, never on messages.
 *
 * - `ERR_ARCHIVE_BAG`: a bag cannot be written or read as BagIt.
 * - `ERR_ARCHIVE_PATH`: an identifier or path that is hostile or cannot be mapped into the archive.
 * - `ERR_ARCHIVE_CATALOG`: the SQLite catalog cannot be opened, migrated or written, or is
 *   newer than this program.
 * - `ERR_ARCHIVE_LOCKED`: another harvest holds the archive lock.
 * - `ERR_ARCHIVE_IO`: a file-system operation on the archive failed.
 * - `ERR_ARCHIVE_FULL`: no room left where oaibag writes (the archive's file system, or a
 *   restore's destination): full, or its quota used up. The command stops; run again once
 *   there is room, it resumes.
 * - `ERR_ARCHIVE_DAMAGED`: a bag fails its fixity or completeness check (restore, verify).
 * - `ERR_ARCHIVE_FORMAT`: the archive is in another layout than the one this oaibag reads and
 *   writes (docs/aip-profile.md); the message names both formats.
 * - `ERR_ARCHIVE_USAGE`: bad command-line arguments or options.
 * - `ERR_ARCHIVE_STORE`: the object store (`--store s3://…`) fails the capability probe, or
 *   breaks a promise the probe found it keeping; the message names the check (docs/scale-out.md).
 * - `ERR_ARCHIVE_LEASE`: a worker's lease on a source was taken over by another worker (it went
 *   silent longer than the lease): the catalog refuses its writes, and its harvest stops
 *   (docs/scale-out.md, "Workers").
 * - `ERR_HARVEST_UNREACHABLE`: the source cannot be reached (network, DNS, HTTP errors after retries;
 *   at once when a source that never answered has a name that does not resolve or refuses).
 * - `ERR_HARVEST_NOT_OAI`: the source answers, but not as an OAI-PMH repository.
 * - `ERR_HARVEST_FORMAT`: the repository does not offer the requested metadata prefix, or not as
 *   MPEG-21 DIDL (its metadataNamespace is another, e.g. oai_dc's).
 * - `ERR_HARVEST_PROTOCOL`: a response breaks OAI-PMH (malformed XML, looping tokens…).
 * - `ERR_HARVEST_VERIFY`: a record's bytes disagree with its promised size, digest or headers.
 * - `ERR_HARVEST_REF_REFUSED`: a By-Reference URL, or a redirect from one, leads to a scheme
 *   other than http(s) or to a non-public address (loopback, private, link-local…) that the
 *   repository is not on itself; `--allow-private-refs` allows the addresses.
 * - `ERR_HARVEST_REDIRECTS`: a By-Reference URL redirects in a loop or more than 10 times.
 * - `ERR_HARVEST_LIMIT`: the source went past a limit on what it controls (bytes, decoded bytes
 *   and compression ratio, records or XML held, time without a byte or in all, empty pages,
 *   pages of a list, token length); the message names the limit and its option (oai/source-limits.ts).
 * - `ERR_ARCHIVE_INTERNAL`: an error oaibag did not expect (a bug), named with its message; `mirror`
 *   records it against the source and goes on with the others.
 * - `ERR_IMPORT_UNSAFE`: an out-of-band delivery is refused before anything is stored: an entry
 *   that would land outside its folder (`..`, an absolute path, a backslash, a drive letter), a
 *   symbolic link, two names equal after Unicode NFC, an encrypted entry, or a delivery over one
 *   of the caps (entries, bytes of one entry, bytes in all, compression ratio).
 * - `ERR_IMPORT_DAMAGED`: a delivery's bytes are not what it says: a CRC or size mismatch, a ZIP
 *   that cannot be read, a serialized bag that fails its manifests, a file that changed while
 *   it was being imported.
 * - `ERR_IMPORT_CONFLICT`: a serialized bag's place, or its harvest number, is taken in the
 *   archive by a bag of another archive; nothing of the delivery is placed.
 * - `ERR_IMPORT_KIND`: a delivery whose kind cannot be told from its contents (or is not the
 *   `--kind` given), or that lacks what its kind needs (`--base-url` for a site's files).
 * - `ERR_SPARQL_TOO_LARGE`: the archive's graph is larger than `serve`'s embedded SPARQL store
 *   takes (`--sparql-max-quads`), estimated before loading or found while keeping in step, or
 *   the store ran out of memory loading it; `/sparql` answers 503 with it, and the message names
 *   the way out (`--sparql-store URL`).
 */
export type ArchiverErrorCode =
  | 'ERR_ARCHIVE_BAG'
  | 'ERR_ARCHIVE_PATH'
  | 'ERR_ARCHIVE_CATALOG'
  | 'ERR_ARCHIVE_LOCKED'
  | 'ERR_ARCHIVE_IO'
  | 'ERR_ARCHIVE_FULL'
  | 'ERR_ARCHIVE_DAMAGED'
  | 'ERR_ARCHIVE_FORMAT'
  | 'ERR_ARCHIVE_USAGE'
  | 'ERR_ARCHIVE_STORE'
  | 'ERR_ARCHIVE_LEASE'
  | 'ERR_HARVEST_UNREACHABLE'
  | 'ERR_HARVEST_NOT_OAI'
  | 'ERR_HARVEST_FORMAT'
  | 'ERR_HARVEST_PROTOCOL'
  | 'ERR_HARVEST_VERIFY'
  | 'ERR_HARVEST_REF_REFUSED'
  | 'ERR_HARVEST_REDIRECTS'
  | 'ERR_HARVEST_LIMIT'
  | 'ERR_ARCHIVE_INTERNAL'
  | 'ERR_IMPORT_UNSAFE'
  | 'ERR_IMPORT_DAMAGED'
  | 'ERR_IMPORT_CONFLICT'
  | 'ERR_IMPORT_KIND'
  | 'ERR_SPARQL_TOO_LARGE';

/** Optional facts attached to an {@link ArchiverError}. */
export interface ArchiverErrorDetails {
  /** What the user should do next (printed by the command after the message). */
  hint?: string | undefined;
  cause?: unknown;
  /** The file or directory concerned, when there is one, so callers need not parse messages. */
  path?: string | undefined;
}

/**
 * The one error class of the archiver package: a one-line message (line breaks are replaced,
 * so a hostile identifier or a multi-line cause cannot forge extra log lines), a stable code,
 * and optionally a hint and the path concerned.
 */
export class ArchiverError extends Error {
  readonly code: ArchiverErrorCode;
  readonly hint: string | undefined;
  readonly path: string | undefined;

  constructor(code: ArchiverErrorCode, message: string, details: ArchiverErrorDetails = {}) {
    super(message.replace(/[\r\n]+/g, ' '), details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'ArchiverError';
    this.code = code;
    this.hint = details.hint;
    this.path = details.path;
  }
}

/**
 * A file-system error as ERR_ARCHIVE_IO, `message: CODE` (`cannot fsync …: EIO`); an
 * ArchiverError is passed through as it is. The one wrapper of fs errors in the archive.
 */
export function archiveIoError(error: unknown, message: string, path?: string): ArchiverError {
  if (error instanceof ArchiverError) return error;
  const code = (error as NodeJS.ErrnoException).code;
  return new ArchiverError('ERR_ARCHIVE_IO', `${message}: ${code ?? String(error)}`, { cause: error, path });
}

/** True when `error` is an {@link ArchiverError} (of any code). */
export function isArchiverError(error: unknown): error is ArchiverError {
  return error instanceof ArchiverError;
}

/** No room left where the archive is (ENOSPC, EDQUOT, SQLite's SQLITE_FULL), found anywhere in the cause chain. */
export function isStorageExhausted(error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Error && depth < 8; current = current.cause, depth++) {
    const code = (current as { code?: unknown }).code;
    if (code === 'ENOSPC' || code === 'EDQUOT' || code === 'SQLITE_FULL') return true;
  }
  return false;
}

/** The error a harvest stops with when the archive's file system is full. */
export function archiveFullError(archiveDir: string, error: unknown): ArchiverError {
  return noRoomError(
    `the archive ${archiveDir}`,
    archiveDir,
    error,
    'free space there (or give the archive more), then run the same command again: it resumes where it stopped',
  );
}

/** ERR_ARCHIVE_FULL for `what` (a folder, described), keeping an error that already is one. */
export function noRoomError(what: string, path: string, error: unknown, hint: string): ArchiverError {
  if (error instanceof ArchiverError && error.code === 'ERR_ARCHIVE_FULL') return error;
  return new ArchiverError('ERR_ARCHIVE_FULL', `no room left on the file system of ${what}: ${(error as Error).message}`, { cause: error, path, hint });
}
