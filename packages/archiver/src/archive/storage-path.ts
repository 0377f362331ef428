// The archive's top folders (aips/, tmp/) and the one guard every path into the archive goes
// through (resolveArchivePath). The bags themselves sit at aips/harvest-NNNNNN/batch-NNNNN, one
// per ingest batch (format 2, docs/aip-profile.md); those names are formatted and parsed where
// bags are made and read (harvest/harvest-batch.ts, import/, reindex/, verify/…), not here.
//
// Also here, from format 1 and used by nothing in oaibag: resourceDirectoryFor and
// bagDirectoryFor, the per-version bag folders of that layout (`aips/<h[0:2]>/<h[2:4]>/<h>/
// <compact datestamp>-<content sha256[0:12]>`, h the SHA-256 of the identifier). This oaibag
// refuses a format-1 archive; the two stay exported only until the AIP layout gets its one
// owner (issue 26). compactDatestamp is still the check that a datestamp can be named.

import { createHash } from 'node:crypto';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { ArchiverError } from '../core/errors.js';

/** The top directory of the archive that holds every AIP. */
export const AIPS_DIRECTORY = 'aips';

/** Directory of the archive that holds bags and datastreams under construction. */
export const TEMP_DIRECTORY = 'tmp';

/** Lowercase hex SHA-256 of an identifier's UTF-8 bytes: its folder's name in format 1. */
export function identifierDigest(identifier: string): string {
  checkIdentifier(identifier);
  return createHash('sha256').update(identifier, 'utf8').digest('hex');
}

/**
 * Format 1 (not written or read by this oaibag): the directory that held every version of the
 * resource `identifier`, `aips/ab/cd/<64 hex>`.
 */
export function resourceDirectoryFor(identifier: string): string {
  const h = identifierDigest(identifier);
  return `${AIPS_DIRECTORY}/${h.slice(0, 2)}/${h.slice(2, 4)}/${h}`;
}

/**
 * Format 1 (not written or read by this oaibag): the bag directory of one version of a resource,
 * `aips/ab/cd/<sha256 of identifier>/<compact datestamp>-<first 12 hex of content sha256>`,
 * e.g. `aips/3f/a2/3fa2…/20240131T120000Z-9b74c9897bac`. Only the identifier's digest, a
 * validated datestamp and a validated hex digest reach the path, so the result can never leave
 * the archive. Throws ERR_ARCHIVE_PATH for a datestamp that is not an OAI-PMH datestamp or a
 * sha256 that is not 64 hex digits.
 */
export function bagDirectoryFor(identifier: string, datestamp: string, sha256: string): string {
  return `${resourceDirectoryFor(identifier)}/${compactDatestamp(datestamp)}-${contentTag(sha256)}`;
}

/**
 * `2024-01-31` → `20240131`, `2024-01-31T12:00:00Z` → `20240131T120000Z` (the two OAI-PMH
 * granularities). Anything else is refused: it would reach a path.
 */
export function compactDatestamp(datestamp: string): string {
  const match = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2}):(\d{2})Z)?$/.exec(datestamp);
  if (match === null) {
    throw new ArchiverError('ERR_ARCHIVE_PATH', `datestamp ${JSON.stringify(datestamp.slice(0, 80))} is not YYYY-MM-DD or YYYY-MM-DDThh:mm:ssZ`);
  }
  const [, y, mo, d, h, mi, s] = match;
  return h === undefined ? `${y}${mo}${d}` : `${y}${mo}${d}T${h}${mi}${s}Z`;
}

/** The first 12 hex digits of a content SHA-256 (lowercased), after checking its shape. */
function contentTag(sha256: string): string {
  if (!/^[0-9a-fA-F]{64}$/.test(sha256)) {
    throw new ArchiverError('ERR_ARCHIVE_PATH', `content digest ${JSON.stringify(sha256.slice(0, 80))} is not a hex SHA-256`);
  }
  return sha256.slice(0, 12).toLowerCase();
}

/**
 * An identifier must be non-empty, well-formed Unicode text: a lone surrogate would be encoded
 * as U+FFFD, and two different identifiers would then share a directory.
 */
function checkIdentifier(identifier: string): void {
  if (identifier.length === 0) throw new ArchiverError('ERR_ARCHIVE_PATH', 'identifier is empty');
  if (/\p{Cs}/u.test(identifier)) {
    throw new ArchiverError('ERR_ARCHIVE_PATH', `identifier ${JSON.stringify(identifier.slice(0, 80))} is not well-formed Unicode`);
  }
}

/**
 * Resolves `relPath` (`/`-separated, relative to the archive) to an absolute path, refusing
 * with ERR_ARCHIVE_PATH anything absolute, with an empty, `.` or `..` segment, a backslash or
 * NUL, or that would resolve outside `archiveDir`. Used for every path handed to the bag
 * writer, so a bug upstream cannot write outside the archive either.
 */
export function resolveArchivePath(archiveDir: string, relPath: string): string {
  const refuse = (why: string): never => {
    throw new ArchiverError('ERR_ARCHIVE_PATH', `archive path ${JSON.stringify(relPath.slice(0, 200))} ${why}`, { path: relPath });
  };
  if (relPath.length === 0) refuse('is empty');
  if (relPath.includes('\0') || relPath.includes('\\')) refuse('contains NUL or a backslash');
  if (relPath.startsWith('/') || isAbsolute(relPath)) refuse('is absolute');
  if (relPath.split('/').some((s) => s === '' || s === '.' || s === '..')) refuse('has an empty, "." or ".." segment');
  const root = resolve(archiveDir);
  const full = resolve(root, ...relPath.split('/'));
  const rel = relative(root, full);
  if (rel === '' || rel.startsWith(`..${sep}`) || rel === '..' || isAbsolute(rel)) refuse('leaves the archive');
  return join(root, rel);
}
