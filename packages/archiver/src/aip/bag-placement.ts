// Puts sealed bags (complete, but still in tmp/) into their places in the archive's folder,
// several at a time, with two flushes in all instead of fsyncs per bag: the placement of the
// folder storage (folder-storage.ts), what AipStorage.placeBags promises.
//
//   1. flush every sealed bag's tree (its files and folders reach the disk);
//   2. `beforeRename`: the caller notes the bags as pending in the catalog (durably);
//   3. rename each bag to its destination (one atomic rename each);
//   4. flush the folders that gained a bag (and any folder created for it);
//   then the caller records the versions.
//
// A crash before 3 leaves only tmp/ content, removed at the next start. A crash during or after
// 3 leaves bags that are complete on disk (1 came first) and noted (2 came first): the next
// start records those it finds and drops the notes of the others (adoptPendingBags).

import { mkdir, readFile, rename, rm } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { type DiskFlusher, oneShotFlusher } from '../archive/flush-to-disk.js';
import { verifyBag } from '../bag/bag-verifier.js';
import type { FinishedBag, SealedBag } from '../bag/sealed-bag.js';
import { ArchiverError, archiveIoError } from '../core/errors.js';

/** The outcome for one bag: placed (or found already there), or refused with the reason. */
export type Placement = { bag: FinishedBag; error?: undefined } | { bag?: undefined; error: ArchiverError };

export interface PlaceOptions {
  /** Runs after the bags are durable in tmp/ and before the first rename (see the file comment). */
  beforeRename?: () => void | Promise<void>;
  /** Makes the bags and the renames durable (default: a one-shot flusher, see flush-to-disk.ts). */
  flusher?: DiskFlusher;
  /**
   * Files of earlier bags the placed bags rely on (revisits: bag path → paths in it). A store
   * that retains (S3 Object Lock) keeps them at least as long as the new bags; a folder keeps
   * everything anyway.
   */
  reliedOn?: ReadonlyMap<string, ReadonlySet<string>>;
}

/**
 * Places `bags` (see the file comment), returning one Placement per bag in order. A bag whose
 * destination already holds a different bag is refused (its temporary copy removed); the
 * archive never overwrites a bag. When the first flush or `beforeRename` fails, every temporary
 * bag is removed and the error is thrown: nothing was placed.
 */
export async function placeSealedBags(archiveDir: string, bags: readonly SealedBag[], options: PlaceOptions = {}): Promise<Placement[]> {
  if (bags.length === 0) return [];
  const flusher = options.flusher ?? oneShotFlusher(archiveDir);
  try {
    await flusher.flush({ trees: bags.map((bag) => bag.tempDir) });
    await options.beforeRename?.();
  } catch (error) {
    await Promise.all(bags.map((bag) => rm(bag.tempDir, { recursive: true, force: true })));
    throw error;
  }
  const placements: Placement[] = [];
  const folders = new Set<string>();
  for (const bag of bags) {
    try {
      placements.push({ bag: await placeOne(archiveDir, bag, folders) });
    } catch (error) {
      await rm(bag.tempDir, { recursive: true, force: true });
      placements.push({ error: archiveIoError(error, `cannot place bag ${bag.destination}`) });
    }
  }
  // tmp/, which lost the entries, is not flushed: if a crash undid that, a bag would be in
  // tmp/ as well as in aips/, and tmp/ is emptied at the next start.
  await flusher.flush({ folders: [...folders] });
  return placements;
}

async function placeOne(archiveDir: string, bag: SealedBag, folders: Set<string>): Promise<FinishedBag> {
  const parent = dirname(bag.bagPath);
  const firstCreated = await mkdir(parent, { recursive: true });
  if (firstCreated !== undefined) for (const folder of newFolders(firstCreated, parent, archiveDir)) folders.add(folder);
  try {
    await rename(bag.tempDir, bag.bagPath);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw error;
    return adoptExisting(bag);
  }
  folders.add(parent);
  return { bagPath: bag.bagPath, payloadOxum: bag.payloadOxum, files: bag.files, existing: false };
}

/** A bag delivered twice is already there: keep that one if it is the same bag, else refuse. */
async function adoptExisting(bag: SealedBag): Promise<FinishedBag> {
  const same = await Promise.all(
    ['manifest-sha256.txt', 'manifest-sha512.txt'].map(async (name) => {
      const theirs = await readFile(join(bag.bagPath, name)).catch(() => undefined);
      return theirs?.equals(await readFile(join(bag.tempDir, name)));
    }),
  );
  const report = same.every(Boolean) ? await verifyBag(bag.bagPath, { fast: true }) : undefined;
  await rm(bag.tempDir, { recursive: true, force: true });
  if (report?.valid !== true) {
    throw new ArchiverError('ERR_ARCHIVE_BAG', `a different bag already exists at ${bag.bagPath}`, {
      path: bag.bagPath,
      hint: 'run `oaibag verify` on that bag; the archive never overwrites one',
    });
  }
  return { bagPath: bag.bagPath, payloadOxum: bag.payloadOxum, files: bag.files, existing: true };
}

/**
 * The folders whose entries changed when `mkdir -p` created `firstCreated` … `deepest`: each new
 * folder (it holds the next one) and the parent of the first. Folders that already existed are
 * not flushed again.
 */
function newFolders(firstCreated: string, deepest: string, archiveDir: string): string[] {
  const chain: string[] = [];
  for (let current = deepest; ; current = dirname(current)) {
    chain.push(current);
    if (current === firstCreated || relative(archiveDir, current) === '' || dirname(current) === current) break;
  }
  chain.push(dirname(firstCreated));
  return chain;
}
