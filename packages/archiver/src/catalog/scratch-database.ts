// A command's own working tables (a restore's plan, a WARC export's choice of versions), in a
// private temporary SQLite database: its pages are held in a small cache and spill to SQLite's
// temporary folder (TMPDIR, else /var/tmp or /tmp), so that a plan over millions of rows keeps
// the process's memory flat. SQLite deletes the file when the database is closed.
import Database from 'better-sqlite3';

export class ScratchDatabase {
  private readonly statements = new Map<string, Database.Statement>();

  protected constructor(
    private readonly db: Database.Database,
    /** Rows a page reads back. */
    readonly pageRows: number,
  ) {}

  /** A new temporary database on disk holding `schema`, written without a journal or syncs. */
  protected static create(schema: string): Database.Database {
    // An empty name: a temporary database on disk, removed by SQLite when it is closed.
    const db = new Database('');
    try {
      db.pragma('journal_mode = OFF');
      db.pragma('synchronous = OFF');
      db.pragma('cache_size = -8000');
      db.exec(schema);
      return db;
    } catch (error) {
      db.close();
      throw error;
    }
  }

  close(): void {
    this.db.close();
  }

  protected statement(sql: string): Database.Statement {
    let found = this.statements.get(sql);
    if (found === undefined) this.statements.set(sql, (found = this.db.prepare(sql)));
    return found;
  }

  /** Runs `fn` in one transaction (a page of inserts: one commit rather than one per row). */
  batch<T>(fn: () => T): T {
    return this.db.transaction(fn)();
  }

  /** Each query's plan (EXPLAIN QUERY PLAN, its steps joined by `; `), for the tests' O(page) checks. */
  protected plansOf(queries: ReadonlyArray<readonly [string, readonly unknown[]]>): string[] {
    return queries.map(([sql, args]) =>
      (this.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as Array<{ detail: string }>).map((row) => row.detail).join('; '),
    );
  }
}
