// The catalog's queries for the pages people browse in `oaibag serve` (docs/browse.md): the
// home page's summary, search by URL, one URL's history and its capture at an instant. Each is
// an index seek plus a page: a prefix walks `resources_by_identifier`, a substring the trigram
// index of migration 12 (SQLite's FTS5 table, PostgreSQL's pg_trgm), a URL's versions the
// identifier index then `versions`' (resource_id, …) key. A filter the index cannot answer
// (a MIME set beside a URL) looks at a bounded window of candidates per page, never the rest.
import type { Catalog } from './catalog.js';
import { URL_TRIGRAMS } from './catalog-migrations.js';
import { type Row, toHarvest } from './catalog-rows.js';
import type { CatalogHarvest } from './catalog-types.js';

export interface SourceSummary {
  id: number;
  baseUrl: string;
  repositoryName: string | null;
  /** The latest harvest or import, whatever its outcome. */
  last: CatalogHarvest | undefined;
}

export interface ArchiveTotals {
  resources: number;
  bags: number;
  /** Records the bags hold (versions and deletions). */
  records: number;
  /** Payload files written (bytes held once each). */
  payloads: number;
  payloadBytes: number;
}

/** A version or deletion as the home page and a history list it. */
export interface ChangeRow {
  kind: 'version' | 'deletion';
  id: number;
  sourceId: number;
  url: string;
  /** When the archive recorded it (ISO 8601). */
  at: string;
  /** added, modified, touched, restored; `deleted` for a deletion. */
  change: string;
  datestamp: string;
  size: number | null;
  sha256: string | null;
  mimeType: string | null;
  /** The version's place (its memento): bag and record. */
  bagPath: string | null;
  record: number | null;
  /** Payload files of the version (0: a record without bytes). */
  payloadFiles: number;
}

export interface UrlHit {
  id: number;
  sourceId: number;
  url: string;
  mimeType: string | null;
  deletedAt: string | null;
  /** When what is served now was recorded (seconds), or null. */
  servedAt: number | null;
}

export interface UrlSearch {
  text: string;
  match: 'prefix' | 'contains';
  /** A MIME set's selection (`mime:image` → { type: 'image' }). */
  mime?: { type?: string; subtype?: string };
  /** Where the last page stopped (from the previous answer's `next`). */
  after?: string;
  limit: number;
  /** Candidates looked at per page at most when a MIME set filters them. */
  window: number;
}

export interface UrlSearchPage {
  hits: UrlHit[];
  /** The cursor of the next page; undefined at the end. */
  next?: string;
  /** True when the page stopped at its window of candidates, not at its length. */
  windowFull: boolean;
}

/** Sources with their latest run (sources are few: one index seek each). */
export function sourceSummaries(catalog: Catalog): SourceSummary[] {
  const sources = catalog.statement('SELECT id, base_url, repository_name FROM sources ORDER BY id').all() as Row[];
  const last = catalog.statement('SELECT * FROM harvests WHERE source_id = ? ORDER BY id DESC LIMIT 1');
  return sources.map((row) => {
    const run = last.get(Number(row.id)) as Row | undefined;
    return {
      id: Number(row.id),
      baseUrl: String(row.base_url),
      repositoryName: row.repository_name === null ? null : String(row.repository_name),
      last: run && toHarvest(run),
    };
  });
}

/** One source by id. */
export function sourceSummary(catalog: Catalog, id: number): SourceSummary | undefined {
  return sourceSummaries(catalog).find((source) => source.id === id);
}

/**
 * The archive's totals: resources counted on their smallest index (linear, a few milliseconds a
 * hundred thousand rows on SQLite), the rest summed over the bags (one row per ingest batch).
 */
export function archiveTotals(catalog: Catalog): ArchiveTotals {
  const resources = catalog.statement('SELECT COUNT(*) AS n FROM resources').get() as Row;
  const bags = catalog
    .statement('SELECT COUNT(*) AS n, SUM(records) AS records, SUM(new_payloads) AS payloads, SUM(payload_bytes) AS bytes FROM bags')
    .get() as Row;
  return {
    resources: Number(resources.n),
    bags: Number(bags.n),
    records: Number(bags.records ?? 0),
    payloads: Number(bags.payloads ?? 0),
    payloadBytes: Number(bags.bytes ?? 0),
  };
}

const VERSION_COLUMNS = `'version' AS kind, v.id, r.source_id, r.identifier, v.stored_at AS at, v.change, v.datestamp, v.size, v.sha256,
  v.mime_type, b.bag_path, v.record, v.payload_files`;
