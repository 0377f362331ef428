import type Database from 'better-sqlite3';
import type { DeliveryFacts } from '../aip/aip-metadata.js';
import { ARCHIVE_FORMAT } from '../aip/layout-names.js';
import { ArchiverError } from '../core/errors.js';
import type { IdentifyFacts } from '../oai/identify.js';

export type { IdentifyFacts };

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
];

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
export function catalogSchemaVersion(db: Database.Database): number {
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

// ---------------------------------------------------------------------------------------------
// The rows in TypeScript: what the catalog's methods take and give (camelCase, parsed JSON).

/**
 * Where an interrupted list stood, saved with each batch so that a harvest killed mid-list can
 * continue with the token (if the repository still accepts it) or restart the same list.
 * Resume only when set and prefix equal the new harvest's; the list's first-page responseDate
 * becomes the watermark when the resumed list completes.
 */
export interface ResumeState {
  token: string;
  listFrom: string | null;
  listUntil: string | null;
  set: string | null;
  prefix: string;
  listResponseDate: string | null;
  /** The harvest that started the list. */
  harvestId: number;
  /** When it was saved (set by the catalog; ignored when saving). */
  savedAt?: string;
}

/** A harvested repository, identified by its base URL. */
export interface CatalogSource {
  id: number;
  baseUrl: string;
  repositoryName: string | null;
  granularity: string | null;
  earliestDatestamp: string | null;
  deletedRecord: string | null;
  compression: string[];
  identifyCheckedAt: string | null;
  /** The OAI-rights rightsManifest its Identify gave, as received; null for none. */
  rightsManifest: string | null;
  /** The `from` of the next incremental harvest; null before the first complete list. */
  watermark: string | null;
  resume: ResumeState | null;
}

/** The arguments of a harvest as given (dates at the repository's granularity). */
export interface HarvestArguments {
  from?: string | null;
  until?: string | null;
  set?: string | null;
  prefix: string;
  /** Set for an import (`oaibag import`): the out-of-band delivery its records came in. */
  delivery?: DeliveryFacts;
  /** A harvest's politeness (`--delay`): milliseconds between the starts of two requests to a host. */
  delayMs?: number;
  /** A harvest's politeness (`--max-connections`): requests open at once to the repository's host. */
  maxConnections?: number;
}

/** What a run (a row of `harvests`) added to the archive from: a harvest over OAI-PMH, or an import of a delivery. */
export type RunKind = 'harvest' | 'import';

/** `running` until it ends; `interrupted` when found running after a crash. */
export type HarvestStatus = 'running' | 'complete' | 'partial' | 'failed' | 'interrupted';

/** What a harvest did; the same figures as `oaibag harvest --json`. */
export interface HarvestCounts {
  records: number;
  added: number;
  modified: number;
  touched: number;
  deleted: number;
  failed: number;
  bytes: number;
  requests: number;
}

/** Counts of a run that has done nothing yet. */
export function zeroCounts(): HarvestCounts {
  return { records: 0, added: 0, modified: 0, touched: 0, deleted: 0, failed: 0, bytes: 0, requests: 0 };
}

/** A run of the archive (its row in `harvests`): a harvest or an import. */
export interface CatalogHarvest {
  id: number;
  kind: RunKind;
  sourceId: number;
  startedAt: string;
  endedAt: string | null;
  status: HarvestStatus;
  arguments: HarvestArguments;
  listResponseDate: string | null;
  counts: HarvestCounts;
  /** Why it failed or was interrupted: one line ending with the error's code, or null. */
  reason: string | null;
}

/** The kinds of fixity check: `oaibag verify` in full or `--fast`, and `oaibag repair`'s. */
export type VerificationKind = 'full' | 'fast' | 'repair';

/** One fixity check of the whole archive, as `oaibag status` shows it. */
export interface CatalogVerification {
  kind: VerificationKind;
  startedAt: string;
  endedAt: string;
  /** Bags checked. */
  bags: number;
  /** Bytes read (0 for a fast check). */
  bytes: number;
  /** Problems found (after a repair: the ones left). */
  damaged: number;
}

/** One OAI item of a source: a web resource, live or deleted. */
export interface CatalogResource {
  id: number;
  sourceId: number;
  identifier: string;
  currentVersionId: number | null;
  /** The deletion's datestamp while the resource is deleted, else null. */
  deletedAt: string | null;
  mimeType: string | null;
}

/** How a version differs from the resource's state before it. */
export type VersionChange = 'added' | 'modified' | 'touched' | 'restored';

/** The count a version adds to: a resource that reappears after a deletion counts as added. */
export function countedAs(change: VersionChange): 'added' | 'modified' | 'touched' {
  return change === 'restored' ? 'added' : change;
}

/** One stored state of a resource (identifier + datestamp + content), recorded in a batch bag. */
export interface CatalogVersion {
  id: number;
  resourceId: number;
  identifier: string;
  datestamp: string;
  /** Payload bytes (all components of a compound object). */
  size: number;
  /** Lowercase hex sha-256 identifying the payload (for a compound object, of its parts' digests, one a line). */
  sha256: string;
  mimeType: string | null;
  /** The batch bag holding the record (its metadata/records.xml.gz), relative to the archive, `/`-separated. */
  bagPath: string;
  /** The record's place in that bag's records.xml.gz, from 1. */
  record: number;
  harvestId: number | null;
  storedAt: string;
  change: VersionChange;
  /** Payload files: 0 for a record without datastream. */
  payloadFiles: number;
  /** The record's Last-Modified header as sent, or null. */
  lastModified: string | null;
}

/** Where a By-Reference datastream's bytes came from. */
export interface VersionFetch {
  /** The part of the record (1: the first datastream). */
  part: number;
  /** The record's `ref`. */
  ref: string;
  /** The URL that answered with the bytes: `ref`, or the last redirect's target. */
  url: string;
  /** Each redirect's target, in order. */
  redirects: string[];
}

/** A payload file of the archive: the bytes with this sha-256 are at `path` in `bagPath`. */
export interface PayloadLocation {
  sha256: string;
  size: number;
  bagPath: string;
  /** `data/…`, as in the bag's manifests. */
  path: string;
}

/** A payload file as `oaibag serve` answers for it: the original type and date of the latest version it holds. */
export interface ServedPayload extends PayloadLocation {
  mimeType: string | null;
  /** The record's Last-Modified header as sent, or null. */
  lastModified: string | null;
}

/** What {@link Catalog.recordVersion} needs. */
export interface NewVersion {
  sourceId: number;
  identifier: string;
  datestamp: string;
  size: number;
  sha256: string;
  mimeType?: string | null;
  /** The batch bag holding the record (recorded with {@link Catalog.recordBag} first). */
  bagPath: string;
  /** The record's place in the bag's records.xml.gz, from 1. */
  record: number;
  harvestId?: number | null;
  /** The sha-256 of each payload file, in the record's order (each already in `payloads`). */
  parts: string[];
  lastModified?: string | null;
  /** The By-Reference datastreams' fetches. */
  fetches?: VersionFetch[];
  /** When it was stored: its bag's Bagged-At (default now). */
  storedAt?: string;
}

/** A batch bag placed in aips/, with the payload files it holds (see {@link Catalog.recordBag}). */
export interface NewBag {
  bagPath: string;
  sourceId: number;
  harvestId: number | null;
  records: number;
  newPayloads: number;
  revisits: number;
  deletions: number;
  payloadBytes: number;
  /** The payload files it brings to the archive. */
  payloads: Array<{ sha256: string; size: number; path: string }>;
}

/** A batch bag of the catalog. */
export interface CatalogBag {
  id: number;
  bagPath: string;
  sourceId: number;
  harvestId: number | null;
  records: number;
  newPayloads: number;
  revisits: number;
  deletions: number;
  payloadBytes: number;
  placedAt: string;
}

/** A bag noted before its rename into place (see migration 5). */
export interface PendingBag {
  bagPath: string;
  harvestId: number | null;
}

export interface RecordedVersion {
  version: CatalogVersion;
  change: VersionChange;
  known: boolean;
}

/** Where in the work a failure happened. */
export type FailureStage = 'list' | 'record' | 'fetch' | 'verify' | 'store';

/** What {@link Catalog.recordFailure} needs; `expected`/`found` carry both values of a mismatch. */
export interface NewFailure {
  sourceId: number;
  harvestId?: number | null;
  /** Null for a failure of the list itself. */
  identifier?: string | null;
  datestamp?: string | null;
  stage: FailureStage;
  /** An ArchiverError code or another stable code (`badResumptionToken`, `HTTP 404`…). */
  code: string;
  message: string;
  expected?: string | null;
  found?: string | null;
}

export interface CatalogFailure {
  id: number;
  sourceId: number;
  /** The last harvest that saw it. */
  harvestId: number | null;
  identifier: string | null;
  datestamp: string | null;
  stage: FailureStage;
  code: string;
  message: string;
  expected: string | null;
  found: string | null;
  firstSeenAt: string;
  lastSeenAt: string;
  attempts: number;
  resolvedAt: string | null;
}

/** A PREMIS-style event (`capture`, `message digest calculation`, `fixity check`, `ingestion`, `deletion`…). */
export interface NewEvent {
  sourceId?: number | null;
  resourceId?: number | null;
  versionId?: number | null;
  harvestId?: number | null;
  type: string;
  outcome: 'success' | 'failure' | 'warning';
  detail?: string | null;
  /** Defaults to now. */
  at?: string;
}

/** One source in `oaibag status`. */
export interface SourceStatus {
  source: CatalogSource;
  lastHarvest: CatalogHarvest | undefined;
  /** Resources with a stored version and not deleted now. */
  liveResources: number;
  deletedResources: number;
  versions: number;
  /** Sum of version sizes (what a full restore of every version would write). */
  payloadBytes: number;
  /** Bytes of the payload files the source brought to the archive (each stored once). */
  storedBytes: number;
  bags: number;
  openFailures: number;
}

/** The whole of `oaibag status`. */
export interface CatalogStatus {
  file: string;
  schemaVersion: number;
  sources: SourceStatus[];
}

/** A raw row as better-sqlite3 returns it. */
export type Row = Record<string, unknown>;

const text = (value: unknown): string | null => (value === null || value === undefined ? null : String(value));
const int = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));

