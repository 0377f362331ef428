// A delivery that is a folder, screened before anything is returned: walked with lstat (no link
// is ever followed), every name, type and cap checked; then every file read once for its
// sha-256. Files are opened with O_NOFOLLOW | O_NONBLOCK and must be, by fstat, the regular file
// the walk saw (same device and inode): a file or folder swapped for a link, or for a fifo,
// after the walk is refused, never followed or waited on. A file whose mode gives nobody read
// permission is withheld (read-permission.ts): counted against the caps, never opened.
import { createHash } from 'node:crypto';
import type { BigIntStats } from 'node:fs';
import { constants } from 'node:fs';
import { lstat, open, opendir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { ArchiverError } from '../core/errors.js';
import { DeliveryCaps, type DeliveryLimits, grouped } from './delivery-limits.js';
import { byName, type Delivery, type DeliveryEntry, type DeliveryRefusal, deliveryRefusal, quoteName, type WithheldEntry } from './delivery-model.js';
import { NameTree, nameProblem } from './delivery-names.js';
import { checkedBytes, errorText, KeepFailed, measureBytes, READ_CHUNK_BYTES, type ScreeningHooks } from './entry-bytes.js';
import { nobodyMayRead } from './read-permission.js';

/** A file as the walk found it. */
interface FolderFile {
  name: string;
  size: number;
  mtimeNs: bigint;
  dev: bigint;
  ino: bigint;
}

const OPEN_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);

export async function openFolderDelivery(path: string, limits: DeliveryLimits, hooks: ScreeningHooks = {}): Promise<Delivery> {
  const { progress, keep } = hooks;
  const refuse = deliveryRefusal(path);
  const walked = await walk(path, limits, refuse);
  const files = walked.files.sort(byName);
  hooks.listed?.({ kind: 'folder', files });
  const total = files.reduce((sum, file) => sum + file.size, 0);
  let done = 0;
  const onBytes = progress && ((bytes: number) => progress((done += bytes), total));
  progress?.(0, total);

  const entries: DeliveryEntry[] = [];
  const located = new Map<string, { entry: DeliveryEntry; file: FolderFile }>();
  const manifest = createHash('sha256');
  for (const file of files) {
    const measured = await measureBytes(await openFile(path, file, refuse), file.size, onBytes, keep?.(file.name, file.size)).catch((error: unknown) => {
      if (error instanceof KeepFailed) throw error.failure;
      throw error instanceof ArchiverError ? error : refuse('ERR_IMPORT_DAMAGED', `entry ${quoteName(file.name)} cannot be read: ${errorText(error)}`, error);
    });
    if (measured.overflow || measured.size !== file.size) {
      throw refuse(
        'ERR_IMPORT_DAMAGED',
        `entry ${quoteName(file.name)} changed while it was screened: ${grouped(file.size)} bytes when listed, ${measured.overflow ? 'more' : grouped(measured.size)} when read`,
      );
    }
    const entry = { name: file.name, size: file.size, mtimeNs: file.mtimeNs, sha256: measured.sha256 };
    entries.push(entry);
    located.set(file.name, { entry, file });
    manifest.update(`${entry.sha256}  ${entry.name}\n`);
  }

  return {
    kind: 'folder',
    path,
    name: basename(path),
    size: total,
    sha256: manifest.digest('hex'),
    entries,
    withheld: walked.withheld.sort(byName),
    open(entry) {
      const found = located.get(entry.name);
      if (!found) throw new Error(`${path}: no entry ${quoteName(entry.name)}`);
      return checkedBytes(found.entry, () => openFile(path, found.file, refuse), refuse);
    },
    async close() {},
  };
}

/** Every file under `root`, each name, type and size checked as it is found; those nobody may read apart. */
async function walk(root: string, limits: DeliveryLimits, refuse: DeliveryRefusal): Promise<{ files: FolderFile[]; withheld: WithheldEntry[] }> {
  const caps = new DeliveryCaps(limits, refuse);
  const names = new NameTree();
  const files: FolderFile[] = [];
  const withheld: WithheldEntry[] = [];
  const folders = ['']; // a stack, not recursion: depth is the delivery's to choose
  while (folders.length > 0) {
    const folder = folders.pop()!;
    const what = folder === '' ? 'its folder' : `folder ${quoteName(folder)}`;
    try {
      // opendir streams the names: a folder of millions of files is not listed in memory at once.
      for await (const dirent of await opendir(join(root, folder))) {
        const name = folder === '' ? dirent.name : `${folder}/${dirent.name}`;
        const stats = await lstat(join(root, name), { bigint: true }).catch((error: unknown) => {
          throw refuse('ERR_IMPORT_DAMAGED', `entry ${quoteName(name)} cannot be read: ${errorText(error)}`, error);
        });
        const isFolder = stats.isDirectory();
        const problem = nameProblem(name) ?? typeProblem(stats) ?? names.add(name, isFolder);
        if (problem) throw refuse('ERR_IMPORT_UNSAFE', `entry ${quoteName(name)} ${problem}`);
        caps.countEntry(name);
        if (isFolder) {
          folders.push(name);
          continue;
        }
        caps.addFile(name, Number(stats.size));
        if (nobodyMayRead(stats.mode)) withheld.push({ name, size: Number(stats.size) });
        else files.push({ name, size: Number(stats.size), mtimeNs: stats.mtimeNs, dev: stats.dev, ino: stats.ino });
      }
    } catch (error) {
      if (error instanceof ArchiverError) throw error;
      throw refuse('ERR_IMPORT_DAMAGED', `${what} cannot be read: ${errorText(error)}`, error);
    }
  }
  return { files, withheld };
}

function typeProblem(stats: BigIntStats): string | null {
  if (stats.isFile() || stats.isDirectory()) return null;
  if (stats.isSymbolicLink()) return 'is a symbolic link';
  if (stats.isFIFO()) return 'is a fifo, not a regular file';
  if (stats.isSocket()) return 'is a socket, not a regular file';
  if (stats.isBlockDevice() || stats.isCharacterDevice()) return 'is a device, not a regular file';
  return 'is not a regular file';
}

/** The file's bytes, once it is checked to be the very file the walk found. */
async function openFile(root: string, file: FolderFile, refuse: DeliveryRefusal): Promise<AsyncIterable<Uint8Array>> {
  const handle = await open(join(root, ...file.name.split('/')), OPEN_FLAGS);
  try {
    const stats = await handle.stat({ bigint: true });
    if (!stats.isFile() || stats.dev !== file.dev || stats.ino !== file.ino) {
      throw refuse('ERR_IMPORT_DAMAGED', `entry ${quoteName(file.name)} changed while the delivery was read: it is no longer the file that was listed`);
    }
  } catch (error) {
    await handle.close();
    throw error;
  }
  return handle.createReadStream({ highWaterMark: READ_CHUNK_BYTES });
}
