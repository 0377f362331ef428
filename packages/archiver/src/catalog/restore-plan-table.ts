// The plan of a restore (or of `export --site`) kept on disk, not in the JS heap: a private
// temporary SQLite database (SQLite's own, deleted when it is closed) holding each resource's
// decided version and path, so that a restore of millions of resources plans in flat memory.
// restore/restore.ts fills it while it pages through the catalog, then reads it back a page
// at a time, in path order, through its indexes.
//
// Order: the plan's orders are JavaScript's (code units, as `a < b` on strings), which is what
// every report and the ZIP's entry order have always used. SQLite compares text by its UTF-8
// bytes (code points), which differs for characters beyond U+FFFF, so paths and identifiers are
// ordered by a key of their UTF-16 code units, big-endian, compared as bytes (codeUnitKey).
import type { VersionRecord } from './restore-queries.js';
import { ScratchDatabase } from './scratch-database.js';

/** A page of the plan read back: this many rows. */
export const PLAN_PAGE_ROWS = 256;

/** `text` as bytes that compare (memcmp, SQLite's BLOB order) as JavaScript compares strings: UTF-16 code units, big-endian. */
export function codeUnitKey(text: string): Buffer {
  return Buffer.from(text, 'utf16le').swap16();
}

/** A row whose datestamp cannot be read: reported, and left out of the decision. */
export interface UnreadableRow {
  kind: 'version' | 'deletion';
  /** The source's place among the sources restored, and the row's id: the order of the reports. */
  sourceIndex: number;
  rowId: number;
  identifier: string;
  datestamp: string;
}

/** A resource whose URL gives no path. */
export interface RefusedRow {
  identifier: string;
  sourceId: number;
  reason: string;
}

/** A resource with its path: a file of the state unless another resource took its place. */
export interface PlacedRow {
  path: string;
  version: VersionRecord;
}

/** Where a page read stopped: the next page starts after it. */
export type PlanCursor = readonly [Buffer, Buffer, number];

const REFUSED_PAGE = 'SELECT id, source_id, identifier, reason FROM refused WHERE (ident_key, source_id) > (?, ?) ORDER BY ident_key, source_id LIMIT ?';
const PLACED_PAGE = `SELECT id, source_id, path, version FROM placed
  WHERE (path_key, ident_key, source_id) > (?, ?, ?) ORDER BY path_key, ident_key, source_id LIMIT ?`;
const PLACED_PAGE_WINNERS = `SELECT id, source_id, path, version FROM placed
  WHERE (path_key, ident_key, source_id) > (?, ?, ?) AND lost = 0 ORDER BY path_key, ident_key, source_id LIMIT ?`;

const WINNER_PATHS_PAGE = `SELECT id, source_id, path, json_extract(version, '$.identifier') AS identifier, json_extract(version, '$.size') AS size
  FROM placed WHERE (path_key, ident_key, source_id) > (?, ?, ?) AND lost = 0 ORDER BY path_key, ident_key, source_id LIMIT ?`;

const SCHEMA = `
  CREATE TABLE unreadable (kind INTEGER NOT NULL, source_index INTEGER NOT NULL, row_id INTEGER NOT NULL,
    identifier TEXT NOT NULL, datestamp TEXT NOT NULL, PRIMARY KEY (kind, source_index, row_id)) WITHOUT ROWID;
  CREATE TABLE refused (id INTEGER PRIMARY KEY, ident_key BLOB NOT NULL, source_id INTEGER NOT NULL, identifier TEXT NOT NULL, reason TEXT NOT NULL);
  CREATE UNIQUE INDEX refused_in_order ON refused (ident_key, source_id);
  CREATE TABLE placed (id INTEGER PRIMARY KEY, path_key BLOB NOT NULL, ident_key BLOB NOT NULL, source_id INTEGER NOT NULL,
    path TEXT NOT NULL, lost INTEGER NOT NULL DEFAULT 0, version TEXT NOT NULL);
  CREATE UNIQUE INDEX placed_in_order ON placed (path_key, ident_key, source_id);
  CREATE TABLE present (path TEXT PRIMARY KEY) WITHOUT ROWID;
`;

/** The plan of one restore, in a temporary database of its own; {@link close} deletes it. */
export class RestorePlanTable extends ScratchDatabase {
  /**
   * A new, empty plan in a private temporary database (SQLite's temporary folder: TMPDIR, else
   * /var/tmp or /tmp). Its pages are held in a small cache and spill to that file.
   */
  static open(pageRows = PLAN_PAGE_ROWS): RestorePlanTable {
    return new RestorePlanTable(ScratchDatabase.create(SCHEMA), pageRows);
  }

  addUnreadable(row: UnreadableRow): void {
    this.statement('INSERT INTO unreadable VALUES (?, ?, ?, ?, ?)').run(
      row.kind === 'version' ? 0 : 1,
      row.sourceIndex,
      row.rowId,
      row.identifier,
      row.datestamp,
    );
  }

  addRefused(row: RefusedRow): void {
    this.statement('INSERT INTO refused (ident_key, source_id, identifier, reason) VALUES (?, ?, ?, ?)').run(
      codeUnitKey(row.identifier),
      row.sourceId,
      row.identifier,
      row.reason,
    );
  }

  addPlaced(row: PlacedRow): void {
    this.statement('INSERT INTO placed (path_key, ident_key, source_id, path, version) VALUES (?, ?, ?, ?, ?)').run(
      codeUnitKey(row.path),
      codeUnitKey(row.version.identifier),
      row.version.sourceId,
      row.path,
      JSON.stringify(row.version),
    );
  }

