// A bag of any AIP storage as the BagIt verifier reads it (bag/bag-source.ts): its files as the
// storage lists them, each folder they imply listed before what it holds, the bytes read
// through the storage. On object storage that is the commit record's list, so what the
// verifier checks is what was committed.
import type { BagEntry, BagSource } from '../bag/bag-source.js';
import type { StoredBag } from './aip-storage.js';

export function storedBagSource({ storage, bagPath }: StoredBag): BagSource {
  return {
    async list(): Promise<BagEntry[]> {
      const entries = new Map<string, BagEntry>();
      for (const file of await storage.listBag(bagPath)) {
        const segments = file.path.split('/');
        for (let depth = 1; depth < segments.length; depth++) {
          const folder = segments.slice(0, depth).join('/');
          if (!entries.has(folder)) entries.set(folder, { path: folder, type: 'folder', size: 0 });
        }
        entries.set(file.path, { path: file.path, type: 'file', size: file.size });
      }
      // Code-unit order of whole paths puts a folder before its files; within a folder, names
      // keep their code-unit order.
      return [...entries.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    },
    open(path: string): AsyncIterable<Uint8Array> {
      return storage.read(`${bagPath}/${path}`);
    },
  };
}
