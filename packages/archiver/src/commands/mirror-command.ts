import { Command } from 'commander';
import { formatDuration, parseDuration } from '../core/duration.js';
import { ArchiverError } from '../core/errors.js';
import { type MirrorRun, type MirrorSource, mirror } from '../mirror/mirror.js';
import { readMirrorConfig } from '../mirror/mirror-config.js';
import type { Compression } from '../oai/oai-client.js';
import { applyCatalogOption } from './catalog-option.js';
import { credentialsFromOptions } from './credentials-options.js';
import { formatSummary } from './harvest-command.js';
import { notifyFromOptions, withNotifyOptions } from './notify-options.js';
import { compressionMode, httpUrl, wholeNumber } from './option-parsers.js';
import { politenessFromOptions, withPolitenessOptions } from './politeness-options.js';
import { retryFromOptions, withRetryOptions } from './retry-options.js';
import { sourceLimitsFromOptions, withSourceLimitOptions } from './source-limit-options.js';
import { stopSignal } from './stop-signal.js';
import { applyStoreOptions } from './store-option.js';

interface MirrorCommandOptions {
  every?: string;
  jitter?: string;
  config?: string;
  archive?: string;
  catalog?: string;
  store?: string;
  storeEndpoint?: string;
  storeRegion?: string;
  retain?: string;
  set?: string;
  prefix: string;
  concurrency: number;
  user?: string;
  passwordFile?: string;
  allowPrivateRefs?: boolean;
  compression: Compression;
  onFailure?: string;
  notify?: string;
  metricsFile?: string;
  retries?: number;
  maxRetryWait?: number;
  delay?: number;
  maxConnections?: number;
}

/** `oaibag mirror`: incremental harvests on a schedule, forever (docs/mirror.md). */
export function mirrorCommand(): Command {
  return withNotifyOptions(withPolitenessOptions(withRetryOptions(withSourceLimitOptions(new Command('mirror')))))
    .description('harvest BASEURL (or every source of --config) on a schedule, one harvest at a time, until stopped')
    .argument('[BASEURL]', "the repository's OAI-PMH base URL (omit with --config)", httpUrl('BASEURL'))
    .option('--every <DURATION>', 'time between harvests: 90s, 30m, 6h, 1d')
    .option('--jitter <DURATION>', 'start each harvest up to this much later, at random (default: none)')
    .option('--config <FILE>', 'a JSON file listing several sources, each with its own schedule (docs/mirror.md)')
    .option('--archive <DIR>', 'the archive folder (default: the config\'s "archive", else ./archive)')
    .option('--set <SPEC>', 'harvest only this set')
    .option('--prefix <PREFIX>', 'metadata format to harvest (DSpace and DARE-style repositories call it didl)', 'oai_didl')
    .option('--concurrency <N>', 'records stored at once', wholeNumber, 4)
    .option('--user <NAME>', 'user name for HTTP Basic authentication')
    .option('--password-file <FILE>', 'file whose first line is the password')
    .option(
      '--compression <MODE>',
      'ask for compressed pages: auto (unless the repository is on this machine or its local network), always, never',
      compressionMode,
      'auto',
    )
    .option('--allow-private-refs', 'let By-Reference URLs and their redirects lead to loopback, private and link-local addresses (docs/archiver.md)')
    .option('--metrics-file <FILE>', "after each run, write the archive's metrics here in the Prometheus text format (node_exporter's textfile collector)")
    .addHelpText(
      'after',
      '\nThe first harvest starts at once, then one every DURATION (a run that overruns skips the\n' +
        'ticks it missed). One line per run on stdout. A source that is down is tried again at its\n' +
        'next tick. SIGINT or SIGTERM stops cleanly: records being stored are finished, the\n' +
        'checkpoint is saved, and the next start resumes; a second signal exits at once.\n' +
        '\nExit codes: 0 stopped by a signal (each failed run is reported, notified and recorded, and\n' +
        'the mirror goes on); 2 usage; 4 the archive cannot be used at all. docs/operations.md.\n' +
        'Run from cron or a systemd timer instead: see docs/mirror.md.',
    )
    .action(async (baseUrl: string | undefined, options: MirrorCommandOptions) => {
      const { sources, archiveDir } = await mirrorPlan(baseUrl, options);
      await applyCatalogOption('mirror', archiveDir, options.catalog);
      await applyStoreOptions('mirror', archiveDir, options);
      const stop = stopSignal((name) => process.stderr.write(`oaibag: ${name}: finishing the harvest in progress, then stopping\n`));
      const stamp = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
      for (const source of sources) {
        process.stdout.write(`${stamp()} mirror ${source.baseUrl} every ${formatDuration(source.schedule.everyMs)} into ${archiveDir}\n`);
      }
      try {
        await mirror({
          archiveDir,
          sources,
          signal: stop.signal,
          limits: sourceLimitsFromOptions(options as unknown as Record<string, unknown>),
          ...retryFromOptions(options),
          log: (line) => process.stderr.write(`oaibag: ${line}\n`),
          report: {
            notify: notifyFromOptions(options, (line) => process.stderr.write(`oaibag: ${line}\n`)),
            metricsFile: options.metricsFile,
            log: (line) => process.stderr.write(`oaibag: ${line}\n`),
          },
          onRun: (run) => process.stdout.write(`${stamp()} ${formatRun(run)}\n`),
        });
      } finally {
        stop.dispose();
      }
      process.stdout.write(`${stamp()} mirror stopped\n`);
    });
}