const DELETION_COLUMNS = `'deletion' AS kind, d.id, r.source_id, r.identifier, d.recorded_at AS at, 'deleted' AS change, d.datestamp,
  NULL AS size, NULL AS sha256, NULL AS mime_type, NULL AS bag_path, NULL AS record, 0 AS payload_files`;

/**
 * The latest changes, newest first: versions that are not touches, and deletions. Each kind is
 * read backwards on its primary key within a window of `window` rows, so a harvest that touched
 * a million files costs the window, not the million.
 */
export function recentChanges(catalog: Catalog, limit: number, window = 5_000): ChangeRow[] {
  const versions = catalog.statement(BROWSE_QUERIES.recentVersions).all(window, limit) as Row[];
  const deletions = catalog.statement(BROWSE_QUERIES.recentDeletions).all(limit) as Row[];
  return [...versions, ...deletions]
    .map(toChange)
    .sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : b.id - a.id))
    .slice(0, limit);
}

/**
 * A URL's versions and deletions in every source, oldest first, from `after` (a cursor of the
 * previous page) on, at most `limit`.
 */
export function urlHistory(catalog: Catalog, url: string, limit: number, after?: { at: string; kind: string; id: number }): ChangeRow[] {
  const rows = catalog
    .statement(BROWSE_QUERIES.history)
    .all(url, url, after?.at ?? '', after?.at ?? '', after?.kind ?? '', after?.kind ?? '', after?.id ?? 0, limit) as Row[];
  return rows.map(toChange);
}

/** Whether the archive holds anything of `url` (any source). */
export function hasUrl(catalog: Catalog, url: string): boolean {
  return catalog.statement(BROWSE_QUERIES.hasUrl).get(url) !== undefined;
}

/** A capture: a version of a URL with bytes, as replay shows it. */
export interface Capture {
  versionId: number;
  url: string;
  storedAt: string;
  mimeType: string | null;
  lastModified: string | null;
  sha256: string;
  size: number;
  bagPath: string;
  record: number;
}

const CAPTURE_SQL = `SELECT v.id, r.identifier, v.stored_at, v.mime_type, v.last_modified, v.sha256, v.size, b.bag_path, v.record
  FROM resources r JOIN versions v ON v.resource_id = r.id JOIN bags b ON b.id = v.bag_id
  WHERE r.identifier = ? AND v.payload_files > 0`;

/**
 * The captures of `url` around the instant `at` (ISO 8601): the last at or before it, the one
 * before that, and the first after it. A URL's versions are few against the archive; they are
 * read through its identifier, each query a seek.
 */
export function capturesAround(catalog: Catalog, url: string, at: string): { atOrBefore?: Capture; before?: Capture; after?: Capture } {
  const earlier = catalog.statement(BROWSE_QUERIES.capturesBefore).all(url, at) as Row[];
  const later = catalog.statement(BROWSE_QUERIES.captureAfter).get(url, at) as Row | undefined;
  return {
    ...(earlier[0] ? { atOrBefore: toCapture(earlier[0]) } : {}),
    ...(earlier[1] ? { before: toCapture(earlier[1]) } : {}),
    ...(later ? { after: toCapture(later) } : {}),
  };
}

/** The latest capture of `url` whose bytes have this SHA-256 (how an audit names a version). */
export function captureByDigest(catalog: Catalog, url: string, sha256: string): Capture | undefined {
  const row = catalog.statement(BROWSE_QUERIES.captureByDigest).get(url, sha256) as Row | undefined;
  return row && toCapture(row);
}

/** The first deletion of `url` recorded after `from` and at or before `until`, if any. */
export function deletionBetween(catalog: Catalog, url: string, from: string, until: string): string | undefined {
  const row = catalog.statement(BROWSE_QUERIES.deletionBetween).get(url, from, until) as Row | undefined;
  return row === undefined ? undefined : String(row.recorded_at);
}

/** A version by its place (bag and record), as a capture. */
export function captureOfRecord(catalog: Catalog, bagPath: string, record: number): Capture | undefined {
  const row = catalog
    .statement(
      `SELECT v.id, r.identifier, v.stored_at, v.mime_type, v.last_modified, v.sha256, v.size, b.bag_path, v.record
       FROM bags b JOIN versions v ON v.bag_id = b.id JOIN resources r ON r.id = v.resource_id WHERE b.bag_path = ? AND v.record = ?`,
    )
    .get(bagPath, record) as Row | undefined;
  return row && toCapture(row);
}

const HIT_COLUMNS = 'r.id, r.source_id, r.identifier, r.mime_type, r.deleted_at, r.served_at, r.mime_essence, r.mime_major';

