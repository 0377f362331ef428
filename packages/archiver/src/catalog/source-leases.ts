// The sources workers harvest on a schedule, and the lease by which one worker at a time
// harvests each (the `scheduled_sources` table, migration 11; docs/scale-out.md, "Workers").
//
// A worker claims the source whose start is soonest among those due and not leased (or whose
// lease ran out), in one transaction: on PostgreSQL `FOR UPDATE SKIP LOCKED`, so that workers
// claiming at once take different sources without waiting on each other. A claim adds one to
// the source's `lease_token`; every transaction the worker writes in then checks, first, that
// the token is still the one it claimed with (the write guard), so a worker that went silent
// past its lease and was taken over can no longer write: its check and its write commit
// together or not at all. Times are read from the catalog's clock (PostgreSQL's `clock_timestamp`),
// never a worker's, so machines whose clocks differ agree on when a lease ends.
import { ArchiverError } from '../core/errors.js';
import type { Row } from './catalog-rows.js';
import type { PostgresDatabase } from './pg-database.js';
import { type CatalogStatements, stamp } from './statements.js';

/** A source on the workers' schedule, as `oaibag sources list` shows it. */
export interface ScheduledSource {
  id: number;
  baseUrl: string;
  /** The source's entry as a mirror configuration spells it (JSON text). */
  settings: string;
  everyMs: number;
  jitterMs: number;
  /** The tick of its next run on its schedule's grid (ms since 1970, the catalog's clock). */
  dueAt: number;
  /** When its next run starts: the tick plus its jitter. */
  startAt: number;
  /** The worker harvesting it now, if its lease has not run out. */
  leaseOwner: string | null;
  leaseExpiresAt: number | null;
  leaseToken: number;
  lastHarvestId: number | null;
  lastOutcome: string | null;
  lastError: string | null;
  lastEndedAt: string | null;
  addedAt: string;
}

/** A source claimed by one worker: the token its writes are checked against. */
export interface SourceLease {
  source: ScheduledSource;
  owner: string;
  token: number;
}

/** How a worker's run of a source ended, and when the source runs next. */
export interface LeaseEnd {
  harvestId: number | null;
  outcome: string;
  error: string | null;
  dueAt: number;
  startAt: number;
}

/** A lock number of the catalog's own (pg-schema.ts has another): writers of one catalog take turns. */
export const CATALOG_WRITE_LOCK = 0x6f61_6977;

const COLUMNS = `id, base_url, settings, every_ms, jitter_ms, due_at, start_at, lease_owner, lease_token, lease_expires_at,
  last_harvest_id, last_outcome, last_error, last_ended_at, added_at`;

function toScheduledSource(row: Row): ScheduledSource {
  return {
    id: Number(row.id),
    baseUrl: String(row.base_url),
    settings: String(row.settings),
    everyMs: Number(row.every_ms),
    jitterMs: Number(row.jitter_ms),
    dueAt: Number(row.due_at),
    startAt: Number(row.start_at),
    leaseOwner: (row.lease_owner as string | null) ?? null,
    leaseExpiresAt: row.lease_expires_at === null || row.lease_expires_at === undefined ? null : Number(row.lease_expires_at),
    leaseToken: Number(row.lease_token),
    lastHarvestId: row.last_harvest_id === null || row.last_harvest_id === undefined ? null : Number(row.last_harvest_id),
    lastOutcome: (row.last_outcome as string | null) ?? null,
    lastError: (row.last_error as string | null) ?? null,
    lastEndedAt: (row.last_ended_at as string | null) ?? null,
    addedAt: String(row.added_at),
  };
}

/** Now by the catalog's clock, in ms: PostgreSQL's when the catalog is there, else this machine's. */
export function catalogClockMs(db: CatalogStatements, onPostgres: boolean): number {
  if (!onPostgres) return Date.now();
  const row = db.statement('SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT) AS now').get() as Row;
  return Number(row.now);
}

