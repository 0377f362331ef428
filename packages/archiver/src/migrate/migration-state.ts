// What a migration under way remembers in the archive folder (`<archive>/migration.json`,
// written durably before anything is put on the store): where it goes, the name it writes under
// on the store (so that a run that was killed takes up its own claims again), the one retention
// date of every bag it copies, and the schema its catalog copy is built in (dropped by the next
// attempt when the copy was cut short). Removed when the migration is done.
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { StoreLocation } from '../archive/archive-locations.js';
import { writeFileDurably } from '../archive/durable-file.js';
import { fsyncFolder } from '../archive/flush-to-disk.js';
import { ArchiverError } from '../core/errors.js';

export const MIGRATION_FILE = 'migration.json';

export interface MigrationState {
  format: 1;
  /** The name the migration writes under on the store (claims and commit records). */
  writer: string;
  started: string;
  /** The catalog's URL without its password. */
  catalog: string;
  store: StoreLocation;
  /** With --retain: every bag copied is kept until then (one date: no bag outlives one it relies on). */
  retainUntil?: string;
  /** The schema the catalog copy is being built in, once begun. */
  copySchema?: string;
}

export async function readMigrationState(archiveDir: string): Promise<MigrationState | undefined> {
  const file = join(archiveDir, MIGRATION_FILE);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ArchiverError('ERR_ARCHIVE_IO', `cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`, { path: file });
  }
  try {
    const state = JSON.parse(text) as MigrationState;
    if (state.format !== 1 || typeof state.writer !== 'string' || typeof state.catalog !== 'string' || typeof state.store?.url !== 'string') {
      throw new Error('shape');
    }
    return state;
  } catch {
    throw new ArchiverError('ERR_ARCHIVE_DAMAGED', `${file} is not the migration state oaibag writes`, {
      path: file,
      hint: 'nothing was switched yet; remove it to start the migration again',
    });
  }
}

export async function writeMigrationState(archiveDir: string, state: MigrationState): Promise<void> {
  await writeFileDurably(join(archiveDir, MIGRATION_FILE), `${JSON.stringify(state, null, 2)}\n`);
}

export async function removeMigrationState(archiveDir: string): Promise<void> {
  await rm(join(archiveDir, MIGRATION_FILE), { force: true });
  await fsyncFolder(archiveDir);
}
