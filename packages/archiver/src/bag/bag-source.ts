// Where the bytes of a bag come from, for the verifier (bag-verifier.ts): a folder on disk
// (below) or a ZIP read in place (zip-bag-source.ts). A source lists what it holds and opens a
// file as a stream; the BagIt rules are the verifier's alone, the same for both.
import { createReadStream } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

/** What an entry is: a symbolic link or a special file is listed, never followed or opened. */
export type BagEntryType = 'file' | 'folder' | 'link' | 'other';

export interface BagEntry {
  /** Bag-relative, `/`-separated, as stored (not normalised): `data/a.txt`, `bag-info.txt`. */
  path: string;
  type: BagEntryType;
  /** Bytes of a file (0 for a folder). */
  size: number;
}

export interface BagSource {
  /** Every entry of the bag, a folder before what it holds, each folder's names in code-unit order (a ZIP: in its own order). */
  list(): Promise<BagEntry[]>;
  /** The bytes of the file at `path`; a failure to open or read it is thrown while they are read. */
  open(path: string): AsyncIterable<Uint8Array>;
  /**
   * The digest (lowercase hex) of the file at `path` with `algorithm`, when the source measured
   * it already (a bag unpacked and hashed in one pass): the verifier then does not read the file.
   */
  knownDigest?(path: string, algorithm: string): string | undefined;
}

/** Bytes per read of a file being hashed. */
const READ_CHUNK_BYTES = 1 << 20;

/**
 * The bag in the folder `bagDir`, walked with lstat (no link followed). A top-level folder that
 * cannot be listed is an empty bag; a failure deeper in is thrown. `digests` are digests known
 * already, by path then algorithm.
 */
export function folderBagSource(bagDir: string, digests?: ReadonlyMap<string, ReadonlyMap<string, string>>): BagSource {
  return {
    async list() {
      const entries: BagEntry[] = [];
      for (const name of sortedNames(await readdir(bagDir).catch(() => []))) await walk(bagDir, name, entries);
      return entries;
    },
    open(path) {
      return createReadStream(join(bagDir, ...path.split('/')), { highWaterMark: READ_CHUNK_BYTES });
    },
    ...(digests ? { knownDigest: (path: string, algorithm: string) => digests.get(path)?.get(algorithm) } : {}),
  };
}

async function walk(bagDir: string, path: string, into: BagEntry[]): Promise<void> {
  const info = await lstat(join(bagDir, path));
  const type: BagEntryType = info.isSymbolicLink() ? 'link' : info.isFile() ? 'file' : info.isDirectory() ? 'folder' : 'other';
  into.push({ path, type, size: type === 'file' ? info.size : 0 });
  if (type !== 'folder') return;
  for (const name of sortedNames(await readdir(join(bagDir, path)))) await walk(bagDir, `${path}/${name}`, into);
}

/** Names in code-unit order, so the problems of a bag come in the same order on every file system. */
function sortedNames(names: string[]): string[] {
  return names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}
