// The catalog rows the archive's Linked Data graph is made of (docs/linked-data.md), read in
// increasing id order so that the graph can be kept in step: each call takes the rows after
// the ids it was given.
import type { Catalog } from './catalog.js';
import type { Row } from './catalog-rows.js';

export interface GraphSource {
  id: number;
  baseUrl: string;
  name: string | null;
}

export interface GraphItem {
  id: number;
  sourceId: number;
  identifier: string;
  /** As `/oai` serves it (qualified when an earlier source uses the same identifier). */
  served: string;
  mimeType: string | null;
}

export interface GraphVersion {
  id: number;
  resourceId: number;
  datestamp: string;
  size: number;
  sha256: string;
  mimeType: string | null;
  lastModified: string | null;
  storedAt: string;
  change: string;
  harvestId: number | null;
  bagPath: string;
  record: number;
  /** The payload files, in part order. */
  files: Array<{ bagPath: string; path: string; size: number; sha256: string }>;
}

export interface GraphDeletion {
  id: number;
  resourceId: number;
  datestamp: string;
  recordedAt: string;
  harvestId: number | null;
}

export interface GraphHarvest {
  id: number;
  sourceId: number;
  startedAt: string;
  endedAt: string | null;
  status: string;
}

export interface GraphBag {
  id: number;
  bagPath: string;
  harvestId: number | null;
}

/** An event the catalog keeps (the fixity checks of `oaibag verify`). */
export interface GraphEvent {
  id: number;
  type: string;
  outcome: string;
  detail: string | null;
  at: string;
}

/** The last id of each table the graph holds rows of (0: none yet). */
export interface GraphMarks {
  source: number;
  resource: number;
  version: number;
  deletion: number;
  harvest: number;
  bag: number;
  event: number;
}

export const NO_MARKS: GraphMarks = { source: 0, resource: 0, version: 0, deletion: 0, harvest: 0, bag: 0, event: 0 };

const text = (value: unknown): string | null => (value === null || value === undefined ? null : String(value));

export function sourcesAfter(catalog: Catalog, after: number): GraphSource[] {
  return (catalog.statement('SELECT id, base_url, repository_name FROM sources WHERE id > ? ORDER BY id').all(after) as Row[]).map((row) => ({
    id: Number(row.id),
    baseUrl: String(row.base_url),
    name: text(row.repository_name),
  }));
}

export function itemsAfter(catalog: Catalog, after: number): GraphItem[] {
  const rows = catalog
    .statement(
      `SELECT r.id, r.source_id, r.identifier, r.mime_type,
         EXISTS (SELECT 1 FROM resources o WHERE o.identifier = r.identifier AND o.source_id < r.source_id) AS shadowed
       FROM resources r WHERE r.id > ? ORDER BY r.id`,
    )
    .all(after) as Row[];
  return rows.map((row) => {
    const identifier = String(row.identifier);
    const sourceId = Number(row.source_id);
    return {
      id: Number(row.id),
      sourceId,
      identifier,
      served: Number(row.shadowed) === 1 ? `info:oaibag/source/${sourceId}/${identifier}` : identifier,
      mimeType: text(row.mime_type),
    };
  });
}

/** Versions after `after`, at most `limit` of them, each with its payload files. */
export function versionsAfter(catalog: Catalog, after: number, limit: number): GraphVersion[] {
  const rows = catalog
    .statement(
      `SELECT v.id, v.resource_id, v.datestamp, v.size, v.sha256, v.mime_type, v.last_modified, v.stored_at, v.change,
         v.harvest_id, v.record, b.bag_path
       FROM versions v JOIN bags b ON b.id = v.bag_id WHERE v.id > ? ORDER BY v.id LIMIT ?`,
    )
    .all(after, limit) as Row[];
  if (rows.length === 0) return [];
  const files = catalog
    .statement(
      `SELECT vp.version_id, p.path, p.size, p.sha256, b.bag_path FROM version_parts vp JOIN payloads p ON p.id = vp.payload_id
       JOIN bags b ON b.id = p.bag_id WHERE vp.version_id > ? AND vp.version_id <= ? ORDER BY vp.version_id, vp.part`,
    )
    .all(after, Number(rows[rows.length - 1]!.id)) as Row[];
  const byVersion = new Map<number, GraphVersion['files']>();
  for (const file of files) {
    const list = byVersion.get(Number(file.version_id)) ?? [];
    list.push({ bagPath: String(file.bag_path), path: String(file.path), size: Number(file.size), sha256: String(file.sha256) });
    byVersion.set(Number(file.version_id), list);
  }
  return rows.map((row) => ({
    id: Number(row.id),
    resourceId: Number(row.resource_id),
    datestamp: String(row.datestamp),
    size: Number(row.size),
    sha256: String(row.sha256),
    mimeType: text(row.mime_type),
    lastModified: text(row.last_modified),
    storedAt: String(row.stored_at),
    change: String(row.change),
    harvestId: row.harvest_id === null ? null : Number(row.harvest_id),
    bagPath: String(row.bag_path),
    record: Number(row.record),
    files: byVersion.get(Number(row.id)) ?? [],
  }));
}

export function deletionsAfter(catalog: Catalog, after: number): GraphDeletion[] {
  return (catalog.statement('SELECT id, resource_id, datestamp, recorded_at, harvest_id FROM deletions WHERE id > ? ORDER BY id').all(after) as Row[]).map(
    (row) => ({
      id: Number(row.id),
      resourceId: Number(row.resource_id),
      datestamp: String(row.datestamp),
      recordedAt: String(row.recorded_at),
      harvestId: row.harvest_id === null ? null : Number(row.harvest_id),
    }),
  );
}

/** Harvests with an id of at least `from` (a harvest's end and status change once it is written). */
export function harvestsFrom(catalog: Catalog, from: number): GraphHarvest[] {
  return (catalog.statement('SELECT id, source_id, started_at, ended_at, status FROM harvests WHERE id >= ? ORDER BY id').all(from) as Row[]).map((row) => ({
    id: Number(row.id),
    sourceId: Number(row.source_id),
    startedAt: String(row.started_at),
    endedAt: text(row.ended_at),
    status: String(row.status),
  }));
}

export function bagsAfter(catalog: Catalog, after: number): GraphBag[] {
  return (catalog.statement('SELECT id, bag_path, harvest_id FROM bags WHERE id > ? ORDER BY id').all(after) as Row[]).map((row) => ({
    id: Number(row.id),
    bagPath: String(row.bag_path),
    harvestId: row.harvest_id === null ? null : Number(row.harvest_id),
  }));
}

export function eventsAfter(catalog: Catalog, after: number): GraphEvent[] {
  return (catalog.statement('SELECT id, type, outcome, detail, at FROM events WHERE id > ? ORDER BY id').all(after) as Row[]).map((row) => ({
    id: Number(row.id),
    type: String(row.type),
    outcome: String(row.outcome),
    detail: text(row.detail),
    at: String(row.at),
  }));
}
