// `oaibag worker` (docs/scale-out.md, "Workers"): harvests the sources on the catalog's schedule
// (`oaibag sources add`), sharing them with any number of other workers on any machines. Each
// run starts with a lease on its source (catalog/source-leases.ts): one worker at a time
// harvests a source, every write of its run checks and renews the lease, and a worker that
// dies (kill -9, a power cut) is taken over once its lease runs out: the next worker's run
// resumes from the checkpoint the catalog holds, and a bag the dead worker had committed but not
// recorded is recorded by it (ingest/adopt-pending-bags.ts). Each worker has a folder of its
// own (its lock, its tmp/, where the catalog and the store are); the bags go to the shared store.
import { mkdir } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { Catalog } from '../catalog/catalog.js';
import type { SourceLease } from '../catalog/source-leases.js';
import { ArchiverError } from '../core/errors.js';
import { harvest } from '../harvest/harvest.js';
import type { BatchBounds } from '../ingest/batch-bounds.js';
import type { RetryPolicy } from '../oai/retry-policy.js';
import type { SourceLimits } from '../oai/source-limits.js';
import { type MirrorRun, type MirrorSource, sourceHarvestOptions } from './mirror.js';
import { parseMirrorSource } from './mirror-config.js';
import { nextRun } from './mirror-schedule.js';

/**
 * The failures that are the worker's, not the source's: its archive folder locked or full, its
 * store or catalog unusable. Any other failure (the source down, a record refused) is the
 * source's, recorded on it until its next tick.
 */
const WORKER_FAULTS = new Set(['ERR_ARCHIVE_LOCKED', 'ERR_ARCHIVE_FULL', 'ERR_ARCHIVE_IO', 'ERR_ARCHIVE_STORE', 'ERR_ARCHIVE_CATALOG', 'ERR_ARCHIVE_FORMAT']);

/** How long a lease lasts without a renewal (`--lease`): a dead worker's sources wait this long. */
export const DEFAULT_LEASE_MS = 5 * 60_000;
/** The longest a worker sleeps before it looks for due sources again (`--poll`). */
export const DEFAULT_POLL_MS = 30_000;

export interface WorkerOptions {
  /** This worker's own archive folder: its lock, its tmp/, and where the catalog and the store are. */
  archiveDir: string;
  /** This worker's name in leases (default: host, process and a random part). */
  name: string;
  leaseMs?: number;
  pollMs?: number;
  /** Stops the worker: the run in progress ends `interrupted`, and its source is due again at once. */
  signal: AbortSignal;
  /**
   * Returns once no source is due, neither waiting nor being harvested by another worker (a dead
   * one's is taken over first): for cron and for tests.
   */
  untilIdle?: boolean;
  onRun?: (run: WorkerRun) => void;
  log?: (line: string) => void;
  retry?: RetryPolicy;
  /** When a batch bag is sealed (default: the harvest's). */
  batchBounds?: BatchBounds;
  limits?: Partial<SourceLimits> | undefined;
  /** [0, 1) for the jitter; tests pin it. */
  random?: () => number;
}

/** A worker's run of a source: a mirror's, and whether the lease was lost on the way. */
export interface WorkerRun extends MirrorRun {
  leaseLost?: boolean;
}

/**
 * Claims due sources one at a time and harvests each, until the signal stops it (or, with
 * `untilIdle`, until none is due). A run that fails is recorded on its source (`oaibag sources
 * list` shows it) and the source runs again at its next tick; one bad source never stops the
 * worker. Rejects when the worker itself cannot harvest (WORKER_FAULTS: its folder, store or
 * catalog), after handing its source back untouched.
 */
