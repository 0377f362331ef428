// The catalog's queries for `oaibag export --warc` (docs/import-export.md, "WARC, CDXJ and
// WACZ"), and the export's own working table.
//
// The catalog is read a page at a time by row id (the primary keys of versions and resources:
// each page is a seek, O(page), on SQLite and on PostgreSQL alike through Catalog.statement);
// the versions chosen go into a private temporary SQLite database (SQLite's own, on disk,
// deleted when closed), which gives them back in capture order (stored_at, then id) and answers
// "which chosen version is the first to carry these bytes" with one index seek. So the export's
// memory does not grow with the archive, and whether a version's bytes were written earlier in
// this export is decided from that table, never from a set held in memory. The same table
// sorts the CDXJ lines (by their bytes, as `LC_ALL=C sort` does) and keeps the title of each
// HTML payload for the pages of a WACZ.
import type { Catalog } from './catalog.js';
import type { Row } from './catalog-rows.js';
import { ScratchDatabase } from './scratch-database.js';

/** Versions, resources and detail rows read from the catalog at a time. */
export const WARC_PAGE_ROWS = 500;

/** A version as the export chooses among them: its capture time and the payload file of its first part. */
export interface WarcVersionKey {
  id: number;
  resourceId: number;
  sourceId: number;
  /** When it was stored (its bag's Bagged-At): the capture time. */
  storedAt: string;
  /** The payload row of its first part; null for a record without datastream. */
  payloadId: number | null;
}

/** What a WARC record of a version is written from. */
export interface WarcVersionDetails {
  id: number;
  identifier: string;
  /** The source's OAI-PMH base URL. */
  source: string;
  datestamp: string;
  storedAt: string;
  mimeType: string | null;
  lastModified: string | null;
  /** The batch bag holding the record, and its place there (records.xml.gz, from 1). */
  bagPath: string;
  record: number;
  /** The version's digest and size (those of its one payload file when it has one part). */
  sha256: string;
  size: number;
  payloadFiles: number;
  /** The payload file of the first part: where it is and what it must hold. */
  payload: { id: number; sha256: string; size: number; bagPath: string; path: string };
  /** The URL that answered with the first part's bytes, for a By-Reference datastream. */
  fetchedUrl: string | null;
}

/** A deletion as the export weighs it against a version: when it was recorded. */
export interface WarcDeletion {
  resourceId: number;
  recordedAt: string;
}

const VERSION_PAGE = `SELECT v.id, v.resource_id, r.source_id, v.stored_at, vp.payload_id
  FROM versions v JOIN resources r ON r.id = v.resource_id LEFT JOIN version_parts vp ON vp.version_id = v.id AND vp.part = 1
  WHERE v.id > ? ORDER BY v.id LIMIT ?`;
const RESOURCE_PAGE = 'SELECT id, source_id FROM resources WHERE id > ? ORDER BY id LIMIT ?';
const VERSIONS_OF = `SELECT v.id, v.resource_id, v.stored_at, vp.payload_id
  FROM versions v LEFT JOIN version_parts vp ON vp.version_id = v.id AND vp.part = 1
  WHERE v.resource_id IN (SELECT value FROM json_each(?))`;
const DELETIONS_OF = 'SELECT resource_id, recorded_at FROM deletions WHERE resource_id IN (SELECT value FROM json_each(?))';
const DETAILS_OF = `SELECT v.id, r.identifier, s.base_url, v.datestamp, v.stored_at, v.mime_type, v.last_modified, b.bag_path, v.record,
    v.sha256, v.size, v.payload_files, p.id AS payload_id, p.sha256 AS payload_sha256, p.size AS payload_size, p.path AS payload_path,
    pb.bag_path AS payload_bag,
    (SELECT f.url FROM fetches f WHERE f.version_id = v.id AND f.part = 1 ORDER BY f.id LIMIT 1) AS fetched_url
  FROM versions v JOIN resources r ON r.id = v.resource_id JOIN sources s ON s.id = r.source_id JOIN bags b ON b.id = v.bag_id
    JOIN version_parts vp ON vp.version_id = v.id AND vp.part = 1 JOIN payloads p ON p.id = vp.payload_id JOIN bags pb ON pb.id = p.bag_id
  WHERE v.id IN (SELECT value FROM json_each(?))`;

const toKey = (row: Row, sourceId?: number): WarcVersionKey => ({
  id: Number(row.id),
  resourceId: Number(row.resource_id),
  sourceId: sourceId ?? Number(row.source_id),
  storedAt: String(row.stored_at),
  payloadId: row.payload_id === null || row.payload_id === undefined ? null : Number(row.payload_id),
});

