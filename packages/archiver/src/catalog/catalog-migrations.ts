// The catalog's schema and its versions: the migrations, oldest first, and applying them at open.
import { randomBytes } from 'node:crypto';
import type Database from 'better-sqlite3';
import { ARCHIVE_FORMAT } from '../aip/layout-names.js';
import { ArchiverError } from '../core/errors.js';
import type { SqlDatabase } from './sql-database.js';

/**
 * One step of the catalog's schema. Steps are applied in order, each in its own transaction
 * together with its `schema_migrations` row, so a crash mid-migration leaves the catalog at
 * the previous version, never half-way. A released step is never edited: changes are new steps.
 */
export interface CatalogMigration {
  version: number;
  name: string;
  up(db: Database.Database): void;
}

/**
 * The catalog's schema, oldest first. Conventions: ids are INTEGER PRIMARY KEY; instants we
 * observe (`*_at` except `deleted_at`) are ISO 8601 UTC strings with milliseconds; OAI
 * datestamps are kept exactly as the repository sent them (its granularity), so they can be
 * sent back verbatim as `from`; JSON columns hold arrays or objects as text.
 */
export const CATALOG_MIGRATIONS: readonly CatalogMigration[] = [
  {
    version: 1,
    name: 'initial',
    up(db) {
      db.exec(`
        CREATE TABLE sources (
          id INTEGER PRIMARY KEY,
          base_url TEXT NOT NULL UNIQUE,
          repository_name TEXT,
          granularity TEXT,
          earliest_datestamp TEXT,
          deleted_record TEXT,
          compression TEXT NOT NULL DEFAULT '[]',
          identify_checked_at TEXT,
          -- The 'from' of the next incremental harvest: the responseDate of the first page of
          -- the last complete list (what changed while a list was served is not missed).
          watermark TEXT,
          -- Crash resume: the list in progress and its last resumption token.
          resume_token TEXT,
          resume_list_from TEXT,
          resume_list_until TEXT,
          resume_list_set TEXT,
          resume_list_prefix TEXT,
          resume_list_response_date TEXT,
          resume_harvest_id INTEGER REFERENCES harvests(id),
          resume_saved_at TEXT,
          created_at TEXT NOT NULL
        );

        CREATE TABLE harvests (
          id INTEGER PRIMARY KEY,
          source_id INTEGER NOT NULL REFERENCES sources(id),
          started_at TEXT NOT NULL,
          ended_at TEXT,
          status TEXT NOT NULL CHECK (status IN ('running', 'complete', 'partial', 'failed', 'interrupted')),
          arguments TEXT NOT NULL,
          list_response_date TEXT,
          records INTEGER NOT NULL DEFAULT 0,
          added INTEGER NOT NULL DEFAULT 0,
          modified INTEGER NOT NULL DEFAULT 0,
          touched INTEGER NOT NULL DEFAULT 0,
          deleted INTEGER NOT NULL DEFAULT 0,
          failed INTEGER NOT NULL DEFAULT 0,
          bytes INTEGER NOT NULL DEFAULT 0,
          requests INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX harvests_by_source ON harvests (source_id, id);

        CREATE TABLE resources (
          id INTEGER PRIMARY KEY,
          source_id INTEGER NOT NULL REFERENCES sources(id),
          identifier TEXT NOT NULL,
          current_version_id INTEGER REFERENCES versions(id),
          -- The datestamp of the deletion when the resource is deleted now, else NULL.
          deleted_at TEXT,
          mime_type TEXT,
          UNIQUE (source_id, identifier)
        );

        CREATE TABLE versions (
          id INTEGER PRIMARY KEY,
          resource_id INTEGER NOT NULL REFERENCES resources(id),
          datestamp TEXT NOT NULL,
          size INTEGER NOT NULL,
          sha256 TEXT NOT NULL,
          mime_type TEXT,
          bag_path TEXT NOT NULL UNIQUE,
          harvest_id INTEGER REFERENCES harvests(id),
          stored_at TEXT NOT NULL,
          change TEXT NOT NULL CHECK (change IN ('added', 'modified', 'touched', 'restored')),
          UNIQUE (resource_id, datestamp, sha256)
        );

        CREATE TABLE deletions (
          id INTEGER PRIMARY KEY,
          resource_id INTEGER NOT NULL REFERENCES resources(id),
          datestamp TEXT NOT NULL,
          harvest_id INTEGER REFERENCES harvests(id),
          recorded_at TEXT NOT NULL,
          UNIQUE (resource_id, datestamp)
        );

        CREATE TABLE failures (
          id INTEGER PRIMARY KEY,
          source_id INTEGER NOT NULL REFERENCES sources(id),
          harvest_id INTEGER REFERENCES harvests(id),
          identifier TEXT,
          datestamp TEXT,
          stage TEXT NOT NULL CHECK (stage IN ('list', 'record', 'fetch', 'verify', 'store')),
          code TEXT NOT NULL,
          message TEXT NOT NULL,
          expected TEXT,
          found TEXT,
          first_seen_at TEXT NOT NULL,
          last_seen_at TEXT NOT NULL,
          attempts INTEGER NOT NULL DEFAULT 1,
          resolved_at TEXT
        );
        -- At most one open failure per record: a record failing again updates it.
        CREATE UNIQUE INDEX failures_open_per_record ON failures (source_id, identifier)
          WHERE resolved_at IS NULL AND identifier IS NOT NULL;
        CREATE INDEX failures_open ON failures (source_id) WHERE resolved_at IS NULL;

        -- PREMIS-style events: what happened to what, when, with which outcome.
        CREATE TABLE events (
          id INTEGER PRIMARY KEY,
          source_id INTEGER REFERENCES sources(id),
          resource_id INTEGER REFERENCES resources(id),
          version_id INTEGER REFERENCES versions(id),
          harvest_id INTEGER REFERENCES harvests(id),
          type TEXT NOT NULL,
          outcome TEXT NOT NULL,
          detail TEXT,
          at TEXT NOT NULL
        );
        CREATE INDEX events_by_version ON events (version_id) WHERE version_id IS NOT NULL;
      `);
    },
  },
  {
    version: 2,
    name: 'pending bags',
    up(db) {
      // A bag is renamed into aips/ before its version is recorded; this row, written
      // durably before the rename and removed with the version row, lets the next start
      // adopt (or drop) a bag left between the two by a crash.
      db.exec(`
        CREATE TABLE pending_bags (
          id INTEGER PRIMARY KEY,
          bag_path TEXT NOT NULL UNIQUE,
          source_id INTEGER NOT NULL REFERENCES sources (id),
          identifier TEXT NOT NULL,
          datestamp TEXT NOT NULL,
          sha256 TEXT NOT NULL,
          size INTEGER NOT NULL,
          mime_type TEXT,
          harvest_id INTEGER REFERENCES harvests (id),
          created_at TEXT NOT NULL
        );
      `);
    },
  },
  {
    version: 3,
    name: 'audit indexes',
    up(db) {
      // `oaibag audit` selects what given harvests recorded; resources' deletions are found
      // through the (resource_id, datestamp) unique index already.
      db.exec(`
        CREATE INDEX versions_by_harvest ON versions (harvest_id);
        CREATE INDEX deletions_by_harvest ON deletions (harvest_id);
      `);
    },
  },
  {
    version: 4,
    name: 'payload files and fetches',
    up(db) {
      // payload_files: how many files the bag's data/ holds; 0 for a record that carried no
      // datastream (metadata only: restore skips it). NULL for versions recorded before this
      // step, which all had at least one.
      // fetches: for each By-Reference datastream, the URL the bytes came from and the
      // redirects that led there (also in the bag's premis.xml).
      db.exec(`
        ALTER TABLE versions ADD COLUMN payload_files INTEGER;
        ALTER TABLE pending_bags ADD COLUMN payload_files INTEGER;
        ALTER TABLE pending_bags ADD COLUMN fetches TEXT;
        CREATE TABLE fetches (
          id INTEGER PRIMARY KEY,
          version_id INTEGER NOT NULL REFERENCES versions (id),
          payload TEXT NOT NULL,
          ref TEXT NOT NULL,
          url TEXT NOT NULL,
          redirects TEXT NOT NULL DEFAULT '[]'
        );
        CREATE INDEX fetches_by_version ON fetches (version_id);
      `);
    },
  },
  {
    version: 5,
    name: 'archive format 2: batch bags',
    up(db) {
      // Format 2 (docs/aip-profile.md): one bag per ingest batch, payloads stored once
      // archive-wide and found by sha-256, versions pointing at their record in a batch bag.
      // A catalog that already holds versions belongs to a format-1 archive (one bag per
      // version): there is nothing to migrate it to, so it is refused and left as it is.
      const held = (db.prepare('SELECT COUNT(*) AS n FROM versions').get() as { n: number }).n;
      if (held > 0) throw formatOneArchive(db.name);
      db.exec(`
        DROP TABLE fetches;
        DROP TABLE pending_bags;
        DROP TABLE versions;

        -- One row per batch bag in aips/.
        CREATE TABLE bags (
          id INTEGER PRIMARY KEY,
          bag_path TEXT NOT NULL UNIQUE,
          source_id INTEGER NOT NULL REFERENCES sources (id),
          harvest_id INTEGER REFERENCES harvests (id),
          records INTEGER NOT NULL,
          new_payloads INTEGER NOT NULL,
          revisits INTEGER NOT NULL,
          deletions INTEGER NOT NULL,
          payload_bytes INTEGER NOT NULL,
          placed_at TEXT NOT NULL
        );

        -- Every payload file, once: the bag and path that hold the bytes with this sha-256.
        CREATE TABLE payloads (
          id INTEGER PRIMARY KEY,
          sha256 TEXT NOT NULL UNIQUE,
          size INTEGER NOT NULL,
          bag_id INTEGER NOT NULL REFERENCES bags (id),
          path TEXT NOT NULL,
          UNIQUE (bag_id, path)
        );

        CREATE TABLE versions (
          id INTEGER PRIMARY KEY,
          resource_id INTEGER NOT NULL REFERENCES resources (id),
          datestamp TEXT NOT NULL,
          size INTEGER NOT NULL,
          sha256 TEXT NOT NULL,
          mime_type TEXT,
          -- The batch bag whose metadata/records.xml.gz holds the record, and its place there (1-based).
          bag_id INTEGER NOT NULL REFERENCES bags (id),
          record INTEGER NOT NULL,
          harvest_id INTEGER REFERENCES harvests (id),
          stored_at TEXT NOT NULL,
          change TEXT NOT NULL CHECK (change IN ('added', 'modified', 'touched', 'restored')),
          payload_files INTEGER NOT NULL,
          -- The record's Last-Modified header as sent (a restored file's mtime), or NULL.
          last_modified TEXT,
          UNIQUE (resource_id, datestamp, sha256)
        );
        CREATE INDEX versions_by_harvest ON versions (harvest_id);
        CREATE INDEX versions_by_bag ON versions (bag_id);

        -- The payload files of a version, in the record's order (part 1 is the file restored).
        -- By the payload's row id, not its digest: a touch adds one such row, so it is kept
        -- small (docs/aip-profile.md measures a touch's cost in the catalog).
        CREATE TABLE version_parts (
          version_id INTEGER NOT NULL REFERENCES versions (id),
          part INTEGER NOT NULL,
          payload_id INTEGER NOT NULL REFERENCES payloads (id),
          PRIMARY KEY (version_id, part)
        ) WITHOUT ROWID;
        CREATE INDEX version_parts_by_payload ON version_parts (payload_id);

        CREATE TABLE fetches (
          id INTEGER PRIMARY KEY,
          version_id INTEGER NOT NULL REFERENCES versions (id),
          part INTEGER NOT NULL,
          ref TEXT NOT NULL,
          url TEXT NOT NULL,
          redirects TEXT NOT NULL DEFAULT '[]'
        );
        CREATE INDEX fetches_by_version ON fetches (version_id);

        -- A batch bag about to be renamed into aips/, noted durably first: the next start
        -- indexes it from its own files if it is there and complete, and drops the note if not.
        CREATE TABLE pending_bags (
          bag_path TEXT PRIMARY KEY,
          harvest_id INTEGER REFERENCES harvests (id),
          created_at TEXT NOT NULL
        );

        -- Where a deletion's tombstone is kept.
        ALTER TABLE deletions ADD COLUMN bag_id INTEGER REFERENCES bags (id);

        -- The archive's format (docs/aip-profile.md), also in every bag's bag-info.txt.
        CREATE TABLE archive (format INTEGER NOT NULL);
      `);
      db.prepare('INSERT INTO archive (format) VALUES (?)').run(ARCHIVE_FORMAT);
    },
  },
  {
    version: 6,
    name: 'source rights',
    up(db) {
      // The OAI-rights rightsManifest a source's Identify gave (XML as received), or NULL.
      db.exec('ALTER TABLE sources ADD COLUMN rights_manifest TEXT');
    },
  },
  {
    version: 7,
    name: 'attempts and verifications',
    up(db) {
      // Every harvest attempt is a harvests row, also one that never reached a list (the source
      // unreachable, Identify failed, the format refused, stopped): `reason` is its one line
      // with the error's code. `verifications`: one row per fixity check of the archive
      // (verify, repair), for `oaibag status` and monitoring.
      db.exec(`
        ALTER TABLE harvests ADD COLUMN reason TEXT;
        CREATE TABLE verifications (
          id INTEGER PRIMARY KEY,
          kind TEXT NOT NULL CHECK (kind IN ('full', 'fast', 'repair')),
          started_at TEXT NOT NULL,
          ended_at TEXT NOT NULL,
          bags INTEGER NOT NULL,
          bytes INTEGER NOT NULL,
          damaged INTEGER NOT NULL
        );
      `);
    },
  },
  {
    version: 8,
    name: 'run kinds',
    up(db) {
      // A row of `harvests` is one run that added to the archive: a harvest over OAI-PMH or an
      // import of a delivery. Imports were told apart only by the delivery in their arguments;
      // that is how the rows written before this step get their kind.
      db.exec(`
        ALTER TABLE harvests ADD COLUMN kind TEXT NOT NULL DEFAULT 'harvest' CHECK (kind IN ('harvest', 'import'));
        UPDATE harvests SET kind = 'import' WHERE json_extract(arguments, '$.delivery') IS NOT NULL;
      `);
    },
  },
  {
    version: 9,
    name: 'served datestamps',
    up(db) {
      // What `oaibag serve` lists by (docs/serve.md): each resource's datestamp as served, kept
      // in the row and indexed, so a page seeks instead of computing every resource's datestamp
      // and sorting them. served_at is the ingest time of what the resource is now, in whole
      // seconds: the current version's stored_at, or, when it is deleted now, its latest
      // deletion's recorded_at (NULL: nothing to serve). Triggers keep it in step with every
      // write of the resource's state, in the writer's transaction. The MIME sets' columns are
      // computed from mime_type: the essence (lower case, no parameters) and its major type,
      // NULL when the essence is not `type/…`. Each index ends with the row id, the lists'
      // second key.
      db.exec(`
        ALTER TABLE resources ADD COLUMN served_at INTEGER;
        ALTER TABLE resources ADD COLUMN mime_essence TEXT GENERATED ALWAYS AS
          (lower(trim(CASE WHEN instr(mime_type, ';') > 0 THEN substr(mime_type, 1, instr(mime_type, ';') - 1) ELSE mime_type END))) VIRTUAL;
        ALTER TABLE resources ADD COLUMN mime_major TEXT GENERATED ALWAYS AS
          (CASE WHEN instr(mime_essence, '/') > 1 THEN substr(mime_essence, 1, instr(mime_essence, '/') - 1) END) VIRTUAL;
        UPDATE resources SET served_at = ${SERVED_AT.replaceAll('NEW.', 'resources.')};
        CREATE INDEX resources_served ON resources (served_at);
        CREATE INDEX resources_served_by_source ON resources (source_id, served_at);
        CREATE INDEX resources_served_by_mime ON resources (mime_essence, served_at);
        CREATE INDEX resources_served_by_major ON resources (mime_major, served_at);
        CREATE TRIGGER resources_served_at_updated AFTER UPDATE OF current_version_id, deleted_at ON resources
        BEGIN
          UPDATE resources SET served_at = ${SERVED_AT} WHERE id = NEW.id;
        END;
        CREATE TRIGGER resources_served_at_inserted AFTER INSERT ON resources
          WHEN NEW.current_version_id IS NOT NULL OR NEW.deleted_at IS NOT NULL
        BEGIN
          UPDATE resources SET served_at = ${SERVED_AT} WHERE id = NEW.id;
        END;
      `);
    },
  },
  {
    version: 10,
    name: 'sparql store cursors',
    up(db) {
      // How far `serve --sparql-store` has written the archive's graph into each remote store
      // (graph-chunk marks as JSON, serve/store-cursor.ts), so that a restarted serve resumes.
      // Written by serve without the archive lock: no other command touches this table, and
      // reindex leaves it empty (the store is then written again from the start).
      db.exec(`
        CREATE TABLE sparql_store_cursors (
          store TEXT NOT NULL,
          graph TEXT NOT NULL,
          cursor TEXT NOT NULL,
          written_at TEXT NOT NULL,
          PRIMARY KEY (store, graph)
        ) WITHOUT ROWID;
      `);
    },
  },
  {
    version: 11,
    name: 'scheduled sources',
    up(db) {
      db.exec(SCHEDULED_SOURCES_SQLITE);
      db.prepare('INSERT INTO catalog_keys (name, key) VALUES (?, ?)').run(RESUMPTION_TOKEN_KEY, randomBytes(32).toString('hex'));
    },
  },
  {
    version: 12,
    name: 'url search',
    up(db) {
      // Search by URL in `oaibag serve` (docs/browse.md, "Search"): a prefix seeks the index
      // on the identifier (the original URL), which Memento's and replay's lookups of one URL
      // use too; a substring is looked up in an FTS5 trigram index of the identifiers, an
      // external-content table over `resources` kept in step by triggers (identifiers never
      // change, but a row may be deleted by a rebuild). Filled here for the rows already there.
      db.exec(`
        CREATE INDEX resources_by_identifier ON resources (identifier);
        CREATE VIRTUAL TABLE ${URL_TRIGRAMS} USING fts5(identifier, content='resources', content_rowid='id', tokenize='trigram');
        CREATE TRIGGER resources_url_trigrams_inserted AFTER INSERT ON resources BEGIN
          INSERT INTO ${URL_TRIGRAMS} (rowid, identifier) VALUES (NEW.id, NEW.identifier);
        END;
        CREATE TRIGGER resources_url_trigrams_deleted AFTER DELETE ON resources BEGIN
          INSERT INTO ${URL_TRIGRAMS} (${URL_TRIGRAMS}, rowid, identifier) VALUES ('delete', OLD.id, OLD.identifier);
        END;
        CREATE TRIGGER resources_url_trigrams_updated AFTER UPDATE OF identifier ON resources BEGIN
          INSERT INTO ${URL_TRIGRAMS} (${URL_TRIGRAMS}, rowid, identifier) VALUES ('delete', OLD.id, OLD.identifier);
          INSERT INTO ${URL_TRIGRAMS} (rowid, identifier) VALUES (NEW.id, NEW.identifier);
        END;
        INSERT INTO ${URL_TRIGRAMS} (${URL_TRIGRAMS}) VALUES ('rebuild');
      `);
    },
  },
];

