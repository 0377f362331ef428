import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { RepositoryError } from '../core/errors.js';
import type { IndexedFile } from '../core/model.js';
import { MIME_SET_ROOT } from './set-spec.js';

/** What the scanner learnt about one exported file (everything but the id and datestamp). */
export type FileFacts = Omit<IndexedFile, 'id' | 'datestamp' | 'deleted'>;

/** A window of a list, in (datestamp, id) order. */
export interface ListQuery {
  /** Inclusive bounds in seconds. */
  from?: number;
  until: number;
  /** Only items in this set or below it (`mime:image` takes `mime:image:gif`). */
  setSpec?: string;
  /** Keyset: only items after this one. */
  after?: { datestamp: number; id: number };
  /** Path prefixes the requester may not see (see access-control.ts for the rule). */
  hiddenPrefixes: readonly string[];
  limit: number;
}

interface RecordRow {
  id: number;
  path: string;
  datestamp: number;
  deleted: number;
  mime_type: string;
  set_spec: string;
  size: number;
  mtime_ns: string;
  ctime_ns: string;
  file_key: string;
  sha256: string;
}

const SCHEMA_VERSION = '1';

/**
 * The repository's index in SQLite (WAL): every file ever exported, live or deleted, so
 * that requests never walk the file tree and deletions stay reportable (deletedRecord
 * persistent). Rows are never removed.
 */
export class FileIndex {
  readonly file: string;
  readonly tokenKey: Buffer;
  private readonly db: Database.Database;
  private readonly statements: ReturnType<FileIndex['prepare']>;
  private clockHighWater: number;
  private batchDepth = 0;
  private batchWrites = 0;
  private readonly queries = new Map<string, Database.Statement>();

  private constructor(file: string, db: Database.Database) {
    this.file = file;
    this.db = db;
    this.statements = this.prepare();
    this.tokenKey = Buffer.from(this.meta('token_key') ?? this.initMeta('token_key', randomBytes(32).toString('hex')), 'hex');
    this.clockHighWater = Number(this.meta('clock_high_water') ?? '0');
  }

  /** Opens (creating when absent) the index at `file`. */
  static open(file: string): FileIndex {
    let db: Database.Database;
    try {
      if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
      db = new Database(file);
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      db.pragma('busy_timeout = 5000');
      // 16 MiB of page cache instead of 2: the first page of a list over a million rows
      // counts through the datestamp index (measured in bench/: the count halves).
      db.pragma('cache_size = -16384');
      // The upsert of a changed file runs with a statement journal, a temporary file by
      // default: two writes a page to it halved what a rescan of touched files wrote
      // (measured in bench/rescan.mjs). It holds a statement's pages, a few, in memory.
      db.pragma('temp_store = MEMORY');
      createSchema(db);
    } catch (error) {
      throw new RepositoryError('ERR_REPO_INDEX', `cannot open the index ${file}: ${(error as Error).message}`, {
        cause: error,
        hint: 'check --index points to a writable file of this repository',
      });
    }
    return new FileIndex(file, db);
  }

  close(): void {
    if (this.batchDepth > 0) this.db.exec('COMMIT');
    this.batchDepth = 0;
    this.db.close();
  }

  /**
   * Groups the writes of a scan into transactions of up to 1,000 rows (one commit per row
   * cost ~100 µs, most of a scan's time). Nested batches join the outer one. Other requests
   * on this connection see the rows at once; a crash loses at most the open batch, which the
   * next scan observes again (later datestamps never break the datestamp guarantee).
   */
  beginBatch(): void {
    if (this.batchDepth++ === 0) {
      this.db.exec('BEGIN');
      this.batchWrites = 0;
    }
  }

  endBatch(): void {
    if (this.batchDepth > 0 && --this.batchDepth === 0) this.db.exec('COMMIT');
  }

  private wrote(): void {
    if (this.batchDepth > 0 && ++this.batchWrites >= 1000) {
      this.db.exec('COMMIT');
      this.db.exec('BEGIN');
      this.batchWrites = 0;
    }
  }

