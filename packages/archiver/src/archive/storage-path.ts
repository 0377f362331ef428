// The archive's working folder (tmp/) and the one guard every path into the archive goes
// through (resolveArchivePath). The AIPs and their layout (aips/harvest-NNNNNN/batch-NNNNN) are
// aip/'s: aip/layout-names.ts formats and parses every name of it.

import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { ArchiverError } from '../core/errors.js';

/** Directory of the archive that holds bags and datastreams under construction. */
export const TEMP_DIRECTORY = 'tmp';

/**
 * `2024-01-31` → `20240131`, `2024-01-31T12:00:00Z` → `20240131T120000Z` (the two OAI-PMH
 * granularities). Anything else is refused with ERR_ARCHIVE_PATH: the check a harvest makes
 * that a record's datestamp is one (ingest/page-records.ts).
 */
export function compactDatestamp(datestamp: string): string {
  const match = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2}):(\d{2})Z)?$/.exec(datestamp);
  if (match === null) {
    throw new ArchiverError('ERR_ARCHIVE_PATH', `datestamp ${JSON.stringify(datestamp.slice(0, 80))} is not YYYY-MM-DD or YYYY-MM-DDThh:mm:ssZ`);
  }
  const [, y, mo, d, h, mi, s] = match;
  return h === undefined ? `${y}${mo}${d}` : `${y}${mo}${d}T${h}${mi}${s}Z`;
}

/**
 * Resolves `relPath` (`/`-separated, relative to the archive) to an absolute path, refusing
 * with ERR_ARCHIVE_PATH anything absolute, with an empty, `.` or `..` segment, a backslash or
 * NUL, or that would resolve outside `archiveDir`. Used for every path handed to the bag
 * writer and the AIP storage, so a bug upstream cannot write outside the archive either.
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
