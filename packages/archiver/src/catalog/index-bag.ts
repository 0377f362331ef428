// Records one batch bag in the catalog from the bag's own files (bag-info.txt and
// metadata/records.xml.gz, read by aip/batch-bag-reader.ts): what `oaibag reindex` does for
// every bag, and what the start of a harvest does for a bag placed just before a crash. The bag
// is the record; the catalog only indexes it.
import type { ReadBatchBag } from '../aip/batch-bag-reader.js';
import { ArchiverError } from '../core/errors.js';
import type { Catalog } from './catalog.js';
import { countedAs, type HarvestCounts } from './catalog-types.js';

/** What recording a bag added, as a harvest counts it. */
export type IndexTally = Omit<HarvestCounts, 'records' | 'requests'> & { records: number };

/**
 * Records a batch bag read back: its source (created when absent), its payload files, each
 * record's version (with its parts and fetches) or deletion. Runs in one transaction. A
 * revisit of bytes the catalog does not know (their bag is missing or not recorded yet) is
 * damage: the catalog never points at bytes it cannot find.
 */
export function indexBatchBag(catalog: Catalog, bag: ReadBatchBag): IndexTally {
  const tally: IndexTally = { records: 0, added: 0, modified: 0, touched: 0, deleted: 0, failed: 0, bytes: 0 };
  const { baseUrl, harvestId, repositoryName } = bag.info;
  const baggedAt = bag.info.baggedAt ?? undefined;
  return catalog.transaction(() => {
    const source = catalog.ensureSource(baseUrl, repositoryName);
    const here = new Map<string, { sha256: string; size: number; path: string }>();
    let revisits = 0;
    let deletions = 0;
    for (const entry of bag.records) {
      if (entry.kind === 'deletion') {
        deletions++;
        continue;
      }
      for (const payload of entry.payloads) {
        if (payload.revisitOf !== undefined) revisits++;
        else here.set(payload.sha256, { sha256: payload.sha256, size: payload.size, path: payload.path });
      }
    }
    const payloads = [...here.values()];
    catalog.recordBag({
      bagPath: bag.bagPath,
      sourceId: source.id,
      harvestId,
      records: bag.records.length,
      newPayloads: payloads.length,
      revisits,
      deletions,
      payloadBytes: payloads.reduce((sum, payload) => sum + payload.size, 0),
      payloads,
    });
    for (const entry of bag.records) {
      tally.records++;
      if (entry.kind === 'deletion') {
        if (catalog.recordDeletion(source.id, entry.identifier, entry.datestamp, harvestId ?? undefined, bag.bagPath, baggedAt)) tally.deleted++;
        continue;
      }
      const parts = [...entry.payloads].sort((a, b) => a.part - b.part);
      for (const part of parts) {
        if (part.revisitOf !== undefined && !catalog.payload(part.sha256)) {
          throw new ArchiverError(
            'ERR_ARCHIVE_DAMAGED',
            `${bag.bagPath}: record ${entry.n} (${entry.identifier}) revisits ${part.revisitOf}/${part.path}, which the archive does not hold`,
            { path: bag.bagPath, hint: 'run `oaibag verify` to see which bags are missing or damaged' },
          );
        }
      }
      const recorded = catalog.recordVersion({
        sourceId: source.id,
        identifier: entry.identifier,
        datestamp: entry.datestamp,
        size: entry.size,
        sha256: entry.sha256,
        mimeType: entry.mimeType,
        bagPath: bag.bagPath,
        record: entry.n,
        harvestId,
        parts: parts.map((part) => part.sha256),
        lastModified: entry.lastModified,
        fetches: parts.flatMap((part) => (part.fetched ? [{ part: part.part, ...part.fetched }] : [])),
        ...(baggedAt !== undefined ? { storedAt: baggedAt } : {}),
      });
      if (recorded.known) continue;
      tally[countedAs(recorded.change)]++;
      tally.bytes += entry.size;
    }
    return tally;
  });
}
