// An archive this process cannot write: a read-only snapshot, an offsite copy, a mount made
// read-only, a folder of another user. The commands that only read open it read-only
// (Catalog.openForReading) and need no lock file; the commands that write say in one line that
// the archive is read-only and what to do instead, rather than ending on an EACCES.

import { ArchiverError } from '../core/errors.js';
import { type ArchiveLock, acquireArchiveLock } from './archive-lock.js';

/** File-system codes that mean "you may not write here". */
const READ_ONLY_CODES: ReadonlySet<string> = new Set(['EACCES', 'EPERM', 'EROFS']);

/** The commands that read an archive without writing to it, for hints. */
export const READING_COMMANDS = 'status, audit, restore, export, export-rdf, serve and verify --no-record';

/**
 * The code, found anywhere in the cause chain of `error`, saying that a file or folder cannot be
 * written (EACCES, EPERM, EROFS, SQLITE_READONLY and its extended codes); undefined when none does.
 */
export function readOnlyCodeOf(error: unknown): string | undefined {
  for (let current = error, depth = 0; current instanceof Error && depth < 8; current = current.cause, depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && (READ_ONLY_CODES.has(code) || code.startsWith('SQLITE_READONLY'))) return code;
  }
  return undefined;
}

/** What a writing command tells about a read-only archive: what it writes there, and what to do instead. */
export interface ReadOnlyAdvice {
  /** What the command writes, e.g. "a harvest writes bags and the catalog". */
  writes: string;
  hint: string;
}

/** ERR_ARCHIVE_IO naming the read-only archive, what the command writes there, and the code that said so. */
export function readOnlyArchiveError(archiveDir: string, advice: ReadOnlyAdvice, cause: unknown): ArchiverError {
  return new ArchiverError('ERR_ARCHIVE_IO', `the archive ${archiveDir} is read-only (${readOnlyCodeOf(cause) ?? 'EACCES'}): ${advice.writes}`, {
    cause,
    path: archiveDir,
    hint: advice.hint,
  });
}

/**
 * Takes the archive lock (archive-lock.ts) for a command that writes. The lock file is the first
 * thing such a command creates, so a read-only archive is found here and named as such.
 */
export async function lockArchiveForWriting(archiveDir: string, purpose: string, advice: ReadOnlyAdvice): Promise<ArchiveLock> {
  try {
    return await acquireArchiveLock(archiveDir, purpose);
  } catch (error) {
    if (readOnlyCodeOf(error) !== undefined) throw readOnlyArchiveError(archiveDir, advice, error);
    throw error;
  }
}

/**
 * Takes the archive lock for a command that only reads but wants no harvest to change the
 * archive meanwhile (verify --no-record). A read-only archive cannot be changed by this user's
 * harvests and has no room for a lock file: undefined then, and the command reads without one.
 */
export async function lockArchiveIfWritable(archiveDir: string, purpose: string): Promise<ArchiveLock | undefined> {
  try {
    return await acquireArchiveLock(archiveDir, purpose);
  } catch (error) {
    if (readOnlyCodeOf(error) !== undefined) return undefined;
    throw error;
  }
}