/** The next `limit` versions after the row id `after` (0: from the first), by id: a range of the primary key. */
export function warcVersionPage(catalog: Catalog, after: number, limit: number): WarcVersionKey[] {
  return (catalog.statement(VERSION_PAGE).all(after, limit) as Row[]).map((row) => toKey(row));
}

/** The next `limit` resources after the row id `after`, by id, with their sources. */
export function warcResourcePage(catalog: Catalog, after: number, limit: number): Array<{ id: number; sourceId: number }> {
  return (catalog.statement(RESOURCE_PAGE).all(after, limit) as Row[]).map((row) => ({ id: Number(row.id), sourceId: Number(row.source_id) }));
}

/** Every version and every deletion of these resources (found through their resource_id indexes), by row id. */
export function warcHistoryOf(
  catalog: Catalog,
  resources: ReadonlyArray<{ id: number; sourceId: number }>,
): { versions: WarcVersionKey[]; deletions: WarcDeletion[] } {
  if (resources.length === 0) return { versions: [], deletions: [] };
  const ids = JSON.stringify(resources.map((resource) => resource.id));
  const sourceOf = new Map(resources.map((resource) => [resource.id, resource.sourceId]));
  const versions = (catalog.statement(VERSIONS_OF).all(ids) as Row[])
    .map((row) => toKey(row, sourceOf.get(Number(row.resource_id)) ?? 0))
    .sort((a, b) => a.id - b.id);
  const deletions = (catalog.statement(DELETIONS_OF).all(ids) as Row[]).map((row) => ({
    resourceId: Number(row.resource_id),
    recordedAt: String(row.recorded_at),
  }));
  return { versions, deletions };
}

/** What the records of these versions are written from, by version id (versions without a payload are not there). */
export function warcVersionDetails(catalog: Catalog, ids: readonly number[]): Map<number, WarcVersionDetails> {
  const found = new Map<number, WarcVersionDetails>();
  if (ids.length === 0) return found;
  for (const row of catalog.statement(DETAILS_OF).all(JSON.stringify([...new Set(ids)])) as Row[]) {
    found.set(Number(row.id), {
      id: Number(row.id),
      identifier: String(row.identifier),
      source: String(row.base_url),
      datestamp: String(row.datestamp),
      storedAt: String(row.stored_at),
      mimeType: row.mime_type === null ? null : String(row.mime_type),
      lastModified: row.last_modified === null ? null : String(row.last_modified),
      bagPath: String(row.bag_path),
      record: Number(row.record),
      sha256: String(row.sha256).toLowerCase(),
      size: Number(row.size),
      payloadFiles: Number(row.payload_files),
      payload: {
        id: Number(row.payload_id),
        sha256: String(row.payload_sha256).toLowerCase(),
        size: Number(row.payload_size),
        bagPath: String(row.payload_bag),
        path: String(row.payload_path),
      },
      fetchedUrl: row.fetched_url === null || row.fetched_url === undefined ? null : String(row.fetched_url),
    });
  }
  return found;
}

/** The query plans of the export's catalog reads (SQLite's EXPLAIN QUERY PLAN, one line each), for the test that none scans a table. */
export function warcQueryPlans(catalog: Catalog): Array<{ sql: string; plan: string }> {
  const args: Array<[string, unknown[]]> = [
    [VERSION_PAGE, [0, 1]],
    [RESOURCE_PAGE, [0, 1]],
    [VERSIONS_OF, ['[1]']],
    [DELETIONS_OF, ['[1]']],
    [DETAILS_OF, ['[1]']],
  ];
  return args.map(([sql, values]) => ({
    sql,
    plan: (catalog.statement(`EXPLAIN QUERY PLAN ${sql}`).all(...values) as Array<{ detail: string }>).map((row) => row.detail).join('; '),
  }));
}

/** A chosen version as the export table gives it back, in capture order. */
export interface ChosenVersion {
  storedAt: string;
  versionId: number;
  payloadId: number;
}

