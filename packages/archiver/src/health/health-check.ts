// `oaibag status --check`: the archive's health as one line and an exit code, in the convention
// of Nagios, Icinga and their plugins (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN), naming each
// thing that is wrong; performance data after `|`.
import { formatDuration } from '../core/duration.js';
import { shown } from '../core/remote-text.js';
import type { ArchiveHealth, AttemptHealth } from './archive-health.js';

export const CHECK_OK = 0;
export const CHECK_WARNING = 1;
export const CHECK_CRITICAL = 2;
export const CHECK_UNKNOWN = 3;
export type CheckState = typeof CHECK_OK | typeof CHECK_WARNING | typeof CHECK_CRITICAL | typeof CHECK_UNKNOWN;

const LABELS = ['OK', 'WARNING', 'CRITICAL', 'UNKNOWN'] as const;

/** Default age past which a source without a successful harvest is critical: two nights. */
export const DEFAULT_MAX_AGE_MS = 48 * 3_600_000;
/** Free space (percent of the archive's file system) below which the check warns, and is critical. */
export const DEFAULT_DISK_WARNING_PERCENT = 10;
export const DEFAULT_DISK_CRITICAL_PERCENT = 5;
/** Problems named in the line; the rest are counted ("and 3 more"), so the line stays short. */
const NAMED_PROBLEMS = 8;

export interface HealthCheckOptions {
  /** A source whose last successful harvest ended longer ago than this is critical. */
  maxAgeMs?: number;
  /** Check only these sources (base URLs); an unknown one makes the check UNKNOWN. */
  sources?: readonly string[];
  /** When given, a last fixity check older than this (or none) is a warning. */
  maxVerifyAgeMs?: number;
  diskWarningPercent?: number;
  diskCriticalPercent?: number;
}

export interface HealthProblem {
  state: CheckState;
  /** What is wrong and where, for people. */
  text: string;
}

export interface HealthCheckResult {
  state: CheckState;
  problems: HealthProblem[];
  /** The plugin's one line: `OAIBAG CRITICAL: …; … | perfdata`. */
  line: string;
}