  private query(sql: string): Database.Statement {
    let statement = this.queries.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      if (this.queries.size > 200) this.queries.clear();
      this.queries.set(sql, statement);
    }
    return statement;
  }

  /**
   * True until a first full scan has completed: that scan may date files by their mtimes,
   * because nobody can have harvested anything yet (lists are not served before it ends).
   * A flag, not "no rows": an empty site indexed once must date files added later by when
   * they were observed, or a harvester of the empty site would never get them.
   */
  needsFirstScan(): boolean {
    return this.meta('first_scan_completed') === undefined;
  }

  markFirstScanCompleted(): void {
    this.statements.setMeta.run('first_scan_completed', new Date().toISOString());
  }

  /**
   * The datestamp for a change observed now: never earlier than one already given out, so
   * the datestamps of an identifier never go backwards even if the system clock does.
   */
  observationDatestamp(nowSeconds = Math.floor(Date.now() / 1000)): number {
    if (nowSeconds > this.clockHighWater) {
      this.clockHighWater = nowSeconds;
      this.statements.setMeta.run('clock_high_water', String(nowSeconds));
    }
    return this.clockHighWater;
  }

  byPath(path: string): IndexedFile | undefined {
    const row = this.statements.byPath.get(path) as RecordRow | undefined;
    return row && toFile(row);
  }

  /** Adds or replaces the live version of a file with the given datestamp. */
  putVersion(facts: FileFacts, datestamp: number): IndexedFile {
    const row = this.statements.upsert.get({ ...factsRow(facts), datestamp }) as RecordRow;
    this.wrote();
    return toFile(row);
  }

  /** Updates what only tells whether to re-hash (a chmod, a rename onto itself): no new datestamp. */
  putStat(path: string, facts: Pick<FileFacts, 'ctimeNs' | 'fileKey' | 'mtimeNs'>): IndexedFile | undefined {
    const row = this.statements.updateStat.get({
      path,
      ctime_ns: String(facts.ctimeNs),
      mtime_ns: String(facts.mtimeNs),
      file_key: facts.fileKey,
    }) as RecordRow | undefined;
    this.wrote();
    return row && toFile(row);
  }

  markDeleted(path: string, datestamp: number): void {
    this.statements.markDeleted.run(datestamp, path);
    this.wrote();
  }

  /**
   * A page of the live rows a scan compares with the tree: in path order, after `after`
   * (a path, or '' for the start), below `folder` ('' for all), at most `limit`.
   */
  scanPage(after: string, folder: string, limit: number): ScanRow[] {
    const { sql, params } = scanPageSql(after, folder);
    return this.query(sql).all(...params, limit) as ScanRow[];
  }

  transaction<T>(work: () => T): T {
    return this.db.transaction(work)();
  }

  /** Items of a list window, in (datestamp, id) order, deleted ones included: one or two index seeks (listSql). */
  list(query: ListQuery): IndexedFile[] {
    const rows: RecordRow[] = [];
    for (const { sql, params } of listSql(query)) {
      if (rows.length >= query.limit) break;
      rows.push(...(this.query(sql).all(...params, query.limit - rows.length) as RecordRow[]));
    }
    return rows.map(toFile);
  }

  /**
   * How many items a list window holds, at most `limit` (for completeListSize: the provider
   * counts once per list, on its first page, and no further than its countLimit).
   */
  count(query: Omit<ListQuery, 'after'>): number {
    const counted = countSql(query);
    return counted === null ? 0 : (this.query(counted.sql).get(...counted.params) as { n: number }).n;
  }

  /**
   * About how many items a whole list holds without counting them (no `from`, no set, nothing
   * hidden): the highest row id, one seek. Undefined for any other window.
   */
  estimate(query: Omit<ListQuery, 'after' | 'limit'>): number | undefined {
    if (query.from !== undefined || query.setSpec !== undefined || query.hiddenPrefixes.length > 0) return undefined;
    return (this.query('SELECT MAX(id) AS n FROM records').get() as { n: number | null }).n ?? undefined;
  }

  /** The oldest datestamp among the items the requester may see. */
  earliestDatestamp(hiddenPrefixes: readonly string[] = []): number | undefined {
    const { sql, params } = earliestSql(hiddenPrefixes);
    const row = this.db.prepare(sql).get(...params) as { datestamp: number } | undefined;
    return row?.datestamp;
  }

  /** setSpecs of live items the requester may see (leaf sets only; callers add ancestors). */
  liveSetSpecs(hiddenPrefixes: readonly string[]): string[] {
    const { sql, params } = liveSetSpecsSql(hiddenPrefixes);
    return (this.db.prepare(sql).all(...params) as { set_spec: string }[]).map((row) => row.set_spec);
  }

  private meta(key: string): string | undefined {
    return (this.statements.getMeta.get(key) as { value: string } | undefined)?.value;
  }

  private initMeta(key: string, value: string): string {
    this.statements.setMeta.run(key, value);
    return value;
  }

  private prepare() {
    const db = this.db;
    return {
      getMeta: db.prepare('SELECT value FROM meta WHERE key = ?'),
      setMeta: db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value'),
      byPath: db.prepare('SELECT * FROM records WHERE path = ?'),
      upsert: db.prepare(`
        INSERT INTO records (path, datestamp, deleted, mime_type, set_spec, size, mtime_ns, ctime_ns, file_key, sha256)
        VALUES (@path, @datestamp, 0, @mime_type, @set_spec, @size, @mtime_ns, @ctime_ns, @file_key, @sha256)
        ON CONFLICT (path) DO UPDATE SET datestamp = excluded.datestamp, deleted = 0, mime_type = excluded.mime_type,
          set_spec = excluded.set_spec, size = excluded.size, mtime_ns = excluded.mtime_ns, ctime_ns = excluded.ctime_ns,
          file_key = excluded.file_key, sha256 = excluded.sha256
        RETURNING *`),
      updateStat: db.prepare('UPDATE records SET ctime_ns = @ctime_ns, mtime_ns = @mtime_ns, file_key = @file_key WHERE path = @path RETURNING *'),
      markDeleted: db.prepare('UPDATE records SET deleted = 1, datestamp = ? WHERE path = ? AND deleted = 0'),
    };
  }
}

