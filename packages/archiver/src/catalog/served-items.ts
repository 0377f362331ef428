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

// Each resource once, with its ingest time: the current version's stored_at, or when it is
// deleted now, the latest deletion's recorded_at.
const ITEMS = `WITH items AS (
  SELECT r.id, r.source_id, r.identifier, r.deleted_at IS NOT NULL AS deleted, r.current_version_id,
    CAST(strftime('%s', CASE WHEN r.deleted_at IS NOT NULL
      THEN (SELECT MAX(d.recorded_at) FROM deletions d WHERE d.resource_id = r.id)
      ELSE (SELECT v.stored_at FROM versions v WHERE v.id = r.current_version_id) END) AS INTEGER) AS stamp,
    EXISTS (SELECT 1 FROM resources o WHERE o.identifier = r.identifier AND o.source_id < r.source_id) AS shadowed,
    r.mime_type AS resource_mime_type,
    lower(trim(CASE WHEN instr(r.mime_type, ';') > 0 THEN substr(r.mime_type, 1, instr(r.mime_type, ';') - 1) ELSE r.mime_type END)) AS essence
  FROM resources r)`;

// The MIME filter compares the type's essence (lower case, no parameters) as mimeSetSpec does.
const WHERE = `i.stamp IS NOT NULL AND (:from IS NULL OR i.stamp >= :from) AND i.stamp <= :until AND (:source IS NULL OR i.source_id = :source)
  AND (:anyMime IS NULL OR instr(i.essence, '/') > 1) AND (:mimeType IS NULL OR substr(i.essence, 1, length(:mimeType) + 1) = :mimeType || '/')
  AND (:mimeFull IS NULL OR i.essence = :mimeFull)`;

const SELECTED = `SELECT i.*, v.id AS v_id, v.datestamp AS v_datestamp, v.mime_type, v.size, v.sha256, v.last_modified, v.stored_at, v.record,
    b.bag_path, s.base_url
  FROM items i JOIN sources s ON s.id = i.source_id
  LEFT JOIN versions v ON v.id = i.current_version_id AND NOT i.deleted LEFT JOIN bags b ON b.id = v.bag_id`;

export function countItems(catalog: Catalog, query: ItemQuery): number {
  const row = catalog.statement(`${ITEMS} SELECT COUNT(*) AS n FROM items i WHERE ${WHERE}`).get(parameters(query)) as { n: number };
  return row.n;
}

export function listItems(catalog: Catalog, query: ItemQuery): ArchiveItem[] {
  const rows = catalog
    .statement(
      `${ITEMS} ${SELECTED}
       WHERE ${WHERE} AND (:afterStamp IS NULL OR i.stamp > :afterStamp OR (i.stamp = :afterStamp AND i.id > :afterId))
       ORDER BY i.stamp, i.id LIMIT :limit`,
    )
    .all({ ...parameters(query), afterStamp: query.after?.datestamp ?? null, afterId: query.after?.id ?? 0, limit: query.limit ?? -1 }) as Row[];
  return rows.map(toItem);
}

/** The item an identifier as served names, if any. */
export function findItem(catalog: Catalog, identifier: string): ArchiveItem | undefined {
  const qualified = identifier.startsWith(QUALIFIED_PREFIX) ? /^(\d+)\/(.+)$/s.exec(identifier.slice(QUALIFIED_PREFIX.length)) : null;
  const row = catalog
    .statement(
      `${ITEMS} ${SELECTED}
       WHERE i.stamp IS NOT NULL AND i.identifier = :identifier AND (:source IS NULL OR i.source_id = :source)
       ORDER BY i.source_id LIMIT 1`,
    )
    .get({ identifier: qualified ? qualified[2]! : identifier, source: qualified ? Number(qualified[1]) : null }) as Row | undefined;
  const item = row && toItem(row);
  return item && item.identifier === identifier ? item : undefined;
}

/** The earliest ingest time of anything served, seconds (undefined: the archive is empty). */
export function earliestDatestamp(catalog: Catalog): number | undefined {
  const row = catalog.statement(`${ITEMS} SELECT MIN(stamp) AS first FROM items`).get() as { first: number | null };
  return row.first ?? undefined;
}

/** The sources that have items: the archive's sets. */
export function sourcesWithItems(catalog: Catalog): Array<{ id: number; baseUrl: string; name: string | null }> {
  const rows = catalog
    .statement('SELECT s.id, s.base_url, s.repository_name FROM sources s WHERE EXISTS (SELECT 1 FROM resources r WHERE r.source_id = s.id) ORDER BY s.id')
    .all() as Row[];
  return rows.map((row) => ({ id: Number(row.id), baseUrl: String(row.base_url), name: row.repository_name === null ? null : String(row.repository_name) }));
}

function parameters(query: ItemQuery): Record<string, number | string | null> {
  const mime = query.mime;
  return {
    from: query.from ?? null,
    until: query.until,
    source: query.sourceId ?? null,
    anyMime: mime ? 1 : null,
    mimeType: mime?.type !== undefined && mime.subtype === undefined ? mime.type : null,
    mimeFull: mime?.type !== undefined && mime.subtype !== undefined ? `${mime.type}/${mime.subtype}` : null,
  };
}

/** The MIME types of the items (live or deleted): the archive's MIME sets. */
export function itemMimeTypes(catalog: Catalog): string[] {
  const rows = catalog.statement('SELECT DISTINCT mime_type FROM resources WHERE mime_type IS NOT NULL').all() as Array<{ mime_type: string }>;
  return rows.map((row) => row.mime_type);
}

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