/** The page queries of the browse pages, named (test/browse-http.test.ts checks their plans). */
export const BROWSE_QUERIES = {
  recentVersions: `SELECT ${VERSION_COLUMNS} FROM (SELECT * FROM versions ORDER BY id DESC LIMIT ?) v
    JOIN resources r ON r.id = v.resource_id JOIN bags b ON b.id = v.bag_id WHERE v.change <> 'touched' ORDER BY v.id DESC LIMIT ?`,
  recentDeletions: `SELECT ${DELETION_COLUMNS} FROM (SELECT * FROM deletions ORDER BY id DESC LIMIT ?) d JOIN resources r ON r.id = d.resource_id`,
  // A URL's rows are read whole and sorted: they are its versions and deletions, few against the archive.
  history: `SELECT * FROM (
      SELECT ${VERSION_COLUMNS} FROM resources r JOIN versions v ON v.resource_id = r.id JOIN bags b ON b.id = v.bag_id WHERE r.identifier = ?
      UNION ALL
      SELECT ${DELETION_COLUMNS} FROM resources r JOIN deletions d ON d.resource_id = r.id WHERE r.identifier = ?
    ) h WHERE (h.at > ? OR (h.at = ? AND (h.kind > ? OR (h.kind = ? AND h.id > ?)))) ORDER BY h.at, h.kind, h.id LIMIT ?`,
  hasUrl: 'SELECT 1 AS present FROM resources WHERE identifier = ? LIMIT 1',
  capturesBefore: `${CAPTURE_SQL} AND v.stored_at <= ? ORDER BY v.stored_at DESC, v.id DESC LIMIT 2`,
  captureAfter: `${CAPTURE_SQL} AND v.stored_at > ? ORDER BY v.stored_at, v.id LIMIT 1`,
  captureByDigest: `${CAPTURE_SQL} AND v.sha256 = ? ORDER BY v.stored_at DESC, v.id DESC LIMIT 1`,
  deletionBetween: `SELECT d.recorded_at FROM resources r JOIN deletions d ON d.resource_id = r.id
    WHERE r.identifier = ? AND d.recorded_at > ? AND d.recorded_at <= ? ORDER BY d.recorded_at LIMIT 1`,
  // Strictly after the cursor, in (identifier, id) order: the index's own order.
  prefix: `SELECT ${HIT_COLUMNS} FROM resources r WHERE r.identifier >= ? AND r.identifier < ?
    AND (r.identifier > ? OR r.id > ?) ORDER BY r.identifier, r.id LIMIT ?`,
  prefixOpen: `SELECT ${HIT_COLUMNS} FROM resources r WHERE r.identifier >= ? AND (r.identifier > ? OR r.id > ?) ORDER BY r.identifier, r.id LIMIT ?`,
  containsScan: `SELECT ${HIT_COLUMNS} FROM resources r WHERE r.id > ? ORDER BY r.id LIMIT ?`,
  contains: `SELECT ${HIT_COLUMNS} FROM (SELECT rowid AS id FROM ${URL_TRIGRAMS} WHERE ${URL_TRIGRAMS} MATCH ? AND rowid > ? ORDER BY rowid LIMIT ?) t
    JOIN resources r ON r.id = t.id ORDER BY r.id`,
  containsPostgres: `SELECT ${HIT_COLUMNS} FROM resources r WHERE r.identifier ILIKE ? ESCAPE '\\' AND r.id > ? ORDER BY r.id LIMIT ?`,
} as const;

/** Search by URL: a page of resources whose URL starts with, or contains, the text. */
export function searchUrls(catalog: Catalog, search: UrlSearch): UrlSearchPage {
  return search.match === 'prefix' ? searchPrefix(catalog, search) : searchContains(catalog, search);
}

function searchPrefix(catalog: Catalog, search: UrlSearch): UrlSearchPage {
  const [afterUrl, afterId] = prefixCursor(search.after);
  const from = afterUrl ?? search.text;
  const end = prefixEnd(search.text);
  const size = search.mime ? search.window : search.limit + 1;
  // Strictly after the cursor, in (identifier, id) order: the index's own order.
  const rows = catalog
    .statement(end === undefined ? BROWSE_QUERIES.prefixOpen : BROWSE_QUERIES.prefix)
    .all(...[from, ...(end === undefined ? [] : [end]), from, afterUrl === undefined ? -1 : afterId, size]) as Row[];
  const candidates = rows.filter((row) => String(row.identifier).startsWith(search.text));
  return pageOf(candidates, search, rows.length === size, (row) => JSON.stringify([String(row.identifier), Number(row.id)]));
}