function createSchema(db: Database.Database): void {
  db.exec(`
    CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS records (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      path TEXT NOT NULL UNIQUE,
      datestamp INTEGER NOT NULL,
      deleted INTEGER NOT NULL DEFAULT 0,
      mime_type TEXT NOT NULL,
      set_spec TEXT NOT NULL,
      size INTEGER NOT NULL,
      mtime_ns TEXT NOT NULL,
      ctime_ns TEXT NOT NULL,
      file_key TEXT NOT NULL,
      sha256 TEXT NOT NULL,
      -- Unused since scans compare the tree with the index in path order (no mark per file
      -- seen); kept so that indexes made before open unchanged.
      scan_gen INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX IF NOT EXISTS records_by_datestamp ON records (datestamp, id);
    CREATE INDEX IF NOT EXISTS records_by_set ON records (set_spec, datestamp, id);
    CREATE INDEX IF NOT EXISTS records_by_major_type ON records (${MAJOR_TYPE_SET}, datestamp, id);
  `);
  const version = db.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get() as { value: string } | undefined;
  if (!version) db.prepare("INSERT INTO meta (key, value) VALUES ('schema_version', ?)").run(SCHEMA_VERSION);
  else if (version.value !== SCHEMA_VERSION) throw new Error(`index schema version ${version.value}, this program reads ${SCHEMA_VERSION}`);
}

/** A statement of the index and its parameters: what runs, and what a test explains. */
export interface IndexSql {
  sql: string;
  params: unknown[];
}

/** What a scan needs of a live row to tell, from an lstat alone, that its file did not change. */
export interface ScanRow {
  path: string;
  size: number;
  mtime_ns: string;
  ctime_ns: string;
  file_key: string;
}

/**
 * A page of a scan's walk through the index: a range of the path index (its UNIQUE
 * constraint), in path order, which is the order the scan walks the tree in (tree-walk.ts);
 * takes the page size as its last parameter.
 */
export function scanPageSql(after: string, folder: string): IndexSql {
  const columns = 'SELECT path, size, mtime_ns, ctime_ns, file_key FROM records';
  if (folder === '') return { sql: `${columns} WHERE path > ? AND deleted = 0 ORDER BY path LIMIT ?`, params: [after] };
  // '/' + 1 is '0': [folder + '/', folder + '0') is everything below the folder.
  const below = `${folder}/`;
  return {
    sql: `${columns} WHERE path > ? AND path < ? AND deleted = 0 ORDER BY path LIMIT ?`,
    params: [after < below ? below : after, `${folder}0`],
  };
}

/**
 * The major-type set of a row (`mime:image` for `mime:image:png`), as an expression that
 * records_by_major_type indexes. Every row's set_spec is a leaf of the MIME hierarchy,
 * `mime:type:subtype` (setSpecForMimeType), so the root `mime` holds every row.
 */
const MAJOR_TYPE_SET = "substr(set_spec, 1, 4 + instr(substr(set_spec, 6), ':'))";

/**
 * The condition of a set as one index prefix: a leaf is an equality on set_spec
 * (records_by_set), a major type one on MAJOR_TYPE_SET (records_by_major_type), the root none
 * (records_by_datestamp); null for a set that can hold no row.
 */
function setCondition(setSpec: string | undefined): IndexSql | null {
  if (setSpec === undefined || setSpec === MIME_SET_ROOT) return { sql: '', params: [] };
  const parts = setSpec.split(':');
  if (parts[0] !== MIME_SET_ROOT || parts.length > 3) return null;
  return parts.length === 3 ? { sql: ' AND set_spec = ?', params: [setSpec] } : { sql: ` AND ${MAJOR_TYPE_SET} = ?`, params: [setSpec] };
}

/**
 * A page of a list window as one or two statements, each a range of one index that gives
 * (datestamp, id) order without a sort, run in order while the page is not full; each takes
 * the page's remaining size as its last parameter. After a key: the rest of that key's second
 * (ids above its id), then the seconds after it. A row-value `(datestamp, id) > (?, ?)` seeks
 * on the datestamp alone and steps through that second's earlier rows, which is a page's whole
 * cost when a million files share one mtime second (measured in bench/lists.mjs).
 */
