// Puts one payload file back into its bag, only if the bytes offered are the bytes the bag's
// manifests name. Numbered steps, each a crash can stop:
//   1. the folders on the way are checked (real folders, no link) and the missing ones made
//      (removed again when the bytes are refused);
//   2. the bytes go to `.oaibag-repair-<random>` in the file's own folder (O_EXCL, no link
//      followed), hashed with every manifest algorithm while written, no more than the size
//      recorded plus one byte read;
//   3. size and every digest compared; the file fsynced, then read back through the same
//      descriptor and its sha-256 computed again;
//   4. renamed over the damaged (or missing) file, the folder fsynced.
// A failure at any step removes the temporary file: the bag never holds other bytes under the
// payload's name than it did. A crash between 2 and 4 leaves the temporary file, which the next
// repair removes (verify names it as a file not in the manifests meanwhile).
import { createHash, randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { type FileHandle, lstat, mkdir, open, rename, rmdir, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { fsyncFolder } from '../archive/flush-to-disk.js';
import { ArchiverError, archiveFullError, archiveIoError, isStorageExhausted } from '../core/errors.js';
import { writeFully } from '../core/write-fully.js';

/** The prefix of the temporary name a repair writes under; only repair makes such files. */
export const REPAIR_TEMP_PREFIX = '.oaibag-repair-';

/** A temporary file of an interrupted repair, by its name. */
export const REPAIR_TEMP_NAME = /^\.oaibag-repair-[0-9a-f]{16}$/;

/** A payload file to put back, and what its bytes must be. */
export interface PayloadTarget {
  /** The bag, relative to the archive (`aips/harvest-000001/batch-00001`). */
  bagPath: string;
  /** The bag's folder (absolute). */
  bagDir: string;
  /** The file, relative to the bag (`data/…`). */
  path: string;
  /** The size the catalog recorded. */
  size: number;
  /** Every digest the bag's payload manifests give the file, by algorithm (sha256 always). */
  digests: Record<string, string>;
}

/** What became of one offer of bytes. */
export type PlaceResult = { placed: true } | { placed: false; why: string };

/**
 * Streams `bytes` into place as the payload `target` (see the steps above), or says why not;
 * with `dryRun` the bytes are checked the same way and nothing is written. A bytes stream that
 * fails is a refusal of that offer (`why`); a failure of the archive's own file system is thrown
 * (ERR_ARCHIVE_FULL, ERR_ARCHIVE_IO): the next offer would fail the same way.
 */
export async function placePayload(target: PayloadTarget, bytes: Readable, dryRun = false): Promise<PlaceResult> {
  const segments = target.path.split('/');
  const file = join(target.bagDir, ...segments);
  const created: string[] = [];
  if (!dryRun) {
    const blocked = await prepareFolders(target.bagDir, segments.slice(0, -1), created);
    if (blocked !== undefined) {
      bytes.destroy();
      return { placed: false, why: blocked };
    }
  }
  const temp = join(dirname(file), `${REPAIR_TEMP_PREFIX}${randomBytes(8).toString('hex')}`);
  let handle: FileHandle | undefined;
  try {
    if (!dryRun) handle = await open(temp, constants.O_CREAT | constants.O_EXCL | constants.O_RDWR | constants.O_NOFOLLOW, 0o644).catch(ioFailure(temp));
    const refused = await copyChecked(bytes, target, handle);
    if (refused !== undefined || handle === undefined) {
      await discard(handle, temp, created);
      return refused === undefined ? { placed: true } : { placed: false, why: refused };
    }
    await handle.sync().catch(ioFailure(temp));
    const again = await hashBack(handle, temp);
    if (again !== target.digests.sha256) {
      await discard(handle, temp, created);
      return { placed: false, why: `read back after fsync, its sha256 is ${again}: the disk did not keep the bytes` };
    }
    await handle.close();
    handle = undefined;
    await rename(temp, file).catch(ioFailure(file));
    await fsyncFolder(dirname(file));
    return { placed: true };
  } catch (error) {
    await discard(handle, temp, created);
    throw error;
  }
}

/**
 * Reads `bytes` (at most the recorded size plus one byte), hashing with every algorithm of the
 * target and writing to `handle` when given; the refusal, or undefined when size and every digest
 * match. The stream is destroyed either way.
 */
async function copyChecked(bytes: Readable, target: PayloadTarget, handle: FileHandle | undefined): Promise<string | undefined> {
  const hashes = Object.keys(target.digests).map((algorithm) => [algorithm, createHash(algorithm)] as const);
  let size = 0;
  try {
    for await (const chunk of bytes as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > target.size) return `more than the ${target.size} bytes recorded`;
      for (const [, hash] of hashes) hash.update(chunk);
      if (handle !== undefined) await writeFully(handle, chunk).catch(ioFailure(target.path));
    }
  } catch (error) {
    if (error instanceof ArchiverError && (error.code === 'ERR_ARCHIVE_IO' || error.code === 'ERR_ARCHIVE_FULL')) throw error;
    return `cannot be read: ${oneLine(error)}`;
  } finally {
    bytes.destroy();
  }
  if (size !== target.size) return `${size} bytes, the catalog records ${target.size}`;
  for (const [algorithm, hash] of hashes) {
    const found = hash.digest('hex');
    if (found !== target.digests[algorithm]) return `${algorithm} ${found}, the manifest says ${target.digests[algorithm]}`;
  }
  return undefined;
}

/** The sha-256 of the file written, read again through its descriptor (after fsync). */
async function hashBack(handle: FileHandle, temp: string): Promise<string> {
  const hash = createHash('sha256');
  try {
    for await (const chunk of handle.createReadStream({ start: 0, autoClose: false, highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
  } catch (error) {
    throw archiveIoError(error, `cannot read back ${temp}`, temp);
  }
  return hash.digest('hex');
}

/**
 * The folders from the bag to the file: each one there must be a real folder (not a link, not
 * a file), each one missing is made (and its parent fsynced). A reason when the way is blocked.
 */
async function prepareFolders(bagDir: string, folders: string[], created: string[]): Promise<string | undefined> {
  let current = bagDir;
  for (const name of folders) {
    const parent = current;
    current = join(current, name);
    const info = await lstat(current).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined;
      throw archiveIoError(error, `cannot look at ${current}`, current);
    });
    if (info === undefined) {
      await mkdir(current).catch(ioFailure(current));
      created.push(current);
      await fsyncFolder(parent);
    } else if (!info.isDirectory()) {
      return `${current} is ${info.isSymbolicLink() ? 'a symbolic link' : 'not a folder'}: nothing is written through it`;
    }
  }
  return undefined;
}

/** Removes the temporary file and the folders made for it (deepest first): a refused offer leaves nothing behind. */
async function discard(handle: FileHandle | undefined, temp: string, created: readonly string[]): Promise<void> {
  if (handle !== undefined) {
    await handle.close().catch(() => undefined);
    await unlink(temp).catch(() => undefined);
  }
  for (const folder of [...created].reverse()) await rmdir(folder).catch(() => undefined);
}

/** A failure of the archive's own file system: ERR_ARCHIVE_FULL when it is full, else ERR_ARCHIVE_IO. */
function ioFailure(path: string): (error: unknown) => never {
  return (error) => {
    if (isStorageExhausted(error)) throw archiveFullError(dirname(path), error);
    throw archiveIoError(error, `cannot write ${path}`, path);
  };
}

function oneLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).replace(/[\r\n]+/g, ' ').slice(0, 300);
}
