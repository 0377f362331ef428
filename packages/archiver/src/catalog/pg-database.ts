// A PostgreSQL database behind the few parts of better-sqlite3's API the catalog uses
// (sql-database.ts): prepared statements that run, get, list and iterate, transactions that
// nest, `exec`. Statements are rewritten once by pg-dialect.ts; pragmas, SQLite's tuning, do
// nothing here. Large results are read through a cursor, a page at a time, so that iterating
// over a million rows holds one page.
import { ArchiverError } from '../core/errors.js';
import { PgConnection, type PgConnectionOptions, PgFailure } from './pg-connection.js';
import { type PgStatementText, toPostgres } from './pg-dialect.js';
import type { RunResult, SqlDatabase, SqlStatement, SqlTransaction } from './sql-database.js';

/** The BEGIN of a transaction that writes (PostgreSQL's own BEGIN, then the write guard). */
const WRITE = 'BEGIN -- writes';

/** Rows fetched at a time by `iterate`. */
const CURSOR_PAGE_ROWS = 1000;

export class PostgresDatabase implements SqlDatabase {
  readonly dialect = 'postgres' as const;
  private readonly connection: PgConnection;
  private readonly options: PgConnectionOptions;
  private depth = 0;
  private cursors = 0;
  /** Whether the open transaction ran the write guard. */
  private guarded = false;
  /**
   * Runs first in every transaction that writes (source-leases.ts): with workers sharing the
   * catalog it serializes their writes and checks this worker's lease, inside that same
   * transaction, so that the check and the write commit together or not at all.
   */
  writeGuard: ((database: PostgresDatabase) => void) | undefined;

  constructor(
    /** The URL as given, for messages (its password is never printed: see `where`). */
    readonly url: string,
    options: PgConnectionOptions = {},
  ) {
    this.connection = reusedConnection(url, options) ?? new PgConnection(url, options);
    this.options = options;
  }

  get inTransaction(): boolean {
    return this.depth > 0;
  }

  prepare(sql: string): SqlStatement {
    return new PgStatement(this, toPostgres(sql));
  }

  exec(sql: string): void {
    const upper = sql.trim().toUpperCase();
    // The catalog's own BEGIN / COMMIT (a read session) keep the depth in step.
    if (upper === 'BEGIN') this.begin('BEGIN');
    else if (upper === 'COMMIT') this.commit();
    else if (upper === 'ROLLBACK') this.rollback();
    else this.query(sql, []);
  }

  /** SQLite's pragmas tune SQLite: nothing to do here. */
  pragma(_source: string): unknown {
    return undefined;
  }

  transaction<T>(fn: () => T): SqlTransaction<T> {
    const run = (begin: string) => (): T => {
      if (this.depth > 0) {
        // Nested: a savepoint, as better-sqlite3 nests.
        const name = `oaibag_${this.depth}`;
        this.query(`SAVEPOINT ${name}`, []);
        this.depth++;
        try {
          const result = fn();
          this.depth--;
          this.query(`RELEASE SAVEPOINT ${name}`, []);
          return result;
        } catch (error) {
          this.depth--;
          this.query(`ROLLBACK TO SAVEPOINT ${name}`, []);
          throw error;
        }
      }
      this.begin(begin);
      try {
        if (begin === WRITE) this.guardWrite();
        const result = fn();
        this.commit();
        return result;
      } catch (error) {
        this.rollback();
        throw error;
      }
    };
    // An IMMEDIATE transaction is the catalog's writing one (Catalog.durably): guarded from its start.
    return Object.assign(run('BEGIN'), { immediate: run(WRITE), deferred: run('BEGIN'), exclusive: run(WRITE) });
  }

  /** Runs the write guard once in the open transaction. */
  guardWrite(): void {
    if (this.guarded || this.writeGuard === undefined) return;
    this.guarded = true;
    this.writeGuard(this);
  }

  /** Runs a statement that writes: in a transaction of its own, guarded, when none is open. */
  write(text: string, values: readonly unknown[]): { rows: Record<string, unknown>[]; rowCount: number } {
    if (this.writeGuard === undefined) return this.query(text, values);
    if (this.depth > 0) {
      this.guardWrite();
      return this.query(text, values);
    }
    this.begin(WRITE);
    try {
      this.guardWrite();
      const result = this.query(text, values);
      this.commit();
      return result;
    } catch (error) {
      this.rollback();
      throw error;
    }
  }

  /**
   * Closes this database. Its connection, when idle and healthy, is kept for the next one this
   * process opens on the same URL (idle-connections below), else closed.
   */
  close(): void {
    if (this.depth === 0 && keepIdle(this.url, this.options, this.connection)) return;
    this.connection.close();
  }