export function listSql(query: Omit<ListQuery, 'limit'>): IndexSql[] {
  const set = setCondition(query.setSpec);
  if (set === null) return [];
  const hidden = hiddenClause(query.hiddenPrefixes);
  const statements: IndexSql[] = [];
  let from = query.from ?? Number.MIN_SAFE_INTEGER;
  if (query.after) {
    const { datestamp, id } = query.after;
    if (datestamp >= from && datestamp <= query.until) {
      statements.push({
        sql: `SELECT * FROM records WHERE datestamp = ? AND id > ?${set.sql}${hidden.sql} ORDER BY id LIMIT ?`,
        params: [datestamp, id, ...set.params, ...hidden.params],
      });
    }
    from = Math.max(from, datestamp + 1);
  }
  statements.push({
    sql: `SELECT * FROM records WHERE datestamp >= ? AND datestamp <= ?${set.sql}${hidden.sql} ORDER BY datestamp, id LIMIT ?`,
    params: [from, query.until, ...set.params, ...hidden.params],
  });
  return statements;
}

/** The count of a list window through the same index as its pages; null when the set holds nothing. */
export function countSql(query: Omit<ListQuery, 'after'>): IndexSql | null {
  const set = setCondition(query.setSpec);
  if (set === null) return null;
  const hidden = hiddenClause(query.hiddenPrefixes);
  return {
    sql: `SELECT count(*) AS n FROM (SELECT 1 FROM records WHERE datestamp >= ? AND datestamp <= ?${set.sql}${hidden.sql} LIMIT ?)`,
    params: [query.from ?? Number.MIN_SAFE_INTEGER, query.until, ...set.params, ...hidden.params, query.limit],
  };
}

/** The oldest datestamp a requester may see: records_by_datestamp walked from its start to the first visible row. */
export function earliestSql(hiddenPrefixes: readonly string[]): IndexSql {
  const hidden = hiddenClause(hiddenPrefixes);
  return {
    sql: `SELECT datestamp FROM records WHERE datestamp >= ?${hidden.sql} ORDER BY datestamp LIMIT 1`,
    params: [Number.MIN_SAFE_INTEGER, ...hidden.params],
  };
}

/**
 * The leaf sets with a live row the requester may see: a skip through records_by_set from one
 * set_spec to the next (one seek per set, not a read of every row), each checked for a live,
 * visible member.
 */
export function liveSetSpecsSql(hiddenPrefixes: readonly string[]): IndexSql {
  const hidden = hiddenClause(hiddenPrefixes);
  return {
    sql: `WITH RECURSIVE specs (spec) AS (
        SELECT MIN(set_spec) FROM records
        UNION ALL SELECT (SELECT MIN(set_spec) FROM records WHERE set_spec > specs.spec) FROM specs WHERE specs.spec IS NOT NULL)
      SELECT spec AS set_spec FROM specs
      WHERE spec IS NOT NULL AND EXISTS (SELECT 1 FROM records WHERE set_spec = specs.spec AND deleted = 0${hidden.sql})`,
    params: hidden.params,
  };
}

/** SQL for "not under any of these prefixes", with the rule of access-control.ts. */
function hiddenClause(prefixes: readonly string[]): { sql: string; params: unknown[] } {
  let sql = '';
  const params: unknown[] = [];
  for (const prefix of prefixes) {
    if (prefix === '') return { sql: ' AND 0', params: [] }; // sees nothing at all
    const folder = prefix.endsWith('/') ? prefix : `${prefix}/`;
    // '/' + 1 is '0': [folder, folder with '/' replaced by '0') is everything below it.
    sql += ' AND NOT (path = ? OR (path >= ? AND path < ?))';
    params.push(prefix, folder, `${folder.slice(0, -1)}0`);
  }
  return { sql, params };
}

function toFile(row: RecordRow): IndexedFile {
  return {
    id: row.id,
    path: row.path,
    datestamp: row.datestamp,
    deleted: row.deleted !== 0,
    mimeType: row.mime_type,
    setSpec: row.set_spec,
    size: row.size,
    mtimeNs: BigInt(row.mtime_ns),
    ctimeNs: BigInt(row.ctime_ns),
    fileKey: row.file_key,
    sha256: row.sha256,
  };
}

function factsRow(facts: FileFacts) {
  return {
    path: facts.path,
    mime_type: facts.mimeType,
    set_spec: facts.setSpec,
    size: facts.size,
    mtime_ns: String(facts.mtimeNs),
    ctime_ns: String(facts.ctimeNs),
    file_key: facts.fileKey,
    sha256: facts.sha256,
  };
}
