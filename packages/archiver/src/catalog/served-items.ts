// The archive's items as `oaibag serve` lists them (docs/serve.md, "Items"): one per archived
// resource, its record the latest version (or its deletion), its datestamp the time the
// archive ingested that, in whole seconds.
import type { Catalog } from './catalog.js';
import type { Row } from './catalog-rows.js';

export interface ArchiveItem {
  id: number;
  sourceId: number;
  /** As served: the original, or `info:oaibag/source/N/…` when an earlier source has it too. */
  identifier: string;
  original: string;
  deleted: boolean;
  /** Ingest time, seconds since the epoch. */
  datestamp: number;
  /** The resource's MIME type (kept after a deletion): its MIME set. */
  mimeType: string | null;
  /** The latest version's facts (null for a deleted item). */
  version: ServedVersion | null;
  sourceBaseUrl: string;
}

export interface ServedVersion {
  id: number;
  /** The original datestamp. */
  datestamp: string;
  mimeType: string | null;
  size: number;
  sha256: string;
  lastModified: string | null;
  /** When the archive stored it (ISO 8601, as the catalog keeps it). */
  storedAt: string;
  /** The batch bag whose records.xml.gz holds the record, and its place there. */
  bagPath: string;
  record: number;
}

export interface ItemQuery {
  from?: number;
  until: number;
  sourceId?: number;
  /** Items in a MIME set: any MIME type (`{}`), a major type, or one type. */
  mime?: { type?: string; subtype?: string };
  /** Keyset: items strictly after this (datestamp, id). */
  after?: { datestamp: number; id: number };
  limit?: number;
}

/** Served identifiers of items whose original an earlier source uses too. */
export const QUALIFIED_PREFIX = 'info:oaibag/source/';

// An item's columns. served_at, mime_essence and mime_major are kept in the row (migration 9),
// so each list shape seeks one index: resources_served (all items, and any MIME type),
// resources_served_by_source, resources_served_by_major, resources_served_by_mime; each ends
// with the row id, so (served_at, id) order comes from the index with no sort. "An earlier
// source has the same identifier" is one seek of the (source_id, identifier) key per earlier
// source (an archive has a few): an index on the identifier alone would cost a copy of every
// identifier, the catalog's largest column, for this one question.
const SELECTED = `SELECT r.id, r.source_id, r.identifier, r.deleted_at IS NOT NULL AS deleted, r.served_at AS stamp,
    EXISTS (SELECT 1 FROM sources e CROSS JOIN resources o ON o.source_id = e.id AND o.identifier = r.identifier WHERE e.id < r.source_id) AS shadowed,
    r.mime_type AS resource_mime_type, v.id AS v_id, v.datestamp AS v_datestamp, v.mime_type, v.size, v.sha256, v.last_modified, v.stored_at, v.record,
    b.bag_path, s.base_url
  FROM resources r JOIN sources s ON s.id = r.source_id
  LEFT JOIN versions v ON v.id = r.current_version_id AND r.deleted_at IS NULL LEFT JOIN bags b ON b.id = v.bag_id`;

/** One statement of the served lists and its parameters: what runs, and what a test explains. */
export interface ServedSql {
  sql: string;
  params: Record<string, number | string | null>;
}

/** The conditions of a window's set (the same for a count and for a page). */
function setConditions(query: ItemQuery): ServedSql {
  const conditions: string[] = [];
  const params: ServedSql['params'] = {};
  if (query.sourceId !== undefined) {
    conditions.push('r.source_id = :source');
    params.source = query.sourceId;
  }
  const mime = query.mime;
  if (mime?.type !== undefined && mime.subtype !== undefined) {
    conditions.push('r.mime_essence = :mimeFull');
    params.mimeFull = `${mime.type}/${mime.subtype}`;
  } else if (mime?.type !== undefined) {
    conditions.push('r.mime_major = :mimeType');
    params.mimeType = mime.type;
  } else if (mime) {
    conditions.push('r.mime_major IS NOT NULL');
  }
  return { sql: conditions.map((condition) => ` AND ${condition}`).join(''), params };
}

