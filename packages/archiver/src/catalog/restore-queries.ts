// The catalog's queries for `oaibag restore`: every version and deletion of the sources
// restored, for restore/restore-plan.ts to decide which version is live at an instant.
import type { Catalog } from './catalog.js';
import type { PayloadLocation } from './catalog-types.js';

/** A stored version, as a restore plans with it. */
export interface VersionRecord {
  /** The version's row id: the tie-breaker between equal datestamps (later arrival wins). */
  id: number;
  resourceId: number;
  sourceId: number;
  identifier: string;
  datestamp: string;
  size: number;
  /** Lowercase hex. */
  sha256: string;
  /** The batch bag holding the record. */
  bagPath: string;
  /** Files in the payload; 0 for a record without datastream. */
  payloadFiles: number;
  /** Where each payload file is held, in the record's order (part 1 is the one restored). */
  parts: PayloadLocation[];
  /** The record's Last-Modified header as sent, if it had one. */
  lastModified?: string;
}

/** A deletion the repository reported. */
export interface DeletionRecord {
  resourceId: number;
  identifier: string;
  datestamp: string;
}

/** Every source: id and base URL, oldest first. */
export function sourceList(catalog: Catalog): Array<{ id: number; baseUrl: string }> {
  const rows = catalog.statement('SELECT id, base_url FROM sources ORDER BY id').all() as Array<{ id: number; base_url: string }>;
  return rows.map((row) => ({ id: row.id, baseUrl: row.base_url }));
}

/** Every version of the source's resources, with where each of their payload files is held. */
export function versionsOfSource(catalog: Catalog, sourceId: number): VersionRecord[] {
  const rows = catalog
    .statement(`SELECT v.id, v.resource_id, r.identifier, v.datestamp, v.size, v.sha256, b.bag_path, v.payload_files, v.last_modified
      FROM versions v JOIN resources r ON r.id = v.resource_id JOIN bags b ON b.id = v.bag_id WHERE r.source_id = ? ORDER BY v.id`)
    .all(sourceId) as Array<Record<string, unknown>>;
  const parts = catalog
    .statement(`SELECT vp.version_id, p.sha256, p.size, p.path, b.bag_path
      FROM version_parts vp JOIN versions v ON v.id = vp.version_id JOIN resources r ON r.id = v.resource_id
      JOIN payloads p ON p.id = vp.payload_id JOIN bags b ON b.id = p.bag_id
      WHERE r.source_id = ? ORDER BY vp.version_id, vp.part`)
    .all(sourceId) as Array<Record<string, unknown>>;
  const partsOf = new Map<number, PayloadLocation[]>();
  for (const row of parts) {
    const id = Number(row.version_id);
    let list = partsOf.get(id);
    if (!list) partsOf.set(id, (list = []));
    list.push({ sha256: String(row.sha256), size: Number(row.size), path: String(row.path), bagPath: String(row.bag_path) });
  }
  return rows.map((row) => ({
    id: Number(row.id),
    resourceId: Number(row.resource_id),
    sourceId,
    identifier: String(row.identifier),
    datestamp: String(row.datestamp),
    size: Number(row.size),
    sha256: String(row.sha256).toLowerCase(),
    bagPath: String(row.bag_path),
    payloadFiles: Number(row.payload_files),
    parts: partsOf.get(Number(row.id)) ?? [],
    ...(row.last_modified !== null ? { lastModified: String(row.last_modified) } : {}),
  }));
}

/** Every deletion of the source's resources. */
export function deletionsOfSource(catalog: Catalog, sourceId: number): DeletionRecord[] {
  const rows = catalog
    .statement('SELECT d.resource_id, d.datestamp, r.identifier FROM deletions d JOIN resources r ON r.id = d.resource_id WHERE r.source_id = ?')
    .all(sourceId) as Array<Record<string, unknown>>;
  return rows.map((row) => ({ resourceId: Number(row.resource_id), identifier: String(row.identifier), datestamp: String(row.datestamp) }));
}
