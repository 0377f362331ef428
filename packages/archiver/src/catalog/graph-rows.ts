// The catalog rows the archive's Linked Data graph is made of (docs/linked-data.md), read in
// increasing id order so that the graph can be kept in step: each call takes at most `limit`
// rows after the id it was given (a keyset page: a seek on the primary key, whatever the
// position). A version and a deletion come with what the graph says of their item (its name as
// served, joined in), so that no walk keeps the items it has seen.
import type { Catalog } from './catalog.js';
import type { Row } from './catalog-rows.js';
import { QUALIFIED_PREFIX } from './served-items.js';

export interface GraphSource {
  id: number;
  baseUrl: string;
  name: string | null;
}

export interface GraphItem {
  id: number;
  sourceId: number;
  /** The base URL of its source. */
  sourceBaseUrl: string;
  identifier: string;
  /** As `/oai` serves it (qualified when an earlier source uses the same identifier). */
  served: string;
  mimeType: string | null;
}

export interface GraphVersion {
  id: number;
  /** Its item's identifier as served. */
  served: string;
  datestamp: string;
  size: number;
  sha256: string;
  mimeType: string | null;
  /**
   * The MIME type of the item's version before this one (by id), '' when that one had none;
   * null for the item's first version. A change of MIME set is rewritten on the item.
   */
  previousMimeType: string | null;
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
  /** Its item's identifier as served. */
  served: string;
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

/** How many rows of each kind the graph is made of, at most (see {@link graphRowCounts}). */
export type GraphRowCounts = GraphMarks;

const text = (value: unknown): string | null => (value === null || value === undefined ? null : String(value));
const id = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));

/**
 * The identifier of resource `r` as served, from its columns `r.source_id` and `r.identifier`:
 * qualified when an earlier source has the same identifier. The sources are few: one seek of
 * the (source_id, identifier) index for each earlier source.
 */
export const SERVED = `CASE WHEN EXISTS (SELECT 1 FROM sources s WHERE s.id < r.source_id
    AND EXISTS (SELECT 1 FROM resources o WHERE o.source_id = s.id AND o.identifier = r.identifier))
  THEN '${QUALIFIED_PREFIX}' || r.source_id || '/' || r.identifier ELSE r.identifier END`;

/**
 * The MIME type of the version of `v`'s item before `v` ('' for none; NULL when `v` is the
 * first): the largest smaller id among the item's versions, a range of the (resource_id, …)
 * index that holds an item's few versions, then one seek.
 */
const PREVIOUS_MIME = `(SELECT COALESCE(p.mime_type, '') FROM versions p
    WHERE p.id = (SELECT MAX(q.id) FROM versions q WHERE q.resource_id = v.resource_id AND q.id < v.id))`;

/** The queries, each a keyset page (parameters: the id after or from which, and the most rows; the files: the versions' id range). */
export const GRAPH_QUERIES = {
  sources: 'SELECT id, base_url, repository_name FROM sources WHERE id > ? ORDER BY id LIMIT ?',
  items: `SELECT r.id, r.source_id, r.identifier, r.mime_type, s.base_url, ${SERVED} AS served
    FROM resources r JOIN sources s ON s.id = r.source_id WHERE r.id > ? ORDER BY r.id LIMIT ?`,
  versions: `SELECT v.id, v.datestamp, v.size, v.sha256, v.mime_type, v.last_modified, v.stored_at, v.change, v.harvest_id, v.record,
      b.bag_path, ${SERVED} AS served, ${PREVIOUS_MIME} AS previous_mime
    FROM versions v JOIN bags b ON b.id = v.bag_id JOIN resources r ON r.id = v.resource_id
    WHERE v.id > ? ORDER BY v.id LIMIT ?`,
  files: `SELECT vp.version_id, p.path, p.size, p.sha256, b.bag_path FROM version_parts vp JOIN payloads p ON p.id = vp.payload_id
    JOIN bags b ON b.id = p.bag_id WHERE vp.version_id > ? AND vp.version_id <= ? ORDER BY vp.version_id, vp.part`,
  deletions: `SELECT d.id, d.datestamp, d.recorded_at, d.harvest_id, ${SERVED} AS served
    FROM deletions d JOIN resources r ON r.id = d.resource_id WHERE d.id > ? ORDER BY d.id LIMIT ?`,
  harvests: 'SELECT id, source_id, started_at, ended_at, status FROM harvests WHERE id >= ? ORDER BY id LIMIT ?',
  bags: 'SELECT id, bag_path, harvest_id FROM bags WHERE id > ? ORDER BY id LIMIT ?',
  events: 'SELECT id, type, outcome, detail, at FROM events WHERE id > ? ORDER BY id LIMIT ?',
} as const;

