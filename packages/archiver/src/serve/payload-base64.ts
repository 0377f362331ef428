// A payload's bytes as base64 lines for a By-Value Resource of `oaibag serve`, streamed from the
// bag and checked on the way: a file that is not the size and SHA-256 the catalog holds cuts the
// response off (the harvester sees a broken page and asks again; `oaibag verify` names the
// damage), so a record is never sent with bytes its digest does not match. On an archive whose
// bags are on object storage the bytes are read through the store, with the same check.
import { createHash } from 'node:crypto';
import { closeSync, openSync, readSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { encodeBase64Lines } from '@oaibag/didl';
import type { AipStorage } from '../aip/aip-storage.js';
import type { PayloadLocation } from '../catalog/catalog-types.js';
import { ArchiverError } from '../core/errors.js';

// A multiple of 57 bytes (one 76-column line): the encoder keeps no remainder between chunks.
const READ_CHUNK = 57 * 4600;

export function payloadBase64(archiveDir: string, payload: PayloadLocation, store?: AipStorage): AsyncGenerator<string> {
  return encodeBase64Lines(store === undefined ? checkedBytes(archiveDir, payload) : checkedStoredBytes(store, payload));
}

/** Payloads up to this size are read with one blocking read (see checkedBytes). */
const BLOCKING_READ_MAX = READ_CHUNK;

/**
 * The file's bytes, checked. A payload of at most BLOCKING_READ_MAX bytes (a site's pages and
 * images, most of an archive) is read whole with one blocking read of one byte more (a regular
 * file's short read is its end): on this project's 2-core machine an open, read and close
 * through libuv's thread pool cost about 250 µs of CPU a file against 25 µs blocking, the
 * largest cost of a served ListRecords page; the event loop waits a few µs per file on a local
 * disk. A larger payload is read through a file handle, READ_CHUNK at a time, without blocking.
 */
async function* checkedBytes(archiveDir: string, payload: PayloadLocation): AsyncGenerator<Uint8Array> {
  const file = join(archiveDir, ...payload.bagPath.split('/'), ...payload.path.split('/'));
  const hash = createHash('sha256');
  let size = 0;
  if (payload.size <= BLOCKING_READ_MAX) {
    const bytes = readSmall(file, payload.size);
    hash.update(bytes);
    size = bytes.length;
    yield bytes;
  } else {
    const handle = await open(file, 'r');
    try {
      for (;;) {
        const want = Math.min(READ_CHUNK, payload.size - size + 1);
        const { bytesRead, buffer } = await handle.read(Buffer.allocUnsafe(want), 0, want, null);
        const chunk = buffer.subarray(0, bytesRead);
        hash.update(chunk);
        size += bytesRead;
        if (bytesRead > 0) yield chunk;
        if (bytesRead < want || size > payload.size) break;
      }
    } finally {
      await handle.close();
    }
  }
  if (size !== payload.size || hash.digest('hex') !== payload.sha256) {
    throw new ArchiverError('ERR_ARCHIVE_DAMAGED', `${file} is not the payload the catalog holds (size or SHA-256 differ): run oaibag verify`, { path: file });
  }
}

/**
 * The object's bytes, checked as checkedBytes checks a file's, in chunks of READ_CHUNK (the
 * encoder keeps no remainder between them): at most one byte more than the catalog's size is
 * asked of the store, so a larger object is told without reading it whole.
 */
async function* checkedStoredBytes(store: AipStorage, payload: PayloadLocation): AsyncGenerator<Uint8Array> {
  const name = `${payload.bagPath}/${payload.path}`;
  const hash = createHash('sha256');
  let size = 0;
  let pending: Buffer = Buffer.alloc(0);
  try {
    for await (const chunk of store.read(name, { offset: 0, length: payload.size + 1 }) as AsyncIterable<Buffer>) {
      hash.update(chunk);
      size += chunk.byteLength;
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      while (pending.length >= READ_CHUNK) {
        yield pending.subarray(0, READ_CHUNK);
        pending = pending.subarray(READ_CHUNK);
      }
    }
  } catch (error) {
    throw new ArchiverError('ERR_ARCHIVE_DAMAGED', `${store.where(name)} cannot be read: ${(error as Error).message}`, {
      cause: error,
      path: store.where(name),
    });
  }
  if (size !== payload.size || hash.digest('hex') !== payload.sha256) {
    throw new ArchiverError('ERR_ARCHIVE_DAMAGED', `${store.where(name)} is not the payload the catalog holds (size or SHA-256 differ): run oaibag verify`, {
      path: store.where(name),
    });
  }
  if (pending.length > 0) yield pending;
}

/** Up to `size + 1` bytes of a file (more than `size` tells it is larger than the catalog says). */
function readSmall(file: string, size: number): Buffer {
  const fd = openSync(file, 'r');
  try {
    const buffer = Buffer.allocUnsafe(size + 1);
    return buffer.subarray(0, readSync(fd, buffer, 0, buffer.length, null));
  } finally {
    closeSync(fd);
  }
}
