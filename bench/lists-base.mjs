// The base catalog of the list benchmarks (lists.mjs on SQLite, lists-postgres.mjs on
// PostgreSQL): BASE resources of one source and BASE/5 of a second, recorded through the
// Catalog API, which the benchmarks then copy with SQL up to each size.
import { mkdirSync } from 'node:fs';

/** Resources of the first source; the second has a fifth as many. */
export const BASE = 10000;

export const T0 = Date.parse('2026-01-01T00:00:00Z');
export const iso = (ms) => new Date(ms).toISOString();

/** The base: BASE resources of source 1, BASE/5 of source 2 (one in ten shadowing), 1% deleted, ~1,000 ingests a second. */
export function buildBase(dir, Catalog, options = {}) {
  mkdirSync(dir, { recursive: true });
  const catalog = Catalog.open(dir, options);
  const sources = [
    catalog.upsertSource('https://one.example.org/oai', { repositoryName: 'one', granularity: 'YYYY-MM-DDThh:mm:ssZ' }),
    catalog.upsertSource('https://two.example.org/oai', { repositoryName: 'two', granularity: 'YYYY-MM-DDThh:mm:ssZ' }),
  ];
  const sha = (n) => n.toString(16).padStart(64, '0');
  const mime = (n) => (n % 10 === 0 ? 'image/png' : n % 10 === 1 ? 'text/css' : 'text/html; charset=utf-8');
  let n = 0;
  for (const [index, source] of sources.entries()) {
    const count = index === 0 ? BASE : BASE / 5;
    const run = catalog.startRun(source.id, 'harvest', { prefix: 'oai_didl' });
    for (let start = 0; start < count; start += 1000) {
      const numbers = Array.from({ length: Math.min(1000, count - start) }, (_, i) => start + i);
      const bagPath = `aips/harvest-${String(run).padStart(6, '0')}/batch-${String(start / 1000 + 1).padStart(5, '0')}`;
      catalog.transaction(() => {
        catalog.recordBag({
          bagPath,
          sourceId: source.id,
          harvestId: run,
          records: numbers.length,
          newPayloads: numbers.length,
          revisits: 0,
          deletions: 0,
          payloadBytes: numbers.length * 1000,
          payloads: numbers.map((i) => ({ sha256: sha(n + i), size: 1000, path: `data/${n + i}` })),
        });
        for (const i of numbers) {
          // The second source's identifiers: one in ten is one of the first source's.
          const identifier = index === 0 || i % 10 === 0 ? `https://site.example.org/doc-${i}.html` : `https://two.example.org/doc-${i}.html`;
          catalog.recordVersion({
            sourceId: source.id,
            identifier,
            datestamp: '2025-06-01T00:00:00Z',
            size: 1000,
            sha256: sha(n + i),
            mimeType: mime(i),
            bagPath,
            record: i - start + 1,
            parts: [sha(n + i)],
            harvestId: run,
            storedAt: iso(T0 + (n + i) * 1),
          });
          if (i % 100 === 50) catalog.recordDeletion(source.id, identifier, '2025-07-01T00:00:00Z', run, bagPath, iso(T0 + (n + i) * 1 + 500));
        }
      });
    }
    n += count;
    catalog.finishRun(run, 'complete', { records: count });
  }
  catalog.close();
}
