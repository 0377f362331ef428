// `oaibag migrate`: moves an archive kept in a folder (bags in aips/, catalog in catalog.sqlite)
// onto an object store and a PostgreSQL catalog (docs/scale-out.md, "Migrating an archive").
//
//   1. under the archive lock, finish the folder's own crash recovery (pending bags), check the
//      places: the archive is in its folder, the catalog is empty, the store holds no bags;
//   2. note the migration in the folder (migration.json: its writer name and retention date);
//   3. commit every bag on the store under its own name, verified first and read back after;
//   4. copy the catalog, row for row, into PostgreSQL (swapped into place in one transaction);
//   5. switch the folder's locations.json to the catalog and the store, durably;
//   6. remove migration.json.
//
// Killed at any point, the same command finishes the job: bags committed with the same files are
// skipped, a bag this migration claimed and did not commit is taken up again, a catalog copy
// cut short is dropped and made again, one that was swapped in is recognized by its marker
// event. The folder's aips/ and catalog.sqlite are left in place for the operator to remove.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { AIPS_DIRECTORY } from '../aip/layout-names.js';
import { S3Storage } from '../aip/s3-storage.js';
import { catalogLocation, parseCatalogUrl, type StoreLocation, storeLocation, switchArchiveLocations, withoutPassword } from '../archive/archive-locations.js';
import { lockArchiveForWriting } from '../archive/read-only-archive.js';
import { CATALOG_FILE_NAME, Catalog } from '../catalog/catalog.js';
import { copyCatalogToPostgres, dropCopySchema, lastMigrationEvent, newCopySchemaName } from '../catalog/catalog-copy.js';
import { postgresCatalogExists } from '../catalog/pg-rebuild.js';
import { ArchiverError } from '../core/errors.js';
import { adoptPendingBags } from '../ingest/adopt-pending-bags.js';
import { listBatchBags } from '../reindex/reindex.js';
import { type MigrationState, readMigrationState, removeMigrationState, writeMigrationState } from './migration-state.js';

export interface MigrateOptions {
  archiveDir: string;
  /** The PostgreSQL catalog to move to (`postgres://…`, an empty database). */
  catalog: string;
  /** The object store to move the bags to: its URL, endpoint, region and retention. */
  store: StoreLocation;
  /** After each bag: bags done, bags in all. */
  progress?: (done: number, total: number) => void;
}

export interface MigrateSummary {
  archive: string;
  catalog: string;
  store: string;
  bags: number;
  /** Bags committed by this run. */
  copied: number;
  /** Bags found committed already (an earlier run cut short). */
  present: number;
  /** Catalog rows copied, per table (empty when an earlier run had copied it). */
  rows: Record<string, number>;
  /** Whether this run took up a migration an earlier one began. */
  resumed: boolean;
  seconds: number;
}

const usage = (message: string, hint?: string, path?: string): ArchiverError =>
  new ArchiverError('ERR_ARCHIVE_USAGE', message, { ...(hint ? { hint } : {}), ...(path ? { path } : {}) });

