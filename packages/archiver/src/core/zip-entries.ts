// Reading a ZIP with yauzl one entry at a time, as promises: shared by `oaibag verify --bag
// FILE.zip` (verify/) and `oaibag import` (import/), which sit on different levels, hence here.
import type { Readable } from 'node:stream';
import type { Entry, ZipFile } from 'yauzl';

/** The central directory's entries, one at a time (the ZipFile must be opened with `lazyEntries: true`). */
export async function* readZipEntries(zip: ZipFile): AsyncGenerator<Entry> {
  for (;;) {
    const entry = await new Promise<Entry | null>((resolve, reject) => {
      const onEntry = (found: Entry) => {
        zip.off('end', onEnd);
        zip.off('error', onError);
        resolve(found);
      };
      const onEnd = () => {
        zip.off('entry', onEntry);
        zip.off('error', onError);
        resolve(null);
      };
      const onError = (error: Error) => {
        zip.off('entry', onEntry);
        zip.off('end', onEnd);
        reject(error);
      };
      zip.once('entry', onEntry);
      zip.once('end', onEnd);
      zip.once('error', onError);
      zip.readEntry();
    });
    if (entry === null) return;
    yield entry;
  }
}

/** The entry's bytes, decompressed (yauzl checks their count when the ZipFile has `validateEntrySizes`). */
export function openZipEntry(zip: ZipFile, entry: Entry): Promise<Readable> {
  return new Promise((resolve, reject) => zip.openReadStream(entry, (error, stream) => (error ? reject(error) : resolve(stream))));
}

/**
 * What the entry is by the file type bits of its unix mode (the high 16 bits of the external
 * attributes), whatever system made it: Info-ZIP's unzip creates a symbolic link for S_IFLNK.
 */
export function zipEntryFileType(entry: Entry): 'file' | 'folder' | 'symbolic link' | 'fifo' | 'socket' | 'device' {
  switch ((entry.externalFileAttributes >>> 16) & 0o170000) {
    case 0o040000:
      return 'folder';
    case 0o120000:
      return 'symbolic link';
    case 0o010000:
      return 'fifo';
    case 0o140000:
      return 'socket';
    case 0o020000:
    case 0o060000:
      return 'device';
    default: // S_IFREG, no unix mode at all (a ZIP made elsewhere), or a type unzip does not know
      return 'file';
  }
}
