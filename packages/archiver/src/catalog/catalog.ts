import { existsSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { catalogLocation } from '../archive/archive-locations.js';
import { READING_COMMANDS, readOnlyCodeOf } from '../archive/read-only-archive.js';
import { ArchiverError } from '../core/errors.js';
import type { IdentifyFacts } from '../oai/identify.js';
import { CATALOG_SCHEMA_VERSION, catalogSchemaVersion, migrateCatalog, RESUMPTION_TOKEN_KEY } from './catalog-migrations.js';
import { type Row, toBag, toFetch, toPayloadLocation, toPendingBag, toResource, toServedPayload, toSource, toVerification, toVersion } from './catalog-rows.js';
import type {
  CatalogBag,
  CatalogFailure,
  CatalogHarvest,
  CatalogResource,
  CatalogSource,
  CatalogStatus,
  CatalogVerification,
  CatalogVersion,
  HarvestArguments,
  HarvestCounts,
  HarvestStatus,
  NewBag,
  NewEvent,
  NewFailure,
  NewVersion,
  PayloadLocation,
  PendingBag,
  RecordedVersion,
  ResumeState,
  RunKind,
  ServedPayload,
  SourceStatus,
  VersionChange,
  VersionFetch,
} from './catalog-types.js';
import * as failures from './failure-queries.js';
import { openReadOnlyDatabase, type ReadOnlyDatabase } from './open-read-only.js';
import { PostgresDatabase, redactedUrl } from './pg-database.js';
import { preparePostgresCatalog } from './pg-schema.js';
import * as runs from './run-queries.js';
import * as leases from './source-leases.js';
import type { SqlDatabase, SqlStatement } from './sql-database.js';
import { stamp } from './statements.js';

/** The catalog's file name inside an archive directory. */
export const CATALOG_FILE_NAME = 'catalog.sqlite';

/** How {@link Catalog.open} treats a missing catalog file. */
export interface CatalogOpenOptions {
  /** Create the catalog when absent (default true). `oaibag status` passes false. */
  create?: boolean;
  /** The file's name inside the archive directory (default CATALOG_FILE_NAME; reindex builds under another). */
  fileName?: string;
  /**
   * The catalog in PostgreSQL at this URL (`postgres://…`) instead of the archive's SQLite
   * file (docs/scale-out.md). The schema is created in an empty database. Default: the
   * catalog the archive folder keeps (archive/archive-locations.ts), if it keeps one.
   */
  postgres?: string | undefined;
  /** The schema of the PostgreSQL catalog (reindex builds in a schema of its own: pg-rebuild.ts). */
  postgresSchema?: string | undefined;
  /**
   * Open for reading only (implies `create: false`): nothing is ever written to the catalog or
   * created beside it (open-read-only.ts), its write methods fail with ERR_ARCHIVE_CATALOG, and
   * a catalog of another schema version than this program's is refused, never migrated.
   */
  readOnly?: boolean;
}

/**
 * The archive's catalog: what was harvested from where, every version of every resource and
 * the bag that holds it, deletions, outstanding failures and events. It does no file-system
 * work besides its own SQLite file: the bag writer stores files, then the catalog records them.
 *
 * Durability: WAL with `synchronous = NORMAL`, except that {@link recordVersion} and
 * {@link transaction} commit with `synchronous = FULL`. A killed process never loses a
 * committed transaction either way; FULL matters for power loss, so that once a stored AIP is
 * recorded the record survives too (one WAL fsync, cheap next to the fsyncs of the bag it
 * records). Other writes may lose a suffix of commits on power loss, never one in the middle
 * (the WAL is replayed in order), so a watermark can never be durable ahead of the versions
 * recorded before it. Callers must hold the archive lock for writes: the catalog assumes one
 * writer (see archive-lock.ts).
 */
export class Catalog {
  readonly file: string;
  private readonly db: SqlDatabase;
  private readonly statements = new Map<string, SqlStatement>();
  /** True inside `readSession`, whose transaction only reads. */
  private reading = false;
  /** Set when opened read-only; its `copy` names the private copy read, if one is. */
  private readonly readOnlyDatabase: ReadOnlyDatabase | undefined;

  private constructor(file: string, db: SqlDatabase, readOnlyDatabase?: ReadOnlyDatabase) {
    this.file = file;
    this.db = db;
    this.readOnlyDatabase = readOnlyDatabase;
  }

  /** True when opened read-only: the write methods fail. */
  get readOnly(): boolean {
    return this.readOnlyDatabase !== undefined;
  }

  /**
   * Opens the catalog for a command that only reads (status, audit, restore, export, serve,
   * verify --no-record): read-only, so that it works on a read-only archive. A catalog older
   * than this program is first migrated when the archive can be written (as every command did
   * before there was a read-only mode, so an upgrade needs no harvest first); on a read-only
   * archive it is refused (ERR_ARCHIVE_CATALOG naming both versions).
   */
  static openForReading(archiveDir: string, options: Pick<CatalogOpenOptions, 'postgres'> = {}): Catalog {
    const postgres = options.postgres ?? catalogLocation(archiveDir);
    if (postgres !== undefined) return Catalog.openPostgres(postgres, true);
    const file = join(archiveDir, CATALOG_FILE_NAME);
    const found = Catalog.withReadOnly(file, (database) => readSchemaVersion(database.db, file));
    if (found < CATALOG_SCHEMA_VERSION) {
      try {
        Catalog.open(archiveDir, { create: false }).close();
      } catch (error) {
        if (!(error instanceof ArchiverError) || readOnlyCodeOf(error) === undefined) throw error;
        throw olderCatalogError(file, found);
      }
    }
    return Catalog.open(archiveDir, { readOnly: true });
  }

  /** Runs `fn` on the catalog at `file` opened read-only, closed afterwards. */
  private static withReadOnly<T>(file: string, fn: (database: ReadOnlyDatabase) => T): T {
    const database = Catalog.openReadOnly(file);
    try {
      return fn(database);
    } finally {
      database.close();
    }
  }

  /** openReadOnlyDatabase, its errors as ERR_ARCHIVE_CATALOG. */
  private static openReadOnly(file: string): ReadOnlyDatabase {
    try {
      return openReadOnlyDatabase(file);
    } catch (error) {
      if (error instanceof ArchiverError) throw error;
      const missing = !existsSync(file);
      throw new ArchiverError('ERR_ARCHIVE_CATALOG', missing ? `no catalog at ${file}` : `cannot read the catalog ${file}: ${(error as Error).message}`, {
        cause: error,
        path: file,
        hint: missing ? 'check --archive names an archive made by oaibag harvest' : 'check that the catalog is a file this user may read',
      });
    }
  }

  /** Opens (creating unless told not to) and migrates `<archiveDir>/catalog.sqlite`. */
  static open(archiveDir: string, options: CatalogOpenOptions = {}): Catalog {
    const postgres = options.postgres ?? (options.fileName === undefined ? catalogLocation(archiveDir) : undefined);
    if (postgres !== undefined) return Catalog.openPostgres(postgres, options.readOnly === true, options.postgresSchema);
    const file = join(archiveDir, options.fileName ?? CATALOG_FILE_NAME);
    if (options.readOnly) {
      const database = Catalog.openReadOnly(file);
      try {
        const found = readSchemaVersion(database.db, file);
        if (found < CATALOG_SCHEMA_VERSION) throw olderCatalogError(file, found);
        if (found > CATALOG_SCHEMA_VERSION) throw newerCatalogError(file, found);
        database.db.pragma('foreign_keys = ON');
        database.db.pragma('busy_timeout = 5000');
        return new Catalog(file, database.db, database);
      } catch (error) {
        database.close();
        throw error;
      }
    }
    let db: Database.Database | undefined;
    try {
      db = new Database(file, { fileMustExist: options.create === false });
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      db.pragma('foreign_keys = ON');
      db.pragma('busy_timeout = 5000');
      // Statement journals in memory, not in temporary files: a harvest's inserts wrote one
      // with a system call per page touched.
      db.pragma('temp_store = MEMORY');
      migrateCatalog(db, file);
      return new Catalog(file, db);
    } catch (error) {
      db?.close();
      if (error instanceof ArchiverError) throw error;
      const readOnly = readOnlyCodeOf(error);
      if (readOnly !== undefined) {
        throw new ArchiverError('ERR_ARCHIVE_CATALOG', `the catalog ${file} is read-only (${readOnly}): this command writes to it`, {
          cause: error,
          path: file,
          hint: `run it on a writable archive; ${READING_COMMANDS} read a read-only one`,
        });
      }
      const missing = options.create === false && (error as { code?: string }).code === 'SQLITE_CANTOPEN';
      throw new ArchiverError('ERR_ARCHIVE_CATALOG', missing ? `no catalog at ${file}` : `cannot open the catalog ${file}: ${(error as Error).message}`, {
        cause: error,
        path: file,
        hint: missing ? 'check --archive names an archive made by oaibag harvest' : 'check --archive names an existing, writable archive directory',
      });
    }
  }

  /**
   * The catalog in PostgreSQL at `url`: its schema created when the database is empty, checked
   * otherwise. Opened to read only, its write methods fail as a read-only SQLite catalog's do
   * (the database is not touched: the schema must be there).
   */
  private static openPostgres(url: string, readOnly: boolean, schema?: string): Catalog {
    const db = new PostgresDatabase(url, { applicationName: readOnly ? 'oaibag (reading)' : 'oaibag', schema });
    try {
      preparePostgresCatalog(db);
      // Writers of one catalog commit one at a time, in the order they wrote (source-leases.ts).
      if (!readOnly) db.writeGuard = leases.writeOrderGuard;
      return new Catalog(redactedUrl(url), db, readOnly ? { db, copy: undefined, close: () => db.close() } : undefined);
    } catch (error) {
      db.close();
      throw error;
    }
  }

  /** Whether the catalog is in PostgreSQL (else in the archive's SQLite file). */
  get onPostgres(): boolean {
    return this.db instanceof PostgresDatabase;
  }

  /**
   * This connection's page cache, in KiB (SQLite's cache_size; 16 MiB by default here). A
   * connection that runs one large sorting query gains by a small one: each sorter and
   * temporary B-tree holds up to the cache before it spills to a temporary file, and audit
   * over 1M resources peaked at 210 MB with 16 MiB, 136 MB with 2 MiB, and ran faster.
   */
  setCacheKiB(kib: number): void {
    this.db.pragma(`cache_size = ${-Math.max(1, Math.floor(kib))}`);
  }

  close(): void {
    if (this.readOnlyDatabase) this.readOnlyDatabase.close();
    else this.db.close();
  }

  /** The schema version of this catalog (see catalog-migrations.ts). */
  schemaVersion(): number {
    return catalogSchemaVersion(this.db);
  }

  /**
   * Runs `fn` in one transaction committed durably (FULL): the harvester groups a page's rows
   * this way, so a crash keeps whole pages. Nested calls and the methods called inside join it.
   */
  transaction<T>(fn: () => T): T {
    return this.durably(fn);
  }

  /**
   * Runs `fn` in one read transaction: what it reads is one state of the catalog, whatever a
   * harvest commits meanwhile (restore, audit). Nested calls join the outer transaction.
   */
  read<T>(fn: () => T): T {
    return this.db.transaction(fn)();
  }

  /**
   * Runs `work` (async: a page of a harvest) with its lookups in one read transaction. Each
   * statement outside a transaction takes and releases SQLite's WAL locks, a handful of system
   * calls that cost four times the lookup itself (10 µs against 2.5 µs measured); a harvest
   * looks up every record and datastream it is sent. `work` must only read: a durable write
   * (`transaction`, `recordVersion`…) ends the read transaction first and begins another after.
   */
  async readSession<T>(work: () => Promise<T>): Promise<T> {
    if (this.db.inTransaction) return work();
    this.db.exec('BEGIN');
    this.reading = true;
    try {
      return await work();
    } finally {
      this.reading = false;
      if (this.db.inTransaction) this.db.exec('COMMIT');
    }
  }

  /** Notes, durably, a batch bag about to be renamed into place; `recordBag` removes the note. */
  addPendingBag(bagPath: string, harvestId: number | null): void {
    this.durably(() => {
      this.sql(`INSERT INTO pending_bags (bag_path, harvest_id, created_at) VALUES (?, ?, ?)
        ON CONFLICT (bag_path) DO UPDATE SET harvest_id = excluded.harvest_id, created_at = excluded.created_at`).run(bagPath, harvestId, stamp());
    });
  }

  /**
   * Bags noted by `addPendingBag` that were never recorded (a crash in between); only those of
   * the harvests of the source `baseUrl` when given (a worker's: the others may be in flight).
   */
  pendingBags(baseUrl?: string): PendingBag[] {
    const rows = (
      baseUrl === undefined
        ? this.sql('SELECT bag_path, harvest_id FROM pending_bags ORDER BY created_at, bag_path').all()
        : this.sql(`SELECT p.bag_path, p.harvest_id FROM pending_bags p JOIN harvests h ON h.id = p.harvest_id
            JOIN sources s ON s.id = h.source_id WHERE s.base_url = ? ORDER BY p.created_at, p.bag_path`).all(baseUrl)
    ) as Row[];
    return rows.map(toPendingBag);
  }

  removePendingBag(bagPath: string): void {
    this.sql('DELETE FROM pending_bags WHERE bag_path = ?').run(bagPath);
  }

  /**
   * Records a batch bag placed in aips/ and the payload files it brings (a payload already held
   * under the same sha-256 keeps its first place); removes its pending note. Returns the bag's
   * row id; a bag recorded before is not recorded again.
   */
  recordBag(bag: NewBag): number {
    return this.durably(() => {
      this.removePendingBag(bag.bagPath);
      const existing = this.sql('SELECT id FROM bags WHERE bag_path = ?').get(bag.bagPath) as { id: number } | undefined;
      if (existing) return existing.id;
      const id = Number(
        this.sql(`INSERT INTO bags (bag_path, source_id, harvest_id, records, new_payloads, revisits, deletions, payload_bytes, placed_at)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(
          bag.bagPath,
          bag.sourceId,
          bag.harvestId,
          bag.records,
          bag.newPayloads,
          bag.revisits,
          bag.deletions,
          bag.payloadBytes,
          stamp(),
        ).lastInsertRowid,
      );
      const payload = this.sql('INSERT OR IGNORE INTO payloads (sha256, size, bag_id, path) VALUES (?, ?, ?, ?)');
      for (const file of bag.payloads) payload.run(file.sha256, file.size, id, file.path);
      return id;
    });
  }

  /** The batch bag recorded at `bagPath`. */
  bag(bagPath: string): CatalogBag | undefined {
    const row = this.sql('SELECT * FROM bags WHERE bag_path = ?').get(bagPath) as Row | undefined;
    return row && toBag(row);
  }

  /** The batch bag placed after the bag `id`, if any. */
  bagAfter(id: number): CatalogBag | undefined {
    const row = this.sql('SELECT * FROM bags WHERE id > ? ORDER BY id LIMIT 1').get(id) as Row | undefined;
    return row && toBag(row);
  }

  /** Every batch bag, in the order they were placed. */
  bags(): CatalogBag[] {
    return (this.sql('SELECT * FROM bags ORDER BY id').all() as Row[]).map(toBag);
  }

  /** Where the archive holds the bytes with this sha-256, if it does. */
  payload(sha256: string): PayloadLocation | undefined {
    const row = this.sql('SELECT p.sha256, p.size, p.path, b.bag_path FROM payloads p JOIN bags b ON b.id = p.bag_id WHERE p.sha256 = ?').get(sha256) as
      | Row
      | undefined;
    return row && toPayloadLocation(row);
  }

  /**
   * A payload file by its bag and path, with the original Content-Type and Last-Modified of
   * the latest version whose bytes it holds (what `oaibag serve` answers for it), if the
   * catalog lists that file as a payload.
   */
  servedPayload(bagPath: string, path: string): ServedPayload | undefined {
    const row = this.sql(`SELECT p.sha256, p.size, p.path, b.bag_path,
        (SELECT v.mime_type FROM version_parts vp JOIN versions v ON v.id = vp.version_id
          WHERE vp.payload_id = p.id ORDER BY v.stored_at DESC, v.id DESC LIMIT 1) AS mime_type,
        (SELECT v.last_modified FROM version_parts vp JOIN versions v ON v.id = vp.version_id
          WHERE vp.payload_id = p.id ORDER BY v.stored_at DESC, v.id DESC LIMIT 1) AS last_modified
      FROM payloads p JOIN bags b ON b.id = p.bag_id WHERE b.bag_path = ? AND p.path = ?`).get(bagPath, path) as Row | undefined;
    return row && toServedPayload(row);
  }

  /** The payload files of a version, in the record's order. */
  versionParts(versionId: number): PayloadLocation[] {
    const rows = this.sql(`SELECT p.sha256, p.size, p.path, b.bag_path FROM version_parts vp JOIN payloads p ON p.id = vp.payload_id
      JOIN bags b ON b.id = p.bag_id WHERE vp.version_id = ? ORDER BY vp.part`).all(versionId) as Row[];
    return rows.map(toPayloadLocation);
  }

  /** Records or refreshes a source and what its Identify said; returns it. */
  upsertSource(baseUrl: string, facts: IdentifyFacts): CatalogSource {
    const now = stamp();
    this.sql(`INSERT INTO sources (base_url, repository_name, granularity, earliest_datestamp, deleted_record, compression, rights_manifest,
        identify_checked_at, created_at)
      VALUES (@baseUrl, @repositoryName, @granularity, @earliestDatestamp, @deletedRecord, @compression, @rightsManifest, @now, @now)
      ON CONFLICT (base_url) DO UPDATE SET repository_name = excluded.repository_name, granularity = excluded.granularity,
        earliest_datestamp = excluded.earliest_datestamp, deleted_record = excluded.deleted_record,
        compression = excluded.compression, rights_manifest = excluded.rights_manifest, identify_checked_at = excluded.identify_checked_at`).run({
      baseUrl,
      repositoryName: facts.repositoryName ?? null,
      granularity: facts.granularity ?? null,
      earliestDatestamp: facts.earliestDatestamp ?? null,
      deletedRecord: facts.deletedRecord ?? null,
      compression: JSON.stringify(facts.compression ?? []),
      rightsManifest: facts.rightsManifest ?? null,
      now,
    });
    return this.source(baseUrl)!;
  }

  /** The source harvested from `baseUrl`, created with only its name when absent (reindex). */
  ensureSource(baseUrl: string, repositoryName: string | null): CatalogSource {
    this.sql('INSERT OR IGNORE INTO sources (base_url, repository_name, created_at) VALUES (?, ?, ?)').run(baseUrl, repositoryName, stamp());
    return this.source(baseUrl)!;
  }

  /**
   * A run row with this id, created when absent (reindex brings back the runs that wrote bags,
   * with their ids, so bag names and catalog agree); closed by `closeRebuiltRun`.
   */
  ensureRun(id: number, sourceId: number, kind: RunKind, args: HarvestArguments, startedAt: string): void {
    runs.ensureRun(this, id, sourceId, kind, args, startedAt);
  }

  /** Closes a run row rebuilt by reindex: its status, counts and end (its last bag's time). */
  closeRebuiltRun(harvestId: number, status: Exclude<HarvestStatus, 'running'>, counts: HarvestCounts, endedAt: string, listResponseDate: string | null): void {
    runs.closeRebuiltRun(this, harvestId, status, counts, endedAt, listResponseDate);
  }

  /** The source with this row id. */
  sourceById(id: number): CatalogSource | undefined {
    const row = this.sql('SELECT * FROM sources WHERE id = ?').get(id) as Row | undefined;
    return row && toSource(row);
  }

  /** The source harvested from `baseUrl`, or undefined if never harvested. */
  source(baseUrl: string): CatalogSource | undefined {
    const row = this.sql('SELECT * FROM sources WHERE base_url = ?').get(baseUrl) as Row | undefined;
    return row && toSource(row);
  }

  /** Moves the `from` of the next incremental harvest (the first page's responseDate of a complete list). */
  setWatermark(sourceId: number, from: string): void {
    this.sql('UPDATE sources SET watermark = ? WHERE id = ?').run(from, sourceId);
  }

  /** Saves (with each batch) or clears (null, when the list completes) where a list stands. */
  saveResumeState(sourceId: number, state: ResumeState | null): void {
    this.sql(`UPDATE sources SET resume_token = @token, resume_list_from = @listFrom, resume_list_until = @listUntil,
      resume_list_set = @set, resume_list_prefix = @prefix, resume_list_response_date = @listResponseDate,
      resume_harvest_id = @harvestId, resume_saved_at = @savedAt WHERE id = @sourceId`).run({
      sourceId,
      token: state?.token ?? null,
      listFrom: state?.listFrom ?? null,
      listUntil: state?.listUntil ?? null,
      set: state?.set ?? null,
      prefix: state?.prefix ?? null,
      listResponseDate: state?.listResponseDate ?? null,
      harvestId: state?.harvestId ?? null,
      savedAt: state ? stamp() : null,
    });
  }

  /** Opens a run row (a harvest or an import of the source) in status 'running'; returns its id. */
  startRun(sourceId: number, kind: RunKind, args: HarvestArguments): number {
    return runs.startRun(this, sourceId, kind, args);
  }

  /** Records the responseDate of the first page of the harvest's list (of a resumed list: of its first harvest). */
  setListResponseDate(harvestId: number, responseDate: string): void {
    runs.setListResponseDate(this, harvestId, responseDate);
  }

  /** Saves the counts so far (a run does, with each batch), so a killed run's row still tells what it did. */
  /** Sets a rebuilt run's counts from every row the catalog holds for it (run-queries.ts). */
  recountRebuiltRun(harvestId: number): void {
    runs.recountRebuiltRun(this, harvestId);
  }

  updateRunCounts(harvestId: number, counts: Partial<HarvestCounts>): void {
    runs.updateRunCounts(this, harvestId, counts);
  }

  /**
   * Notes when a harvest's list ended: the instant its last batch was stored (its bag's
   * Bagged-At), so that a catalog rebuilt from the bags says the same.
   */
  setListEnded(harvestId: number, at: string): void {
    runs.setListEnded(this, harvestId, at);
  }

  /**
   * Closes a run with its final status and counts (its end: when its list ended, else now)
   * and, for a failed or interrupted one, why (one line ending with the error's code).
   */
  finishRun(harvestId: number, status: Exclude<HarvestStatus, 'running'>, counts: Partial<HarvestCounts> = {}, reason?: string): void {
    runs.finishRun(this, harvestId, status, counts, reason);
  }

  /** Replaces the arguments a run was started with (a harvest's, once Identify has told how to ask). */
  setRunArguments(harvestId: number, args: HarvestArguments): void {
    runs.setRunArguments(this, harvestId, args);
  }

  /** Records one fixity check of the archive (verify, repair), durably. */
  recordVerification(verification: CatalogVerification): void {
    this.durably(() => {
      this.sql('INSERT INTO verifications (kind, started_at, ended_at, bags, bytes, damaged) VALUES (?, ?, ?, ?, ?, ?)').run(
        verification.kind,
        verification.startedAt,
        verification.endedAt,
        verification.bags,
        verification.bytes,
        verification.damaged,
      );
    });
  }

  /** The most recent fixity check of the archive, or undefined when it was never checked. */
  lastVerification(): CatalogVerification | undefined {
    const row = this.sql('SELECT * FROM verifications ORDER BY id DESC LIMIT 1').get() as Row | undefined;
    return row && toVerification(row);
  }

  /**
   * Marks runs left 'running' by a killed process as 'interrupted' (only those of the source
   * `baseUrl` when given: a worker's, whose lease says no other run of it is alive); returns how
   * many. Call only while holding the archive lock: then nothing else can be running.
   */
  interruptRunningRuns(baseUrl?: string): number {
    return runs.interruptRunningRuns(this, baseUrl);
  }

  /**
   * The key serve signs its resumption tokens with: the catalog's own, shared by every serve
   * instance over it (undefined in a catalog older than schema version 11, opened read-only).
   */
  resumptionTokenKey(): Buffer | undefined {
    const row = this.sql('SELECT key FROM catalog_keys WHERE name = ?').get(RESUMPTION_TOKEN_KEY) as Row | undefined;
    return row === undefined ? undefined : Buffer.from(String(row.key), 'hex');
  }

  /** Now by the catalog's clock, in ms (PostgreSQL's: workers on several machines agree on it). */
  clockMs(): number {
    return leases.catalogClockMs(this, this.onPostgres);
  }

  /** The sources workers harvest on a schedule, by base URL (source-leases.ts). */
  scheduledSources(): leases.ScheduledSource[] {
    return leases.scheduledSources(this);
  }

  scheduledSource(baseUrl: string): leases.ScheduledSource | undefined {
    return leases.scheduledSource(this, baseUrl);
  }

  /** Adds a source to the workers' schedule, due at once; false when it is there already. */
  addScheduledSource(source: { baseUrl: string; settings: string; everyMs: number; jitterMs: number }): boolean {
    return leases.addScheduledSource(this, source, this.clockMs());
  }

  /** Removes a source from the schedule; refused while a worker harvests it. */
  removeScheduledSource(baseUrl: string): boolean {
    return leases.removeScheduledSource(this, baseUrl, this.clockMs());
  }

  /** Claims the due source that should start first, for `leaseMs`; undefined when none is due. */
  claimDueSource(owner: string, leaseMs: number): leases.SourceLease | undefined {
    return leases.claimDueSource(this, this.onPostgres, owner, this.clockMs(), leaseMs);
  }

  /** When a worker should look for a due source again (ms, the catalog's clock). */
  nextScheduledStart(): number | undefined {
    return leases.nextStart(this, this.clockMs());
  }

  /** Whether a scheduled source is due, waiting for a worker or being harvested. */
  anyScheduledDue(): boolean {
    return leases.anyDue(this, this.clockMs());
  }

  /** Renews a lease for `leaseMs`; false when another worker has taken the source over. */
  renewLease(lease: leases.SourceLease, leaseMs: number): boolean {
    return leases.unlessLost(() => leases.renewLease(this, lease, this.clockMs(), leaseMs));
  }

  /** Ends a lease with how the run ended; false when another worker had taken the source over. */
  endLease(lease: leases.SourceLease, end: leases.LeaseEnd): boolean {
    return leases.unlessLost(() => leases.endLease(this, lease, end));
  }

  /**
   * From now on every transaction of this connection that writes first checks that `lease` is
   * still this worker's, and renews it (on PostgreSQL, where workers share the catalog; a
   * SQLite catalog has one writer, the archive lock's holder).
   */
  holdLease(lease: leases.SourceLease, leaseMs: number): void {
    if (this.db instanceof PostgresDatabase) this.db.writeGuard = leases.leaseGuard(lease, leaseMs);
  }

  /**
   * Takes over the scheduled sources of the SQLite catalog at `file` (reindex: the schedule is
   * not in the bags), leases left behind; a catalog older than schema 11 has none.
   */
  carryScheduleFrom(file: string): number {
    if (this.onPostgres) throw new ArchiverError('ERR_ARCHIVE_INTERNAL', 'carryScheduleFrom is for SQLite catalogs');
    this.db.prepare('ATTACH DATABASE ? AS replaced').run(file);
    try {
      const present = this.db.prepare("SELECT 1 FROM replaced.sqlite_master WHERE type = 'table' AND name = 'scheduled_sources'").get() !== undefined;
      if (!present) return 0;
      return this.durably(
        () =>
          this.db
            .prepare(
              `INSERT INTO scheduled_sources (${leases.CARRIED_SCHEDULE_COLUMNS}) SELECT ${leases.CARRIED_SCHEDULE_COLUMNS} FROM replaced.scheduled_sources`,
            )
            .run().changes,
      );
    } finally {
      this.db.exec('DETACH DATABASE replaced');
    }
  }

  /** Whether a transaction is open on this connection (a lease renewal waits for its end). */
  get inTransaction(): boolean {
    return this.db.inTransaction;
  }

  harvest(harvestId: number): CatalogHarvest | undefined {
    return runs.harvest(this, harvestId);
  }

  /** The most recent harvest of a source, whatever its status. */
  lastHarvest(sourceId: number): CatalogHarvest | undefined {
    return runs.lastHarvest(this, sourceId);
  }

  resource(sourceId: number, identifier: string): CatalogResource | undefined {
    const row = this.sql('SELECT * FROM resources WHERE source_id = ? AND identifier = ?').get(sourceId, identifier) as Row | undefined;
    return row && toResource(row);
  }

  /**
   * The version already stored for exactly this record state, if any: a record delivered
   * twice (overlapping windows, retries, a list restarted) is recognised and costs no new AIP.
   */
  knownVersion(sourceId: number, identifier: string, datestamp: string, sha256: string): CatalogVersion | undefined {
    const row = this.sql(`SELECT ${VERSION_COLUMNS} FROM versions v JOIN resources r ON r.id = v.resource_id JOIN bags b ON b.id = v.bag_id
      WHERE r.source_id = ? AND r.identifier = ? AND v.datestamp = ? AND v.sha256 = ?`).get(sourceId, identifier, datestamp, sha256) as Row | undefined;
    return row && toVersion(row);
  }

  /** Whether exactly this record state is stored already (knownVersion, without reading it). */
  hasVersion(sourceId: number, identifier: string, datestamp: string, sha256: string): boolean {
    return (
      this.sql(`SELECT 1 FROM resources r JOIN versions v ON v.resource_id = r.id
      WHERE r.source_id = ? AND r.identifier = ? AND v.datestamp = ? AND v.sha256 = ?`).get(sourceId, identifier, datestamp, sha256) !== undefined
    );
  }

  /** Whether this deletion (identifier and datestamp) is recorded already. */
  knownDeletion(sourceId: number, identifier: string, datestamp: string): boolean {
    return (
      this.sql(`SELECT 1 FROM deletions d JOIN resources r ON r.id = d.resource_id
      WHERE r.source_id = ? AND r.identifier = ? AND d.datestamp = ?`).get(sourceId, identifier, datestamp) !== undefined
    );
  }

  /** The current version of a resource (even when it is deleted now). */
  latestVersion(sourceId: number, identifier: string): CatalogVersion | undefined {
    const row = this.sql(`SELECT ${VERSION_COLUMNS} FROM resources r JOIN versions v ON v.id = r.current_version_id JOIN bags b ON b.id = v.bag_id
      WHERE r.source_id = ? AND r.identifier = ?`).get(sourceId, identifier) as Row | undefined;
    return row && toVersion(row);
  }

  /** Where the By-Reference datastreams of a version came from, in payload order. */
  versionFetches(versionId: number): VersionFetch[] {
    const rows = this.sql('SELECT part, ref, url, redirects FROM fetches WHERE version_id = ? ORDER BY id').all(versionId) as Row[];
    return rows.map(toFetch);
  }

  /** All versions of a resource, oldest first. */
  versions(sourceId: number, identifier: string): CatalogVersion[] {
    const rows = this.sql(`SELECT ${VERSION_COLUMNS} FROM versions v JOIN resources r ON r.id = v.resource_id JOIN bags b ON b.id = v.bag_id
      WHERE r.source_id = ? AND r.identifier = ? ORDER BY v.id`).all(sourceId, identifier) as Row[];
    return rows.map(toVersion);
  }

  /**
   * Records a version (call after its batch bag is recorded with `recordBag`) and makes it the
   * resource's current version. The change kind compares with the current state in arrival
   * order: `added` (no earlier version), `restored` (the resource was deleted), `modified`
   * (other sha-256), `touched` (same sha-256, new datestamp). The same state recorded again
   * changes nothing and returns the stored version with `known: true`. Open failures of the
   * record are resolved.
   */
  recordVersion(version: NewVersion): RecordedVersion {
    return this.durably(() => {
      // The resource and its current state in one lookup: this runs once per record harvested.
      const current = this.sql(`SELECT r.id, r.deleted_at, v.sha256 FROM resources r LEFT JOIN versions v ON v.id = r.current_version_id
        WHERE r.source_id = ? AND r.identifier = ?`).get(version.sourceId, version.identifier) as
        | { id: number; deleted_at: string | null; sha256: string | null }
        | undefined;
      if (current) {
        const same = this.sql('SELECT id FROM versions WHERE resource_id = ? AND datestamp = ? AND sha256 = ?').get(
          current.id,
          version.datestamp,
          version.sha256,
        );
        if (same) {
          const known = this.knownVersion(version.sourceId, version.identifier, version.datestamp, version.sha256)!;
          failures.resolveRecordFailure(this, version.sourceId, version.identifier);
          return { version: known, change: known.change, known: true };
        }
      }
      const bag = this.sql('SELECT id FROM bags WHERE bag_path = ?').get(version.bagPath) as { id: number } | undefined;
      if (!bag) throw new ArchiverError('ERR_ARCHIVE_CATALOG', `version of ${version.identifier} names the bag ${version.bagPath}, which is not recorded`);
      const change: VersionChange =
        current?.sha256 == null ? 'added' : current.deleted_at != null ? 'restored' : current.sha256 === version.sha256 ? 'touched' : 'modified';
      const resourceId = current?.id ?? this.insertResource(version.sourceId, version.identifier);
      const storedAt = version.storedAt ?? stamp();
      const result = this.sql(`INSERT INTO versions (resource_id, datestamp, size, sha256, mime_type, bag_id, record, harvest_id, stored_at, change,
          payload_files, last_modified)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(
        resourceId,
        version.datestamp,
        version.size,
        version.sha256,
        version.mimeType ?? null,
        bag.id,
        version.record,
        version.harvestId ?? null,
        storedAt,
        change,
        version.parts.length,
        version.lastModified ?? null,
      );
      const versionId = Number(result.lastInsertRowid);
      const part = this.sql('INSERT INTO version_parts (version_id, part, payload_id) SELECT ?, ?, id FROM payloads WHERE sha256 = ?');
      version.parts.forEach((sha256, index) => {
        if (part.run(versionId, index + 1, sha256).changes !== 1) {
          throw new ArchiverError('ERR_ARCHIVE_CATALOG', `version of ${version.identifier} names payload bytes ${sha256} that no recorded bag holds`);
        }
      });
      const fetch = this.sql('INSERT INTO fetches (version_id, part, ref, url, redirects) VALUES (?, ?, ?, ?, ?)');
      for (const done of version.fetches ?? []) fetch.run(versionId, done.part, done.ref, done.url, JSON.stringify(done.redirects));
      this.sql('UPDATE resources SET current_version_id = ?, deleted_at = NULL, mime_type = ? WHERE id = ?').run(
        versionId,
        version.mimeType ?? null,
        resourceId,
      );
      failures.resolveRecordFailure(this, version.sourceId, version.identifier);
      const stored: CatalogVersion = {
        id: versionId,
        resourceId,
        identifier: version.identifier,
        datestamp: version.datestamp,
        size: version.size,
        sha256: version.sha256,
        mimeType: version.mimeType ?? null,
        bagPath: version.bagPath,
        record: version.record,
        harvestId: version.harvestId ?? null,
        storedAt,
        change,
        payloadFiles: version.parts.length,
        lastModified: version.lastModified ?? null,
      };
      return { version: stored, change, known: false };
    });
  }

  /**
   * Records that the repository reports `identifier` deleted at `datestamp` (its tombstone in
   * the batch bag `bagPath`) and marks the resource deleted (its AIPs stay). Idempotent: returns false when this deletion was already
   * recorded. An identifier never seen before is recorded too, as a resource with no versions.
   */
  recordDeletion(sourceId: number, identifier: string, datestamp: string, harvestId?: number, bagPath?: string, at?: string): boolean {
    return this.durably(() => {
      const resourceId = this.resource(sourceId, identifier)?.id ?? this.insertResource(sourceId, identifier);
      const bag = bagPath === undefined ? undefined : (this.sql('SELECT id FROM bags WHERE bag_path = ?').get(bagPath) as { id: number } | undefined);
      const inserted = this.sql('INSERT OR IGNORE INTO deletions (resource_id, datestamp, harvest_id, recorded_at, bag_id) VALUES (?, ?, ?, ?, ?)').run(
        resourceId,
        datestamp,
        harvestId ?? null,
        at ?? stamp(),
        bag?.id ?? null,
      ).changes;
      this.sql('UPDATE resources SET deleted_at = ? WHERE id = ?').run(datestamp, resourceId);
      failures.resolveRecordFailure(this, sourceId, identifier);
      return inserted > 0;
    });
  }

  /**
   * Records a failure. A record (identifier given) has at most one open failure: failing again
   * updates it with the latest reason and one more attempt. A list failure (no identifier) is
   * deduplicated the same way by stage and code. Returns the failure as now stored.
   */
  recordFailure(failure: NewFailure): CatalogFailure {
    return failures.recordFailure(this, failure);
  }

  /** Outstanding failures of a source, oldest first: what the next harvest must retry. */
  openFailures(sourceId: number): CatalogFailure[] {
    return failures.openFailures(this, sourceId);
  }

  /**
   * Open record failures of a source recorded by harvest `sinceHarvestId` or a later one: the
   * failures of a list that harvest started (its later runs resumed it). Uses the partial index
   * of open failures.
   */
  openRecordFailuresSince(sourceId: number, sinceHarvestId: number): number {
    return failures.openRecordFailuresSince(this, sourceId, sinceHarvestId);
  }

  /** Whether the record has an open failure recorded by harvest `sinceHarvestId` or a later one. */
  hasOpenRecordFailureSince(sourceId: number, identifier: string, sinceHarvestId: number): boolean {
    return failures.hasOpenRecordFailureSince(this, sourceId, identifier, sinceHarvestId);
  }

  /** Resolves the open list failures of a source (call when a list completes); returns how many. */
  resolveListFailures(sourceId: number): number {
    return failures.resolveListFailures(this, sourceId);
  }

  /** Appends a PREMIS-style event; returns its id. */
  addEvent(event: NewEvent): number {
    const result = this.sql(`INSERT INTO events (source_id, resource_id, version_id, harvest_id, type, outcome, detail, at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?)`).run(
      event.sourceId ?? null,
      event.resourceId ?? null,
      event.versionId ?? null,
      event.harvestId ?? null,
      event.type,
      event.outcome,
      event.detail ?? null,
      event.at ?? stamp(),
    );
    return Number(result.lastInsertRowid);
  }

  /** A summary of the archive for `oaibag status`: per source, its last harvest and counts. */
  status(): CatalogStatus {
    const sources = (this.sql('SELECT * FROM sources ORDER BY id').all() as Row[]).map((row): SourceStatus => {
      const source = toSource(row);
      const count = (sql: string): number => (this.sql(sql).get(source.id) as { n: number | null }).n ?? 0;
      return {
        source,
        lastHarvest: this.lastHarvest(source.id),
        liveResources: count('SELECT COUNT(*) AS n FROM resources WHERE source_id = ? AND deleted_at IS NULL AND current_version_id IS NOT NULL'),
        deletedResources: count('SELECT COUNT(*) AS n FROM resources WHERE source_id = ? AND deleted_at IS NOT NULL'),
        versions: count('SELECT COUNT(*) AS n FROM versions v JOIN resources r ON r.id = v.resource_id WHERE r.source_id = ?'),
        payloadBytes: count('SELECT SUM(v.size) AS n FROM versions v JOIN resources r ON r.id = v.resource_id WHERE r.source_id = ?'),
        storedBytes: count('SELECT SUM(p.size) AS n FROM payloads p JOIN bags b ON b.id = p.bag_id WHERE b.source_id = ?'),
        bags: count('SELECT COUNT(*) AS n FROM bags WHERE source_id = ?'),
        openFailures: count('SELECT COUNT(*) AS n FROM failures WHERE source_id = ? AND resolved_at IS NULL'),
      };
    });
    return { file: this.file, schemaVersion: this.schemaVersion(), sources };
  }

  private insertResource(sourceId: number, identifier: string): number {
    return Number(this.sql('INSERT INTO resources (source_id, identifier) VALUES (?, ?)').run(sourceId, identifier).lastInsertRowid);
  }

  /** Runs `fn` in a transaction that commits with synchronous = FULL (joins an open one). */
  private durably<T>(fn: () => T): T {
    if (this.readOnly) throw this.readOnlyError();
    if (this.reading && this.db.inTransaction) {
      // Inside a read session: the write must not wait for the session's end to be durable.
      this.db.exec('COMMIT');
      this.reading = false; // the writes below, nested ones included, are a transaction of their own
      try {
        return this.durably(fn);
      } finally {
        this.db.exec('BEGIN');
        this.reading = true;
      }
    }
    // A nested call joins the open transaction as it is, without a SAVEPOINT: whatever throws
    // inside rolls the whole transaction back (no caller catches within one). A savepoint per
    // call (one per record of a batch) made SQLite keep every page each statement touched in
    // its in-memory statement journal until the batch ended, and walk that journal at the end
    // of every statement: a fifth of a harvest's CPU (bench/README.md, "Per-record cost").
    if (this.db.inTransaction) return fn();
    this.db.pragma('synchronous = FULL');
    try {
      return this.db.transaction(fn).immediate();
    } finally {
      this.db.pragma('synchronous = NORMAL');
    }
  }

  /**
   * A prepared statement (cached), for the query modules of this folder (audit-queries.ts,
   * restore-queries.ts, verify-queries.ts…) and for tests. No SQL is written outside catalog/
   * (test/import-layers.test.ts checks it); writes go through the methods above, whose bodies
   * for runs and failures are in run-queries.ts and failure-queries.ts.
   */
  statement(sql: string): SqlStatement {
    return this.sql(sql);
  }

  private sql(sql: string): SqlStatement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      // One check, when a statement is first prepared: a cached one has passed it.
      if (this.readOnly && !statement.readonly) throw this.readOnlyError();
      this.statements.set(sql, statement);
    }
    return statement;
  }

  private readOnlyError(): ArchiverError {
    return new ArchiverError('ERR_ARCHIVE_CATALOG', `cannot write to the catalog ${this.file}: the archive is opened read-only`, {
      path: this.file,
      hint: 'this command must open the archive for writing (a bug if it is one that only reads: please report it)',
    });
  }
}

/** The catalog's schema version; a file that is not a catalog is ERR_ARCHIVE_CATALOG. */
function readSchemaVersion(db: SqlDatabase, file: string): number {
  try {
    return catalogSchemaVersion(db);
  } catch (error) {
    throw new ArchiverError('ERR_ARCHIVE_CATALOG', `cannot read the catalog ${file}: ${(error as Error).message}`, {
      cause: error,
      path: file,
      hint: 'check --archive names an archive made by oaibag harvest',
    });
  }
}

/** A catalog older than this program, opened read-only: it cannot be migrated, so it is not read. */
function olderCatalogError(file: string, found: number): ArchiverError {
  return new ArchiverError(
    'ERR_ARCHIVE_CATALOG',
    `the catalog ${file} has schema version ${found}, older than the ${CATALOG_SCHEMA_VERSION} this oaibag reads, and the archive is read-only: it cannot be migrated`,
    {
      path: file,
      hint: 'read it with the oaibag release that wrote it, or copy the archive to a writable folder (any oaibag command there migrates it)',
    },
  );
}

/** The same refusal as migrateCatalog's, for a catalog opened read-only. */
function newerCatalogError(file: string, found: number): ArchiverError {
  return new ArchiverError(
    'ERR_ARCHIVE_CATALOG',
    `the catalog ${file} has schema version ${found}, newer than the ${CATALOG_SCHEMA_VERSION} this oaibag knows`,
    {
      path: file,
      hint: 'upgrade oaibag to work on this archive',
    },
  );
}

/** The columns `toVersion` maps: a version with its resource's identifier and its bag's path. */
const VERSION_COLUMNS = 'v.*, r.identifier, b.bag_path';
