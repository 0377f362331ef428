// What `oaibag restore` (and `oaibag export --site`) need to read the archive's payload files:
// where a version's bytes are, how a payload file is opened, how its bytes are read and checked,
// and the error that reports one that fails its check (the bytes come from the catalog's index
// of payload files, see stage-version.ts; no tag file or manifest is read by a restore).
// In a folder a payload file is opened (never through a link) and read with system calls; on
// object storage it is read through the archive's AipStorage, with the same checks.

import { createHash } from 'node:crypto';
import { closeSync, constants as fsConstants, fstatSync, openSync } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { AipStorage } from '../aip/aip-storage.js';
import { resolveArchivePath } from '../archive/storage-path.js';
import type { PayloadLocation } from '../catalog/catalog-types.js';
import type { PlanVersion } from './restore-plan.js';

/** Opens a payload file for reading, never through a symbolic link. */
export const OPEN_PAYLOAD = fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW;

/** A payload file that fails a check: the restore reports it by name and writes nothing of it. */
export class Damage extends Error {
  constructor(
    message: string,
    readonly expected?: string,
    readonly found?: string,
  ) {
    super(message);
  }
}

/** Where the archive holds the bytes of a version: its first part. */
export interface PayloadSource {
  part: PayloadLocation;
  /** Its archive path, `<bag>/data/…`, as messages name it. */
  name: string;
  /** The absolute file. */
  file: string;
}

/** A payload file as named in messages: its archive path, `<bag>/data/…`. */
export function payloadName(part: PayloadLocation): string {
  return `${part.bagPath}/${part.path}`;
}

/**
 * The bag holding the version's bytes (for a revisit, an earlier one than the record's), below
 * `archiveDir`: what a damaged payload file is reported by, ready for `oaibag verify`.
 */
export function holdingBag(archiveDir: string, version: PlanVersion, store?: AipStorage): string {
  const bagPath = version.parts[0]?.bagPath ?? version.bagPath;
  return store === undefined ? join(archiveDir, bagPath) : store.where(bagPath);
}

/**
 * The payload file holding the version's bytes: its first part, wherever the catalog's payload
 * index says the archive holds it (its own batch bag, or an earlier one for a revisit). Throws
 * Damage when the catalog names none or names an unsafe path.
 */
export function locatePayload(archiveDir: string, version: PlanVersion): PayloadSource {
  const part = version.parts[0];
  if (part === undefined) throw new Damage(`the catalog names no payload file for the version of ${version.datestamp}`);
  const name = payloadName(part);
  try {
    return { part, name, file: resolveArchivePath(archiveDir, name) };
  } catch (error) {
    throw new Damage(`the catalog's payload path ${name} is unsafe: ${(error as Error).message}`);
  }
}

/**
 * Opens the payload file without following a link. Throws Damage when it is missing, a symbolic
 * link or not a regular file (and then leaves nothing open), an I/O error otherwise.
 */
export async function openPayload(source: PayloadSource): Promise<FileHandle> {
  let handle: FileHandle;
  try {
    handle = await open(source.file, OPEN_PAYLOAD);
  } catch (error) {
    throw payloadOpenError(source, error);
  }
  try {
    if (!(await handle.stat()).isFile()) throw new Damage(`${source.name} is not a regular file`);
    return handle;
  } catch (error) {
    await handle.close().catch(() => undefined);
    throw error;
  }
}

/** {@link openPayload} in one synchronous step: the file descriptor (the caller closes it). */
export function openPayloadSync(source: PayloadSource): number {
  let fd: number;
  try {
    fd = openSync(source.file, OPEN_PAYLOAD);
  } catch (error) {
    throw payloadOpenError(source, error);
  }
  try {
    if (!fstatSync(fd).isFile()) throw new Damage(`${source.name} is not a regular file`);
    return fd;
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

/** Why a payload file could not be opened: Damage when it is missing or a link, else the I/O error itself. */
function payloadOpenError(source: PayloadSource, error: unknown): unknown {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOENT' || code === 'ENOTDIR') return new Damage(`${source.name} is missing`);
  if (code === 'ELOOP') return new Damage(`${source.name} is a symbolic link`);
  return error;
}

/**
 * The bytes of an open payload file, up to 1 MiB at a time (memory does not grow with file size),
 * hashed on the way. After the last chunk they are compared with the part's sha-256 and size
 * and, for a one-part version, with the version's: a mismatch throws Damage (so whoever takes
 * the chunks must not keep them until the end). Leaves the handle open.
 */
export async function* readVerified(handle: FileHandle, source: PayloadSource, version: PlanVersion): AsyncGenerator<Buffer, void, undefined> {
  const { part } = source;
  const hash = createHash('sha256');
  let size = 0;
  // A read buffer no larger than the file needs: fs allocates the whole buffer for every read, and
  // 1 MiB for each of a site's small files made the restore's garbage (and its RSS) grow.
  const highWaterMark = Math.min(1 << 20, Math.max(part.size + 1, 16 * 1024));
  for await (const chunk of handle.createReadStream({ highWaterMark, autoClose: false }) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    size += chunk.byteLength;
    yield chunk;
  }
  checkPayload(source, version, hash.digest('hex'), size);
}

/**
 * The bytes of a payload file on object storage, as {@link readVerified} gives those of an open
 * file: streamed (memory does not grow with file size), hashed on the way, checked after the
 * last chunk. A missing object is Damage; another read error is thrown as it is.
 */
export async function* readStoredVerified(store: AipStorage, source: PayloadSource, version: PlanVersion): AsyncGenerator<Buffer, void, undefined> {
  const hash = createHash('sha256');
  let size = 0;
  const stream: Readable = store.read(source.name);
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      hash.update(chunk);
      size += chunk.byteLength;
      yield chunk;
    }
  } catch (error) {
    throw payloadOpenError(source, error);
  } finally {
    stream.destroy();
  }
  checkPayload(source, version, hash.digest('hex'), size);
}

/**
 * The check every payload read ends with: the sha-256 and size of the bytes read against the
 * part's and, for a one-part version, the version's. Throws Damage on a mismatch.
 */
export function checkPayload(source: PayloadSource, version: PlanVersion, found: string, size: number): void {
  const { part, name } = source;
  if (found !== part.sha256) throw new Damage(`${name} does not match its sha-256`, part.sha256, found);
  if (size !== part.size) throw new Damage(`${name} does not match its size`, `${part.size} bytes`, `${size} bytes`);
  if (version.parts.length === 1 && (found !== version.sha256 || size !== version.size)) {
    throw new Damage(
      `${name} does not match the catalog's version (sha-256 ${version.sha256}, ${version.size} bytes)`,
      `${version.sha256} ${version.size} bytes`,
      `${found} ${size} bytes`,
    );
  }
}