export function toSource(row: Row): CatalogSource {
  const token = text(row.resume_token);
  return {
    id: Number(row.id),
    baseUrl: String(row.base_url),
    repositoryName: text(row.repository_name),
    granularity: text(row.granularity),
    earliestDatestamp: text(row.earliest_datestamp),
    deletedRecord: text(row.deleted_record),
    compression: JSON.parse(String(row.compression)) as string[],
    identifyCheckedAt: text(row.identify_checked_at),
    rightsManifest: text(row.rights_manifest),
    watermark: text(row.watermark),
    resume:
      token === null
        ? null
        : {
            token,
            listFrom: text(row.resume_list_from),
            listUntil: text(row.resume_list_until),
            set: text(row.resume_list_set),
            prefix: String(row.resume_list_prefix),
            listResponseDate: text(row.resume_list_response_date),
            harvestId: Number(row.resume_harvest_id),
            savedAt: String(row.resume_saved_at),
          },
  };
}

export function toHarvest(row: Row): CatalogHarvest {
  return {
    id: Number(row.id),
    kind: String(row.kind) as RunKind,
    sourceId: Number(row.source_id),
    startedAt: String(row.started_at),
    endedAt: text(row.ended_at),
    status: String(row.status) as HarvestStatus,
    arguments: JSON.parse(String(row.arguments)) as HarvestArguments,
    listResponseDate: text(row.list_response_date),
    reason: text(row.reason),
    counts: {
      records: Number(row.records),
      added: Number(row.added),
      modified: Number(row.modified),
      touched: Number(row.touched),
      deleted: Number(row.deleted),
      failed: Number(row.failed),
      bytes: Number(row.bytes),
      requests: Number(row.requests),
    },
  };
}

