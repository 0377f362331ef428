// The catalog's queries for `oaibag restore`: the resources of the sources restored, a page at
// a time, with every version and deletion of each, for restore/restore-plan.ts to decide which
// version is live at an instant.
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

/**
 * Resources are read this many at a time (with their versions and deletions): each page is a
 * seek in the (source, identifier) index, so a restore's memory does not grow with the archive.
 */
export const RESTORE_PAGE_RESOURCES = 500;

const FIRST_RESOURCES = 'SELECT id, identifier FROM resources WHERE source_id = ? ORDER BY identifier LIMIT ?';
const NEXT_RESOURCES = 'SELECT id, identifier FROM resources WHERE source_id = ? AND identifier > ? ORDER BY identifier LIMIT ?';
// A page's rows, each resource's found through its (resource_id, …) index; sorted in JS a page at a time, so
// that no plan has SQLite build a temporary B-tree (the plans then say plainly that nothing big is sorted).
const VERSIONS_OF = `SELECT v.id, v.resource_id, v.datestamp, v.size, v.sha256, b.bag_path, v.payload_files, v.last_modified
  FROM versions v JOIN bags b ON b.id = v.bag_id WHERE v.resource_id IN (SELECT value FROM json_each(?))`;
const PARTS_OF = `SELECT vp.version_id, vp.part, p.sha256, p.size, p.path, b.bag_path
  FROM versions v JOIN version_parts vp ON vp.version_id = v.id JOIN payloads p ON p.id = vp.payload_id JOIN bags b ON b.id = p.bag_id
  WHERE v.resource_id IN (SELECT value FROM json_each(?))`;
const DELETIONS_OF = 'SELECT id, resource_id, datestamp FROM deletions WHERE resource_id IN (SELECT value FROM json_each(?))';

/** The query plans of a restore's page reads (SQLite's EXPLAIN QUERY PLAN, one line each), for the test that none scans a table. */
export function restorePageQueryPlans(catalog: Catalog): Array<{ sql: string; plan: string }> {
  const args: Array<[string, unknown[]]> = [
    [FIRST_RESOURCES, [1, 1]],
    [NEXT_RESOURCES, [1, '', 1]],
    [VERSIONS_OF, ['[1]']],
    [PARTS_OF, ['[1]']],
    [DELETIONS_OF, ['[1]']],
  ];
  return args.map(([sql, values]) => ({
    sql,
    plan: (catalog.statement(`EXPLAIN QUERY PLAN ${sql}`).all(...values) as Array<{ detail: string }>).map((row) => row.detail).join('; '),
  }));
}

/** A resource of a source, as a restore pages through them. */
export interface ResourceKey {
  id: number;
  identifier: string;
}

/**
 * The next `limit` resources of the source after `after` (an identifier; undefined: from the
 * first), in identifier order (SQLite's: by UTF-8 bytes). O(limit): a range of the
 * (source_id, identifier) index.
 */
export function resourcePage(catalog: Catalog, sourceId: number, after: string | undefined, limit: number): ResourceKey[] {
  const rows = (
    after === undefined ? catalog.statement(FIRST_RESOURCES).all(sourceId, limit) : catalog.statement(NEXT_RESOURCES).all(sourceId, after, limit)
  ) as Array<{ id: number; identifier: string }>;
  return rows.map((row) => ({ id: row.id, identifier: row.identifier }));
}

/** Every version of these resources (of the source `sourceId`), by row id, with where each of their payload files is held. */
export function versionsOfResources(catalog: Catalog, sourceId: number, resources: readonly ResourceKey[]): VersionRecord[] {
  if (resources.length === 0) return [];
  const ids = JSON.stringify(resources.map((resource) => resource.id));
  const identifiers = new Map(resources.map((resource) => [resource.id, resource.identifier]));
  const rows = (catalog.statement(VERSIONS_OF).all(ids) as Array<Record<string, unknown>>).sort((a, b) => Number(a.id) - Number(b.id));
  const parts = (catalog.statement(PARTS_OF).all(ids) as Array<Record<string, unknown>>).sort(
    (a, b) => Number(a.version_id) - Number(b.version_id) || Number(a.part) - Number(b.part),
  );
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
    identifier: identifiers.get(Number(row.resource_id)) ?? '',
    datestamp: String(row.datestamp),
    size: Number(row.size),
    sha256: String(row.sha256).toLowerCase(),
    bagPath: String(row.bag_path),
    payloadFiles: Number(row.payload_files),
    parts: partsOf.get(Number(row.id)) ?? [],
    ...(row.last_modified !== null ? { lastModified: String(row.last_modified) } : {}),
  }));
}

/** Every deletion of these resources, by row id. */
export function deletionsOfResources(catalog: Catalog, resources: readonly ResourceKey[]): Array<DeletionRecord & { id: number }> {
  if (resources.length === 0) return [];
  const identifiers = new Map(resources.map((resource) => [resource.id, resource.identifier]));
  const rows = catalog.statement(DELETIONS_OF).all(JSON.stringify(resources.map((resource) => resource.id))) as Array<{
    id: number;
    resource_id: number;
    datestamp: string;
  }>;
  rows.sort((a, b) => a.id - b.id);
  return rows.map((row) => ({ id: row.id, resourceId: row.resource_id, identifier: identifiers.get(row.resource_id) ?? '', datestamp: row.datestamp }));
}
