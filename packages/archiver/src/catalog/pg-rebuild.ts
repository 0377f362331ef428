// `oaibag reindex` of a catalog in PostgreSQL: as SQLite's is built under a temporary file name
// and renamed into place, PostgreSQL's is built in a schema of its own (`oaibag_rebuild_<hex>`,
// the catalog's tables created there by pg-schema.ts) and swapped with the catalog's schema in
// one transaction once every bag was read. With --force the catalog replaced is kept as the
// schema `oaibag_kept_<time>`; a reindex that fails drops its schema and leaves the catalog as
// it was. The catalog's user needs the CREATE privilege on the database (it owns the schemas).
import { randomBytes } from 'node:crypto';
import { ArchiverError } from '../core/errors.js';
import { PostgresDatabase, redactedUrl } from './pg-database.js';
import { CARRIED_SCHEDULE_COLUMNS } from './source-leases.js';

/** A fresh, empty schema for the rebuild; its name. */
export function createRebuildSchema(url: string): string {
  const schema = `oaibag_rebuild_${randomBytes(6).toString('hex')}`;
  withDatabase(url, (db) => db.query(`CREATE SCHEMA ${schema}`, []));
  return schema;
}

/** Drops a rebuild's schema and everything in it (a reindex that failed). */
export function dropRebuildSchema(url: string, schema: string): void {
  withDatabase(url, (db) => db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`, []));
}

/** Whether the catalog's schema at `url` holds a catalog already. */
export function postgresCatalogExists(url: string): boolean {
  return withDatabase(url, (db) => Number(db.query(`SELECT (to_regclass('schema_migrations') IS NOT NULL)::int AS present`, []).rows[0]?.present) === 1);
}

/**
 * Puts the rebuilt schema in the place of the catalog's (the connection's current schema, by
 * default `public`), in one transaction. A catalog there is kept as `oaibag_kept_<stamp>` when
 * `force`, else refused (ERR_ARCHIVE_USAGE); an empty schema there is dropped. Returns the kept
 * schema's name, or null.
 */
export function swapRebuiltSchema(url: string, schema: string, force: boolean, stamp: string): string | null {
  return withDatabase(url, (db) =>
    db
      .transaction(() => {
        const target = String(db.query('SELECT current_schema() AS name', []).rows[0]?.name ?? 'public');
        const present = Number(db.query(`SELECT (to_regclass('schema_migrations') IS NOT NULL)::int AS present`, []).rows[0]?.present) === 1;
        const exists = Number(db.query('SELECT count(*) AS n FROM pg_namespace WHERE nspname = $1', [target]).rows[0]?.n) === 1;
        let kept: string | null = null;
        if (present) {
          if (!force) {
            throw new ArchiverError('ERR_ARCHIVE_USAGE', `the catalog ${redactedUrl(url)} exists; reindex does not overwrite a catalog`, {
              hint: `give --force to build a new one and keep the old one as the schema oaibag_kept_${stamp}`,
            });
          }
          // The schedule is not in the bags: the new catalog takes it over (source-leases.ts).
          if (Number(db.query(`SELECT (to_regclass('scheduled_sources') IS NOT NULL)::int AS present`, []).rows[0]?.present) === 1) {
            db.query(
              `INSERT INTO ${schema}.scheduled_sources (${CARRIED_SCHEDULE_COLUMNS}) SELECT ${CARRIED_SCHEDULE_COLUMNS} FROM ${quoted(target)}.scheduled_sources`,
              [],
            );
          }
          kept = `oaibag_kept_${stamp}`;
          db.query(`ALTER SCHEMA ${quoted(target)} RENAME TO ${kept}`, []);
        } else if (exists) {
          db.query(`DROP SCHEMA ${quoted(target)} RESTRICT`, []);
        }
        db.query(`ALTER SCHEMA ${schema} RENAME TO ${quoted(target)}`, []);
        return kept;
      })
      .immediate(),
  );
}

function quoted(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

function withDatabase<T>(url: string, fn: (db: PostgresDatabase) => T): T {
  const db = new PostgresDatabase(url, { applicationName: 'oaibag reindex' });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}
