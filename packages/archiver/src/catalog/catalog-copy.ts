// Copies a SQLite catalog, row for row and id for id, into an empty PostgreSQL catalog: what
// `oaibag migrate` does with an archive's catalog (docs/scale-out.md, "Migrating an archive").
// A rebuild from the bags (reindex) would lose what lives only in the catalog: failures,
// events, verifications, runs that wrote no bag, Identify facts; a copy keeps it all, under the
// same ids, so every answer of the catalog stays the same.
//
// The copy is built in a schema of its own and swapped into the catalog's place in one
// transaction at the end, as reindex does (pg-rebuild.ts): a copy cut short leaves the catalog
// empty, and its schema is dropped by the next attempt. A marker event (type `migration`) is
// written with the copy, so that an attempt that died after the swap finds its catalog there.
import { randomBytes } from 'node:crypto';
import { ArchiverError } from '../core/errors.js';
import { URL_TRIGRAMS } from './catalog-migrations.js';
import { openReadOnlyDatabase } from './open-read-only.js';
import { PostgresDatabase, redactedUrl } from './pg-database.js';
import { dropRebuildSchema, swapRebuiltSchema } from './pg-rebuild.js';
import { preparePostgresCatalog } from './pg-schema.js';
import type { SqlDatabase, SqlStatement } from './sql-database.js';

/** The event a migration writes into the catalog it copied. */
export const MIGRATION_EVENT_TYPE = 'migration';

/** Values in one INSERT at most (PostgreSQL takes 65,535 parameters). */
const VALUES_PER_STATEMENT = 20_000;
const ROWS_PER_STATEMENT = 500;

/**
 * The tables in an order their references allow. Two pairs refer to each other (a source's
 * saved list names a harvest; a resource names its current version): those columns are copied
 * empty first and set once the rows they name are in (`later`).
 */
const TABLES: ReadonlyArray<{ name: string; order: string; later?: ReadonlyArray<readonly string[]>; onConflict?: string }> = [
  { name: 'sources', order: 'id', later: [['resume_harvest_id']] },
  { name: 'harvests', order: 'id' },
  { name: 'bags', order: 'id' },
  { name: 'payloads', order: 'id' },
  { name: 'resources', order: 'id', later: [['current_version_id', 'deleted_at'], ['served_at']] },
  { name: 'versions', order: 'id' },
  { name: 'version_parts', order: 'version_id, part' },
  { name: 'fetches', order: 'id' },
  { name: 'deletions', order: 'id' },
  { name: 'failures', order: 'id' },
  { name: 'events', order: 'id' },
  { name: 'pending_bags', order: 'bag_path' },
  { name: 'verifications', order: 'id' },
  { name: 'sparql_store_cursors', order: 'store, graph' },
  { name: 'scheduled_sources', order: 'id' },
  // The new catalog made its own keys; the archive's are kept (serve's resumption tokens stay good).
  { name: 'catalog_keys', order: 'name', onConflict: 'ON CONFLICT (name) DO UPDATE SET key = excluded.key' },
];
/** What each catalog has of its own, made when it was created. */
// The URL search's FTS5 table and its shadow tables are SQLite's own: PostgreSQL has a trigram
// index on the same column instead (pg-schema.ts).
const NOT_COPIED = new Set(['schema_migrations', 'archive', ...['', '_data', '_idx', '_docsize', '_config', '_content'].map((end) => `${URL_TRIGRAMS}${end}`)]);

/** The tables whose `id` is an identity: their sequences move past the ids copied. */
const WITH_IDS = TABLES.filter((table) => table.order === 'id').map((table) => table.name);

export interface CatalogCopy {
  /** Rows copied, per table. */
  rows: Record<string, number>;
}

/** A name for the schema a copy is built in (recorded by the caller before the copy begins). */
export function newCopySchemaName(): string {
  return `oaibag_rebuild_${randomBytes(6).toString('hex')}`;
}

