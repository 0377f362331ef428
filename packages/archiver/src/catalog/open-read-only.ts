// Opening the catalog of an archive for reading only, whatever this process may write there.
//
// Where this process may write the archive folder and the catalog, the catalog is opened as a
// writing command opens it, but with `query_only`: closed last, such a connection checkpoints
// and removes its -wal and -shm, where a read-only connection cannot and would leave them
// behind (owned by whoever ran the reading command, which could later stop the owner's harvest).
//
// Elsewhere SQLite opens a WAL database read-only in place when its -wal and -shm files exist
// (a copy taken while a harvest ran). A read-only folder without them — the usual read-only
// snapshot or offsite copy, made while no harvest ran — cannot be opened in place
// (SQLITE_READONLY_DIRECTORY, or SQLITE_CANTOPEN when only the -wal was copied). SQLite's
// `immutable=1` would do, but it is a URI parameter and better-sqlite3 is built without URI
// filenames (SQLITE_USE_URI=0, and it does not pass SQLITE_OPEN_URI). The catalog is then read
// from a private copy in the temporary folder (TMPDIR): the catalog file, and its -wal when
// there is one, so that what a harvest committed last is read too. The copy costs the
// catalog's size there and is removed on close (or when the process exits).

import { accessSync, constants, copyFileSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { ArchiverError, isStorageExhausted, noRoomError } from '../core/errors.js';
import type { SqlDatabase } from './sql-database.js';

/** A catalog database opened for reading only. */
export interface ReadOnlyDatabase {
  db: SqlDatabase;
  /** The folder of the private copy read instead of the archive's file; undefined when read in place. */
  copy: string | undefined;
  /** Closes the database and removes the private copy. */
  close(): void;
}

/** A copy is taken again this many times when the catalog changes while it is copied. */
const COPY_ATTEMPTS = 3;

/**
 * Opens `file` for reading only: in place when it can (see above), else from a private copy.
 * Never writes to `file`, nor leaves anything beside it. Throws SQLite's error when the file is missing
 * or unreadable, ERR_ARCHIVE_FULL when the temporary folder has no room for the copy, and
 * ERR_ARCHIVE_CATALOG when the catalog keeps changing while it is copied.
 */
export function openReadOnlyDatabase(file: string): ReadOnlyDatabase {
  if (mayWrite(file)) {
    const db = new Database(file, { fileMustExist: true });
    try {
      db.pragma('query_only = ON');
    } catch (error) {
      db.close();
      throw error;
    }
    return { db, copy: undefined, close: () => db.close() };
  }
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    // SQLite opens the WAL (and finds it cannot) at the first read, not at open.
    db.prepare('SELECT COUNT(*) FROM sqlite_master').get();
    return { db, copy: undefined, close: () => db.close() };
  } catch (error) {
    db.close();
    if (!cannotOpenInPlace(error)) throw error;
  }
  return openPrivateCopy(file);
}

/** Whether this process may write the catalog's folder, the catalog, and its -wal and -shm where they exist. */
function mayWrite(file: string): boolean {
  try {
    accessSync(dirname(file), constants.W_OK);
    for (const path of [file, `${file}-wal`, `${file}-shm`]) {
      if (path === file || existsSync(path)) accessSync(path, constants.W_OK);
    }
    return true;
  } catch {
    return false;
  }
}

function cannotOpenInPlace(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && (code === 'SQLITE_CANTOPEN' || code.startsWith('SQLITE_READONLY'));
}

/** Copies the catalog (and its -wal) into a new temporary folder and opens the copy read-only. */
function openPrivateCopy(file: string): ReadOnlyDatabase {
  const folder = mkdtempSync(join(tmpdir(), 'oaibag-catalog-'));
  const remove = (): void => rmSync(folder, { recursive: true, force: true });
  process.on('exit', remove);
  const forget = (): void => {
    process.off('exit', remove);
    remove();
  };
  try {
    const copy = join(folder, basename(file));
    copyUnchanging(file, copy);
    const db = new Database(copy, { readonly: true, fileMustExist: true });
    return {
      db,
      copy: folder,
      close: () => {
        db.close();
        forget();
      },
    };
  } catch (error) {
    forget();
    if (error instanceof ArchiverError) throw error;
    if (isStorageExhausted(error)) {
      throw noRoomError(
        `the temporary folder ${tmpdir()}`,
        tmpdir(),
        error,
        `the catalog of a read-only archive is read from a copy there (${statSync(file).size} bytes): free space, or set TMPDIR to a folder with room`,
      );
    }
    throw error;
  }
}

/**
 * Copies `file` and its -wal to `copy`, again when either changed meanwhile (a harvest by
 * another user checkpointing it): a copy taken across a change could be torn.
 */
function copyUnchanging(file: string, copy: string): void {
  for (let attempt = 1; ; attempt++) {
    const before = fingerprint(file);
    copyFileSync(file, copy);
    if (existsSync(`${file}-wal`)) copyFileSync(`${file}-wal`, `${copy}-wal`);
    else rmSync(`${copy}-wal`, { force: true });
    if (fingerprint(file) === before) return;
    if (attempt === COPY_ATTEMPTS) {
      throw new ArchiverError('ERR_ARCHIVE_CATALOG', `the catalog ${file} changed each time it was copied to be read (${COPY_ATTEMPTS} times)`, {
        path: file,
        hint: 'a harvest is writing it: run the command again when it has ended, or as the user that owns the archive',
      });
    }
  }
}

/** Size, modification time and inode of the catalog and its -wal: what a write changes. */
function fingerprint(file: string): string {
  const one = (path: string): string => {
    const info = statSync(path, { bigint: true, throwIfNoEntry: false });
    return info === undefined ? '-' : `${info.ino}:${info.size}:${info.mtimeNs}`;
  };
  return `${one(file)} ${one(`${file}-wal`)}`;
}
