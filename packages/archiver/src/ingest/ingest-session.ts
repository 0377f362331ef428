// What every run that adds to an archive (a harvest, an import) opens first, under the archive
// lock: the catalog, the disk flusher, and what an interrupted run left behind put right (a
// harvest row still running, tmp/, bags placed but not recorded).
import { mkdir, rm, stat } from 'node:fs/promises';
import { type DiskFlusher, flusherWhenReady, openDiskFlusher } from '../archive/flush-to-disk.js';
import { lockArchiveForWriting, READING_COMMANDS } from '../archive/read-only-archive.js';
import { cleanupLeftovers } from '../bag/bag-writer.js';
import { Catalog } from '../catalog/catalog.js';
import { archiveFullError, isStorageExhausted } from '../core/errors.js';
import { adoptPendingBags } from './adopt-pending-bags.js';

export interface IngestSession {
  catalog: Catalog;
  flusher: DiskFlusher;
  /** Closes the flusher and the catalog and releases the lock (in a `finally`). */
  close(): Promise<void>;
}

/**
 * Opens `archiveDir` (created when absent) for a run named `purpose` in the lock file. `before`
 * runs under the lock once tmp/ is emptied, before the catalog is opened (an import screens its
 * delivery there, keeping files in tmp/); when it fails, an archive folder this call created is
 * removed again, so a refused delivery leaves nothing behind.
 */
export async function openIngestSession(
  archiveDir: string,
  purpose: string,
  log: (line: string) => void,
  before?: () => Promise<void>,
): Promise<IngestSession> {
  const created = await stat(archiveDir).then(
    () => false,
    () => true,
  );
  await mkdir(archiveDir, { recursive: true });
  const lock = await lockArchiveForWriting(archiveDir, purpose, {
    writes: `${purpose.split(' ')[0]} writes bags and the catalog into it`,
    hint: `${purpose.split(' ')[0]} into a writable archive (a copy of this one in a writable folder); ${READING_COMMANDS} read it as it is`,
  });
  let catalog: Catalog | undefined;
  let flusher: DiskFlusher | undefined;
  const close = async () => {
    await flusher?.close();
    catalog?.close();
    await lock.release();
  };
  try {
    await cleanupLeftovers(archiveDir);
    if (before) {
      await before().catch(async (error: unknown) => {
        await lock.release();
        if (created) await rm(archiveDir, { recursive: true, force: true });
        throw new BeforeFailed(error);
      });
    }
    catalog = Catalog.open(archiveDir);
    // The flusher's self-check (one syncfs) runs while the run starts (Identify, the first pages).
    flusher = flusherWhenReady(openDiskFlusher(archiveDir));
    catalog.interruptRunningRuns();
    const adopted = await adoptPendingBags(archiveDir, catalog);
    if (adopted > 0) log(`recorded ${adopted} bag(s) written just before an interruption`);
    return { catalog, flusher, close };
  } catch (error) {
    if (error instanceof BeforeFailed) throw error.failure;
    await close();
    throw isStorageExhausted(error) ? archiveFullError(archiveDir, error) : error;
  }
}

/** `before` failed: the lock is released already, the error is passed on as it is. */
class BeforeFailed extends Error {
  constructor(readonly failure: unknown) {
    super('the step before the catalog failed');
  }
}
