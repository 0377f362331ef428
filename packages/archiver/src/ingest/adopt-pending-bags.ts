import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { AipStorage } from '../aip/aip-storage.js';
import { readBatchBag, readStoredBatchBag } from '../aip/batch-bag-reader.js';
import { S3Storage } from '../aip/s3-storage.js';
import { storedBagSource } from '../aip/stored-bag-source.js';
import { verifyBag, verifyBagSource } from '../bag/bag-verifier.js';
import type { Catalog } from '../catalog/catalog.js';
import { indexBatchBag } from '../catalog/index-bag.js';

/**
 * At the start of a harvest (under the archive lock): a batch bag noted as pending was placed
 * (renamed into place, or committed on object storage), or not, when the process died before
 * recording it. A bag that is there and complete is recorded now from its own files (its
 * records really were harvested); otherwise the note is dropped. Either way no AIP is left
 * unknown to the catalog. Only the bags of the source `baseUrl` when given: a worker's run,
 * while other workers may be committing theirs. Returns how many bags were adopted.
 */
export async function adoptPendingBags(archiveDir: string, catalog: Catalog, storage?: AipStorage, baseUrl?: string): Promise<number> {
  let adopted = 0;
  for (const pending of catalog.pendingBags(baseUrl)) {
    if (storage instanceof S3Storage) {
      // On object storage a bag exists once its commit record does (aip/s3-commit.ts).
      const stored = { storage, bagPath: pending.bagPath };
      if ((await storage.commitOf(pending.bagPath)) !== undefined && (await verifyBagSource(storedBagSource(stored), { fast: true })).valid) {
        indexBatchBag(catalog, await readStoredBatchBag(stored));
        adopted++;
      } else {
        catalog.removePendingBag(pending.bagPath);
      }
      continue;
    }
    const bagDir = join(archiveDir, ...pending.bagPath.split('/'));
    const present = await stat(join(bagDir, 'bagit.txt')).then(
      () => true,
      () => false,
    );
    if (present && (await verifyBag(bagDir, { fast: true })).valid) {
      indexBatchBag(catalog, await readBatchBag(archiveDir, pending.bagPath));
      adopted++;
    } else {
      catalog.removePendingBag(pending.bagPath);
    }
  }
  return adopted;
}