/** The count of a window: a range of one index, covering for all items, a source and a MIME type. */
export function itemCountSql(query: ItemQuery): ServedSql {
  const set = setConditions(query);
  // Counting stops at `limit` entries: the provider counts a list's first page no further (ListSettings.countLimit).
  return {
    sql: `SELECT COUNT(*) AS n FROM (SELECT 1 FROM resources r WHERE r.served_at >= :from AND r.served_at <= :until${set.sql} LIMIT :limit) AS counted`,
    params: { ...set.params, from: query.from ?? Number.MIN_SAFE_INTEGER, until: query.until, limit: query.limit ?? Number.MAX_SAFE_INTEGER },
  };
}

/** A whole list's estimated size: the highest row id, one seek (rows are never deleted from resources). */
export const ESTIMATE_SQL = 'SELECT MAX(id) AS n FROM resources';

/**
 * A page of a window, strictly after `after`, as one or two statements, each a range of one
 * index, run in order while the page is not full (each has its `limit` parameter): the rest of
 * `after`'s second (its ids above `after`'s), then the seconds after it. A row-value condition
 * `(served_at, id) > (?, ?)` would seek on served_at alone and step through that second's earlier
 * rows one by one: SQLite seeks on an index's columns, not on the row id that ends each entry.
 */
export function itemPageSql(query: ItemQuery): ServedSql[] {
  const set = setConditions(query);
  const limit = query.limit ?? Number.MAX_SAFE_INTEGER;
  let from = query.from ?? Number.MIN_SAFE_INTEGER;
  const statements: ServedSql[] = [];
  const after = query.after;
  if (after) {
    if (after.datestamp >= from && after.datestamp <= query.until) {
      statements.push({
        sql: `${SELECTED} WHERE r.served_at = :stamp AND r.id > :id${set.sql} ORDER BY r.id LIMIT :limit`,
        params: { ...set.params, stamp: after.datestamp, id: after.id, limit },
      });
    }
    from = Math.max(from, after.datestamp + 1);
  }
  statements.push({
    sql: `${SELECTED} WHERE r.served_at >= :from AND r.served_at <= :until${set.sql} ORDER BY r.served_at, r.id LIMIT :limit`,
    params: { ...set.params, from, until: query.until, limit },
  });
  return statements;
}

/**
 * How many items a window holds, at most `query.limit`. The provider counts once per list, on
 * its first page, and carries the number in its tokens.
 */
export function countItems(catalog: Catalog, query: ItemQuery): number {
  const { sql, params } = itemCountSql(query);
  return (catalog.statement(sql).get(params) as { n: number }).n;
}

/**
 * About how many items a window holds without counting them, for the whole list only (no
 * `from`, no set): every resource row, those ingested after `until` included. Undefined for
 * any other window.
 */
export function estimateItems(catalog: Catalog, query: ItemQuery): number | undefined {
  if (query.from !== undefined || query.sourceId !== undefined || query.mime !== undefined) return undefined;
  return (catalog.statement(ESTIMATE_SQL).get() as { n: number | null }).n ?? undefined;
}

/** At most `limit` items of a window in (datestamp, id) order, strictly after `after`. */
export function listItems(catalog: Catalog, query: ItemQuery): ArchiveItem[] {
  const rows: Row[] = [];
  const limit = query.limit ?? Number.MAX_SAFE_INTEGER;
  for (const { sql, params } of itemPageSql(query)) {
    if (rows.length >= limit) break;
    rows.push(...(catalog.statement(sql).all({ ...params, limit: limit - rows.length }) as Row[]));
  }
  return rows.map(toItem);
}

/** GetRecord's item: one seek of the (source_id, identifier) key per source, the earliest first. */
export function findItemSql(identifier: string): ServedSql {
  const qualified = identifier.startsWith(QUALIFIED_PREFIX) ? /^(\d+)\/(.+)$/s.exec(identifier.slice(QUALIFIED_PREFIX.length)) : null;
  return {
    sql: `${SELECTED} WHERE r.source_id IN (SELECT id FROM sources WHERE CAST(:source AS INTEGER) IS NULL OR id = :source) AND r.identifier = :identifier
      AND r.served_at IS NOT NULL ORDER BY r.source_id LIMIT 1`,
    params: { identifier: qualified ? qualified[2]! : identifier, source: qualified ? Number(qualified[1]) : null },
  };
}