export function toResource(row: Row): CatalogResource {
  return {
    id: Number(row.id),
    sourceId: Number(row.source_id),
    identifier: String(row.identifier),
    currentVersionId: int(row.current_version_id),
    deletedAt: text(row.deleted_at),
    mimeType: text(row.mime_type),
  };
}

/** Maps a `versions` row joined with its resource's `identifier` and its bag's `bag_path`. */
export function toVersion(row: Row): CatalogVersion {
  return {
    id: Number(row.id),
    resourceId: Number(row.resource_id),
    identifier: String(row.identifier),
    datestamp: String(row.datestamp),
    size: Number(row.size),
    sha256: String(row.sha256),
    mimeType: text(row.mime_type),
    bagPath: String(row.bag_path),
    record: Number(row.record),
    harvestId: int(row.harvest_id),
    storedAt: String(row.stored_at),
    change: String(row.change) as VersionChange,
    payloadFiles: Number(row.payload_files),
    lastModified: text(row.last_modified),
  };
}

export function toBag(row: Row): CatalogBag {
  return {
    id: Number(row.id),
    bagPath: String(row.bag_path),
    sourceId: Number(row.source_id),
    harvestId: int(row.harvest_id),
    records: Number(row.records),
    newPayloads: Number(row.new_payloads),
    revisits: Number(row.revisits),
    deletions: Number(row.deletions),
    payloadBytes: Number(row.payload_bytes),
    placedAt: String(row.placed_at),
  };
}

export function toFailure(row: Row): CatalogFailure {
  return {
    id: Number(row.id),
    sourceId: Number(row.source_id),
    harvestId: int(row.harvest_id),
    identifier: text(row.identifier),
    datestamp: text(row.datestamp),
    stage: String(row.stage) as FailureStage,
    code: String(row.code),
    message: String(row.message),
    expected: text(row.expected),
    found: text(row.found),
    firstSeenAt: String(row.first_seen_at),
    lastSeenAt: String(row.last_seen_at),
    attempts: Number(row.attempts),
    resolvedAt: text(row.resolved_at),
  };
}
