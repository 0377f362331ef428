import { closeSync, constants, fstatSync, openSync } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { join } from 'node:path';
import type { IndexedFile } from '../core/model.js';
import { sameSignature, statSignature } from './inspect-file.js';
import type { SiteIndexer } from './site-indexer.js';

export interface OpenedDescriptor {
  /** The index entry the descriptor matches (refreshed when the file had changed). */
  file: IndexedFile;
  /** A plain descriptor, read with `readSync` and closed with `closeSync` by the caller. */
  fd: number;
}

export interface OpenedFile {
  /** The index entry the handle matches (refreshed when the file had changed). */
  file: IndexedFile;
  handle: FileHandle;
}

const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;
const ATTEMPTS = 3;

/**
 * Opens a live indexed file for serving and makes sure the descriptor is the version the
 * index describes (same device, inode, size, mtime and ctime): what is sent then matches
 * the headers and digest the records promise. When the file changed since the index last
 * looked, the index is refreshed first (which may give it a new datestamp, or find it gone
 * or swapped for a link out of the root) and the file opened again. Null: nothing to serve.
 */
export async function openIndexedFile(indexer: SiteIndexer, file: IndexedFile): Promise<OpenedFile | null> {
  let current: IndexedFile | null = file;
  for (let attempt = 0; attempt < ATTEMPTS && current && !current.deleted; attempt++) {
    let handle: FileHandle | undefined;
    try {
      handle = await open(join(indexer.root.real, current.path), OPEN_FLAGS);
      const stats = await handle.stat({ bigint: true });
      if (stats.isFile() && sameSignature(current, statSignature(stats))) return { file: current, handle };
    } catch {
      // Gone or unreadable: the refresh below says what the index should think.
    }
    await handle?.close();
    current = await indexer.refresh(current.path);
  }
  return null;
}

/**
 * {@link openIndexedFile} with a plain descriptor, opened and checked with synchronous calls:
 * a ListRecords page opens a file per record, and for a file the kernel has cached these are a
 * few microseconds each, where each promise went through the thread pool and back (four round
 * trips a record, on the cores the harvester shares on one machine).
 */
export async function openIndexedDescriptor(indexer: SiteIndexer, file: IndexedFile): Promise<OpenedDescriptor | null> {
  let current: IndexedFile | null = file;
  for (let attempt = 0; attempt < ATTEMPTS && current && !current.deleted; attempt++) {
    let fd: number | undefined;
    try {
      fd = openSync(join(indexer.root.real, current.path), OPEN_FLAGS);
      const stats = fstatSync(fd, { bigint: true });
      if (stats.isFile() && sameSignature(current, statSignature(stats))) return { file: current, fd };
    } catch {
      // Gone or unreadable: the refresh below says what the index should think.
    }
    if (fd !== undefined) closeSync(fd);
    current = await indexer.refresh(current.path);
  }
  return null;
}