/** The item an identifier as served names, if any. */
export function findItem(catalog: Catalog, identifier: string): ArchiveItem | undefined {
  const { sql, params } = findItemSql(identifier);
  const row = catalog.statement(sql).get(params) as Row | undefined;
  const item = row && toItem(row);
  return item && item.identifier === identifier ? item : undefined;
}

/** Identify's earliestDatestamp: the first entry of resources_served. */
export const EARLIEST_SQL = 'SELECT MIN(served_at) AS first FROM resources';

/** The earliest ingest time of anything served, seconds (undefined: the archive is empty). */
export function earliestDatestamp(catalog: Catalog): number | undefined {
  const row = catalog.statement(EARLIEST_SQL).get() as { first: number | null };
  return row.first ?? undefined;
}

/** The sources that have items: the archive's sets. */
export function sourcesWithItems(catalog: Catalog): Array<{ id: number; baseUrl: string; name: string | null }> {
  const rows = catalog
    .statement('SELECT s.id, s.base_url, s.repository_name FROM sources s WHERE EXISTS (SELECT 1 FROM resources r WHERE r.source_id = s.id) ORDER BY s.id')
    .all() as Row[];
  return rows.map((row) => ({ id: Number(row.id), baseUrl: String(row.base_url), name: row.repository_name === null ? null : String(row.repository_name) }));
}

/**
 * The MIME types of the items (live or deleted), each essence once: the archive's MIME sets.
 * One seek of resources_served_by_mime per type (a skip through the index), not a read of every
 * resource.
 */
export function itemMimeTypes(catalog: Catalog): string[] {
  const rows = catalog.statement(MIME_TYPES_SQL).all() as Array<{ essence: string }>;
  return rows.map((row) => row.essence);
}

export const MIME_TYPES_SQL = `WITH RECURSIVE types (essence) AS (
    SELECT MIN(mime_essence) FROM resources
    UNION ALL SELECT (SELECT MIN(mime_essence) FROM resources WHERE mime_essence > types.essence) FROM types WHERE types.essence IS NOT NULL)
  SELECT essence FROM types WHERE essence IS NOT NULL`;

function toItem(row: Row): ArchiveItem {
  const original = String(row.identifier);
  const sourceId = Number(row.source_id);
  const deleted = Number(row.deleted) === 1;
  return {
    id: Number(row.id),
    sourceId,
    identifier: Number(row.shadowed) === 1 ? `${QUALIFIED_PREFIX}${sourceId}/${original}` : original,
    original,
    deleted,
    datestamp: Number(row.stamp),
    mimeType: row.resource_mime_type === null || row.resource_mime_type === undefined ? null : String(row.resource_mime_type),
    version:
      deleted || row.v_datestamp === null || row.v_datestamp === undefined
        ? null
        : {
            id: Number(row.v_id),
            datestamp: String(row.v_datestamp),
            mimeType: row.mime_type === null ? null : String(row.mime_type),
            size: Number(row.size),
            sha256: String(row.sha256),
            lastModified: row.last_modified === null ? null : String(row.last_modified),
            storedAt: String(row.stored_at),
            bagPath: String(row.bag_path),
            record: Number(row.record),
          },
    sourceBaseUrl: String(row.base_url),
  };
}

/** The version a bag's record holds (any version, not only the latest), as an item; undefined when there is none. */
export function itemOfRecord(catalog: Catalog, bagPath: string, record: number): (ArchiveItem & { version: ServedVersion }) | undefined {
  const row = catalog
    .statement(
      `SELECT r.id, r.source_id, r.identifier, 0 AS deleted, CAST(strftime('%s', v.stored_at) AS INTEGER) AS stamp, 0 AS shadowed,
         r.mime_type AS resource_mime_type, v.id AS v_id, v.datestamp AS v_datestamp, v.mime_type, v.size, v.sha256, v.last_modified,
         v.stored_at, v.record, b.bag_path, s.base_url
       FROM versions v JOIN bags b ON b.id = v.bag_id JOIN resources r ON r.id = v.resource_id JOIN sources s ON s.id = r.source_id
       WHERE b.bag_path = ? AND v.record = ?`,
    )
    .get(bagPath, record) as Row | undefined;
  if (!row) return undefined;
  const item = toItem(row);
  return item.version ? (item as ArchiveItem & { version: ServedVersion }) : undefined;
}