/** The FTS5 table of the resources' URLs by trigram (migration 12), and its shadow tables' prefix. */
export const URL_TRIGRAMS = 'resource_url_trigrams';

/**
 * The sources `oaibag worker` harvests on a schedule (`oaibag sources add`), and the lease of
 * the one worker harvesting each (worker/source-lease.ts). Times here are milliseconds since
 * 1970 by the catalog's clock (PostgreSQL's, so that workers on machines whose clocks differ
 * agree on when a lease ends). `lease_token` grows by one at every claim: a worker's writes are
 * checked against the token it claimed with, so a worker whose lease was taken over cannot
 * write. `settings` is the source's entry as a mirror configuration file spells it (JSON).
 * Frozen with migration 11 (a change is a new step).
 */
const SCHEDULED_SOURCES_SQLITE = `
  CREATE TABLE scheduled_sources (
    id INTEGER PRIMARY KEY,
    base_url TEXT NOT NULL UNIQUE,
    settings TEXT NOT NULL,
    every_ms INTEGER NOT NULL,
    jitter_ms INTEGER NOT NULL,
    due_at INTEGER NOT NULL,
    start_at INTEGER NOT NULL,
    lease_owner TEXT,
    lease_token INTEGER NOT NULL DEFAULT 0,
    lease_expires_at INTEGER,
    last_harvest_id INTEGER,
    last_outcome TEXT,
    last_error TEXT,
    last_ended_at TEXT,
    added_at TEXT NOT NULL
  );
  CREATE INDEX scheduled_sources_by_start ON scheduled_sources (start_at, id);
  CREATE TABLE catalog_keys (name TEXT PRIMARY KEY, key TEXT NOT NULL) WITHOUT ROWID;
`;

