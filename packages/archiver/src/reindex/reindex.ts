// `oaibag reindex`: rebuilds the catalog (catalog.sqlite, or the PostgreSQL catalog: see
// catalog/pg-rebuild.ts) from the bags alone (docs/aip-profile.md). The bags
// are the archive; the catalog is an index of them that can always be made again: sources,
// harvests that wrote bags, resources, versions, deletions, payload files, watermarks and the
// saved resumption token. The new catalog is built under a temporary name and renamed into
// place only when every bag was read: a reindex that fails leaves the archive as it was.
import { randomBytes } from 'node:crypto';
import { readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { type OpenedStorage, openArchiveStorage } from '../aip/archive-storage.js';
import { AIPS_DIRECTORY, ARCHIVE_FORMAT, bagPathOfFolders, parseBatchFolder, parseHarvestFolder } from '../aip/layout-names.js';
import { S3Storage } from '../aip/s3-storage.js';
import { catalogLocation, storeLocation, withoutPassword } from '../archive/archive-locations.js';
import { fsyncFolder } from '../archive/flush-to-disk.js';
import { lockArchiveForWriting } from '../archive/read-only-archive.js';
import { CATALOG_FILE_NAME, Catalog } from '../catalog/catalog.js';
import { indexBags } from '../catalog/index-bags.js';
import { createRebuildSchema, dropRebuildSchema, postgresCatalogExists, swapRebuiltSchema } from '../catalog/pg-rebuild.js';
import { ArchiverError } from '../core/errors.js';

export interface ReindexOptions {
  archiveDir: string;
  /** Replace an existing catalog; the old one is kept beside it as `catalog.sqlite.<time>`. */
  force?: boolean;
  /** After each bag: bags done, bags in all. */
  progress?: (done: number, total: number) => void;
  /** The clock for the kept catalog's name (tests). */
  now?: () => Date;
}

export interface ReindexSummary {
  archive: string;
  catalog: string;
  /** Where the catalog that was replaced now is (with --force), or null. */
  keptAs: string | null;
  bags: number;
  sources: number;
  harvests: number;
  versions: number;
  deletions: number;
  seconds: number;
  /**
   * Why the replaced catalog's schedule of sources (`oaibag sources`) could not be carried over
   * (a damaged SQLite file): the sources must be added again. Absent when it was.
   */
  scheduleLost?: string;
}

/**
 * Rebuilds the catalog of `archiveDir` from its bags (see the file comment). Refuses an archive
 * that has a catalog unless `force` (ERR_ARCHIVE_USAGE), one whose aips/ holds anything but batch
 * bags of this format (ERR_ARCHIVE_FORMAT), and a bag whose records cannot be read
 * (ERR_ARCHIVE_DAMAGED, naming it); then nothing is changed.
 */
export async function reindexArchive(options: ReindexOptions): Promise<ReindexSummary> {
  const started = Date.now();
  const { archiveDir } = options;
  const aips = join(archiveDir, AIPS_DIRECTORY);
  const onStore = storeLocation(archiveDir) !== undefined;
  if (!onStore && !(await exists(aips))) {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `${archiveDir} has no ${AIPS_DIRECTORY}/ folder: there are no bags to index`, {
      hint: 'check --archive names an archive made by oaibag harvest',
    });
  }
  const lock = await lockArchiveForWriting(archiveDir, 'reindex', {
    writes: 'reindex builds the catalog in it',
    hint: 'reindex a writable copy of the archive',
  });
  let opened: OpenedStorage;
  try {
    opened = await openArchiveStorage(archiveDir);
  } catch (error) {
    await lock.release();
    throw error;
  }
  const postgres = catalogLocation(archiveDir);
  if (postgres !== undefined) {
    try {
      return await reindexPostgres(postgres, options, opened, started);
    } finally {
      opened.close();
      await lock.release();
    }
  }
  const temporary = `${CATALOG_FILE_NAME}.reindex-${randomBytes(6).toString('hex')}`;
  try {
    const current = join(archiveDir, CATALOG_FILE_NAME);
    if ((await exists(current)) && options.force !== true) {
      throw new ArchiverError('ERR_ARCHIVE_USAGE', `${current} exists; reindex does not overwrite a catalog`, {
        hint: 'give --force to build a new one and keep the old one beside it as catalog.sqlite.<time>',
      });
    }
    const bags = await listStoredBags(archiveDir, opened);
    const catalog = Catalog.open(archiveDir, { fileName: temporary });
    let summary: Omit<ReindexSummary, 'archive' | 'catalog' | 'keptAs' | 'seconds'>;
    try {
      summary = await indexBags(catalog, archiveDir, bags, { storage: opened.storage, ...(options.progress ? { progress: options.progress } : {}) });
      // The workers' schedule is not in the bags: the new catalog takes over the old one's. The
      // old file may be what the reindex is for (damaged): then the summary says what was lost.
      if (await exists(current)) {
        try {
          catalog.carryScheduleFrom(current);
        } catch (error) {
          summary = { ...summary, scheduleLost: (error as Error).message };
        }
      }
    } finally {
      catalog.close();
    }
    let keptAs: string | null = null;
    if (await exists(current)) {
      keptAs = `${current}.${timeStamp(options.now?.() ?? new Date())}`;
      // The catalog and its write-ahead log move together: SQLite finds the log by the name.
      for (const suffix of ['-wal', '-shm', '']) {
        if (await exists(current + suffix)) await rename(current + suffix, keptAs + suffix);
      }
    }
    await rename(join(archiveDir, temporary), current);
    await fsyncFolder(archiveDir);
    return { archive: archiveDir, catalog: current, keptAs, ...summary, seconds: (Date.now() - started) / 1000 };
  } finally {
    for (const suffix of ['', '-wal', '-shm', '-journal']) await rm(join(archiveDir, temporary + suffix), { force: true });
    opened.close();
    await lock.release();
  }
}