  /** Runs a rewritten statement's text with values. */
  query(text: string, values: readonly unknown[]): { rows: Record<string, unknown>[]; rowCount: number } {
    try {
      return this.connection.query(text, values);
    } catch (error) {
      if (error instanceof PgFailure) {
        throw new ArchiverError(
          'ERR_ARCHIVE_CATALOG',
          `the catalog ${redactedUrl(this.url)}: ${error.message}${error.sqlState ? ` (SQLSTATE ${error.sqlState})` : ''}`,
          {
            cause: error,
            hint: error.sqlState === undefined ? 'check that PostgreSQL runs and answers at the --catalog URL' : undefined,
          },
        );
      }
      throw error;
    }
  }

  /** A name for the next cursor of this connection. */
  nextCursor(): string {
    return `oaibag_cursor_${++this.cursors}`;
  }

  private begin(statement: string): void {
    this.query(statement === WRITE ? 'BEGIN' : statement, []);
    this.depth = 1;
    this.guarded = false;
  }

  private commit(): void {
    this.depth = 0;
    this.guarded = false;
    this.query('COMMIT', []);
  }

  private rollback(): void {
    this.depth = 0;
    this.guarded = false;
    this.query('ROLLBACK', []);
  }
}

class PgStatement implements SqlStatement {
  constructor(
    private readonly database: PostgresDatabase,
    private readonly statement: PgStatementText,
  ) {}

  get readonly(): boolean {
    return this.statement.readonly;
  }

  run(...params: unknown[]): RunResult {
    const { rows, rowCount } = this.send(params);
    const id = this.statement.returnsId ? rows[0]?.id : undefined;
    return { changes: rowCount, lastInsertRowid: typeof id === 'number' ? id : 0 };
  }

  get(...params: unknown[]): unknown {
    return this.send(params).rows[0];
  }

  all(...params: unknown[]): unknown[] {
    return this.send(params).rows;
  }

  private send(params: unknown[]): { rows: Record<string, unknown>[]; rowCount: number } {
    const values = this.values(params);
    return this.statement.readonly ? this.database.query(this.statement.text, values) : this.database.write(this.statement.text, values);
  }

  *iterate(...params: unknown[]): IterableIterator<unknown> {
    const values = this.values(params);
    const cursor = this.database.nextCursor();
    // A cursor lives in a transaction: the iteration's own when none is open.
    const own = !this.database.inTransaction;
    if (own) this.database.exec('BEGIN');
    let done = false;
    try {
      this.database.query(`DECLARE ${cursor} NO SCROLL CURSOR FOR ${this.statement.text}`, values);
      for (;;) {
        const { rows } = this.database.query(`FETCH ${CURSOR_PAGE_ROWS} FROM ${cursor}`, []);
        yield* rows;
        if (rows.length < CURSOR_PAGE_ROWS) break;
      }
      this.database.query(`CLOSE ${cursor}`, []);
      done = true;
    } finally {
      if (own) this.database.exec(done ? 'COMMIT' : 'ROLLBACK');
      else if (!done) this.database.query(`CLOSE ${cursor}`, []);
    }
  }

  /** better-sqlite3's parameters (positional values, or one object of named ones) in `$n` order. */
  private values(params: unknown[]): unknown[] {
    if (this.statement.names.length === 0) return params;
    const named = (params[0] ?? {}) as Record<string, unknown>;
    return this.statement.names.map((name) => {
      if (!(name in named)) throw new ArchiverError('ERR_ARCHIVE_INTERNAL', `no value for the catalog query's parameter @${name}`);
      return named[name];
    });
  }
}

/** A PostgreSQL URL with its password, if any, left out. */
export function redactedUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'postgres://…';
  }
}

// A worker or a mirror opens the catalog at the start of every harvest and closes it at the end:
// a new thread and a new server backend each time, 0.3 s of CPU and a fork of the server for a
// source that may take a second (bench/README.md, "bench:scale-out"). So one idle connection
// per URL and settings is kept for the next open in this process, checked with a round trip
// before it is used again (a server restarted meanwhile makes a new one). The thread is unref'd:
// a kept connection never holds the process open.
const IDLE = new Map<string, PgConnection>();

function idleKey(url: string, options: PgConnectionOptions): string | undefined {
  // Test seams make a connection of their own.
  if (options.extraWakes || options.silenceGraceMs !== undefined) return undefined;
  return JSON.stringify([url, options.applicationName ?? null, options.schema ?? null, options.statementTimeoutMs ?? null]);
}

function keepIdle(url: string, options: PgConnectionOptions, connection: PgConnection): boolean {
  const key = idleKey(url, options);
  if (key === undefined || IDLE.has(key)) return false;
  IDLE.set(key, connection);
  return true;
}

function reusedConnection(url: string, options: PgConnectionOptions): PgConnection | undefined {
  const key = idleKey(url, options);
  const connection = key === undefined ? undefined : IDLE.get(key);
  if (connection === undefined) return undefined;
  IDLE.delete(key!);
  try {
    connection.query('SELECT 1', []);
    return connection;
  } catch {
    connection.close();
    return undefined;
  }
}