/** Adds a source, due at once; false when one with this base URL is there already. */
export function addScheduledSource(
  db: CatalogStatements,
  source: { baseUrl: string; settings: string; everyMs: number; jitterMs: number },
  nowMs: number,
): boolean {
  return db.transaction(
    () =>
      db
        .statement(`INSERT OR IGNORE INTO scheduled_sources (base_url, settings, every_ms, jitter_ms, due_at, start_at, added_at)
          VALUES (?, ?, ?, ?, ?, ?, ?)`)
        .run(source.baseUrl, source.settings, source.everyMs, source.jitterMs, nowMs, nowMs, stamp()).changes === 1,
  );
}

export function scheduledSources(db: CatalogStatements): ScheduledSource[] {
  return (db.statement(`SELECT ${COLUMNS} FROM scheduled_sources ORDER BY base_url`).all() as Row[]).map(toScheduledSource);
}

export function scheduledSource(db: CatalogStatements, baseUrl: string): ScheduledSource | undefined {
  const row = db.statement(`SELECT ${COLUMNS} FROM scheduled_sources WHERE base_url = ?`).get(baseUrl) as Row | undefined;
  return row && toScheduledSource(row);
}

/**
 * Removes a source from the schedule (its harvests stay in the archive). Refused while a
 * worker holds its lease: stop that worker or wait for its run to end.
 */
export function removeScheduledSource(db: CatalogStatements, baseUrl: string, nowMs: number): boolean {
  return db.transaction(() => {
    const source = scheduledSource(db, baseUrl);
    if (source === undefined) return false;
    if (source.leaseOwner !== null && source.leaseExpiresAt !== null && source.leaseExpiresAt > nowMs) {
      throw new ArchiverError(
        'ERR_ARCHIVE_LOCKED',
        `${baseUrl} is being harvested by the worker ${source.leaseOwner} (its lease runs until ${new Date(source.leaseExpiresAt).toISOString()})`,
        { hint: 'remove it once that run has ended' },
      );
    }
    return db.statement('DELETE FROM scheduled_sources WHERE id = ? AND lease_token = ?').run(source.id, source.leaseToken).changes === 1;
  });
}

/**
 * Claims for `owner`, until `nowMs + leaseMs`, the due source whose start is soonest among those
 * no live lease holds; undefined when none is due. On PostgreSQL the row is locked with SKIP
 * LOCKED, so that two workers claiming at once take two sources.
 */
export function claimDueSource(db: CatalogStatements, onPostgres: boolean, owner: string, nowMs: number, leaseMs: number): SourceLease | undefined {
  return db.transaction(() => {
    const row = db
      .statement(`SELECT ${COLUMNS} FROM scheduled_sources
        WHERE start_at <= ? AND (lease_expires_at IS NULL OR lease_expires_at <= ?)
        ORDER BY start_at, id LIMIT 1${onPostgres ? ' FOR UPDATE SKIP LOCKED' : ''}`)
      .get(nowMs, nowMs) as Row | undefined;
    if (row === undefined) return undefined;
    const source = toScheduledSource(row);
    const token = source.leaseToken + 1;
    db.statement('UPDATE scheduled_sources SET lease_owner = ?, lease_token = ?, lease_expires_at = ? WHERE id = ?').run(
      owner,
      token,
      nowMs + leaseMs,
      source.id,
    );
    return { source: { ...source, leaseOwner: owner, leaseToken: token, leaseExpiresAt: nowMs + leaseMs }, owner, token };
  });
}

/**
 * When a worker should look again (ms): the soonest start of a source no live lease holds, or
 * end of a live lease on a due source (a dead worker's source is taken over then); undefined
 * when no source is scheduled.
 */
export function nextStart(db: CatalogStatements, nowMs: number): number | undefined {
  const row = db.statement(`SELECT MIN(CASE WHEN lease_expires_at > ? THEN lease_expires_at ELSE start_at END) AS next FROM scheduled_sources`).get(nowMs) as
    | Row
    | undefined;
  return row?.next === null || row?.next === undefined ? undefined : Number(row.next);
}