async function mirrorPlan(baseUrl: string | undefined, options: MirrorCommandOptions): Promise<{ sources: MirrorSource[]; archiveDir: string }> {
  if (options.config !== undefined) {
    if (baseUrl !== undefined || options.every !== undefined) {
      throw new ArchiverError('ERR_ARCHIVE_USAGE', 'give either BASEURL with --every, or --config FILE, not both');
    }
    const config = await readMirrorConfig(options.config);
    // --delay and --max-connections are the politeness of the sources that give none of their own.
    const politeness = politenessFromOptions(options);
    const sources = config.sources.map((source) => ({ ...source, politeness: { ...politeness, ...source.politeness } }));
    return { sources, archiveDir: options.archive ?? config.archiveDir ?? './archive' };
  }
  if (baseUrl === undefined || options.every === undefined) {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', 'give BASEURL and --every DURATION (or --config FILE)');
  }
  const credentials = await credentialsFromOptions(options);
  const source: MirrorSource = {
    baseUrl,
    schedule: { everyMs: parseDuration(options.every, '--every'), jitterMs: options.jitter === undefined ? 0 : parseDuration(options.jitter, '--jitter') },
    prefix: options.prefix,
    concurrency: options.concurrency,
    ...(options.set !== undefined ? { set: options.set } : {}),
    ...(credentials ? { credentials } : {}),
    ...(options.allowPrivateRefs ? { allowPrivateRefs: true } : {}),
    ...(options.compression !== 'auto' ? { compression: options.compression } : {}),
    politeness: politenessFromOptions(options),
  };
  return { sources: [source], archiveDir: options.archive ?? './archive' };
}

/** One line per run: the harvest's summary or why it did not run, and when the next one is. */
export function formatRun(run: MirrorRun): string {
  const what = run.summary
    ? formatSummary(run.summary).trimEnd()
    : `${run.baseUrl}: not harvested: ${run.error?.message ?? 'unknown error'} [${run.error?.code ?? '?'}]`;
  const prefix = run.summary ? `${run.baseUrl}: ` : '';
  const next = run.nextAt ? `; next run ${run.nextAt.toISOString().replace(/\.\d+Z$/, 'Z')}` : '';
  return `${prefix}${what}${next}`;
}
