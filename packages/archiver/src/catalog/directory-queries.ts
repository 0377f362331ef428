// The rows of `oaibag serve`'s directory (`/directory`, `/all`: docs/linked-data.md, "Directory
// and /all") and of a harvest's page (the files it added, modified, touched and deleted), read
// from the catalog rather than the SPARQL store so that they answer at any size. Every page is a
// keyset page: a seek on a key after the position it was given, then at most `limit` rows in the
// key's order, whatever the position (EXPLAIN QUERY PLAN: test/linked-data-directory.test.ts).
// Counts are bounded: counted up to a limit, and past it estimated from the largest row id (one
// seek; the catalog never deletes these rows, so it is a bound from above).
import type { Catalog } from './catalog.js';
import type { Row } from './catalog-rows.js';
import { SERVED } from './graph-rows.js';

/** The tables whose rows the directory lists by row id. */
export type DirectoryTable = 'sources' | 'harvests' | 'bags' | 'resources' | 'versions' | 'deletions' | 'events';

export interface DirectorySource {
  id: number;
  baseUrl: string;
  name: string | null;
}

export interface DirectoryHarvest {
  id: number;
  kind: string;
  sourceId: number;
  sourceBaseUrl: string;
  sourceName: string | null;
  startedAt: string;
  endedAt: string | null;
  status: string;
}

export interface DirectoryBag {
  id: number;
  bagPath: string;
  harvestId: number | null;
  records: number;
}

export interface DirectoryItem {
  id: number;
  /** The identifier as the source gave it. */
  identifier: string;
  /** As `/oai` serves it (qualified when an earlier source has the same identifier): the item's URI is minted from it. */
  served: string;
  deleted: boolean;
}

export interface DirectoryVersion {
  id: number;
  identifier: string;
  served: string;
  change: string;
  size: number;
  storedAt: string;
  bagPath: string;
  record: number;
  harvestId: number | null;
}

export interface DirectoryDeletion {
  id: number;
  identifier: string;
  served: string;
  datestamp: string;
  recordedAt: string;
  harvestId: number | null;
}

export interface DirectoryEvent {
  id: number;
  type: string;
  outcome: string;
  at: string;
}

const VERSION_COLUMNS = `SELECT v.id, v.change, v.size, v.stored_at, v.record, v.harvest_id, b.bag_path, r.identifier, ${SERVED} AS served
    FROM versions v JOIN bags b ON b.id = v.bag_id JOIN resources r ON r.id = v.resource_id`;
const DELETION_COLUMNS = `SELECT d.id, d.datestamp, d.recorded_at, d.harvest_id, r.identifier, ${SERVED} AS served
    FROM deletions d JOIN resources r ON r.id = d.resource_id`;

/**
 * The queries, each a keyset page. Parameters: the row id after which, and the most rows; a
 * harvest's versions and deletions take the harvest's id first (a range of versions_by_harvest
 * or deletions_by_harvest, whose entries end with the row id); the MIME types, the essence after
 * which and the most essences.
 */
export const DIRECTORY_QUERIES = {
  sources: 'SELECT id, base_url, repository_name FROM sources WHERE id > ? ORDER BY id LIMIT ?',
  harvests: `SELECT h.id, h.kind, h.source_id, h.started_at, h.ended_at, h.status, s.base_url, s.repository_name
    FROM harvests h JOIN sources s ON s.id = h.source_id WHERE h.id > ? ORDER BY h.id LIMIT ?`,
  bags: 'SELECT id, bag_path, harvest_id, records FROM bags WHERE id > ? ORDER BY id LIMIT ?',
  items: `SELECT r.id, r.identifier, r.deleted_at, ${SERVED} AS served FROM resources r WHERE r.id > ? ORDER BY r.id LIMIT ?`,
  versions: `${VERSION_COLUMNS} WHERE v.id > ? ORDER BY v.id LIMIT ?`,
  deletions: `${DELETION_COLUMNS} WHERE d.id > ? ORDER BY d.id LIMIT ?`,
  events: 'SELECT id, type, outcome, at FROM events WHERE id > ? ORDER BY id LIMIT ?',
  harvestVersions: `${VERSION_COLUMNS} WHERE v.harvest_id = ? AND v.id > ? ORDER BY v.id LIMIT ?`,
  harvestDeletions: `${DELETION_COLUMNS} WHERE d.harvest_id = ? AND d.id > ? ORDER BY d.id LIMIT ?`,
  /**
   * The MIME types of the items after an essence, each once, in order: one seek of
   * resources_served_by_mime per type (a skip through the index, as ListSets does), at most
   * the given number of them.
   */
  mimeTypes: `WITH RECURSIVE types (essence, n) AS (
      SELECT (SELECT MIN(mime_essence) FROM resources WHERE mime_essence > ?), 1
      UNION ALL SELECT (SELECT MIN(mime_essence) FROM resources WHERE mime_essence > types.essence), types.n + 1
        FROM types WHERE types.essence IS NOT NULL AND types.n < ?)
    SELECT essence FROM types WHERE essence IS NOT NULL`,
} as const;

const text = (value: unknown): string | null => (value === null || value === undefined ? null : String(value));
const id = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));

