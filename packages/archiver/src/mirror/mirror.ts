import { setTimeout as sleep } from 'node:timers/promises';
import { ArchiverError } from '../core/errors.js';
import { type HarvestOptions, type HarvestSummary, harvest } from '../harvest/harvest.js';
import type { Politeness } from '../oai/host-politeness.js';
import type { Compression, Credentials } from '../oai/oai-client.js';
import type { RetryPolicy } from '../oai/retry-policy.js';
import type { SourceLimits } from '../oai/source-limits.js';
import { type MirrorSchedule, nextRun } from './mirror-schedule.js';
import { type RunReportOptions, reportRun, writeMetricsFile } from './run-report.js';

/** One source of a mirror and how often it is harvested. */
export interface MirrorSource {
  baseUrl: string;
  schedule: MirrorSchedule;
  set?: string;
  prefix?: string;
  concurrency?: number;
  credentials?: Credentials;
  /** See HarvestOptions.allowPrivateRefs. */
  allowPrivateRefs?: boolean;
  /** See HarvestOptions.compression. */
  compression?: Compression;
  /** This source's delay between requests and cap on connections (see HarvestOptions.politeness). */
  politeness?: Partial<Politeness>;
}

export interface MirrorOptions {
  archiveDir: string;
  sources: readonly MirrorSource[];
  /** Stops the mirror: a harvest in progress ends `interrupted` (it resumes next time). */
  signal: AbortSignal;
  /** Called after each run, with its summary or its error and when the source runs next. */
  onRun?: (run: MirrorRun) => void;
  /** Harvest log lines (retries, resumes…), prefixed with the source. */
  log?: (line: string) => void;
  retry?: RetryPolicy;
  /** Bounds on what every source controls (see HarvestOptions.limits). */
  limits?: Partial<SourceLimits> | undefined;
  /** Notifications after a failed run (`--on-failure`, `--notify`) and the metrics file (`--metrics-file`). */
  report?: Omit<RunReportOptions, 'archiveDir'>;
  /** [0, 1) for the jitter; tests pin it. */
  random?: () => number;
  now?: () => number;
}

/** What one scheduled run did. */
export interface MirrorRun {
  baseUrl: string;
  startedAt: Date;
  summary?: HarvestSummary;
  /** Why the run did not complete: the source was down, the archive locked… */
  error?: ArchiverError;
  /** When this source's next run starts (absent once the mirror is stopping). */
  nextAt?: Date;
}

/** What a source's entry asks of each of its harvests (a mirror's, a worker's). */
export function sourceHarvestOptions(
  source: MirrorSource,
): Pick<HarvestOptions, 'baseUrl' | 'set' | 'prefix' | 'concurrency' | 'credentials' | 'allowPrivateRefs' | 'compression' | 'politeness'> {
  return {
    baseUrl: source.baseUrl,
    ...(source.set !== undefined ? { set: source.set } : {}),
    ...(source.prefix !== undefined ? { prefix: source.prefix } : {}),
    ...(source.concurrency !== undefined ? { concurrency: source.concurrency } : {}),
    ...(source.credentials ? { credentials: source.credentials } : {}),
    ...(source.allowPrivateRefs ? { allowPrivateRefs: true } : {}),
    ...(source.compression ? { compression: source.compression } : {}),
    ...(source.politeness ? { politeness: source.politeness } : {}),
  };
}

/**
 * Harvests each source on its schedule, one harvest at a time, until the signal stops it. The
 * first run of every source is due at once. A run that fails (the source is down, another
 * process holds the archive) is reported and the source simply runs again at its next tick;
 * an error oaibag did not expect (a bug) is reported the same way, as ERR_ARCHIVE_INTERNAL:
 * one bad source never stops the others. Resolves once stopped and the
 * harvest in progress, if any, has ended cleanly.
 */
export async function mirror(options: MirrorOptions): Promise<void> {
  const { signal } = options;
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;
  if (options.sources.length === 0) throw new ArchiverError('ERR_ARCHIVE_USAGE', 'a mirror needs at least one source');
  const start = now();
  const plan = options.sources.map((source) => ({ source, dueAt: start, startAt: start }));
  const report = options.report && { ...options.report, archiveDir: options.archiveDir };
  if (report) await writeMetricsFile(report);
  while (!signal.aborted) {
    const next = plan.reduce((soonest, entry) => (entry.startAt < soonest.startAt ? entry : soonest));
    const wait = next.startAt - now();
    if (wait > 0) {
      await sleep(wait, undefined, { signal }).catch(() => undefined);
      continue; // re-check the signal and the plan
    }
    const run: MirrorRun = { baseUrl: next.source.baseUrl, startedAt: new Date(now()) };
    try {
      run.summary = await harvest({
        ...sourceHarvestOptions(next.source),
        archiveDir: options.archiveDir,
        signal,
        ...(options.retry ? { retry: options.retry } : {}),
        limits: options.limits,
        log: (line) => options.log?.(`${next.source.baseUrl}: ${line}`),
      });
    } catch (error) {
      if (signal.aborted && !(error instanceof ArchiverError)) break; // stopped during Identify
      run.error =
        error instanceof ArchiverError
          ? error
          : new ArchiverError('ERR_ARCHIVE_INTERNAL', `the harvest failed unexpectedly: ${(error as Error | undefined)?.message ?? String(error)}`, {
              cause: error,
            });
    }
    const scheduled = nextRun(next.dueAt, now(), next.source.schedule, random());
    next.dueAt = scheduled.dueAt;
    next.startAt = scheduled.startAt;
    if (!signal.aborted) run.nextAt = new Date(next.startAt);
    options.onRun?.(run);
    if (report) await reportRun(run, signal.aborted, report);
  }
}