/**
 * Copies the SQLite catalog `sqliteFile` into the empty PostgreSQL catalog at `url`, through the
 * schema `schema` (created here, swapped into place at the end), with a `migration` event whose
 * detail is `markerDetail`. A catalog already at `url` is refused (ERR_ARCHIVE_USAGE); a
 * failure drops the schema and leaves `url` as it was.
 */
export function copyCatalogToPostgres(sqliteFile: string, url: string, schema: string, markerDetail: string): CatalogCopy {
  const source = openReadOnlyDatabase(sqliteFile);
  let swapped = false;
  try {
    const target = new PostgresDatabase(url, { applicationName: 'oaibag migrate' });
    try {
      target.query(`CREATE SCHEMA ${schema}`, []);
    } finally {
      target.close();
    }
    const db = new PostgresDatabase(url, { applicationName: 'oaibag migrate', schema });
    const rows: Record<string, number> = {};
    try {
      preparePostgresCatalog(db);
      const tables = tablesToCopy(source.db, db);
      for (const table of tables) rows[table.name] = copyTable(source.db, db, table.name, table.order, (table.later ?? []).flat(), table.onConflict);
      for (const table of tables) if (table.later) copyLater(source.db, db, table.name, table.later);
      for (const table of WITH_IDS.filter((name) => tables.some((table) => table.name === name))) {
        db.query(`SELECT setval(pg_get_serial_sequence($1, 'id'), max_id) FROM (SELECT max(id) AS max_id FROM ${table}) m WHERE max_id IS NOT NULL`, [table]);
      }
      db.query('INSERT INTO events (type, outcome, detail, at) VALUES ($1, $2, $3, $4)', [
        MIGRATION_EVENT_TYPE,
        'success',
        markerDetail,
        new Date().toISOString(),
      ]);
    } finally {
      db.close();
    }
    swapRebuiltSchema(url, schema, false, '');
    swapped = true;
    return { rows };
  } finally {
    source.close();
    if (!swapped) dropRebuildSchema(url, schema);
  }
}

/** Drops the schema of a copy that was cut short (nothing when it is gone). */
export function dropCopySchema(url: string, schema: string): void {
  dropRebuildSchema(url, schema);
}

/** The detail of the last `migration` event of the PostgreSQL catalog at `url`, or undefined (no catalog, no event). */
export function lastMigrationEvent(url: string): string | undefined {
  const db = new PostgresDatabase(url, { applicationName: 'oaibag migrate' });
  try {
    if (Number(db.query(`SELECT (to_regclass('events') IS NOT NULL)::int AS present`, []).rows[0]?.present) !== 1) return undefined;
    const row = db.query('SELECT detail FROM events WHERE type = $1 ORDER BY id DESC LIMIT 1', [MIGRATION_EVENT_TYPE]).rows[0];
    return row === undefined ? undefined : String(row.detail);
  } finally {
    db.close();
  }
}

/**
 * The tables both catalogs have, in copying order. A table either has and the copy does not know
 * is refused (ERR_ARCHIVE_INTERNAL): a schema newer than this module would be copied in part.
 */
function tablesToCopy(source: SqlDatabase, db: PostgresDatabase): typeof TABLES {
  const inSqlite = new Set(
    (source.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").all() as Array<{ name: string }>).map(
      (row) => row.name,
    ),
  );
  const inPostgres = new Set(
    db
      .query("SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'", [])
      .rows.map((row) => String(row.table_name)),
  );
  const known = new Set(TABLES.map((table) => table.name));
  for (const name of new Set([...inSqlite, ...inPostgres])) {
    if (NOT_COPIED.has(name)) continue;
    if (!known.has(name) || inSqlite.has(name) !== inPostgres.has(name)) {
      throw new ArchiverError('ERR_ARCHIVE_INTERNAL', `the catalog table ${name} is not one oaibag migrate knows how to copy`, {
        hint: 'nothing was switched; please report it',
      });
    }
  }
  return TABLES.filter((table) => inSqlite.has(table.name));
}

