// The catalog's query for `oaibag verify`: which bags it knows, to find missing and
// uncatalogued ones and to attach each fixity-check event to its version.
import type { Catalog } from './catalog.js';

/** A recorded version's bag. */
export interface CataloguedBag {
  versionId: number;
  resourceId: number;
  sourceId: number;
  identifier: string;
  size: number;
  bagPath: string;
}

/** The bag of every recorded version (pending bags: `Catalog.pendingBags`). */
export function cataloguedBags(catalog: Catalog): CataloguedBag[] {
  const rows = catalog
    .statement('SELECT v.id, v.resource_id, v.size, v.bag_path, r.source_id, r.identifier FROM versions v JOIN resources r ON r.id = v.resource_id')
    .all() as Array<{ id: number; resource_id: number; size: number; bag_path: string; source_id: number; identifier: string }>;
  return rows.map((row) => ({
    versionId: row.id,
    resourceId: row.resource_id,
    sourceId: row.source_id,
    identifier: row.identifier,
    size: row.size,
    bagPath: row.bag_path,
  }));
}
