import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { readBatchBag } from '../aip/batch-bag-reader.js';
import { verifyBag } from '../bag/bag-verifier.js';
import type { Catalog } from '../catalog/catalog.js';
import { indexBatchBag } from '../catalog/index-bag.js';

/**
 * At the start of a harvest (under the archive lock): a batch bag noted as pending was renamed
 * into place, or not, when the process died before recording it. A bag that is there and
 * complete is recorded now from its own files (its records really were harvested); otherwise
 * the note is dropped. Either way no AIP is left unknown to the catalog. Returns how many bags
 * were adopted.
 */
export async function adoptPendingBags(archiveDir: string, catalog: Catalog): Promise<number> {
  let adopted = 0;
  for (const pending of catalog.pendingBags()) {
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
