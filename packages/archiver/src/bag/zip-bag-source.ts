// A serialized bag (`oaibag export --bags`) as a bag source, read in place with yauzl, never
// unpacked: the bag is the ZIP's one top-level folder. Its central directory is read once, when
// it is opened; what is wrong with the ZIP as a container of one bag (an encrypted entry, more
// than one top-level name, a file beside the folder) is said then, as data; the rest is the
// verifier's, as for a folder.
import yauzl from 'yauzl';
import { ArchiverError } from '../core/errors.js';
import { openZipEntry, readZipEntries, zipEntryFileType } from '../core/zip-entries.js';
import type { BagEntry, BagEntryType, BagSource } from './bag-source.js';

/** What is wrong with the ZIP itself, whatever the bag inside it. */
export type ZipContainerProblem =
  /** `entry` (its whole name in the ZIP, the `index`th of its directory) is encrypted. */
  | { kind: 'encrypted'; entry: string; index: number }
  /** The ZIP unpacks to these top-level names, not to one folder. */
  | { kind: 'folders'; names: string[] }
  /** A file sits beside the folder, outside it. */
  | { kind: 'outside' };

export interface ZipBag {
  /** The ZIP file. */
  file: string;
  /** The one folder it unpacks to, or null (the bag is then read from the ZIP's top). */
  folder: string | null;
  /** Its file entries (folder entries not counted), inside the folder or not. */
  files: number;
  /** What is wrong with the container, in the order of its entries. */
  problems: ZipContainerProblem[];
  /** The bag inside. */
  source: BagSource;
  /** Where the entry at the bag path `path` is in the ZIP's directory (for the order of messages); -1 when it is not there. */
  indexOf(path: string): number;
  close(): void;
}

const ZIP_OPTIONS = { lazyEntries: true, autoClose: false, strictFileNames: true, validateEntrySizes: true } as const;

/**
 * Opens the ZIP at `file` and reads its central directory. A ZIP needs no folder entries (export
 * writes none), so a bag's empty payload folder cannot be told from a missing one: `data/` is
 * taken as present. ERR_ARCHIVE_DAMAGED when the file is not a ZIP yauzl reads.
 */
export async function openZipBag(file: string): Promise<ZipBag> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.open(file, ZIP_OPTIONS, (error, opened) => {
      if (error) reject(new ArchiverError('ERR_ARCHIVE_DAMAGED', `${file}: not a ZIP file oaibag reads (${error.message})`, { path: file }));
      else resolve(opened);
    }),
  );
  try {
    const all: yauzl.Entry[] = [];
    for await (const entry of readZipEntries(zip)) all.push(entry);
    const problems: ZipContainerProblem[] = [];
    const tops = new Set<string>();
    for (const [index, entry] of all.entries()) {
      if ((entry.generalPurposeBitFlag & 0x1) !== 0) problems.push({ kind: 'encrypted', entry: entry.fileName, index });
      tops.add(entry.fileName.split('/')[0]!);
    }
    const folder = tops.size === 1 ? [...tops][0]! : null;
    if (folder === null) problems.push({ kind: 'folders', names: [...tops] });
    const fileEntries = all.filter((entry) => !entry.fileName.endsWith('/'));
    if (fileEntries.some((entry) => !entry.fileName.includes('/'))) problems.push({ kind: 'outside' });

    const prefix = folder === null ? '' : `${folder}/`;
    const listing: BagEntry[] = [];
    const byPath = new Map<string, yauzl.Entry>();
    const index = new Map<string, number>();
    const folders = new Set<string>();
    const addFolder = (path: string) => {
      if (path === '' || folders.has(path)) return;
      addFolder(path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '');
      folders.add(path);
      listing.push({ path, type: 'folder', size: 0 });
    };
    addFolder('data');
    all.forEach((entry, at) => {
      if (!entry.fileName.startsWith(prefix) || entry.fileName === prefix) return;
      const path = entry.fileName.slice(prefix.length).replace(/\/$/, '');
      index.set(path, at);
      if (entry.fileName.endsWith('/')) return addFolder(path);
      addFolder(path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '');
      listing.push({ path, type: entryType(entry), size: entry.uncompressedSize });
      byPath.set(path, entry);
    });

    return {
      file,
      folder,
      files: fileEntries.length,
      problems,
      source: {
        list: async () => listing,
        async *open(path) {
          const entry = byPath.get(path);
          if (entry === undefined) throw Object.assign(new Error(`no entry ${prefix}${path} in the ZIP`), { code: 'ENOENT' });
          yield* await openZipEntry(zip, entry);
        },
      },
      indexOf: (path) => index.get(path) ?? -1,
      close: () => zip.close(),
    };
  } catch (error) {
    zip.close();
    throw error;
  }
}

function entryType(entry: yauzl.Entry): BagEntryType {
  const type = zipEntryFileType(entry);
  return type === 'symbolic link' ? 'link' : type === 'file' || type === 'folder' ? 'file' : 'other';
}