const SCHEMA = `
  CREATE TABLE chosen (stored_at TEXT NOT NULL, version_id INTEGER NOT NULL, payload_id INTEGER NOT NULL,
    PRIMARY KEY (stored_at, version_id)) WITHOUT ROWID;
  CREATE INDEX chosen_by_payload ON chosen (payload_id, stored_at, version_id);
  CREATE TABLE titles (payload_id INTEGER PRIMARY KEY, title TEXT NOT NULL);
  CREATE TABLE cdxj (line BLOB PRIMARY KEY) WITHOUT ROWID;
`;
const CHOSEN_PAGE = 'SELECT stored_at, version_id, payload_id FROM chosen WHERE (stored_at, version_id) > (?, ?) ORDER BY stored_at, version_id LIMIT ?';
const FIRST_WITH = 'SELECT stored_at, version_id FROM chosen WHERE payload_id = ? ORDER BY stored_at, version_id LIMIT 1';
const CDXJ_PAGE = 'SELECT line FROM cdxj WHERE line > ? ORDER BY line LIMIT ?';

/** The export's working table, in a temporary database of its own; {@link close} deletes it. */
export class WarcExportTable extends ScratchDatabase {
  /** A new, empty table in a private temporary database (TMPDIR, else /var/tmp or /tmp), its pages spilling there. */
  static open(pageRows = WARC_PAGE_ROWS): WarcExportTable {
    return new WarcExportTable(ScratchDatabase.create(SCHEMA), pageRows);
  }

  /** Chooses a version for the export. */
  choose(version: ChosenVersion): void {
    this.statement('INSERT OR IGNORE INTO chosen (stored_at, version_id, payload_id) VALUES (?, ?, ?)').run(
      version.storedAt,
      version.versionId,
      version.payloadId,
    );
  }

  /** The chosen versions in capture order (stored_at, then id), a page at a time. */
  *pages(): Generator<ChosenVersion[]> {
    let after: [string, number] = ['', -1];
    for (;;) {
      const rows = this.statement(CHOSEN_PAGE).all(...after, this.pageRows) as Array<{ stored_at: string; version_id: number; payload_id: number }>;
      if (rows.length > 0) yield rows.map((row) => ({ storedAt: row.stored_at, versionId: row.version_id, payloadId: row.payload_id }));
      const last = rows.at(-1);
      if (last === undefined || rows.length < this.pageRows) return;
      after = [last.stored_at, last.version_id];
    }
  }

  /** The first chosen version (in capture order) whose first part is the payload `payloadId`. */
  firstWith(payloadId: number): { storedAt: string; versionId: number } | undefined {
    const row = this.statement(FIRST_WITH).get(payloadId) as { stored_at: string; version_id: number } | undefined;
    return row && { storedAt: row.stored_at, versionId: row.version_id };
  }

  /** The latest capture time chosen, or undefined when nothing was. */
  latestStoredAt(): string | undefined {
    const row = this.statement('SELECT stored_at FROM chosen ORDER BY stored_at DESC, version_id DESC LIMIT 1').get() as { stored_at: string } | undefined;
    return row?.stored_at;
  }

  /** Notes the title of an HTML payload, for the pages of the versions that revisit it. */
  setTitle(payloadId: number, title: string): void {
    this.statement('INSERT OR IGNORE INTO titles (payload_id, title) VALUES (?, ?)').run(payloadId, title);
  }

  title(payloadId: number): string | undefined {
    return (this.statement('SELECT title FROM titles WHERE payload_id = ?').get(payloadId) as { title: string } | undefined)?.title;
  }

  /** Adds a line of the CDXJ index (its UTF-8 bytes, without the line end). */
  addIndexLine(line: Buffer): void {
    this.statement('INSERT OR IGNORE INTO cdxj (line) VALUES (?)').run(line);
  }

  /** The CDXJ lines in the order of their bytes, a page at a time. */
  *indexLines(): Generator<Buffer[]> {
    let after: Buffer = Buffer.alloc(0);
    for (;;) {
      const rows = this.statement(CDXJ_PAGE).all(after, this.pageRows) as Array<{ line: Buffer }>;
      if (rows.length > 0) yield rows.map((row) => row.line);
      const last = rows.at(-1);
      if (last === undefined || rows.length < this.pageRows) return;
      after = last.line;
    }
  }

  /** The query plans of the table's page reads and lookups, for the test that none scans or sorts. */
  explainReads(): string[] {
    const plans: Array<[string, unknown[]]> = [
      [CHOSEN_PAGE, ['', 0, 1]],
      [FIRST_WITH, [1]],
      [CDXJ_PAGE, [Buffer.alloc(0), 1]],
      ['SELECT title FROM titles WHERE payload_id = ?', [1]],
    ];
    return this.plansOf(plans);
  }
}
