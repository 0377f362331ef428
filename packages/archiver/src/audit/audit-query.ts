// The read model of `oaibag audit`: which harvests a period covers, and per resource changed in
// it, its state before and after the period, from a few set-based queries over the catalog
// (window functions and GROUP BY, never one query per resource), so 100,000 resources take
// about a second. The formats are in audit-format.ts and audit-html.ts; docs/audit.md.

import {
  auditRawRows,
  harvestChangeCounts,
  harvestHeads,
  harvestsStartedBetween,
  lastChangingHarvests,
  sourceOfHarvest,
  sourcesByBaseUrl,
} from '../catalog/audit-queries.js';
import type { Catalog } from '../catalog/catalog.js';
import type { HarvestStatus } from '../catalog/catalog-types.js';
import { parseCommandLineDate } from '../core/command-line-date.js';
import { ArchiverError } from '../core/errors.js';

/** What happened to a resource over the period, comparing its state before and after it. */
export type AuditChange = 'added' | 'modified' | 'touched' | 'deleted' | 'restored';

/** The change kinds in the order every format lists them. */
export const AUDIT_CHANGES: readonly AuditChange[] = ['added', 'modified', 'touched', 'deleted', 'restored'];

/**
 * A resource's state at one moment: a live version (its datestamp, size, sha-256, MIME type),
 * or deleted (the deletion's datestamp; a deleted resource has no bytes, so the rest is null).
 */
export interface AuditState {
  deleted: boolean;
  datestamp: string;
  size: number | null;
  sha256: string | null;
  mimeType: string | null;
}

/** One resource that changed in the period. */
export interface AuditRow {
  /** The source's base URL. */
  source: string;
  identifier: string;
  change: AuditChange;
  /** Before and after are both live versions and their MIME types differ (a set move). */
  mimeChanged: boolean;
  /** Null when the archive knew nothing of the resource before the period. */
  before: AuditState | null;
  after: AuditState;
  /** The harvest that recorded the after state. */
  harvestId: number;
}

/** What one harvest of the period recorded (versions by their change, and deletions). */
export interface AuditHarvestTotals {
  harvestId: number;
  source: string;
  startedAt: string;
  endedAt: string | null;
  status: HarvestStatus;
  added: number;
  modified: number;
  touched: number;
  deleted: number;
  restored: number;
}

/** The audit's totals: rows per change kind (and MIME changes), and per harvest recorded. */
export interface AuditTotals {
  rows: number;
  byChange: Record<AuditChange, number> & { mimeChanged: number };
  byHarvest: AuditHarvestTotals[];
}

/** Which harvests the audit covers and how they were chosen (see {@link resolveAuditPeriod}). */
export interface AuditPeriod {
  /** `latest`: the last harvest of each source that recorded a change; `harvest`: one by id; `dates`: by start time. */
  selection: 'latest' | 'harvest' | 'dates';
  /** The normalised bounds on harvests' start (ISO 8601 UTC), when given. */
  since: string | null;
  until: string | null;
  /** The harvests covered, oldest first. */
  harvestIds: number[];
}

/** A source in the audit's scope. */
export interface AuditSource {
  id: number;
  baseUrl: string;
  repositoryName: string | null;
}

/** What to audit; every field is optional (the default is the latest change of each source). */
export interface AuditOptions {
  /** Only this source (its OAI-PMH base URL). */
  source?: string;
  /** Harvests started at or after this date (`YYYY-MM-DD` or an ISO 8601 date-time). */
  since?: string;
  /** Harvests started at or before this date (a day includes all of it). */
  until?: string;
  /** The changes recorded by this one harvest. */
  harvest?: number;
}

/** A complete audit in memory (the library's convenient form; the command streams instead). */
export interface AuditReport {
  period: AuditPeriod;
  sources: AuditSource[];
  rows: AuditRow[];
  totals: AuditTotals;
}

/**
 * An audit being read: `rows` is a one-shot iterator over the catalog (sorted by source and
 * identifier); `totals()` is complete once the rows have been consumed (byHarvest is known
 * from the start). The catalog must stay open, and unused by others, until then.
 */
export interface AuditRun {
  period: AuditPeriod;
  sources: AuditSource[];
  rows: Iterable<AuditRow>;
  totals(): AuditTotals;
  /**
   * The totals before the rows are read, by a pass of their own over the catalog (the rows are
   * not consumed): for a form that puts them first without holding the rows (HTML).
   */
  countTotals(): AuditTotals;
}

