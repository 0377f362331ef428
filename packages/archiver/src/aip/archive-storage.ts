// The AIP storage of an archive: its folder (aips/ below it), or the object store the folder
// records (archive/archive-locations.ts), opened, probed and closed here for a run.
import { storeLocation } from '../archive/archive-locations.js';
import type { AipStorage } from './aip-storage.js';
import { folderStorage } from './folder-storage.js';
import { S3Storage } from './s3-storage.js';

export interface OpenedStorage {
  storage: AipStorage;
  /** The store's URL when the bags are on object storage, else undefined. */
  objectStore: string | undefined;
  close(): void;
}

export interface OpenStorageOptions {
  /** Only reads bags (restore, verify, serve, export): the store is not probed, nothing is written to it. */
  reading?: boolean;
}

export async function openArchiveStorage(archiveDir: string, options: OpenStorageOptions = {}): Promise<OpenedStorage> {
  const location = storeLocation(archiveDir);
  if (location === undefined) return { storage: folderStorage(archiveDir), objectStore: undefined, close: () => {} };
  const storage = options.reading === true ? await S3Storage.openForReading(location) : await S3Storage.open(location);
  return { storage, objectStore: location.url, close: () => storage.close() };
}
