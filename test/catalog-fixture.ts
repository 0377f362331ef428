// Hand-made catalogs for tests that need versions without a harvest (audit, catalog): each
// version goes in through the catalog's own API as a harvest puts it, its batch bag recorded
// first, then the version naming the bag, its record in it and its payload file.
import type { Catalog, NewVersion, RecordedVersion } from '../packages/archiver/src/index.ts';

/** A version as the tests give it: where the archive keeps it is made up here. */
export type HandMadeVersion = Omit<NewVersion, 'bagPath' | 'record' | 'parts'>;

const bagsMade = new WeakMap<Catalog, number>();

/** The next free `aips/harvest-<id>/batch-<n>` of this catalog. */
export function nextBagPath(catalog: Catalog, harvestId: number | null | undefined): string {
  let n = bagsMade.get(catalog) ?? 0;
  let bagPath: string;
  do bagPath = `aips/harvest-${String(harvestId ?? 0).padStart(6, '0')}/batch-${String(++n).padStart(5, '0')}`;
  while (catalog.bag(bagPath) !== undefined);
  bagsMade.set(catalog, n);
  return bagPath;
}

/** Where a batch bag keeps bytes whose URL gives no path (see batch-bag.ts). */
export const byDigestPath = (sha256: string): string => `data/_by-digest/${sha256.slice(0, 2)}/${sha256}/file`;

/**
 * Records `version` as the only record of a new batch bag (returned as the version's `bagPath`): the bag brings the
 * payload file when the archive does not hold bytes with that sha-256 yet, else the record is
 * a revisit of the bag that does. Returns what `recordVersion` returned.
 */
export function storeVersion(catalog: Catalog, version: HandMadeVersion): RecordedVersion {
  return catalog.transaction(() => {
    const bagPath = nextBagPath(catalog, version.harvestId);
    const held = catalog.payload(version.sha256) !== undefined;
    catalog.recordBag({
      bagPath,
      sourceId: version.sourceId,
      harvestId: version.harvestId ?? null,
      records: 1,
      newPayloads: held ? 0 : 1,
      revisits: held ? 1 : 0,
      deletions: 0,
      payloadBytes: held ? 0 : version.size,
      payloads: held ? [] : [{ sha256: version.sha256, size: version.size, path: byDigestPath(version.sha256) }],
    });
    return catalog.recordVersion({ ...version, bagPath, record: 1, parts: [version.sha256] });
  });
}
