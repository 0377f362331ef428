// The catalog's queries for `oaibag restore`: every version and deletion of the sources
// restored, for restore/restore-plan.ts to decide which version is live at an instant.
import type { Catalog } from './catalog.js';

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
  bagPath: string;
  /** Files in the payload; 0 for a record without datastream; absent when not counted (at least 1). */
  payloadFiles?: number;
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

/** Every version of the source's resources. */
export function versionsOfSource(catalog: Catalog, sourceId: number): VersionRecord[] {
  const rows = catalog
    .statement(`SELECT v.id, v.resource_id, r.identifier, v.datestamp, v.size, v.sha256, v.bag_path, v.payload_files
      FROM versions v JOIN resources r ON r.id = v.resource_id WHERE r.source_id = ?`)
    .all(sourceId) as Array<Record<string, unknown>>;
  return rows.map((row) => ({
    id: Number(row.id),
    resourceId: Number(row.resource_id),
    sourceId,
    identifier: String(row.identifier),
    datestamp: String(row.datestamp),
    size: Number(row.size),
    sha256: String(row.sha256).toLowerCase(),
    bagPath: String(row.bag_path),
    ...(row.payload_files !== null ? { payloadFiles: Number(row.payload_files) } : {}),
  }));
}

/** Every deletion of the source's resources. */
export function deletionsOfSource(catalog: Catalog, sourceId: number): DeletionRecord[] {
  const rows = catalog
    .statement('SELECT d.resource_id, d.datestamp, r.identifier FROM deletions d JOIN resources r ON r.id = d.resource_id WHERE r.source_id = ?')
    .all(sourceId) as Array<Record<string, unknown>>;
  return rows.map((row) => ({ resourceId: Number(row.resource_id), identifier: String(row.identifier), datestamp: String(row.datestamp) }));
}