export async function runWorker(options: WorkerOptions): Promise<void> {
  const { signal } = options;
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  const pollMs = options.pollMs ?? DEFAULT_POLL_MS;
  const random = options.random ?? Math.random;
  await mkdir(options.archiveDir, { recursive: true });
  // The schedule's own connection: the runs' writes go through the harvest's.
  const catalog = Catalog.open(options.archiveDir);
  try {
    while (!signal.aborted) {
      const lease = catalog.claimDueSource(options.name, leaseMs);
      if (lease === undefined) {
        if (options.untilIdle && !catalog.anyScheduledDue()) return;
        const next = catalog.nextScheduledStart();
        const wait = next === undefined ? pollMs : Math.min(pollMs, Math.max(0, next - catalog.clockMs()));
        await sleep(wait, undefined, { signal }).catch(() => undefined);
        continue;
      }
      const run = await runSource(catalog, lease, options, leaseMs);
      if (run === undefined) break; // stopped during Identify: the lease is handed back
      if (!run.leaseLost && run.error !== undefined && WORKER_FAULTS.has(run.error.code)) {
        // This worker cannot harvest (its folder, its store, its catalog): the source goes back
        // as it was, for a worker that can, and this one stops with the error, loudly, rather
        // than push every source it claims to its next tick.
        catalog.endLease(lease, {
          harvestId: run.summary?.harvestId ?? null,
          outcome: 'not run',
          error: `the worker ${options.name} could not run it: ${run.error.message} [${run.error.code}]`,
          dueAt: lease.source.dueAt,
          startAt: lease.source.startAt,
        });
        throw run.error;
      }
      if (!run.leaseLost) {
        const stopping = signal.aborted;
        const ended = catalog.clockMs();
        // A run stopped on request is due again at once (another worker may resume it).
        const scheduled = stopping
          ? { dueAt: lease.source.dueAt, startAt: ended }
          : nextRun(lease.source.dueAt, ended, { everyMs: lease.source.everyMs, jitterMs: lease.source.jitterMs }, random());
        const outcome = run.summary?.status ?? 'failed';
        const error = run.error ? `${run.error.message} [${run.error.code}]` : (run.summary?.reason ?? null);
        if (!catalog.endLease(lease, { harvestId: run.summary?.harvestId ?? null, outcome, error, ...scheduled })) run.leaseLost = true;
        else if (!stopping) run.nextAt = new Date(scheduled.startAt);
      }
      options.onRun?.(run);
    }
  } finally {
    catalog.close();
  }
}

/** One run of a leased source; undefined when the worker was stopped before it started. */
async function runSource(catalog: Catalog, lease: SourceLease, options: WorkerOptions, leaseMs: number): Promise<WorkerRun | undefined> {
  const { baseUrl } = lease.source;
  const run: WorkerRun = { baseUrl, startedAt: new Date() };
  // Stops this run alone when its lease turns out to be another worker's.
  const stopRun = new AbortController();
  const stop = () => stopRun.abort();
  options.signal.addEventListener('abort', stop, { once: true });
  try {
    const source = await sourceOf(lease);
    run.summary = await harvest({
      ...sourceHarvestOptions(source),
      archiveDir: options.archiveDir,
      signal: stopRun.signal,
      ...(options.retry ? { retry: options.retry } : {}),
      ...(options.batchBounds ? { batchBounds: options.batchBounds } : {}),
      limits: options.limits,
      log: (line) => options.log?.(`${baseUrl}: ${line}`),
      lease: {
        lease,
        leaseMs,
        onLost: (error) => {
          run.leaseLost = true;
          options.log?.(`${baseUrl}: ${error.message}`);
          stopRun.abort();
        },
      },
    });
  } catch (error) {
    if (error instanceof ArchiverError && error.code === 'ERR_ARCHIVE_LEASE') run.leaseLost = true;
    if (stopRun.signal.aborted && !(error instanceof ArchiverError)) {
      // Stopped during Identify: nothing was recorded; the source is due again at once.
      if (!run.leaseLost)
        catalog.endLease(lease, { harvestId: null, outcome: 'interrupted', error: null, dueAt: lease.source.dueAt, startAt: lease.source.startAt });
      return options.signal.aborted ? undefined : run;
    }
    run.error =
      error instanceof ArchiverError
        ? error
        : new ArchiverError('ERR_ARCHIVE_INTERNAL', `the harvest failed unexpectedly: ${(error as Error | undefined)?.message ?? String(error)}`, {
            cause: error,
          });
  } finally {
    options.signal.removeEventListener('abort', stop);
  }
  return run;
}

/** The source's settings as `oaibag sources add` kept them, read as a mirror's source entry. */
async function sourceOf(lease: SourceLease): Promise<MirrorSource> {
  let entry: unknown;
  try {
    entry = JSON.parse(lease.source.settings);
  } catch {
    throw new ArchiverError('ERR_ARCHIVE_CATALOG', `the catalog's settings of the scheduled source ${lease.source.baseUrl} are not JSON`);
  }
  // Paths in the settings were made absolute when the source was added.
  return parseMirrorSource(entry, { where: `the scheduled source ${lease.source.baseUrl}`, folder: '/' });
}