/** Reads a whole audit into memory: see {@link openAudit}. */
export function audit(catalog: Catalog, options: AuditOptions = {}): AuditReport {
  const run = openAudit(catalog, options);
  const rows = [...run.rows];
  return { period: run.period, sources: run.sources, rows, totals: run.totals() };
}

/** An audit already in memory as a run, for the formatters (`totals()` is ready at once). */
export function auditRunOf(report: AuditReport): AuditRun {
  return { period: report.period, sources: report.sources, rows: report.rows, totals: () => report.totals, countTotals: () => report.totals };
}

/** Resolves the period, then reads the rows lazily and counts them as they pass. */
export function openAudit(catalog: Catalog, options: AuditOptions = {}): AuditRun {
  const { period, sources } = resolveAuditPeriod(catalog, options);
  const byHarvest = harvestTotals(catalog, period.harvestIds);
  const counted = countedRows(catalog, period.harvestIds);
  let consumed = false;
  function* rows(): Generator<AuditRow> {
    yield* counted.rows;
    consumed = true;
  }
  return {
    period,
    sources,
    rows: rows(),
    totals() {
      if (!consumed) throw new Error('audit totals asked before the rows were read');
      return { ...counted.totals(), byHarvest };
    },
    countTotals() {
      const pass = countedRows(catalog, period.harvestIds);
      for (const _ of pass.rows);
      return { ...pass.totals(), byHarvest };
    },
  };
}

/** The rows of the period, counted as they pass: `totals()` is what has passed so far. */
function countedRows(catalog: Catalog, harvestIds: readonly number[]): { rows: Generator<AuditRow>; totals(): Omit<AuditTotals, 'byHarvest'> } {
  const byChange = { added: 0, modified: 0, touched: 0, deleted: 0, restored: 0, mimeChanged: 0 };
  let count = 0;
  function* rows(): Generator<AuditRow> {
    for (const row of auditRows(catalog, harvestIds)) {
      count++;
      byChange[row.change]++;
      if (row.mimeChanged) byChange.mimeChanged++;
      yield row;
    }
  }
  return { rows: rows(), totals: () => ({ rows: count, byChange: { ...byChange } }) };
}

/**
 * Chooses the harvests: `harvest` alone; or those started within `since`..`until`; or, with
 * neither, the last harvest of each source that recorded at least one version or deletion (a
 * harvest that found nothing new does not hide the last one that did). `source` narrows any of
 * them. Bad or contradictory options throw ERR_ARCHIVE_USAGE.
 */
export function resolveAuditPeriod(catalog: Catalog, options: AuditOptions): { period: AuditPeriod; sources: AuditSource[] } {
  if (options.harvest !== undefined && (options.since !== undefined || options.until !== undefined)) {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', '--harvest cannot be combined with --since or --until', {
      hint: 'a harvest is its own period; use --since/--until to cover several',
    });
  }
  let sources: AuditSource[] = sourcesByBaseUrl(catalog);
  if (options.source !== undefined) {
    sources = sources.filter((source) => source.baseUrl === options.source);
    if (sources.length === 0) {
      throw new ArchiverError('ERR_ARCHIVE_USAGE', `the archive has no source ${options.source}`, { hint: 'oaibag status lists the sources' });
    }
  }
  const scope = sources.map((source) => source.id);
  const since = options.since === undefined ? null : parseAuditDate(options.since, 'start', '--since');
  const until = options.until === undefined ? null : parseAuditDate(options.until, 'end', '--until');
  let selection: AuditPeriod['selection'];
  let harvestIds: number[];
  if (options.harvest !== undefined) {
    selection = 'harvest';
    if (!Number.isSafeInteger(options.harvest) || options.harvest < 1) {
      throw new ArchiverError('ERR_ARCHIVE_USAGE', `--harvest wants a harvest number, not ${options.harvest}`);
    }
    const sourceId = sourceOfHarvest(catalog, options.harvest);
    if (sourceId === undefined)
      throw new ArchiverError('ERR_ARCHIVE_USAGE', `the archive has no harvest #${options.harvest}`, {
        hint: 'oaibag status shows the last harvest of each source',
      });
    if (!sources.some((source) => source.id === sourceId)) {
      throw new ArchiverError('ERR_ARCHIVE_USAGE', `harvest #${options.harvest} is not a harvest of ${options.source}`);
    }
    harvestIds = [options.harvest];
  } else if (since !== null || until !== null) {
    selection = 'dates';
    if (since !== null && until !== null && since > until) {
      throw new ArchiverError('ERR_ARCHIVE_USAGE', `--since ${options.since} is after --until ${options.until}`);
    }
    harvestIds = harvestsStartedBetween(catalog, scope, since, until);
  } else {
    selection = 'latest';
    harvestIds = lastChangingHarvests(catalog, scope);
  }
  return { period: { selection, since, until, harvestIds }, sources };
}

