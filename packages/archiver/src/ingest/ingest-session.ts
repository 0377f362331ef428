// What every run that adds to an archive (a harvest, an import) opens first, in two steps: the
// archive locked for writing (created when absent, tmp/ emptied), then, once the run may go on
// (an import screens its delivery in between, keeping files in tmp/), its catalog and disk
// flusher, with what an interrupted run left behind put right (a run row still running, bags
// placed but not recorded).
import { mkdir, rm, stat } from 'node:fs/promises';
import type { AipStorage } from '../aip/aip-storage.js';
import { type OpenedStorage, openArchiveStorage } from '../aip/archive-storage.js';
import { type DiskFlusher, flusherWhenReady, openDiskFlusher } from '../archive/flush-to-disk.js';
import { lockArchiveForWriting, READING_COMMANDS } from '../archive/read-only-archive.js';
import { cleanupLeftovers } from '../bag/bag-writer.js';
import { Catalog } from '../catalog/catalog.js';
import { leaseLost, type SourceLease } from '../catalog/source-leases.js';
import { type ArchiverError, archiveFullError, isStorageExhausted } from '../core/errors.js';
import { adoptPendingBags } from './adopt-pending-bags.js';

/** The archive locked for one run, its catalog not opened yet. */
export interface IngestLock {
  archiveDir: string;
  release(): Promise<void>;
  /** Releases the lock and removes the archive folder if locking created it: a refused delivery leaves nothing. */
  abandon(): Promise<void>;
}

export interface IngestSession {
  archiveDir: string;
  catalog: Catalog;
  /** Where the bags go: the archive's folder, or its object store. */
  storage: AipStorage;
  flusher: DiskFlusher;
  /** Closes the flusher and the catalog and releases the lock (in a `finally`). */
  close(): Promise<void>;
}

/**
 * Locks `archiveDir` (created when absent) for a run named `purpose` in the lock file, and
 * empties its tmp/ (what a killed run left there).
 */
export async function lockForIngest(archiveDir: string, purpose: string): Promise<IngestLock> {
  const created = await stat(archiveDir).then(
    () => false,
    () => true,
  );
  await mkdir(archiveDir, { recursive: true });
  const command = purpose.split(' ')[0];
  const lock = await lockArchiveForWriting(archiveDir, purpose, {
    writes: `${command} writes bags and the catalog into it`,
    hint: `${command} into a writable archive (a copy of this one in a writable folder); ${READING_COMMANDS} read it as it is`,
  });
  try {
    await cleanupLeftovers(archiveDir);
  } catch (error) {
    await lock.release();
    throw isStorageExhausted(error) ? archiveFullError(archiveDir, error) : error;
  }
  return {
    archiveDir,
    release: () => lock.release(),
    abandon: async () => {
      await lock.release();
      if (created) await rm(archiveDir, { recursive: true, force: true });
    },
  };
}

/**
 * A run by a worker that holds a lease on its source (worker/worker.ts): the catalog is shared
 * with other workers, so only this source's leftovers are put right, and every write checks
 * the lease first (catalog/source-leases.ts).
 */
export interface LeasedRun {
  lease: SourceLease;
  leaseMs: number;
  /** Called once when the lease turns out to be another worker's: the run should stop. */
  onLost(error: ArchiverError): void;
}

/**
 * Guards the catalog's writes with the lease, and renews it a third of the way through,
 * whenever no transaction is open (a transaction's own guard renews it too: a harvest busy
 * with pages renews it with every batch). Returns the renewal timer.
 */
function holdLease(catalog: Catalog, run: LeasedRun): NodeJS.Timeout {
  catalog.holdLease(run.lease, run.leaseMs);
  let lost = false;
  const renew = () => {
    if (lost || catalog.inTransaction) return;
    try {
      lost = !catalog.renewLease(run.lease, run.leaseMs);
    } catch {
      return; // PostgreSQL unreachable for a moment: tried again at the next tick
    }
    if (lost) run.onLost(leaseLost(run.lease));
  };
  const timer = setInterval(renew, Math.max(1000, Math.floor(run.leaseMs / 3)));
  timer.unref();
  return timer;
}

/**
 * Opens the catalog of the archive `lock` holds, and its disk flusher; runs left running are
 * marked interrupted and bags placed but not recorded are recorded (on PostgreSQL, only those
 * of the source `baseUrl` when given: other processes may be harvesting the others). On failure the lock is
 * released.
 */
export async function openIngestSession(lock: IngestLock, log: (line: string) => void, shared?: LeasedRun, baseUrl?: string): Promise<IngestSession> {
  const { archiveDir } = lock;
  let catalog: Catalog | undefined;
  let flusher: DiskFlusher | undefined;
  let opened: OpenedStorage | undefined;
  let renewing: NodeJS.Timeout | undefined;
  const close = async () => {
    clearInterval(renewing);
    await flusher?.close();
    catalog?.close();
    opened?.close();
    await lock.release();
  };
  try {
    // The object store's probe runs before the catalog is touched: a store that fails it stops the run.
    opened = await openArchiveStorage(archiveDir);
    catalog = Catalog.open(archiveDir);
    // The flusher's self-check (one syncfs) runs while the run starts (Identify, the first pages).
    flusher = flusherWhenReady(openDiskFlusher(archiveDir));
    if (shared) renewing = holdLease(catalog, shared);
    // A catalog in PostgreSQL may be shared with workers: only this source's leftovers are ours.
    const scope = shared?.lease.source.baseUrl ?? (catalog.onPostgres ? baseUrl : undefined);
    catalog.interruptRunningRuns(scope);
    const adopted = await adoptPendingBags(archiveDir, catalog, opened.storage, scope);
    if (adopted > 0) log(`recorded ${adopted} bag(s) written just before an interruption`);
    return { archiveDir, catalog, storage: opened.storage, flusher, close };
  } catch (error) {
    await close();
    throw isStorageExhausted(error) ? archiveFullError(archiveDir, error) : error;
  }
}