function searchContains(catalog: Catalog, search: UrlSearch): UrlSearchPage {
  const afterId = Number.parseInt(search.after ?? '0', 10) || 0;
  const size = search.mime ? search.window : search.limit + 1;
  const folded = search.text.toLowerCase();
  const contains = (row: Row) => String(row.identifier).toLowerCase().includes(folded);
  // A text most URLs hold ("http", ".html") is found fastest by reading on from the cursor: a
  // window of rows holds a page of it. The index is for rarer texts; its cost grows with the
  // entries of the text's rarest trigram before the cursor, small for a rare text.
  const scanned = catalog.statement(BROWSE_QUERIES.containsScan).all(afterId, SCAN_WINDOW) as Row[];
  const near = scanned.filter(contains);
  if (near.length >= size) return pageOf(near.slice(0, size), search, true, (row) => String(row.id));
  let rows: Row[];
  if (catalog.onPostgres) {
    const pattern = `%${search.text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    rows = catalog.statement(BROWSE_QUERIES.containsPostgres).all(pattern, afterId, size) as Row[];
  } else {
    // One FTS5 phrase of the text's trigrams: a substring, ASCII case folded.
    const phrase = `"${search.text.replaceAll('"', '""')}"`;
    rows = catalog.statement(BROWSE_QUERIES.contains).all(phrase, afterId, size) as Row[];
  }
  return pageOf(rows.filter(contains), search, rows.length === size, (row) => String(row.id));
}

/** Rows read on from the cursor before the index is asked (see searchContains). */
const SCAN_WINDOW = 2_000;

/** The hits of a window of candidates, the MIME set applied, and where the next page starts. */
function pageOf(candidates: Row[], search: UrlSearch, more: boolean, cursorOf: (row: Row) => string): UrlSearchPage {
  const mime = search.mime;
  const hits: Row[] = [];
  let last: Row | undefined;
  for (const row of candidates) {
    if (hits.length === search.limit) {
      return { hits: hits.map(toHit), next: cursorOf(last!), windowFull: false };
    }
    last = row;
    if (
      mime &&
      !(mime.type === undefined || (row.mime_major === mime.type && (mime.subtype === undefined || row.mime_essence === `${mime.type}/${mime.subtype}`)))
    )
      continue;
    if (mime && mime.type === undefined && row.mime_essence === null) continue;
    hits.push(row);
  }
  const windowFull = more && mime !== undefined;
  return { hits: hits.map(toHit), ...(more && last ? { next: cursorOf(last) } : {}), windowFull };
}

function prefixCursor(after: string | undefined): [string | undefined, number] {
  if (after === undefined) return [undefined, -1];
  try {
    const parsed = JSON.parse(after) as unknown;
    if (Array.isArray(parsed) && typeof parsed[0] === 'string' && Number.isSafeInteger(parsed[1])) return [parsed[0], parsed[1] as number];
  } catch {}
  return [undefined, -1];
}

/** The least string above every string that starts with `prefix` (undefined: none to give). */
function prefixEnd(prefix: string): string | undefined {
  for (let i = prefix.length - 1; i >= 0; i -= 1) {
    const code = prefix.charCodeAt(i);
    if (code < 0xd7ff) return prefix.slice(0, i) + String.fromCharCode(code + 1);
  }
  return undefined;
}

function toHit(row: Row): UrlHit {
  return {
    id: Number(row.id),
    sourceId: Number(row.source_id),
    url: String(row.identifier),
    mimeType: row.mime_type === null ? null : String(row.mime_type),
    deletedAt: row.deleted_at === null ? null : String(row.deleted_at),
    servedAt: row.served_at === null ? null : Number(row.served_at),
  };
}

function toChange(row: Row): ChangeRow {
  return {
    kind: String(row.kind) as ChangeRow['kind'],
    id: Number(row.id),
    sourceId: Number(row.source_id),
    url: String(row.identifier),
    at: String(row.at),
    change: String(row.change),
    datestamp: String(row.datestamp),
    size: row.size === null ? null : Number(row.size),
    sha256: row.sha256 === null ? null : String(row.sha256),
    mimeType: row.mime_type === null ? null : String(row.mime_type),
    bagPath: row.bag_path === null ? null : String(row.bag_path),
    record: row.record === null ? null : Number(row.record),
    payloadFiles: Number(row.payload_files),
  };
}

function toCapture(row: Row): Capture {
  return {
    versionId: Number(row.id),
    url: String(row.identifier),
    storedAt: String(row.stored_at),
    mimeType: row.mime_type === null ? null : String(row.mime_type),
    lastModified: row.last_modified === null ? null : String(row.last_modified),
    sha256: String(row.sha256),
    size: Number(row.size),
    bagPath: String(row.bag_path),
    record: Number(row.record),
  };
}