/**
 * Normalises a `--since`/`--until` date (the command-line grammar, core/command-line-date.ts)
 * to an ISO 8601 UTC instant with milliseconds, the form of `harvests.started_at`, so that
 * strings compare as instants: a day's first millisecond as a start, its last as an end; a
 * date-time as an end covers its last given unit (`10:00Z` takes 10:00:59.999).
 */
export function parseAuditDate(value: string, bound: 'start' | 'end', option = 'date'): string {
  const date = parseCommandLineDate(value, option);
  return new Date(bound === 'start' ? date.start : date.end).toISOString();
}

/**
 * The change a resource went through, from its state before the period (null: unknown to the
 * archive) and after it. `hadVersion` says whether any version was stored before the period:
 * a resource first known from a deletion and then stored is `added`, as the catalog says.
 * Both live and identical happens only when it was deleted and came back within the period:
 * `restored`. Deleted after, whatever before: `deleted`.
 */
export function classifyChange(before: AuditState | null, after: AuditState, hadVersion: boolean): AuditChange {
  if (after.deleted) return 'deleted';
  if (before === null || !hadVersion) return 'added';
  if (before.deleted) return 'restored';
  if (before.sha256 !== after.sha256) return 'modified';
  if (before.datestamp !== after.datestamp) return 'touched';
  return 'restored';
}

/**
 * The rows of the period, sorted by source and identifier. One query: the resources with a
 * version or deletion recorded by a harvest of the period; all their events up to the
 * period's last harvest of their source, ranked by (harvest, datestamp, recording time) on each
 * side of the period's first harvest; the last event on each side is the state then.
 */
export function* auditRows(catalog: Catalog, harvestIds: readonly number[]): Generator<AuditRow> {
  if (harvestIds.length === 0) return;
  for (const raw of auditRawRows(catalog, harvestIds)) {
    const before: AuditState | null =
      raw.b_h === null
        ? null
        : raw.b_live
          ? { deleted: false, datestamp: raw.b_ds!, size: raw.b_size, sha256: raw.b_sha256, mimeType: raw.b_mime }
          : { deleted: true, datestamp: raw.b_ds!, size: null, sha256: null, mimeType: null };
    const after: AuditState = raw.a_live
      ? { deleted: false, datestamp: raw.a_ds, size: raw.a_size, sha256: raw.a_sha256, mimeType: raw.a_mime }
      : { deleted: true, datestamp: raw.a_ds, size: null, sha256: null, mimeType: null };
    yield {
      source: raw.source,
      identifier: raw.identifier,
      change: classifyChange(before, after, raw.b_had_version === 1),
      mimeChanged: before !== null && !before.deleted && !after.deleted && before.mimeType !== after.mimeType,
      before,
      after,
      harvestId: raw.a_h,
    };
  }
}

/** What each harvest of the period recorded, oldest first; harvests that recorded nothing count zeros. */
export function harvestTotals(catalog: Catalog, harvestIds: readonly number[]): AuditHarvestTotals[] {
  if (harvestIds.length === 0) return [];
  const totals = new Map<number, AuditHarvestTotals>();
  for (const h of harvestHeads(catalog, harvestIds)) {
    totals.set(h.id, {
      harvestId: h.id,
      source: h.source,
      startedAt: h.startedAt,
      endedAt: h.endedAt,
      status: h.status,
      added: 0,
      modified: 0,
      touched: 0,
      deleted: 0,
      restored: 0,
    });
  }
  for (const { harvestId, change, count } of harvestChangeCounts(catalog, harvestIds)) {
    const total = totals.get(harvestId);
    if (total && change in total) total[change] += count;
  }
  return [...totals.values()];
}