/**
 * The catalog in PostgreSQL rebuilt in a schema of its own, swapped into place once every bag
 * was read (catalog/pg-rebuild.ts); a failure drops the new schema and leaves the catalog.
 */
async function reindexPostgres(url: string, options: ReindexOptions, opened: OpenedStorage, started: number): Promise<ReindexSummary> {
  const { archiveDir } = options;
  if (postgresCatalogExists(url) && options.force !== true) {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `the catalog ${withoutPassword(url)} exists; reindex does not overwrite a catalog`, {
      hint: 'give --force to build a new one and keep the old one as the schema oaibag_kept_<time>',
    });
  }
  const bags = await listStoredBags(archiveDir, opened);
  const schema = createRebuildSchema(url);
  let swapped = false;
  try {
    const catalog = Catalog.open(archiveDir, { postgres: url, postgresSchema: schema });
    let summary: Omit<ReindexSummary, 'archive' | 'catalog' | 'keptAs' | 'seconds'>;
    try {
      summary = await indexBags(catalog, archiveDir, bags, { storage: opened.storage, ...(options.progress ? { progress: options.progress } : {}) });
    } finally {
      catalog.close();
    }
    const stamp = timeStamp(options.now?.() ?? new Date());
    const keptAs = swapRebuiltSchema(url, schema, options.force === true, stamp.toLowerCase());
    swapped = true;
    return { archive: archiveDir, catalog: withoutPassword(url), keptAs, ...summary, seconds: (Date.now() - started) / 1000 };
  } finally {
    if (!swapped) dropRebuildSchema(url, schema);
  }
}

/** `20261127T093000Z`: an instant in a name. */
function timeStamp(at: Date): string {
  return at
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
}

/** The bags of the archive's storage: the folder's, or the store's committed bags (aip/s3-commit.ts), in the order written. */
async function listStoredBags(archiveDir: string, opened: OpenedStorage): Promise<string[]> {
  if (!(opened.storage instanceof S3Storage)) return listBatchBags(archiveDir);
  const bags: Array<{ harvest: number; batch: number; path: string }> = [];
  for await (const path of opened.storage.committedBags()) {
    const [top, harvestFolder, batchFolder, ...rest] = path.split('/');
    const harvest = harvestFolder === undefined ? undefined : parseHarvestFolder(harvestFolder);
    const batch = batchFolder === undefined ? undefined : parseBatchFolder(batchFolder);
    if (top !== AIPS_DIRECTORY || harvest === undefined || batch === undefined || rest.length > 0) {
      throw new ArchiverError(
        'ERR_ARCHIVE_FORMAT',
        `${opened.storage.where(path)} is committed, and is not a batch bag of format ${ARCHIVE_FORMAT} (aips/harvest-<n>/batch-<n>)`,
        {
          path: opened.storage.where(path),
        },
      );
    }
    bags.push({ harvest, batch, path });
  }
  bags.sort((a, b) => a.harvest - b.harvest || a.batch - b.batch);
  return bags.map((bag) => bag.path);
}

/** Every batch bag of the archive, in the order written: harvest, then batch. */
export async function listBatchBags(archiveDir: string): Promise<string[]> {
  const aips = join(archiveDir, AIPS_DIRECTORY);
  const refuse = (name: string): never => {
    throw new ArchiverError(
      'ERR_ARCHIVE_FORMAT',
      `${join(aips, name)} is not a batch bag folder of format ${ARCHIVE_FORMAT} (aips/harvest-<n>/batch-<n>); a format-1 archive (aips/<xx>/<yy>/…) is not read by this oaibag`,
      { path: join(aips, name) },
    );
  };
  const bags: Array<{ harvest: number; batch: number; path: string }> = [];
  for (const entry of await readdir(aips, { withFileTypes: true })) {
    const harvest = parseHarvestFolder(entry.name);
    if (harvest === undefined || !entry.isDirectory()) refuse(entry.name);
    for (const inner of await readdir(join(aips, entry.name), { withFileTypes: true })) {
      const batch = parseBatchFolder(inner.name);
      if (batch === undefined || !inner.isDirectory()) refuse(`${entry.name}/${inner.name}`);
      bags.push({ harvest: harvest!, batch: batch!, path: bagPathOfFolders(entry.name, inner.name) });
    }
  }
  bags.sort((a, b) => a.harvest - b.harvest || a.batch - b.batch);
  return bags.map((bag) => bag.path);
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
