import { createHash } from 'node:crypto';
import { closeSync, readSync } from 'node:fs';
import type { ItemHeader, ItemRecord } from '@oaibag/oai-pmh';
import type { IndexedFile } from '../core/model.js';
import { openIndexedDescriptor } from '../site/open-indexed-file.js';
import type { SiteIndexer } from '../site/site-indexer.js';
import type { MetadataFormat } from './metadata-formats.js';

// A multiple of 57 bytes (one 76-column base64 line): the encoder then keeps no remainder
// to copy between chunks.
const READ_CHUNK = 57 * 4600;

/**
 * One file's record in `format`, for the provider core to write. The file is opened and checked
 * against the index first, so the record describes the bytes on disk now; a file that changed
 * since the index looked is re-indexed and given as it is now (with its new datestamp), a file
 * that is gone as a deleted header. The open file is closed by the record's `close`.
 */
export async function openRecord(
  indexer: SiteIndexer,
  listed: IndexedFile,
  header: (file: IndexedFile) => ItemHeader,
  format: MetadataFormat,
  byValueMax: number,
  /** The record's `about` containers (rights), '' for none; deleted records carry none. */
  about: string,
): Promise<ItemRecord> {
  if (listed.deleted) return { header: header(listed) };
  const opened = await openIndexedDescriptor(indexer, listed);
  if (!opened) {
    const now = indexer.index.byPath(listed.path) ?? listed;
    return { header: header({ ...now, deleted: true }) };
  }
  const { file, fd } = opened;
  const byValue = format.carriesContent && file.size <= byValueMax ? readChecked(indexer, fd, file) : undefined;
  return {
    header: header(file),
    metadata: format.write({ file, identifier: header(file).identifier, ...(byValue ? { byValue } : {}) }),
    about,
    close: () => closeSync(fd),
  };
}

/**
 * The file's bytes, hashed on the way. If they turn out not to be the indexed version
 * (written to in place while being sent), the index is refreshed and the stream fails:
 * the response is cut off rather than a record sent whose digest does not match its bytes.
 */
async function* readChecked(indexer: SiteIndexer, fd: number, file: IndexedFile): AsyncGenerator<Uint8Array> {
  const hash = createHash('sha256');
  // One buffer per record: the base64 encoder is done with a chunk (it copies any remainder)
  // before it asks for the next one.
  const buffer = Buffer.allocUnsafe(Math.min(READ_CHUNK, file.size));
  let position = 0;
  while (position < file.size) {
    // Synchronous, like the open (see openIndexedDescriptor): a chunk of at most 262 KB.
    const bytesRead = readSync(fd, buffer, 0, Math.min(buffer.length, file.size - position), position);
    if (bytesRead === 0) break;
    const chunk = buffer.subarray(0, bytesRead);
    hash.update(chunk);
    position += bytesRead;
    yield chunk;
  }
  if (position !== file.size || hash.digest('hex') !== file.sha256) {
    await indexer.refresh(file.path);
    throw new Error(`${file.path} changed while it was being sent`);
  }
}
