// The catalog's queries for health (`oaibag status`, `status --check`, /metrics): each is one
// index lookup per source, so monitoring costs the same at ten resources as at ten million.
import type { Catalog } from './catalog.js';
import { type Row, toHarvest } from './catalog-rows.js';
import type { CatalogHarvest } from './catalog-types.js';

/** A source as monitoring sees it. */
export interface SourceHealthRow {
  sourceId: number;
  baseUrl: string;
  watermark: string | null;
  /** The latest attempt, whatever its outcome (a row `running` may belong to a dead process). */
  lastAttempt: CatalogHarvest | undefined;
  /** The latest attempt whose list ended (`complete`, or `partial`: the list ended, some records failed). */
  lastSuccess: CatalogHarvest | undefined;
  /** Failures not yet resolved (records to retry, a list that failed). */
  openFailures: number;
}

/** Every source of the archive with its latest attempt and success (sources are few: a query each). */
export function sourcesHealth(catalog: Catalog): SourceHealthRow[] {
  const sources = catalog.statement('SELECT id, base_url, watermark FROM sources ORDER BY id').all() as Row[];
  const lastAttempt = catalog.statement('SELECT * FROM harvests WHERE source_id = ? ORDER BY id DESC LIMIT 1');
  // Walks the source's harvests newest first on harvests_by_source; stops at the first success.
  const lastSuccess = catalog.statement("SELECT * FROM harvests WHERE source_id = ? AND status IN ('complete', 'partial') ORDER BY id DESC LIMIT 1");
  const openFailures = catalog.statement('SELECT COUNT(*) AS n FROM failures WHERE source_id = ? AND resolved_at IS NULL');
  return sources.map((row) => {
    const id = Number(row.id);
    const attempt = lastAttempt.get(id) as Row | undefined;
    const success = lastSuccess.get(id) as Row | undefined;
    return {
      sourceId: id,
      baseUrl: String(row.base_url),
      watermark: row.watermark === null ? null : String(row.watermark),
      lastAttempt: attempt && toHarvest(attempt),
      lastSuccess: success && toHarvest(success),
      openFailures: Number((openFailures.get(id) as { n: number }).n),
    };
  });
}
