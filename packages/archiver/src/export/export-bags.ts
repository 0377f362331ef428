// `oaibag export --bags`: every catalogued batch bag serialized as one ZIP (serialize-bag.ts),
// with a SHA256SUMS file beside them so that a partner can check what arrived.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { openArchiveStorage } from '../aip/archive-storage.js';
import { writeFileDurably } from '../archive/durable-file.js';
import { Catalog } from '../catalog/catalog.js';
import { type SerializedBag, serializeBag } from './serialize-bag.js';

export interface ExportBagsOptions {
  archiveDir: string;
  to: string;
  /** Only the bags of this source (its base URL). */
  source?: string;
  /** Told after each bag. */
  progress?: (done: number, total: number, bag: SerializedBag) => void;
}

export async function exportBags(options: ExportBagsOptions): Promise<SerializedBag[]> {
  const catalog = Catalog.openForReading(options.archiveDir);
  let bagPaths: string[];
  try {
    const sourceId = options.source === undefined ? undefined : catalog.source(options.source)?.id;
    bagPaths = catalog
      .bags()
      .filter((bag) => sourceId === undefined || bag.sourceId === sourceId)
      .map((bag) => bag.bagPath);
    if (options.source !== undefined && sourceId === undefined) bagPaths = [];
  } finally {
    catalog.close();
  }
  await mkdir(options.to, { recursive: true });
  const written: SerializedBag[] = [];
  // On object storage each bag's files are those its commit record lists, read through the store.
  const opened = await openArchiveStorage(options.archiveDir, { reading: true });
  try {
    for (const bagPath of bagPaths) {
      const bag = await serializeBag(options.archiveDir, bagPath, options.to, opened.storage);
      written.push(bag);
      options.progress?.(written.length, bagPaths.length, bag);
    }
  } finally {
    opened.close();
  }
  const sums = written.map((bag) => `${bag.sha256}  ${bag.folder}.zip\n`);
  await writeFileDurably(join(options.to, 'SHA256SUMS'), sums, { fullHint: 'free space there, then run the same export again' });
  return written;
}
