// The versions of an original URL, for Memento (RFC 7089) in `oaibag serve`
// (docs/linked-data.md, "Memento"): every source that archived it, oldest capture first.
import type { Catalog } from './catalog.js';

export interface MementoRow {
  /** When the archive captured the version (its ingest time, ISO 8601). */
  storedAt: string;
  bagPath: string;
  record: number;
}

export function mementosOf(catalog: Catalog, original: string): MementoRow[] {
  const rows = catalog
    .statement(
      `SELECT v.stored_at, v.record, b.bag_path FROM resources r JOIN versions v ON v.resource_id = r.id JOIN bags b ON b.id = v.bag_id
       WHERE r.identifier = ? AND v.payload_files > 0 ORDER BY v.stored_at, v.id`,
    )
    .all(original) as Array<Record<string, unknown>>;
  return rows.map((row) => ({ storedAt: String(row.stored_at), bagPath: String(row.bag_path), record: Number(row.record) }));
}
