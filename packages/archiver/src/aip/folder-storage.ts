// The AIP storage (aip-storage.ts) as a folder on a disk: the archive's own folder, or any
// folder holding a bag (one unpacked into tmp/ by an import). Durable writes are
// archive/durable-file.ts's, placement is bag-placement.ts's; paths go through
// resolveArchivePath, so nothing outside the folder is ever read or written.
import { createReadStream } from 'node:fs';
import { lstat, mkdir, readdir, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { writeFileDurably } from '../archive/durable-file.js';
import { fsyncFolder } from '../archive/flush-to-disk.js';
import { resolveArchivePath } from '../archive/storage-path.js';
import type { SealedBag } from '../bag/sealed-bag.js';
import { ArchiverError, archiveIoError } from '../core/errors.js';
import type { AipStorage, ByteRange, StoredBag, StoredFile } from './aip-storage.js';
import { type Placement, type PlaceOptions, placeSealedBags } from './bag-placement.js';

/** The bags kept in the folder `root` (an archive's folder: `aips/…` below it). */
export function folderStorage(root: string): AipStorage {
  return new FolderStorage(root);
}

/** The bag in the folder `bagDir`, wherever it is (a bag of the archive, or one staged in tmp/). */
export function bagInFolder(bagDir: string): StoredBag {
  return { storage: folderStorage(dirname(bagDir)), bagPath: basename(bagDir) };
}

class FolderStorage implements AipStorage {
  constructor(private readonly root: string) {}

  where(path: string): string {
    return join(this.root, ...path.split('/'));
  }

  async putFile(path: string, content: string | Uint8Array | AsyncIterable<Uint8Array>): Promise<number> {
    const target = resolveArchivePath(this.root, path);
    const folder = dirname(target);
    const firstCreated = await mkdir(folder, { recursive: true }).catch((error: unknown) => {
      throw archiveIoError(error, `cannot create ${folder}`, folder);
    });
    const bytes = await writeFileDurably(target, content);
    // writeFileDurably flushed the file's folder; a folder created for it is durable once its
    // parent's entries are.
    if (firstCreated !== undefined) {
      const parents = new Set<string>();
      for (let created = folder; ; created = dirname(created)) {
        parents.add(dirname(created));
        if (created === firstCreated || dirname(created) === created) break;
      }
      for (const parent of parents)
        await fsyncFolder(parent).catch((error: unknown) => Promise.reject(archiveIoError(error, `cannot flush ${parent}`, parent)));
    }
    return bytes;
  }

  read(path: string, range?: ByteRange): Readable {
    const file = resolveArchivePath(this.root, path);
    if (range === undefined) return createReadStream(file);
    if (range.length <= 0) return Readable.from([]);
    return createReadStream(file, { start: range.offset, end: range.offset + range.length - 1 });
  }

  async listBag(bagPath: string): Promise<StoredFile[]> {
    resolveArchivePath(this.root, bagPath);
    const found: StoredFile[] = [];
    const walk = async (dir: string, prefix: string): Promise<void> => {
      for (const entry of await readdir(dir, { withFileTypes: true })) {
        const path = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
        const full = join(dir, entry.name);
        if (entry.isDirectory()) await walk(full, path);
        else if (entry.isFile()) found.push({ path, size: (await lstat(full)).size });
        else throw new ArchiverError('ERR_ARCHIVE_DAMAGED', `${full} is neither a file nor a folder: a bag holds nothing else`, { path: full });
      }
    };
    await walk(this.where(bagPath), '');
    return found.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  taken(bagPath: string): Promise<boolean> {
    return stat(resolveArchivePath(this.root, bagPath)).then(
      () => true,
      () => false,
    );
  }

  placeBags(bags: readonly SealedBag[], options: PlaceOptions = {}): Promise<Placement[]> {
    return placeSealedBags(this.root, bags, options);
  }
}
