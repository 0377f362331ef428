// Which version of which resource `oaibag restore` writes: a pure decision over catalog rows,
// tested with tables, with no I/O (as metha's Plan decides what a harvest fetches).
//
// Time base: OAI datestamps, the site's change times as the repository observed them. They
// come in two granularities (`2024-01-31` and `2024-01-31T12:00:00Z`), so they are compared as
// instants in whole seconds, never as strings. A day datestamp stands for the first second of
// its day: the change happened some time that day, and a restore as of any moment of that day
// shows it (see docs/restore.md).

import type { VersionRecord } from '../catalog/restore-queries.js';
import { parseCommandLineDate, readCommandLineDate } from '../core/command-line-date.js';

/** One stored version as the plan needs it: the catalog's record of it (catalog/restore-queries.ts). */
export type PlanVersion = VersionRecord;

/** One recorded deletion (a `deletions` row). */
export interface PlanDeletion {
  resourceId: number;
  datestamp: string;
}

/** What a resource is at the restore's instant. */
export type ResourceState =
  | { state: 'live'; version: PlanVersion }
  /** Deleted at the instant: its last version is not restored. */
  | { state: 'deleted'; version: PlanVersion; deletedAt: string }
  /** No version yet at the instant (added later, or only ever seen deleted). */
  | { state: 'absent' };

/** The outcome of {@link planRestore}. */
export interface RestorePlan {
  /** The version to write for each resource live at the instant, in identifier order. */
  live: PlanVersion[];
  /** Resources that had a version but are deleted at the instant. */
  deleted: Array<{ version: PlanVersion; deletedAt: string }>;
  /** Resources with no version at the instant. */
  absent: number;
  /** Rows whose datestamp cannot be read: they take no part in the decision. */
  unreadable: Array<{ resourceId: number; datestamp: string; kind: 'version' | 'deletion' }>;
}

/**
 * An OAI datestamp as seconds since the epoch (UTC): `YYYY-MM-DD` is the first second of that
 * day, `YYYY-MM-DDThh:mm:ssZ` that second; an offset or fraction (not OAI, but seen in the
 * wild) is accepted and the fraction dropped. Undefined for anything else or a date that does
 * not exist (February 30th).
 */
export function datestampSeconds(datestamp: string): number | undefined {
  const parsed = readCommandLineDate(datestamp);
  return parsed === undefined ? undefined : Math.floor(parsed.start / 1000);
}

/**
 * Parses `--as-of` (the command-line grammar, core/command-line-date.ts): a day means the end of
 * that day, 23:59:59Z (the state "as it was on that day"); a date-time its second (a fraction is
 * dropped). Returns seconds since the epoch; ERR_ARCHIVE_USAGE otherwise.
 */
export function parseAsOf(value: string): number {
  const date = parseCommandLineDate(value, '--as-of');
  return Math.floor((date.day ? date.end : date.start) / 1000);
}

/** Seconds since the epoch as `YYYY-MM-DDThh:mm:ssZ`. */
export function formatInstant(seconds: number): string {
  return `${new Date(seconds * 1000).toISOString().slice(0, 19)}Z`;
}

/**
 * The state of one resource at `asOf` (seconds; undefined = the latest state). The version
 * current at T is the one with the greatest datestamp <= T (equal datestamps: the later row);
 * the resource is deleted at T when its latest deletion with datestamp <= T is at or after that
 * version's datestamp. `versions` and `deletions` are this resource's rows, in any order; rows
 * with unreadable datestamps must have been removed by the caller (see {@link planRestore}).
 */
export function resourceStateAt(versions: readonly PlanVersion[], deletions: readonly PlanDeletion[], asOf?: number): ResourceState {
  const limit = asOf ?? Number.POSITIVE_INFINITY;
  let best: { version: PlanVersion; at: number } | undefined;
  for (const version of versions) {
    const at = datestampSeconds(version.datestamp);
    if (at === undefined || at > limit) continue;
    if (best === undefined || at > best.at || (at === best.at && version.id > best.version.id)) best = { version, at };
  }
  if (best === undefined) return { state: 'absent' };
  let deletion: { datestamp: string; at: number } | undefined;
  for (const row of deletions) {
    const at = datestampSeconds(row.datestamp);
    if (at === undefined || at > limit) continue;
    if (deletion === undefined || at > deletion.at) deletion = { datestamp: row.datestamp, at };
  }
  if (deletion !== undefined && deletion.at >= best.at) return { state: 'deleted', version: best.version, deletedAt: deletion.datestamp };
  return { state: 'live', version: best.version };
}

/**
 * The whole restore decision: every resource of `versions`/`deletions` (rows of any number of
 * resources, any order) put in its state at `asOf` (seconds; undefined = latest). Live versions
 * come sorted by identifier (then source), so the restore writes, reports and breaks path ties
 * in the same order on every run.
 */
export function planRestore(versions: readonly PlanVersion[], deletions: readonly PlanDeletion[], asOf?: number): RestorePlan {
  const plan: RestorePlan = { live: [], deleted: [], absent: 0, unreadable: [] };
  const byResource = new Map<number, { versions: PlanVersion[]; deletions: PlanDeletion[] }>();
  const entry = (resourceId: number) => {
    let found = byResource.get(resourceId);
    if (!found) byResource.set(resourceId, (found = { versions: [], deletions: [] }));
    return found;
  };
  for (const version of versions) {
    if (datestampSeconds(version.datestamp) === undefined)
      plan.unreadable.push({ resourceId: version.resourceId, datestamp: version.datestamp, kind: 'version' });
    else entry(version.resourceId).versions.push(version);
  }
  for (const deletion of deletions) {
    if (datestampSeconds(deletion.datestamp) === undefined)
      plan.unreadable.push({ resourceId: deletion.resourceId, datestamp: deletion.datestamp, kind: 'deletion' });
    else entry(deletion.resourceId).deletions.push(deletion);
  }
  for (const rows of byResource.values()) {
    const state = resourceStateAt(rows.versions, rows.deletions, asOf);
    if (state.state === 'live') plan.live.push(state.version);
    else if (state.state === 'deleted') plan.deleted.push({ version: state.version, deletedAt: state.deletedAt });
    else plan.absent += 1;
  }
  const order = (a: PlanVersion, b: PlanVersion): number => (a.identifier < b.identifier ? -1 : a.identifier > b.identifier ? 1 : a.sourceId - b.sourceId);
  plan.live.sort(order);
  plan.deleted.sort((a, b) => order(a.version, b.version));
  return plan;
}

/**
 * The version with the earliest readable datestamp (the first of equals), or undefined: what a
 * restore names when its instant comes before anything the archive holds.
 */
export function earliestVersion(versions: readonly PlanVersion[]): PlanVersion | undefined {
  let earliest: { version: PlanVersion; at: number } | undefined;
  for (const version of versions) {
    const at = datestampSeconds(version.datestamp);
    if (at !== undefined && (earliest === undefined || at < earliest.at)) earliest = { version, at };
  }
  return earliest?.version;
}