export function sourcesAfter(catalog: Catalog, after: number, limit: number): GraphSource[] {
  const rows = catalog.statement(GRAPH_QUERIES.sources).all(after, limit) as Row[];
  return rows.map((row) => ({ id: Number(row.id), baseUrl: String(row.base_url), name: text(row.repository_name) }));
}

export function itemsAfter(catalog: Catalog, after: number, limit: number): GraphItem[] {
  const rows = catalog.statement(GRAPH_QUERIES.items).all(after, limit) as Row[];
  return rows.map((row) => ({
    id: Number(row.id),
    sourceId: Number(row.source_id),
    sourceBaseUrl: String(row.base_url),
    identifier: String(row.identifier),
    served: String(row.served),
    mimeType: text(row.mime_type),
  }));
}

/** Versions after `after`, at most `limit` of them, each with its payload files. */
export function versionsAfter(catalog: Catalog, after: number, limit: number): GraphVersion[] {
  const rows = catalog.statement(GRAPH_QUERIES.versions).all(after, limit) as Row[];
  if (rows.length === 0) return [];
  const files = catalog.statement(GRAPH_QUERIES.files).all(after, Number(rows[rows.length - 1]!.id)) as Row[];
  const byVersion = new Map<number, GraphVersion['files']>();
  for (const file of files) {
    const list = byVersion.get(Number(file.version_id)) ?? [];
    list.push({ bagPath: String(file.bag_path), path: String(file.path), size: Number(file.size), sha256: String(file.sha256) });
    byVersion.set(Number(file.version_id), list);
  }
  return rows.map((row) => ({
    id: Number(row.id),
    served: String(row.served),
    datestamp: String(row.datestamp),
    size: Number(row.size),
    sha256: String(row.sha256),
    mimeType: text(row.mime_type),
    previousMimeType: text(row.previous_mime),
    lastModified: text(row.last_modified),
    storedAt: String(row.stored_at),
    change: String(row.change),
    harvestId: id(row.harvest_id),
    bagPath: String(row.bag_path),
    record: Number(row.record),
    files: byVersion.get(Number(row.id)) ?? [],
  }));
}

export function deletionsAfter(catalog: Catalog, after: number, limit: number): GraphDeletion[] {
  const rows = catalog.statement(GRAPH_QUERIES.deletions).all(after, limit) as Row[];
  return rows.map((row) => ({
    id: Number(row.id),
    served: String(row.served),
    datestamp: String(row.datestamp),
    recordedAt: String(row.recorded_at),
    harvestId: id(row.harvest_id),
  }));
}

/** Harvests with an id of at least `from` (a harvest's end and status change once it is written). */
export function harvestsFrom(catalog: Catalog, from: number, limit: number): GraphHarvest[] {
  const rows = catalog.statement(GRAPH_QUERIES.harvests).all(from, limit) as Row[];
  return rows.map((row) => ({
    id: Number(row.id),
    sourceId: Number(row.source_id),
    startedAt: String(row.started_at),
    endedAt: text(row.ended_at),
    status: String(row.status),
  }));
}

export function bagsAfter(catalog: Catalog, after: number, limit: number): GraphBag[] {
  const rows = catalog.statement(GRAPH_QUERIES.bags).all(after, limit) as Row[];
  return rows.map((row) => ({ id: Number(row.id), bagPath: String(row.bag_path), harvestId: id(row.harvest_id) }));
}

export function eventsAfter(catalog: Catalog, after: number, limit: number): GraphEvent[] {
  const rows = catalog.statement(GRAPH_QUERIES.events).all(after, limit) as Row[];
  return rows.map((row) => ({ id: Number(row.id), type: String(row.type), outcome: String(row.outcome), detail: text(row.detail), at: String(row.at) }));
}

/**
 * How many rows of each kind there are, at most: the largest id of each table, one seek each
 * whatever the size (COUNT(*) reads a whole index). The catalog never deletes these rows, so
 * the ids count them (`reindex` numbers a new catalog from 1).
 */
export function graphRowCounts(catalog: Catalog): GraphRowCounts {
  const last = (table: string) => Number((catalog.statement(`SELECT COALESCE(MAX(id), 0) AS n FROM ${table}`).get() as Row).n);
  return {
    source: last('sources'),
    resource: last('resources'),
    version: last('versions'),
    deletion: last('deletions'),
    harvest: last('harvests'),
    bag: last('bags'),
    event: last('events'),
  };
}