/** Judges the archive's health against the options. */
export function checkHealth(health: ArchiveHealth, options: HealthCheckOptions = {}): HealthCheckResult {
  const now = Date.parse(health.at);
  const maxAgeMs = options.maxAgeMs ?? DEFAULT_MAX_AGE_MS;
  const problems: HealthProblem[] = [];
  const add = (state: CheckState, text: string): void => {
    problems.push({ state, text });
  };
  const ago = (iso: string | null): string => (iso === null ? 'at an unknown time' : timeAgo(now, iso));

  const wanted = options.sources ?? [];
  for (const url of wanted) {
    if (!health.sources.some((source) => source.baseUrl === url)) add(CHECK_UNKNOWN, `${shown(url)}: not a source of this archive`);
  }
  const sources = wanted.length === 0 ? health.sources : health.sources.filter((source) => wanted.includes(source.baseUrl));
  if (health.sources.length === 0) add(CHECK_UNKNOWN, 'the archive has no source yet');

  for (const source of sources) {
    const name = shown(source.baseUrl);
    const last = source.lastAttempt;
    if (last?.status === 'failed') add(CHECK_CRITICAL, `${name}: last attempt failed ${ago(last.endedAt ?? last.startedAt)}: ${reasonOf(last)}`);
    else if (last?.status === 'interrupted') add(CHECK_WARNING, `${name}: last attempt interrupted ${ago(last.endedAt ?? last.startedAt)}: ${reasonOf(last)}`);
    const success = source.lastSuccess;
    const successAt = success?.endedAt ?? success?.startedAt;
    if (successAt === undefined) add(CHECK_CRITICAL, `${name}: never harvested successfully`);
    else if (now - Date.parse(successAt) > maxAgeMs)
      add(CHECK_CRITICAL, `${name}: no successful harvest for ${ago(successAt).replace(/ ago$/, '')} (max age ${formatDuration(maxAgeMs)})`);
    if (source.openFailures > 0) add(CHECK_WARNING, `${name}: ${source.openFailures} failure(s) outstanding`);
  }

  const verification = health.lastVerification;
  if (verification !== undefined && verification.damaged > 0) {
    add(
      CHECK_CRITICAL,
      `archive: the fixity check of ${verification.endedAt} (${verification.kind}) found ${verification.damaged} problem(s); run oaibag verify, then oaibag repair`,
    );
  } else if (options.maxVerifyAgeMs !== undefined) {
    if (verification === undefined) add(CHECK_WARNING, 'archive: never verified');
    else if (now - Date.parse(verification.endedAt) > options.maxVerifyAgeMs) add(CHECK_WARNING, `archive: last verified ${ago(verification.endedAt)}`);
  }

  const disk = health.disk;
  if (disk !== undefined && disk.totalBytes > 0) {
    const percent = (100 * disk.freeBytes) / disk.totalBytes;
    const free = `archive disk: ${percent.toFixed(1)}% free (${formatBytes(disk.freeBytes)})`;
    if (percent < (options.diskCriticalPercent ?? DEFAULT_DISK_CRITICAL_PERCENT)) add(CHECK_CRITICAL, free);
    else if (percent < (options.diskWarningPercent ?? DEFAULT_DISK_WARNING_PERCENT)) add(CHECK_WARNING, free);
  }

  // UNKNOWN only when nothing worse is known: a critical problem must not hide behind it.
  const state = problems.reduce<CheckState>((worst, problem) => (rank(problem.state) > rank(worst) ? problem.state : worst), CHECK_OK);
  problems.sort((a, b) => rank(b.state) - rank(a.state));
  const text =
    problems.length === 0
      ? okSummary(health, sources.length)
      : problems
          .slice(0, NAMED_PROBLEMS)
          .map((problem) => problem.text)
          .join('; ') + (problems.length > NAMED_PROBLEMS ? `; and ${problems.length - NAMED_PROBLEMS} more` : '');
  return { state, problems, line: `OAIBAG ${LABELS[state]}: ${text} | ${perfData(health, sources)}` };
}

/** How long before `now` (ms) the instant `iso` was, for people: `3h12m ago`, `less than a minute ago`. */
export function timeAgo(now: number, iso: string): string {
  const minutes = Math.floor((now - Date.parse(iso)) / 60_000);
  return minutes < 1 ? 'less than a minute ago' : `${formatDuration(minutes * 60_000)} ago`;
}

function reasonOf(attempt: AttemptHealth): string {
  return attempt.reason === null ? 'no reason recorded' : shown(attempt.reason, 300);
}

/** Severity order: OK < UNKNOWN < WARNING < CRITICAL. */
function rank(state: CheckState): number {
  return [0, 2, 3, 1][state]!;
}

function okSummary(health: ArchiveHealth, sources: number): string {
  const verified = health.lastVerification === undefined ? 'never verified' : `verified ${health.lastVerification.endedAt}`;
  const disk = health.disk && health.disk.totalBytes > 0 ? `, ${((100 * health.disk.freeBytes) / health.disk.totalBytes).toFixed(1)}% free` : '';
  return `${sources} source(s) harvested within their max age, no failure outstanding, ${verified}${disk}`;
}

function perfData(health: ArchiveHealth, sources: ArchiveHealth['sources']): string {
  const failures = sources.reduce((sum, source) => sum + source.openFailures, 0);
  const failing = sources.filter((source) => source.lastAttempt?.status === 'failed').length;
  const damaged = health.lastVerification?.damaged ?? 0;
  const free = health.disk ? ` free_bytes=${health.disk.freeBytes}B` : '';
  return `sources=${sources.length} failing=${failing} failures=${failures} damaged=${damaged}${free}`;
}

function formatBytes(bytes: number): string {
  for (const [unit, size] of [
    ['TB', 1e12],
    ['GB', 1e9],
    ['MB', 1e6],
    ['kB', 1e3],
  ] as const) {
    if (bytes >= size) return `${(bytes / size).toFixed(1)} ${unit}`;
  }
  return `${bytes} B`;
}
