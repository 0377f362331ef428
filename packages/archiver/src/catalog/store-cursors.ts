// The cursors of `serve --sparql-store`: for each remote store and named graph, how far the
// archive's graph has been written there (serve/store-cursor.ts gives the text its meaning).
import type { Catalog } from './catalog.js';

/** The cursor text saved for `store` and `graph`, if any. */
export function readStoreCursor(catalog: Catalog, store: string, graph: string): string | undefined {
  const row = catalog.statement('SELECT cursor FROM sparql_store_cursors WHERE store = ? AND graph = ?').get(store, graph) as { cursor: string } | undefined;
  return row?.cursor;
}

/** Saves the cursor of `store` and `graph` (one row each, replaced). */
export function writeStoreCursor(catalog: Catalog, store: string, graph: string, cursor: string, at: string): void {
  catalog
    .statement(
      `INSERT INTO sparql_store_cursors (store, graph, cursor, written_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (store, graph) DO UPDATE SET cursor = excluded.cursor, written_at = excluded.written_at`,
    )
    .run(store, graph, cursor, at);
}

/** The row id of the catalog's last version (0: none). */
export function lastVersionId(catalog: Catalog): number {
  const row = catalog.statement('SELECT MAX(id) AS id FROM versions').get() as { id: number | null };
  return row.id ?? 0;
}