/** Migrates the archive (see the file comment); refusals are one coded line with nothing changed. */
export async function migrateArchive(options: MigrateOptions): Promise<MigrateSummary> {
  const started = Date.now();
  const { archiveDir } = options;
  parseCatalogUrl(options.catalog);
  const lock = await lockArchiveForWriting(archiveDir, 'migrate', {
    writes: 'migrate records the new places in it',
    hint: 'migrate a writable archive folder',
  });
  try {
    const onStore = storeLocation(archiveDir);
    const noted = await readMigrationState(archiveDir);
    if (onStore !== undefined && noted?.store.url === onStore.url && noted.catalog === catalogLocation(archiveDir)) {
      // Killed after the switch, before its note was removed: only the note is left to remove.
      await removeMigrationState(archiveDir);
      const bags = (await listBatchBags(archiveDir)).length;
      return { archive: archiveDir, catalog: noted.catalog, store: onStore.url, bags, copied: 0, present: bags, rows: {}, resumed: true, seconds: 0 };
    }
    if (onStore !== undefined) {
      throw usage(`the archive ${archiveDir} keeps its bags on ${onStore.url} already: there is nothing to migrate`, undefined, archiveDir);
    }
    const onPostgres = catalogLocation(archiveDir);
    if (onPostgres !== undefined) {
      throw usage(
        `the archive ${archiveDir} keeps its catalog in ${withoutPassword(onPostgres)}: migrate moves an archive whose catalog is its catalog.sqlite`,
        undefined,
        archiveDir,
      );
    }
    if (!existsSync(join(archiveDir, CATALOG_FILE_NAME)) || !existsSync(join(archiveDir, AIPS_DIRECTORY))) {
      throw usage(`${archiveDir} has no ${CATALOG_FILE_NAME} and ${AIPS_DIRECTORY}/: it is not an archive in a folder`, 'check --archive', archiveDir);
    }
    const bare = withoutPassword(options.catalog);

    let state = noted;
    const resumed = state !== undefined;
    if (state !== undefined && (state.catalog !== bare || state.store.url !== options.store.url)) {
      throw usage(
        `a migration of ${archiveDir} to ${state.store.url} and ${state.catalog} is under way; it is not taken up to other places`,
        `give --to-store ${state.store.url} --to-catalog ${state.catalog} to finish it`,
        archiveDir,
      );
    }
    const retainUntil = state?.retainUntil ?? (options.store.retainMs === undefined ? undefined : new Date(started + options.store.retainMs).toISOString());
    // The catalog: empty, or (a run killed after its copy was swapped in) this migration's copy.
    const copiedCatalog = state !== undefined && ownCatalog(options.catalog, state);
    if (!copiedCatalog && postgresCatalogExists(options.catalog)) {
      throw usage(
        `the catalog ${bare} is not empty${state === undefined ? '' : ', and not the copy this migration made'}: migrate copies the catalog into an empty one`,
        'give the URL of a new, empty database',
      );
    }
    const bags = await prepareFolder(archiveDir);
    // A run taking up a migration may leave out what the first was given (endpoint, region).
    const location: StoreLocation = state === undefined ? options.store : { ...state.store, ...definedOnly(options.store) };
    const storage = await S3Storage.open(location);
    try {
      if (state === undefined) {
        const held = await first(storage.claimedBags());
        if (held !== undefined) {
          throw usage(
            `the store ${options.store.url} holds bags already (${storage.where(held)}): migrate moves an archive onto an empty prefix`,
            'give a new prefix',
          );
        }
        state = {
          format: 1,
          writer: `oaibag migrate ${randomBytes(8).toString('hex')}`,
          started: new Date(started).toISOString(),
          catalog: bare,
          store: location,
          ...(retainUntil ? { retainUntil } : {}),
        };
        await writeMigrationState(archiveDir, state);
      }

      // The store: every bag of the folder committed under its own name, nothing else there.
      const names = new Set(bags);
      for await (const name of storage.committedBags()) {
        if (!names.has(name)) throw usage(`the store ${options.store.url} holds a bag the archive has not: ${storage.where(name)}`, 'give a new prefix');
      }
      let copied = 0;
      let present = 0;
      for (const [index, bagPath] of bags.entries()) {
        const outcome = await storage.commitFolderBag(
          join(archiveDir, ...bagPath.split('/')),
          bagPath,
          state.writer,
          retainUntil === undefined ? undefined : new Date(retainUntil),
        );
        if (outcome === 'committed') copied++;
        else present++;
        options.progress?.(index + 1, bags.length);
      }

      // The catalog, copied once every bag is on the store.
      let rows: Record<string, number> = {};
      if (!copiedCatalog) {
        if (state.copySchema !== undefined) dropCopySchema(options.catalog, state.copySchema);
        state = { ...state, copySchema: newCopySchemaName() };
        await writeMigrationState(archiveDir, state);
        const marker = JSON.stringify({ migration: state.writer, from: archiveDir, store: options.store.url, bags: bags.length });
        rows = copyCatalogToPostgres(join(archiveDir, CATALOG_FILE_NAME), options.catalog, state.copySchema!, marker).rows;
      }

      await switchArchiveLocations(archiveDir, options.catalog, state.store);
      await removeMigrationState(archiveDir);
      return {
        archive: archiveDir,
        catalog: bare,
        store: options.store.url,
        bags: bags.length,
        copied,
        present,
        rows,
        resumed,
        seconds: (Date.now() - started) / 1000,
      };
    } finally {
      storage.close();
    }
  } finally {
    await lock.release();
  }
}

/**
 * The folder's crash recovery, as the next harvest would run it (bags noted pending are recorded
 * or dropped), then its bags, each of which the catalog must record. Returns the bags in the
 * order written.
 */
async function prepareFolder(archiveDir: string): Promise<string[]> {
  const catalog = Catalog.open(archiveDir, { create: false });
  try {
    await adoptPendingBags(archiveDir, catalog);
    const bags = await listBatchBags(archiveDir);
    const inFolder = new Set(bags);
    const recorded = new Set(catalog.bags().map((bag) => bag.bagPath));
    for (const bagPath of recorded) {
      if (!inFolder.has(bagPath)) {
        throw new ArchiverError('ERR_ARCHIVE_DAMAGED', `the catalog records ${bagPath}, which is not in ${join(archiveDir, AIPS_DIRECTORY)}`, {
          path: archiveDir,
          hint: 'run `oaibag verify` (and `oaibag repair`) before migrating',
        });
      }
    }
    for (const bagPath of bags) {
      if (!recorded.has(bagPath)) {
        throw new ArchiverError('ERR_ARCHIVE_DAMAGED', `${join(archiveDir, ...bagPath.split('/'))} is not in the catalog`, {
          path: archiveDir,
          hint: 'run `oaibag reindex --force` to record every bag before migrating',
        });
      }
    }
    return bags;
  } finally {
    catalog.close();
  }
}

/** Whether the catalog at `url` is the copy this migration swapped in (a run killed after the swap). */
function ownCatalog(url: string, state: MigrationState): boolean {
  const detail = lastMigrationEvent(url);
  if (detail === undefined) return false;
  try {
    return (JSON.parse(detail) as { migration?: unknown }).migration === state.writer;
  } catch {
    return false;
  }
}

function definedOnly(location: StoreLocation): Partial<StoreLocation> {
  return Object.fromEntries(Object.entries(location).filter(([, value]) => value !== undefined));
}

async function first<T>(items: AsyncGenerator<T>): Promise<T | undefined> {
  // Leaving the loop ends the listing.
  for await (const item of items) return item;
  return undefined;
}
