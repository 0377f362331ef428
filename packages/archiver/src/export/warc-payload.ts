// The payload bytes `oaibag export --warc` writes, read where the catalog's payload index says
// the archive holds them (the version's own bag, or an earlier one for bytes it revisits) and
// checked on the way: their SHA-256 and size against the payload file's, and, for a one-part
// version, the version's. In a folder the file is opened without following a link and must be a
// regular file; on object storage it is read through the archive's AipStorage. Damage is one
// ArchiverError naming the bag, the resource and the file: the export stops and writes nothing.
import { createHash } from 'node:crypto';
import { closeSync, constants as fsConstants, fstatSync, openSync, readSync } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { AipStorage } from '../aip/aip-storage.js';
import { resolveArchivePath } from '../archive/storage-path.js';
import type { WarcVersionDetails } from '../catalog/warc-queries.js';
import { ArchiverError, archiveIoError } from '../core/errors.js';

/** Read at a time (and no more than the file needs: fs allocates the whole buffer for each read). */
const CHUNK_BYTES = 1 << 20;

/** Where the export reads payload files: the archive folder, and its object store when the bags are there. */
export interface PayloadPlace {
  archiveDir: string;
  store: AipStorage | undefined;
}

/** The payload file of a version, as messages name it: `<bag>/data/…`. */
export function payloadName(version: WarcVersionDetails): string {
  return `${version.payload.bagPath}/${version.payload.path}`;
}

/** The one-line error of a payload file that fails its check (or cannot be found). */
export function damagedPayload(place: PayloadPlace, version: WarcVersionDetails, why: string, cause?: unknown): ArchiverError {
  const bag = place.store === undefined ? join(place.archiveDir, ...version.payload.bagPath.split('/')) : place.store.where(version.payload.bagPath);
  return new ArchiverError('ERR_ARCHIVE_DAMAGED', `damaged bag ${bag} (${version.identifier}): ${why}`, {
    cause,
    path: bag,
    hint: 'nothing was exported; oaibag verify names every version relying on that file',
  });
}

/**
 * The bytes of the version's first payload file, up to 1 MiB at a time, hashed on the way and
 * checked after the last chunk (so whoever takes the chunks must not keep them as final until
 * the end). Throws the damage error, or ERR_ARCHIVE_IO for another read error.
 */
export async function* readPayload(place: PayloadPlace, version: WarcVersionDetails): AsyncGenerator<Buffer, void, undefined> {
  const name = payloadName(version);
  const hash = createHash('sha256');
  let size = 0;
  const fail = (error: unknown): ArchiverError => openError(place, version, error);
  let handle: FileHandle | undefined;
  let stream: Readable;
  try {
    if (place.store === undefined) {
      let file: string;
      try {
        file = resolveArchivePath(place.archiveDir, name);
      } catch (error) {
        throw damagedPayload(place, version, `the catalog's payload path ${name} is unsafe: ${(error as Error).message}`, error);
      }
      handle = await open(file, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
      if (!(await handle.stat()).isFile()) throw damagedPayload(place, version, `${name} is not a regular file`);
      const highWaterMark = Math.min(CHUNK_BYTES, Math.max(version.payload.size + 1, 16 * 1024));
      stream = handle.createReadStream({ highWaterMark, autoClose: false });
    } else stream = place.store.read(name);
  } catch (error) {
    await handle?.close().catch(() => undefined);
    throw fail(error);
  }
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      hash.update(chunk);
      size += chunk.byteLength;
      yield chunk;
    }
  } catch (error) {
    throw fail(error);
  } finally {
    stream.destroy();
    await handle?.close().catch(() => undefined);
  }
  checkPayload(place, version, hash.digest('hex'), size);
}

/**
 * The whole payload of a version (one that fits in memory), checked as {@link readPayload}
 * checks it. In a folder it is read with synchronous calls: four system calls and no stream for
 * the small files most versions are (they waited on the thread pool one at a time before).
 */
export async function readWholePayload(place: PayloadPlace, version: WarcVersionDetails): Promise<Buffer> {
  if (place.store !== undefined) {
    const chunks: Buffer[] = [];
    for await (const chunk of readPayload(place, version)) chunks.push(chunk);
    return Buffer.concat(chunks);
  }
  const name = payloadName(version);
  let file: string;
  try {
    file = resolveArchivePath(place.archiveDir, name);
  } catch (error) {
    throw damagedPayload(place, version, `the catalog's payload path ${name} is unsafe: ${(error as Error).message}`, error);
  }
  let fd: number;
  try {
    fd = openSync(file, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
  } catch (error) {
    throw openError(place, version, error);
  }
  try {
    if (!fstatSync(fd).isFile()) throw damagedPayload(place, version, `${name} is not a regular file`);
    // One byte more than the catalog says: a longer file is found without a second read.
    const buffer = Buffer.allocUnsafe(version.payload.size + 1);
    let size = 0;
    for (;;) {
      const read = readSync(fd, buffer, size, buffer.length - size, null);
      if (read === 0) break;
      size += read;
      if (size === buffer.length) break;
    }
    const bytes = buffer.subarray(0, size);
    checkPayload(place, version, createHash('sha256').update(bytes).digest('hex'), size);
    return bytes;
  } catch (error) {
    throw openError(place, version, error);
  } finally {
    closeSync(fd);
  }
}

/** A read error as the export reports it: damage for a missing file or a link, ERR_ARCHIVE_IO otherwise. */
function openError(place: PayloadPlace, version: WarcVersionDetails, error: unknown): ArchiverError {
  if (error instanceof ArchiverError) return error;
  const name = payloadName(version);
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOENT' || code === 'ENOTDIR') return damagedPayload(place, version, `${name} is missing`, error);
  if (code === 'ELOOP') return damagedPayload(place, version, `${name} is a symbolic link`, error);
  return archiveIoError(error, `cannot read ${name}`);
}

/** The check every read ends with: the bytes' SHA-256 and size against the payload file's and, for a one-part version, the version's. */
function checkPayload(place: PayloadPlace, version: WarcVersionDetails, found: string, size: number): void {
  const name = payloadName(version);
  const { payload } = version;
  if (found !== payload.sha256) throw damagedPayload(place, version, `${name} does not match its sha-256`);
  if (size !== payload.size) throw damagedPayload(place, version, `${name} does not match its size (${payload.size} bytes)`);
  if (version.payloadFiles === 1 && (found !== version.sha256 || size !== version.size)) {
    throw damagedPayload(place, version, `${name} does not match the catalog's version (sha-256 ${version.sha256}, ${version.size} bytes)`);
  }
}
