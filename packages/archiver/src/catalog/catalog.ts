import { join } from 'node:path';
import Database from 'better-sqlite3';
import { ArchiverError } from '../core/errors.js';
import {
  type CatalogFailure,
  type CatalogHarvest,
  type CatalogResource,
  type CatalogSource,
  type CatalogStatus,
  type CatalogVersion,
  catalogSchemaVersion,
  type HarvestArguments,
  type HarvestCounts,
  type HarvestStatus,
  type IdentifyFacts,
  migrateCatalog,
  type NewEvent,
  type NewFailure,
  type NewVersion,
  type PendingBag,
  type RecordedVersion,
  type ResumeState,
  type Row,
  type SourceStatus,
  toFailure,
  toHarvest,
  toResource,
  toSource,
  toVersion,
  type VersionChange,
  type VersionFetch,
} from './catalog-schema.js';

/** The catalog's file name inside an archive directory. */
export const CATALOG_FILE_NAME = 'catalog.sqlite';

/** How {@link Catalog.open} treats a missing catalog file. */
export interface CatalogOpenOptions {
  /** Create the catalog when absent (default true). `oaibag status` passes false. */
  create?: boolean;
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
  private readonly db: Database.Database;
  private readonly statements = new Map<string, Database.Statement>();

  private constructor(file: string, db: Database.Database) {
    this.file = file;
    this.db = db;
  }

  /** Opens (creating unless told not to) and migrates `<archiveDir>/catalog.sqlite`. */
  static open(archiveDir: string, options: CatalogOpenOptions = {}): Catalog {
    const file = join(archiveDir, CATALOG_FILE_NAME);
    let db: Database.Database | undefined;
    try {
      db = new Database(file, { fileMustExist: options.create === false });
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      db.pragma('foreign_keys = ON');
      db.pragma('busy_timeout = 5000');
      migrateCatalog(db, file);
      return new Catalog(file, db);
    } catch (error) {
      db?.close();
      if (error instanceof ArchiverError) throw error;
      const missing = options.create === false && (error as { code?: string }).code === 'SQLITE_CANTOPEN';
      throw new ArchiverError('ERR_ARCHIVE_CATALOG', missing ? `no catalog at ${file}` : `cannot open the catalog ${file}: ${(error as Error).message}`, {
        cause: error,
        path: file,
        hint: missing ? 'check --archive names an archive made by oaibag harvest' : 'check --archive names an existing, writable archive directory',
      });
    }
  }

  close(): void {
    this.db.close();
  }

  /** The schema version of this catalog (see catalog-schema.ts). */
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