/**
 * The name of the key `serve` signs its resumption tokens with (`catalog_keys`, migration 11):
 * one key per catalog, so that every serve instance over it takes the tokens of the others, and
 * a restarted one those it gave before. A rebuilt catalog (reindex) has a new one.
 */
export const RESUMPTION_TOKEN_KEY = 'resumption-tokens';

/**
 * A resource's served datestamp (migration 9) from its row `NEW`: the ingest time of its
 * current version, or of its latest deletion when it is deleted now, in whole seconds.
 * Frozen with migration 9 (a change is a new step).
 */
const SERVED_AT = `CAST(strftime('%s', CASE WHEN NEW.deleted_at IS NOT NULL
            THEN (SELECT MAX(d.recorded_at) FROM deletions d WHERE d.resource_id = NEW.id)
            ELSE (SELECT v.stored_at FROM versions v WHERE v.id = NEW.current_version_id) END) AS INTEGER)`;

/** A catalog of a format-1 archive: refused with both formats named. */
export function formatOneArchive(file: string): ArchiverError {
  return new ArchiverError(
    'ERR_ARCHIVE_FORMAT',
    `${file} is the catalog of an archive in format 1 (one bag per version); this oaibag reads and writes format ${ARCHIVE_FORMAT} (one bag per ingest batch)`,
    { path: file, hint: 'harvest into a new archive directory: a format-1 archive is read by the oaibag release that wrote it' },
  );
}