  /** The unreadable rows: versions before deletions, then by source, then by row id. */
  *unreadable(): Generator<UnreadableRow> {
    let after: [number, number, number] = [-1, -1, -1];
    for (;;) {
      const rows = this.statement('SELECT * FROM unreadable WHERE (kind, source_index, row_id) > (?, ?, ?) ORDER BY kind, source_index, row_id LIMIT ?').all(
        ...after,
        this.pageRows,
      ) as Array<{ kind: number; source_index: number; row_id: number; identifier: string; datestamp: string }>;
      for (const row of rows) {
        yield {
          kind: row.kind === 0 ? 'version' : 'deletion',
          sourceIndex: row.source_index,
          rowId: row.row_id,
          identifier: row.identifier,
          datestamp: row.datestamp,
        };
      }
      const last = rows.at(-1);
      if (last === undefined || rows.length < this.pageRows) return;
      after = [last.kind, last.source_index, last.row_id];
    }
  }

  /** The refused resources, by identifier (code units), then source. */
  *refused(): Generator<RefusedRow> {
    let after: [Buffer, number] = [Buffer.alloc(0), -1];
    for (;;) {
      const rows = this.statement(REFUSED_PAGE).all(...after, this.pageRows) as Array<{ id: number; source_id: number; identifier: string; reason: string }>;
      for (const row of rows) yield { identifier: row.identifier, sourceId: row.source_id, reason: row.reason };
      const last = rows.at(-1);
      if (last === undefined || rows.length < this.pageRows) return;
      const key = this.statement('SELECT ident_key FROM refused WHERE id = ?').get(last.id) as { ident_key: Buffer };
      after = [key.ident_key, last.source_id];
    }
  }

  /**
   * The placed resources in path order (code units), then identifier and source (the first of
   * equal paths keeps the place); with `winners`, only those that were not marked lost. Each
   * row comes with its row id, for {@link markLost}.
   */
  *placed(winners: boolean): Generator<PlacedRow & { rowId: number }> {
    for (const page of this.pages<{ path: string; version: string }>(winners ? PLACED_PAGE_WINNERS : PLACED_PAGE)) {
      for (const row of page) yield { path: row.path, version: JSON.parse(row.version) as VersionRecord, rowId: row.id };
    }
  }

  /** The files of the state (placed, not lost), in path order, as their path, identifier and size alone (no version is parsed). */
  *winnerPaths(): Generator<{ path: string; identifier: string; size: number }> {
    for (const page of this.pages<{ path: string; identifier: string; size: number }>(WINNER_PATHS_PAGE)) {
      for (const row of page) yield { path: row.path, identifier: row.identifier, size: row.size };
    }
  }

  /**
   * The pages of a keyset read over `placed` in path order (`sql` takes the cursor and the page
   * size). The keys are read for a page's last row only: each Buffer is an ArrayBuffer of its
   * own, and one per row made the garbage collector the largest cost of a restore.
   */
  private *pages<T>(sql: string): Generator<Array<T & { id: number; source_id: number }>> {
    let after: PlanCursor = [Buffer.alloc(0), Buffer.alloc(0), -1];
    for (;;) {
      const rows = this.statement(sql).all(...after, this.pageRows) as Array<T & { id: number; source_id: number }>;
      yield rows;
      const last = rows.at(-1);
      if (last === undefined || rows.length < this.pageRows) return;
      const key = this.statement('SELECT path_key, ident_key FROM placed WHERE id = ?').get(last.id) as { path_key: Buffer; ident_key: Buffer };
      after = [key.path_key, key.ident_key, last.source_id];
    }
  }

  /** Marks a placed resource as having lost its path to another (it is not written). */
  markLost(rowId: number): void {
    this.statement('UPDATE placed SET lost = 1 WHERE id = ?').run(rowId);
  }

  /** True when a file of the state (a placed resource that kept its path) is at `path`. */
  hasFile(path: string): boolean {
    return this.statement('SELECT 1 FROM placed WHERE path_key = ? AND lost = 0 LIMIT 1').get(codeUnitKey(path)) !== undefined;
  }

  /** True when a file of the state is below the folder `path`. */
  hasFolder(path: string): boolean {
    // Every path below `path/` sorts from `path/` up to, not including, `path0` (`0` follows `/`).
    return (
      this.statement('SELECT 1 FROM placed WHERE path_key >= ? AND path_key < ? AND lost = 0 LIMIT 1').get(codeUnitKey(`${path}/`), codeUnitKey(`${path}0`)) !==
      undefined
    );
  }

  /** Notes that something other than a folder is already at the planned file `path` of the restore folder. */
  addPresent(path: string): void {
    this.statement('INSERT OR IGNORE INTO present VALUES (?)').run(path);
  }

  isPresent(path: string): boolean {
    return this.statement('SELECT 1 FROM present WHERE path = ?').get(path) !== undefined;
  }

  /** The query plans of the page reads, for the test that checks no page scans or sorts the table. */
  explainPageReads(): string[] {
    const plans = [
      ['SELECT * FROM unreadable WHERE (kind, source_index, row_id) > (?, ?, ?) ORDER BY kind, source_index, row_id LIMIT ?', [0, 0, 0, 1]],
      [REFUSED_PAGE, [Buffer.alloc(0), 0, 1]],
      [PLACED_PAGE, [Buffer.alloc(0), Buffer.alloc(0), 0, 1]],
      [PLACED_PAGE_WINNERS, [Buffer.alloc(0), Buffer.alloc(0), 0, 1]],
      [WINNER_PATHS_PAGE, [Buffer.alloc(0), Buffer.alloc(0), 0, 1]],
      ['SELECT 1 FROM placed WHERE path_key >= ? AND path_key < ? AND lost = 0 LIMIT 1', [Buffer.alloc(0), Buffer.alloc(0)]],
      ['SELECT 1 FROM present WHERE path = ?', ['']],
    ] as const;
    return this.plansOf(plans);
  }
}
