// What the catalog needs of a SQL database: the part of better-sqlite3's API it uses, so that a
// SQLite database is one as it is and PostgreSQL (pg-database.ts) is one behind the same few
// calls. Synchronous, as better-sqlite3 is (pg-connection.ts says why that holds for
// PostgreSQL too).

export interface RunResult {
  changes: number;
  lastInsertRowid: number | bigint;
}

export interface SqlStatement {
  /** True when the statement only reads. */
  readonly readonly: boolean;
  run(...params: unknown[]): RunResult;
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  iterate(...params: unknown[]): IterableIterator<unknown>;
}

/** A function run in one transaction; `immediate` takes the write lock at once (SQLite). */
export type SqlTransaction<T> = (() => T) & { immediate(): T; deferred(): T; exclusive(): T };

export interface SqlDatabase {
  readonly inTransaction: boolean;
  prepare(sql: string): SqlStatement;
  exec(sql: string): void;
  pragma(source: string): unknown;
  transaction<T>(fn: () => T): SqlTransaction<T>;
  close(): void;
}