/** The schema version this program writes: the last migration's. */
export const CATALOG_SCHEMA_VERSION: number = CATALOG_MIGRATIONS[CATALOG_MIGRATIONS.length - 1]?.version ?? 0;

/** The version recorded in `schema_migrations` (0 for a new, empty catalog). */
export function catalogSchemaVersion(db: SqlDatabase): number {
  const row = db.prepare('SELECT MAX(version) AS version FROM schema_migrations').get() as { version: number | null };
  return row.version ?? 0;
}

/**
 * Brings the catalog at `file` (open as `db`) to {@link CATALOG_SCHEMA_VERSION}, applying each
 * missing migration in its own IMMEDIATE transaction (the write lock is taken before the
 * version is re-read, so two processes opening the same new catalog cannot both migrate).
 * Refuses a catalog written by a newer program: it may hold rows this one would misread or
 * damage, so the user must upgrade rather than proceed.
 */
export function migrateCatalog(db: Database.Database, file: string, migrations: readonly CatalogMigration[] = CATALOG_MIGRATIONS): void {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at TEXT NOT NULL
  )`);
  const known = migrations[migrations.length - 1]?.version ?? 0;
  const found = catalogSchemaVersion(db);
  if (found > known) {
    throw new ArchiverError('ERR_ARCHIVE_CATALOG', `the catalog ${file} has schema version ${found}, newer than the ${known} this oaibag knows`, {
      path: file,
      hint: 'upgrade oaibag to work on this archive',
    });
  }
  const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
  for (const migration of migrations) {
    if (migration.version <= found) continue;
    db.transaction(() => {
      if (catalogSchemaVersion(db) >= migration.version) return;
      migration.up(db);
      record.run(migration.version, migration.name, new Date().toISOString());
    }).immediate();
  }
}
