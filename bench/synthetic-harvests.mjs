// The synthetic archive catalog of the SPARQL benchmarks (linked-data.mjs, sparql-store.mjs),
// built through the Catalog API: N resources of one source, each harvest a batch bag of 1,000
// records at a time with their payload files. Harvest 1 adds every resource; harvest 2
// modifies every one and deletes 5 %. The bags exist only in the catalog: what is measured
// reads the catalog alone.

/** A payload digest: resource `n`'s in harvest `salt`. */
export const hex = (n, salt) => `${salt.toString(16).padStart(8, '0')}${n.toString(16).padStart(56, '0')}`;
/** Resource `n`'s URL: one in five a PDF, in 97 sections. */
export const identifier = (n) => `https://www.example.org/site/section-${n % 97}/document-${n}.${n % 5 === 0 ? 'pdf' : 'html'}`;
export const mimeOf = (n) => (n % 5 === 0 ? 'application/pdf' : 'text/html');
/** The source's base URL. */
export const SOURCE_URL = 'https://www.example.org/oai';

/** The source, named `name`. */
export function syntheticSource(catalog, name) {
  return catalog.upsertSource(SOURCE_URL, { repositoryName: name, granularity: 'YYYY-MM-DDThh:mm:ssZ' });
}

/** Harvest `salt` of `resources` resources at `datestamp` (1: adds every resource; 2: modifies every one and deletes 5 %). */
export function addHarvest(catalog, source, resources, salt, datestamp) {
  const harvestId = catalog.startRun(source.id, 'harvest', { prefix: 'oai_didl' });
  for (let start = 0; start < resources; start += 1000) {
    const end = Math.min(resources, start + 1000);
    const bagPath = `aips/harvest-${String(harvestId).padStart(6, '0')}/batch-${String(start / 1000 + 1).padStart(5, '0')}`;
    const path = (n) => `data/www.example.org/site/section-${n % 97}/document-${n}`;
    catalog.transaction(() => {
      const payloads = [];
      for (let n = start; n < end; n++) payloads.push({ sha256: hex(n, salt), size: 1000 + (n % 5000), path: path(n) });
      catalog.recordBag({
        bagPath,
        sourceId: source.id,
        harvestId,
        records: end - start,
        newPayloads: end - start,
        revisits: 0,
        deletions: 0,
        payloadBytes: 0,
        payloads,
      });
      for (let n = start; n < end; n++) {
        catalog.recordVersion({
          sourceId: source.id,
          identifier: identifier(n),
          datestamp,
          size: 1000 + (n % 5000),
          sha256: hex(n, salt),
          mimeType: mimeOf(n),
          bagPath,
          record: n - start + 1,
          harvestId,
          parts: [hex(n, salt)],
          lastModified: new Date(Date.parse(datestamp)).toUTCString(),
        });
      }
    });
  }
  if (salt === 2) {
    catalog.transaction(() => {
      for (let n = 0; n < resources; n += 20) catalog.recordDeletion(source.id, identifier(n), '2026-02-15T00:00:00Z', harvestId);
    });
  }
  catalog.finishRun(harvestId, 'complete');
}
