import { createHash, randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { type FileHandle, mkdir, open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { TEMP_DIRECTORY } from '../archive/storage-path.js';
import { writeFully } from '../core/write-fully.js';

/**
 * A datastream received, with what was measured on the way: in a temporary file (`path`), or,
 * when small, in memory (`bytes`), until its bag takes it.
 */
export interface IncomingFile {
  /** The temporary file inside the archive, or null when the bytes were kept in memory. */
  path: string | null;
  /** The bytes, when kept in memory (then `path` is null). */
  bytes: Buffer | null;
  size: number;
  sha256: string;
  sha512: string;
  /** The budget the bytes were taken from (given back by `discardIncoming`). */
  budget?: MemoryBudget;
  /**
   * The bytes were declined because the archive holds bytes with the sha-256 the record
   * promised (see `declinedAsHeld`): nothing is kept, `size` is -1 and `sha256` empty until
   * the reader's measurements are taken, and they must match the promise for the record to be
   * stored (as a revisit).
   */
  declined?: true;
}

/** A By-Value datastream declined because its promised bytes are held already: see `IncomingFile.declined`. */
export function declinedAsHeld(): IncomingFile {
  return { path: null, bytes: null, size: -1, sha256: '', sha512: '', declined: true };
}

/**
 * Bytes a harvest may keep in memory for datastreams not yet bagged, over all records in
 * flight. A touched record's bytes then never reach the disk (its bag links the previous
 * payload), and a new one is written once, straight into its bag, instead of into tmp/, linked
 * and unlinked. A datastream larger than `perDatastream`, or one arriving when the budget is
 * spent, goes to a temporary file as before: memory stays bounded whatever the record.
 */
export class MemoryBudget {
  constructor(
    private available: number,
    readonly perDatastream: number,
  ) {}

  /** Takes `bytes` from the budget; false (nothing taken) when there is not enough left. */
  take(bytes: number): boolean {
    if (bytes > this.available) return false;
    this.available -= bytes;
    return true;
  }

  give(bytes: number): void {
    this.available += bytes;
  }
}

/** The budget of a harvest: 16 MiB in all, datastreams of up to 1 MiB. */
export function harvestMemoryBudget(): MemoryBudget {
  return new MemoryBudget(16 * 1024 * 1024, 1024 * 1024);
}

/**
 * Receives a datastream (decoded By-Value bytes, or a By-Reference response body), hashing it
 * with sha-256 (unless told the caller has it) and sha-512 as it comes, so that nothing is read twice. Small datastreams stay
 * in memory while `budget` allows (copied: the source may reuse its buffers); the others are
 * streamed into a temporary file inside the archive, which the bag then takes by hard link.
 * The file is not fsynced here: it reaches the disk with the bag that links it (see
 * `placeSealedBags`). On failure the partial file is removed and the memory given back.
 */
export async function receiveIncoming(
  archiveDir: string,
  source: AsyncIterable<Uint8Array>,
  budget?: MemoryBudget,
  options: {
    sha256?: boolean;
    /**
     * The most bytes taken: the record's promised size, or the limit for a datastream without
     * one. One byte more ends the reading with `tooLarge(size)`'s error, so a source that sends
     * more than it promised costs at most one chunk past the promise on disk.
     */
    maxBytes?: number;
    tooLarge?: (size: number) => Error;
  } = {},
): Promise<IncomingFile> {
  // A By-Value datastream is hashed with sha-256 by the DIDL reader already: the caller then
  // takes that digest (`sha256: false` leaves it empty here) instead of hashing twice.
  const sha256 = options.sha256 === false ? undefined : createHash('sha256');
  const sha512 = createHash('sha512');
  let size = 0;
  let held: Buffer[] | null = budget ? [] : null; // in memory until it outgrows its share
  let heldBytes = 0;
  let path: string | null = null;
  let handle: FileHandle | null = null;
  try {
    for await (const chunk of source) {
      if (options.maxBytes !== undefined && size + chunk.byteLength > options.maxBytes) {
        throw options.tooLarge?.(size + chunk.byteLength) ?? new Error(`more than ${options.maxBytes} bytes`);
      }
      sha256?.update(chunk);
      sha512.update(chunk);
      size += chunk.byteLength;
      if (held !== null && size <= budget!.perDatastream && budget!.take(chunk.byteLength)) {
        held.push(Buffer.from(chunk));
        heldBytes += chunk.byteLength;
        continue;
      }
      if (handle === null) {
        path = incomingPath(archiveDir);
        handle = await openIncoming(path);
        for (const part of held ?? []) await writeFully(handle, part);
        budget?.give(heldBytes);
        held = null;
        heldBytes = 0;
      }
      await writeFully(handle, chunk);
    }
  } catch (error) {
    budget?.give(heldBytes);
    await handle?.close().catch(() => undefined);
    if (path !== null) await rm(path, { force: true });
    throw error;
  }
  await handle?.close();
  const digests = { size, sha256: sha256?.digest('hex') ?? '', sha512: sha512.digest('hex') };
  if (held !== null) {
    // Most datastreams arrive in one read: that copy is the file's bytes already.
    const bytes = held.length === 1 ? held[0]! : Buffer.concat(held, heldBytes);
    return { path: null, bytes, ...digests, ...(budget ? { budget } : {}) };
  }
  return { path: path ?? (await emptyFile(archiveDir)), bytes: null, ...digests };
}

/** Removes an incoming file, or gives its memory back (once the bag has it, or when the record is refused). */
export async function discardIncoming(file: IncomingFile | undefined): Promise<void> {
  if (!file) return;
  if (file.path !== null) rmSync(file.path, { force: true }); // one unlink: cheaper than a thread-pool round trip
  if (file.bytes !== null) {
    file.budget?.give(file.bytes.length);
    file.bytes = null; // given back once, however often discarded
  }
}

async function openIncoming(path: string): Promise<FileHandle> {
  return open(path, 'wx').catch(async (error: NodeJS.ErrnoException) => {
    if (error.code !== 'ENOENT') throw error;
    await mkdir(join(path, '..'), { recursive: true }); // the first datastream of this archive
    return open(path, 'wx');
  });
}

/** An empty datastream received without a budget: an empty temporary file, as for any other. */
async function emptyFile(archiveDir: string): Promise<string> {
  const path = incomingPath(archiveDir);
  await (await openIncoming(path)).close();
  return path;
}

/** This process's prefix of temporary names, random once; a count tells its files apart. */
const INCOMING_PREFIX = `incoming-${randomBytes(6).toString('hex')}-`;
let incomingCount = 0;

/**
 * A fresh temporary file name in the archive's tmp/ (opened with `wx`, so a clash would fail
 * rather than overwrite). One random draw per process, not per file: a harvest or an import
 * names thousands of them.
 */
function incomingPath(archiveDir: string): string {
  return join(archiveDir, TEMP_DIRECTORY, `${INCOMING_PREFIX}${++incomingCount}`);
}
