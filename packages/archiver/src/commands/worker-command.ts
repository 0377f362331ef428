// `oaibag worker` (docs/scale-out.md, "Workers"): harvests the catalog's scheduled sources
// (`oaibag sources add`) beside any number of other workers, one harvest at a time per worker
// and per source, until stopped.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { Command } from 'commander';
import { formatDuration, parseDuration } from '../core/duration.js';
import { DEFAULT_BATCH_BOUNDS } from '../ingest/batch-bounds.js';
import { DEFAULT_LEASE_MS, DEFAULT_POLL_MS, runWorker, type WorkerRun } from '../mirror/worker.js';
import { formatRun } from './mirror-command.js';
import { wholeNumber } from './option-parsers.js';
import { retryFromOptions, withRetryOptions } from './retry-options.js';
import { sourceLimitsFromOptions, withSourceLimitOptions } from './source-limit-options.js';
import { stopSignal } from './stop-signal.js';

interface WorkerCommandOptions {
  archive: string;
  name?: string;
  lease?: string;
  poll?: string;
  untilIdle?: boolean;
  batchRecords?: number;
  retries?: number;
  maxRetryWait?: number;
}

export function workerCommand(): Command {
  return withRetryOptions(withSourceLimitOptions(new Command('worker')))
    .description("harvest the archive's scheduled sources (oaibag sources add) beside other workers, until stopped")
    .option('--archive <DIR>', "this worker's own archive folder: its lock and working files, and where the catalog and store are", './archive')
    .option('--name <NAME>', "this worker's name in leases and in `sources list` (default: host:pid:random)")
    .option(
      '--lease <DURATION>',
      `how long a source stays this worker's without a renewal: a dead worker's sources wait this long (default ${formatDuration(DEFAULT_LEASE_MS)})`,
    )
    .option('--poll <DURATION>', `look for due sources at least this often (default ${formatDuration(DEFAULT_POLL_MS)})`)
    .option('--batch-records <N>', 'seal a batch bag after the page that brings it to N records (default 1000)', wholeNumber)
    .option('--until-idle', 'stop once no source is due, instead of waiting for the next')
    .addHelpText(
      'after',
      '\nEach worker claims a due source with a lease in the catalog (PostgreSQL, --catalog, to share\n' +
        'it between machines), harvests it, and schedules its next run. A worker killed mid-harvest\n' +
        'is taken over by another once its lease runs out; the harvest resumes from its checkpoint.\n' +
        'One line per run on stdout. SIGINT or SIGTERM stops cleanly; the source is due again at once.\n' +
        '\nExit codes: 0 stopped (each failed run is reported and recorded on its source); 2 usage;\n' +
        '4 this worker cannot harvest (its folder, store or catalog): the source is handed back. docs/scale-out.md.',
    )
    .action(async (options: WorkerCommandOptions) => {
      const name = options.name ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
      const stop = stopSignal((signal) => process.stderr.write(`oaibag: ${signal}: finishing the harvest in progress, then stopping\n`));
      const stamp = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
      process.stdout.write(`${stamp()} worker ${name} on ${options.archive}\n`);
      try {
        await runWorker({
          archiveDir: options.archive,
          name,
          ...(options.lease !== undefined ? { leaseMs: parseDuration(options.lease, '--lease') } : {}),
          ...(options.poll !== undefined ? { pollMs: parseDuration(options.poll, '--poll') } : {}),
          signal: stop.signal,
          untilIdle: options.untilIdle === true,
          ...(options.batchRecords !== undefined ? { batchBounds: { ...DEFAULT_BATCH_BOUNDS, records: Math.max(1, options.batchRecords) } } : {}),
          limits: sourceLimitsFromOptions(options as unknown as Record<string, unknown>),
          ...retryFromOptions(options),
          log: (line) => process.stderr.write(`oaibag: ${line}\n`),
          onRun: (run) => process.stdout.write(`${stamp()} ${formatWorkerRun(run)}\n`),
        });
      } finally {
        stop.dispose();
      }
      process.stdout.write(`${stamp()} worker ${name} stopped\n`);
    });
}

function formatWorkerRun(run: WorkerRun): string {
  return run.leaseLost ? `${run.baseUrl}: stopped: another worker took the source over (its lease ran out)` : formatRun(run);
}