  /** Notes, durably, a bag about to be renamed into place; `recordVersion` removes the note. */
  addPendingBag(version: NewVersion): void {
    this.durably(() => {
      this.sql(`INSERT OR REPLACE INTO pending_bags (bag_path, source_id, identifier, datestamp, sha256, size, mime_type, harvest_id, created_at,
          payload_files, fetches)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(
        version.bagPath,
        version.sourceId,
        version.identifier,
        version.datestamp,
        version.sha256,
        version.size,
        version.mimeType ?? null,
        version.harvestId ?? null,
        stamp(),
        version.payloadFiles ?? null,
        version.fetches === undefined ? null : JSON.stringify(version.fetches),
      );
    });
  }

  /** Bags noted by `addPendingBag` whose version was never recorded (a crash in between). */
  pendingBags(): PendingBag[] {
    const rows = this.sql('SELECT * FROM pending_bags ORDER BY id').all() as Array<Record<string, unknown>>;
    return rows.map((row) => ({
      id: row.id as number,
      bagPath: row.bag_path as string,
      sourceId: row.source_id as number,
      identifier: row.identifier as string,
      datestamp: row.datestamp as string,
      sha256: row.sha256 as string,
      size: row.size as number,
      mimeType: (row.mime_type as string | null) ?? null,
      harvestId: (row.harvest_id as number | null) ?? null,
      ...(row.payload_files !== null && row.payload_files !== undefined ? { payloadFiles: Number(row.payload_files) } : {}),
      ...(typeof row.fetches === 'string' ? { fetches: JSON.parse(row.fetches) as VersionFetch[] } : {}),
    }));
  }

  removePendingBag(bagPath: string): void {
    this.sql('DELETE FROM pending_bags WHERE bag_path = ?').run(bagPath);
  }

  /** Records or refreshes a source and what its Identify said; returns it. */
  upsertSource(baseUrl: string, facts: IdentifyFacts): CatalogSource {
    const now = stamp();
    this.sql(`INSERT INTO sources (base_url, repository_name, granularity, earliest_datestamp, deleted_record, compression, identify_checked_at, created_at)
      VALUES (@baseUrl, @repositoryName, @granularity, @earliestDatestamp, @deletedRecord, @compression, @now, @now)
      ON CONFLICT (base_url) DO UPDATE SET repository_name = excluded.repository_name, granularity = excluded.granularity,
        earliest_datestamp = excluded.earliest_datestamp, deleted_record = excluded.deleted_record,
        compression = excluded.compression, identify_checked_at = excluded.identify_checked_at`).run({
      baseUrl,
      repositoryName: facts.repositoryName ?? null,
      granularity: facts.granularity ?? null,
      earliestDatestamp: facts.earliestDatestamp ?? null,
      deletedRecord: facts.deletedRecord ?? null,
      compression: JSON.stringify(facts.compression ?? []),
      now,
    });
    return this.source(baseUrl)!;
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

  /** Saves (after each page) or clears (null, when the list completes) where a list stands. */
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

  /** Opens a harvest row in status 'running'; returns its id. */
  startHarvest(sourceId: number, args: HarvestArguments): number {
    const result = this.sql("INSERT INTO harvests (source_id, started_at, status, arguments) VALUES (?, ?, 'running', ?)").run(
      sourceId,
      stamp(),
      JSON.stringify({ from: args.from ?? null, until: args.until ?? null, set: args.set ?? null, prefix: args.prefix }),
    );
    return Number(result.lastInsertRowid);
  }

  /** Records the responseDate of the first page of the harvest's list (of a resumed list: of its first harvest). */
  setListResponseDate(harvestId: number, responseDate: string): void {
    this.sql('UPDATE harvests SET list_response_date = ? WHERE id = ?').run(responseDate, harvestId);
  }

  /** Saves the counts so far (harvest does, with each page), so a killed harvest's row still tells what it did. */
  updateHarvestCounts(harvestId: number, counts: Partial<HarvestCounts>): void {
    this.writeCounts(harvestId, counts, 'UPDATE harvests SET %COUNTS% WHERE id = @id');
  }

  /** Closes a harvest with its final status and counts. */
  finishHarvest(harvestId: number, status: Exclude<HarvestStatus, 'running'>, counts: Partial<HarvestCounts> = {}): void {
    this.durably(() => {
      this.sql('UPDATE harvests SET status = ?, ended_at = ? WHERE id = ?').run(status, stamp(), harvestId);
      this.updateHarvestCounts(harvestId, counts);
    });
  }

  /**
   * Marks harvests left 'running' by a killed process as 'interrupted'; returns how many.
   * Call only while holding the archive lock: then nothing else can be running.
   */
  interruptRunningHarvests(): number {
    return this.sql("UPDATE harvests SET status = 'interrupted', ended_at = ? WHERE status = 'running'").run(stamp()).changes;
  }

  harvest(harvestId: number): CatalogHarvest | undefined {
    const row = this.sql('SELECT * FROM harvests WHERE id = ?').get(harvestId) as Row | undefined;
    return row && toHarvest(row);
  }

  /** The most recent harvest of a source, whatever its status. */
  lastHarvest(sourceId: number): CatalogHarvest | undefined {
    const row = this.sql('SELECT * FROM harvests WHERE source_id = ? ORDER BY id DESC LIMIT 1').get(sourceId) as Row | undefined;
    return row && toHarvest(row);
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
    const row = this.sql(`SELECT v.*, r.identifier FROM versions v JOIN resources r ON r.id = v.resource_id
      WHERE r.source_id = ? AND r.identifier = ? AND v.datestamp = ? AND v.sha256 = ?`).get(sourceId, identifier, datestamp, sha256) as Row | undefined;
    return row && toVersion(row);
  }

  /** The current version of a resource (even when it is deleted now), for hard-linking an unchanged payload. */
  latestVersion(sourceId: number, identifier: string): CatalogVersion | undefined {
    const row = this.sql(`SELECT v.*, r.identifier FROM resources r JOIN versions v ON v.id = r.current_version_id
      WHERE r.source_id = ? AND r.identifier = ?`).get(sourceId, identifier) as Row | undefined;
    return row && toVersion(row);
  }

  /** Where the By-Reference datastreams of a version came from, in payload order. */
  versionFetches(versionId: number): VersionFetch[] {
    const rows = this.sql('SELECT payload, ref, url, redirects FROM fetches WHERE version_id = ? ORDER BY id').all(versionId) as Row[];
    return rows.map((row) => ({
      payload: String(row.payload),
      ref: String(row.ref),
      url: String(row.url),
      redirects: JSON.parse(String(row.redirects)) as string[],
    }));
  }

  /** All versions of a resource, oldest first. */
  versions(sourceId: number, identifier: string): CatalogVersion[] {
    const rows = this.sql(`SELECT v.*, r.identifier FROM versions v JOIN resources r ON r.id = v.resource_id
      WHERE r.source_id = ? AND r.identifier = ? ORDER BY v.id`).all(sourceId, identifier) as Row[];
    return rows.map(toVersion);
  }

  /**
   * Records a stored AIP (call after its bag is in place) and makes it the resource's current
   * version. The change kind compares with the current state in arrival order: `added` (no
   * earlier version), `restored` (the resource was deleted), `modified` (other sha-256),
   * `touched` (same sha-256, new datestamp). The same state recorded again changes nothing and
   * returns the stored version with `known: true`. Open failures of the record are resolved.
   */
  recordVersion(version: NewVersion): RecordedVersion {
    return this.durably(() => {
      this.removePendingBag(version.bagPath);
      const known = this.knownVersion(version.sourceId, version.identifier, version.datestamp, version.sha256);
      if (known) {
        this.resolveFailures(version.sourceId, version.identifier);
        return { version: known, change: known.change, known: true };
      }
      const resource = this.resource(version.sourceId, version.identifier);
      const previous = this.latestVersion(version.sourceId, version.identifier);
      const change: VersionChange = !previous
        ? 'added'
        : resource?.deletedAt != null
          ? 'restored'
          : previous.sha256 === version.sha256
            ? 'touched'
            : 'modified';
      const resourceId = resource?.id ?? this.insertResource(version.sourceId, version.identifier);
      const result = this.sql(`INSERT INTO versions (resource_id, datestamp, size, sha256, mime_type, bag_path, harvest_id, stored_at, change, payload_files)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(
        resourceId,
        version.datestamp,
        version.size,
        version.sha256,
        version.mimeType ?? null,
        version.bagPath,
        version.harvestId ?? null,
        stamp(),
        change,
        version.payloadFiles ?? null,
      );
      const versionId = Number(result.lastInsertRowid);
      const fetch = this.sql('INSERT INTO fetches (version_id, payload, ref, url, redirects) VALUES (?, ?, ?, ?, ?)');
      for (const done of version.fetches ?? []) fetch.run(versionId, done.payload, done.ref, done.url, JSON.stringify(done.redirects));
      this.sql('UPDATE resources SET current_version_id = ?, deleted_at = NULL, mime_type = ? WHERE id = ?').run(
        versionId,
        version.mimeType ?? null,
        resourceId,
      );
      this.resolveFailures(version.sourceId, version.identifier);
      const row = this.sql('SELECT v.*, r.identifier FROM versions v JOIN resources r ON r.id = v.resource_id WHERE v.id = ?').get(versionId) as Row;
      return { version: toVersion(row), change, known: false };
    });
  }

  /**
   * Records that the repository reports `identifier` deleted at `datestamp` and marks the
   * resource deleted (its AIPs stay). Idempotent: returns false when this deletion was already
   * recorded. An identifier never seen before is recorded too, as a resource with no versions.
   */
  recordDeletion(sourceId: number, identifier: string, datestamp: string, harvestId?: number): boolean {
    return this.durably(() => {
      const resourceId = this.resource(sourceId, identifier)?.id ?? this.insertResource(sourceId, identifier);
      const inserted = this.sql('INSERT OR IGNORE INTO deletions (resource_id, datestamp, harvest_id, recorded_at) VALUES (?, ?, ?, ?)').run(
        resourceId,
        datestamp,
        harvestId ?? null,
        stamp(),
      ).changes;
      this.sql('UPDATE resources SET deleted_at = ? WHERE id = ?').run(datestamp, resourceId);
      this.resolveFailures(sourceId, identifier);
      return inserted > 0;
    });
  }

  /**
   * Records a failure. A record (identifier given) has at most one open failure: failing again
   * updates it with the latest reason and one more attempt. A list failure (no identifier) is
   * deduplicated the same way by stage and code. Returns the failure as now stored.
   */
  recordFailure(failure: NewFailure): CatalogFailure {
    return this.durably(() => {
      const now = stamp();
      const open = (
        failure.identifier != null
          ? this.sql('SELECT id FROM failures WHERE source_id = ? AND identifier = ? AND resolved_at IS NULL').get(failure.sourceId, failure.identifier)
          : this.sql('SELECT id FROM failures WHERE source_id = ? AND identifier IS NULL AND stage = ? AND code = ? AND resolved_at IS NULL').get(
              failure.sourceId,
              failure.stage,
              failure.code,
            )
      ) as { id: number } | undefined;
      const values = {
        sourceId: failure.sourceId,
        harvestId: failure.harvestId ?? null,
        identifier: failure.identifier ?? null,
        datestamp: failure.datestamp ?? null,
        stage: failure.stage,
        code: failure.code,
        message: failure.message.replace(/[\r\n]+/g, ' '),
        expected: failure.expected ?? null,
        found: failure.found ?? null,
        now,
      };
      let id: number;
      if (open) {
        id = open.id;
        this.sql(`UPDATE failures SET harvest_id = @harvestId, datestamp = @datestamp, stage = @stage, code = @code, message = @message,
          expected = @expected, found = @found, last_seen_at = @now, attempts = attempts + 1 WHERE id = @id`).run({ ...values, id });
      } else {
        const result =
          this.sql(`INSERT INTO failures (source_id, harvest_id, identifier, datestamp, stage, code, message, expected, found, first_seen_at, last_seen_at)
          VALUES (@sourceId, @harvestId, @identifier, @datestamp, @stage, @code, @message, @expected, @found, @now, @now)`).run(values);
        id = Number(result.lastInsertRowid);
      }
      return toFailure(this.sql('SELECT * FROM failures WHERE id = ?').get(id) as Row);
    });
  }

  /** Outstanding failures of a source, oldest first: what the next harvest must retry. */
  openFailures(sourceId: number): CatalogFailure[] {
    const rows = this.sql('SELECT * FROM failures WHERE source_id = ? AND resolved_at IS NULL ORDER BY id').all(sourceId) as Row[];
    return rows.map(toFailure);
  }

  /** Resolves the open list failures of a source (call when a list completes); returns how many. */
  resolveListFailures(sourceId: number): number {
    return this.sql('UPDATE failures SET resolved_at = ? WHERE source_id = ? AND identifier IS NULL AND resolved_at IS NULL').run(stamp(), sourceId).changes;
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
        openFailures: count('SELECT COUNT(*) AS n FROM failures WHERE source_id = ? AND resolved_at IS NULL'),
      };
    });
    return { file: this.file, schemaVersion: this.schemaVersion(), sources };
  }

  private insertResource(sourceId: number, identifier: string): number {
    return Number(this.sql('INSERT INTO resources (source_id, identifier) VALUES (?, ?)').run(sourceId, identifier).lastInsertRowid);
  }

  private resolveFailures(sourceId: number, identifier: string): void {
    this.sql('UPDATE failures SET resolved_at = ? WHERE source_id = ? AND identifier = ? AND resolved_at IS NULL').run(stamp(), sourceId, identifier);
  }

  private writeCounts(harvestId: number, counts: Partial<HarvestCounts>, template: string): void {
    const names = COUNT_NAMES.filter((name) => counts[name] !== undefined);
    if (names.length === 0) return;
    const sql = template.replace('%COUNTS%', names.map((name) => `${name} = @${name}`).join(', '));
    this.sql(sql).run({ id: harvestId, ...Object.fromEntries(names.map((name) => [name, counts[name]])) });
  }

  /** Runs `fn` in a transaction that commits with synchronous = FULL (joins an open one). */
  private durably<T>(fn: () => T): T {
    if (this.db.inTransaction) return this.db.transaction(fn)();
    this.db.pragma('synchronous = FULL');
    try {
      return this.db.transaction(fn).immediate();
    } finally {
      this.db.pragma('synchronous = NORMAL');
    }
  }

  /**
   * A prepared statement (cached), for the query modules of this folder (audit-queries.ts,
   * restore-queries.ts, verify-queries.ts) and for tests. No SQL is written outside catalog/
   * (test/import-layers.test.ts checks it); writes go through the methods above.
   */
  statement(sql: string): Database.Statement {
    return this.sql(sql);
  }

  private sql(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }
}

const COUNT_NAMES = ['records', 'added', 'modified', 'touched', 'deleted', 'failed', 'bytes', 'requests'] as const satisfies readonly (keyof HarvestCounts)[];

function stamp(): string {
  return new Date().toISOString();
}