/** Whether a source is due: waiting for a worker, or being harvested by one. */
export function anyDue(db: CatalogStatements, nowMs: number): boolean {
  return db.statement('SELECT 1 AS due FROM scheduled_sources WHERE start_at <= ? LIMIT 1').get(nowMs) !== undefined;
}

/** Moves the lease's end to `nowMs + leaseMs`; false when it is no longer this worker's. */
export function renewLease(db: CatalogStatements, lease: SourceLease, nowMs: number, leaseMs: number): boolean {
  return (
    db
      .statement('UPDATE scheduled_sources SET lease_expires_at = ? WHERE id = ? AND lease_token = ? AND lease_owner = ?')
      .run(nowMs + leaseMs, lease.source.id, lease.token, lease.owner).changes === 1
  );
}

/**
 * Ends the lease: records how the run ended and when the source runs next. False when the
 * lease was no longer this worker's (another took the source over): nothing is changed then.
 */
export function endLease(db: CatalogStatements, lease: SourceLease, end: LeaseEnd): boolean {
  return (
    db
      .statement(`UPDATE scheduled_sources SET lease_owner = NULL, lease_expires_at = NULL, due_at = ?, start_at = ?,
        last_harvest_id = COALESCE(?, last_harvest_id), last_outcome = ?, last_error = ?, last_ended_at = ?
        WHERE id = ? AND lease_token = ? AND lease_owner = ?`)
      .run(end.dueAt, end.startAt, end.harvestId, end.outcome, end.error, stamp(), lease.source.id, lease.token, lease.owner).changes === 1
  );
}

/**
 * The write guard of a worker holding `lease` on PostgreSQL (pg-database.ts runs it first in
 * every transaction that writes): the catalog's write lock, then the lease checked and renewed
 * for `leaseMs` in one UPDATE of its row, whose row lock makes a claim by another worker wait
 * for this transaction, or this transaction find the claim and fail with ERR_ARCHIVE_LEASE,
 * writing nothing. So every batch a worker commits also renews its lease. The write lock makes
 * writers commit in the order they wrote: the instants the catalog serves (`served_at`) then
 * never appear behind ones a client has already been given.
 */
export function leaseGuard(lease: SourceLease, leaseMs: number): (database: PostgresDatabase) => void {
  return (database) => {
    database.query(`SELECT pg_advisory_xact_lock(${CATALOG_WRITE_LOCK})`, []);
    const { rowCount } = database.query(
      `UPDATE scheduled_sources SET lease_expires_at = CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT) + $4
        WHERE id = $1 AND lease_token = $2 AND lease_owner = $3`,
      [lease.source.id, lease.token, lease.owner, leaseMs],
    );
    if (rowCount !== 1) throw leaseLost(lease);
  };
}

/** Every writer of a catalog on PostgreSQL without a lease: the write lock alone. */
export function writeOrderGuard(database: PostgresDatabase): void {
  database.query(`SELECT pg_advisory_xact_lock(${CATALOG_WRITE_LOCK})`, []);
}

/** `fn`'s answer, or false when the write guard found the lease lost (ERR_ARCHIVE_LEASE). */
export function unlessLost(fn: () => boolean): boolean {
  try {
    return fn();
  } catch (error) {
    if (error instanceof ArchiverError && error.code === 'ERR_ARCHIVE_LEASE') return false;
    throw error;
  }
}

export function leaseLost(lease: SourceLease): ArchiverError {
  return new ArchiverError(
    'ERR_ARCHIVE_LEASE',
    `the lease of the worker ${lease.owner} on ${lease.source.baseUrl} was taken over by another worker: this run writes nothing more`,
    { hint: 'the worker went silent longer than its lease (--lease); the other worker carries the harvest on' },
  );
}

/**
 * The columns a rebuilt catalog takes over from the one it replaces (reindex): the schedule is
 * not in the bags. Leases are not taken over, but the tokens are, so that a token is never
 * given twice for a source: a worker still running on the old catalog cannot write to the new.
 */
export const CARRIED_SCHEDULE_COLUMNS =
  'base_url, settings, every_ms, jitter_ms, due_at, start_at, lease_token, last_harvest_id, last_outcome, last_error, last_ended_at, added_at';