/** Copies one table in `order`, a few hundred rows a statement, leaving out the columns in `later`. */
function copyTable(source: SqlDatabase, db: PostgresDatabase, table: string, order: string, later: readonly string[], onConflict = ''): number {
  const columns = sqliteColumns(source, table);
  const types = postgresColumns(db, table);
  const missing = columns.filter((column) => !types.has(column));
  if (missing.length > 0 || columns.length !== types.size) {
    throw new ArchiverError(
      'ERR_ARCHIVE_INTERNAL',
      `the table ${table} has the columns (${columns.join(', ')}) in SQLite and (${[...types.keys()].join(', ')}) in ${redactedUrl(db.url)}`,
    );
  }
  const now = columns.filter((column) => !later.includes(column));
  const list = now.map((column) => `"${column}"`).join(', ');
  let copied = 0;
  db.transaction(() => {
    inBatches(source.prepare(`SELECT ${list} FROM ${table} ORDER BY ${order}`), now.length, (batch) => {
      const values: unknown[] = [];
      const tuples = batch.map((row) => `(${now.map((column) => `$${values.push(row[column] ?? null)}`).join(', ')})`);
      db.query(`INSERT INTO ${table} (${list}) VALUES ${tuples.join(', ')} ${onConflict}`, values);
      copied += batch.length;
    });
  })();
  return copied;
}

/**
 * Sets, by id, the columns a table's rows were copied without; each group of columns is one
 * UPDATE (on resources, the trigger computes served_at from the first, the second puts
 * SQLite's value back exactly).
 */
function copyLater(source: SqlDatabase, db: PostgresDatabase, table: string, groups: ReadonlyArray<readonly string[]>): void {
  const types = postgresColumns(db, table);
  db.transaction(() => {
    for (const group of groups) {
      const list = ['id', ...group];
      const where = group.map((column) => `"${column}" IS NOT NULL`).join(' OR ');
      inBatches(source.prepare(`SELECT ${list.map((column) => `"${column}"`).join(', ')} FROM ${table} WHERE ${where} ORDER BY id`), list.length, (batch) => {
        const values: unknown[] = [];
        const tuples = batch.map((row) => `(${list.map((column) => `$${values.push(row[column] ?? null)}::${types.get(column)}`).join(', ')})`);
        db.query(
          `UPDATE ${table} AS t SET ${group.map((column) => `"${column}" = v."${column}"`).join(', ')}
           FROM (VALUES ${tuples.join(', ')}) AS v (${list.map((column) => `"${column}"`).join(', ')}) WHERE t.id = v.id`,
          values,
        );
      });
    }
  })();
}

/** Reads `statement`'s rows and hands them on a few hundred at a time (memory stays flat). */
function inBatches(statement: SqlStatement, columns: number, handle: (batch: Record<string, unknown>[]) => void): void {
  const size = Math.max(1, Math.min(ROWS_PER_STATEMENT, Math.floor(VALUES_PER_STATEMENT / columns)));
  let batch: Record<string, unknown>[] = [];
  for (const row of statement.iterate() as IterableIterator<Record<string, unknown>>) {
    batch.push(row);
    if (batch.length >= size) {
      handle(batch);
      batch = [];
    }
  }
  if (batch.length > 0) handle(batch);
}

/** A SQLite table's stored columns (generated ones are not listed by table_info). */
function sqliteColumns(source: SqlDatabase, table: string): string[] {
  return (source.pragma(`table_info(${table})`) as Array<{ name: string }>).map((column) => column.name);
}

/** A PostgreSQL table's stored, non-generated columns in the current schema, with their types. */
function postgresColumns(db: PostgresDatabase, table: string): Map<string, string> {
  const rows = db.query(
    `SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 AND is_generated = 'NEVER'`,
    [table],
  ).rows;
  return new Map(rows.map((row) => [String(row.column_name), String(row.data_type)]));
}