export function directorySources(catalog: Catalog, after: number, limit: number): DirectorySource[] {
  const rows = catalog.statement(DIRECTORY_QUERIES.sources).all(after, limit) as Row[];
  return rows.map((row) => ({ id: Number(row.id), baseUrl: String(row.base_url), name: text(row.repository_name) }));
}

export function directoryHarvests(catalog: Catalog, after: number, limit: number): DirectoryHarvest[] {
  const rows = catalog.statement(DIRECTORY_QUERIES.harvests).all(after, limit) as Row[];
  return rows.map((row) => ({
    id: Number(row.id),
    kind: String(row.kind),
    sourceId: Number(row.source_id),
    sourceBaseUrl: String(row.base_url),
    sourceName: text(row.repository_name),
    startedAt: String(row.started_at),
    endedAt: text(row.ended_at),
    status: String(row.status),
  }));
}

export function directoryBags(catalog: Catalog, after: number, limit: number): DirectoryBag[] {
  const rows = catalog.statement(DIRECTORY_QUERIES.bags).all(after, limit) as Row[];
  return rows.map((row) => ({ id: Number(row.id), bagPath: String(row.bag_path), harvestId: id(row.harvest_id), records: Number(row.records) }));
}

export function directoryItems(catalog: Catalog, after: number, limit: number): DirectoryItem[] {
  const rows = catalog.statement(DIRECTORY_QUERIES.items).all(after, limit) as Row[];
  return rows.map((row) => ({ id: Number(row.id), identifier: String(row.identifier), served: String(row.served), deleted: row.deleted_at !== null }));
}

export function directoryVersions(catalog: Catalog, after: number, limit: number): DirectoryVersion[] {
  return (catalog.statement(DIRECTORY_QUERIES.versions).all(after, limit) as Row[]).map(toVersion);
}

export function directoryDeletions(catalog: Catalog, after: number, limit: number): DirectoryDeletion[] {
  return (catalog.statement(DIRECTORY_QUERIES.deletions).all(after, limit) as Row[]).map(toDeletion);
}

export function directoryEvents(catalog: Catalog, after: number, limit: number): DirectoryEvent[] {
  const rows = catalog.statement(DIRECTORY_QUERIES.events).all(after, limit) as Row[];
  return rows.map((row) => ({ id: Number(row.id), type: String(row.type), outcome: String(row.outcome), at: String(row.at) }));
}

/** The versions a harvest (or an import) wrote, in the order it wrote them, after version row `after`. */
export function harvestVersions(catalog: Catalog, harvestId: number, after: number, limit: number): DirectoryVersion[] {
  return (catalog.statement(DIRECTORY_QUERIES.harvestVersions).all(harvestId, after, limit) as Row[]).map(toVersion);
}

/** The deletions a harvest recorded, in order, after deletion row `after`. */
export function harvestDeletions(catalog: Catalog, harvestId: number, after: number, limit: number): DirectoryDeletion[] {
  return (catalog.statement(DIRECTORY_QUERIES.harvestDeletions).all(harvestId, after, limit) as Row[]).map(toDeletion);
}

/** The items' MIME essences after `after` ('' for the first), each once, at most `limit` of them. */
export function mimeEssencesAfter(catalog: Catalog, after: string, limit: number): string[] {
  if (limit < 1) return [];
  const rows = catalog.statement(DIRECTORY_QUERIES.mimeTypes).all(after, limit) as Array<{ essence: string }>;
  return rows.map((row) => String(row.essence));
}

/** A bounded count: exact when there are at most `bound` rows, else an estimate. */
export interface BoundedCount {
  /** The rows counted (at most `bound`), or the estimate. */
  count: number;
  /** True when `count` is the exact number; false: estimated from the largest row id, a bound from above. */
  exact: boolean;
}

/**
 * How many rows `table` has: counted up to `bound` (a range of at most `bound` + 1 entries of
 * its smallest index), and past that the largest row id (one seek), which the catalog's tables
 * without deletions make a bound from above.
 */
export function countRows(catalog: Catalog, table: DirectoryTable, bound: number): BoundedCount {
  const counted = Number((catalog.statement(`SELECT COUNT(*) AS n FROM (SELECT 1 FROM ${table} LIMIT ?) AS counted`).get(bound + 1) as Row).n);
  if (counted <= bound) return { count: counted, exact: true };
  const last = Number((catalog.statement(`SELECT COALESCE(MAX(id), 0) AS n FROM ${table}`).get() as Row).n);
  return { count: Math.max(last, counted), exact: false };
}

function toVersion(row: Row): DirectoryVersion {
  return {
    id: Number(row.id),
    identifier: String(row.identifier),
    served: String(row.served),
    change: String(row.change),
    size: Number(row.size),
    storedAt: String(row.stored_at),
    bagPath: String(row.bag_path),
    record: Number(row.record),
    harvestId: id(row.harvest_id),
  };
}

function toDeletion(row: Row): DirectoryDeletion {
  return {
    id: Number(row.id),
    identifier: String(row.identifier),
    served: String(row.served),
    datestamp: String(row.datestamp),
    recordedAt: String(row.recorded_at),
    harvestId: id(row.harvest_id),
  };
}
