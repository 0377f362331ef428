import { Command } from 'commander';
import { type HarvestSummary, harvest } from '../harvest/harvest.js';
import { DEFAULT_BATCH_BOUNDS } from '../ingest/batch-bounds.js';
import type { Compression } from '../oai/oai-client.js';
import { credentialsFromOptions } from './credentials-options.js';
import { EXIT_INTERRUPTED, EXIT_PARTIAL, EXIT_SOURCE } from './exit-codes.js';
import { compressionMode, httpUrl, wholeNumber } from './option-parsers.js';
import { politenessFromOptions, withPolitenessOptions } from './politeness-options.js';
import { retryFromOptions, withRetryOptions } from './retry-options.js';
import { sourceLimitsFromOptions, withSourceLimitOptions } from './source-limit-options.js';
import { stopSignal } from './stop-signal.js';

/** `oaibag harvest BASEURL`: one incremental harvest (docs/archiver.md). */
export function harvestCommand(): Command {
  return withPolitenessOptions(withRetryOptions(withSourceLimitOptions(new Command('harvest'))))
    .description('harvest what changed since the last harvest of BASEURL (deletions included) into the archive')
    .argument('<BASEURL>', "the repository's OAI-PMH base URL, e.g. https://example.org/oai", httpUrl('BASEURL'))
    .option('--archive <DIR>', 'the archive folder (created when missing)', './archive')
    .option('--from <DATE>', 'harvest from this date (default: continue from the last complete harvest)')
    .option('--until <DATE>', 'harvest up to this date')
    .option('--set <SPEC>', 'harvest only this set (e.g. mime:image)')
    .option('--prefix <PREFIX>', 'metadata format to harvest (DSpace and DARE-style repositories call it didl)', 'oai_didl')
    .option('--concurrency <N>', 'records stored at once (By-Reference fetches and bag writes overlap)', wholeNumber, 4)
    .option(
      '--compression <MODE>',
      'ask for compressed pages: auto (unless the repository is on this machine or its local network), always, never',
      compressionMode,
      'auto',
    )
    .option('--batch-records <N>', 'seal a batch bag after the page that brings it to N records (default 1000)', wholeNumber)
    .option('--user <NAME>', 'user name for HTTP Basic authentication')
    .option('--password-file <FILE>', 'file whose first line is the password (never on the command line)')
    .option('--allow-private-refs', 'let By-Reference URLs and their redirects lead to loopback, private and link-local addresses')
    .option('--json', 'print the summary as JSON')
    .addHelpText(
      'after',
      '\nExit codes: 0 all done; 1 finished, but some records failed (they are retried next time);\n' +
        '2 usage; 3 the source is unreachable, not an OAI-PMH repository, does not offer the format\n' +
        'as DIDL, or the list failed; 4 an archive problem: no room left on its disk (ERR_ARCHIVE_FULL:\n' +
        'free space and run the same command, it resumes), locked, read-only; 5 a bug; 130 stopped by\n' +
        'SIGINT/SIGTERM (what was stored is kept; the next harvest resumes). docs/operations.md.\n' +
        '\nBy-Reference datastreams: redirects are followed (at most 10), to any http(s) host; the\n' +
        "credentials go only to the repository's own origin. A URL that leads to a loopback, private\n" +
        "or link-local address of another kind than the repository's own is refused\n" +
        '(ERR_HARVEST_REF_REFUSED) unless --allow-private-refs is given.\n' +
        '\nEnvironment: OAIBAG_SYNC=files makes each batch bag durable by fsyncing its files one by one\n' +
        "instead of one syncfs of the archive's file system (the default on Linux); choose it when\n" +
        'that file system is shared with heavy writers. See docs/aip-profile.md.',
    )
    .action(async (baseUrl: string, options: HarvestCommandOptions) => {
      const credentials = await credentialsFromOptions(options);
      const started = Date.now();
      const terminal = process.stderr.isTTY;
      const stop = stopSignal((name) =>
        process.stderr.write(`${terminal ? '\r\x1b[K' : ''}oaibag: ${name}: finishing the records in progress, then stopping\n`),
      );
      const summary = await harvest({
        baseUrl,
        signal: stop.signal,
        archiveDir: options.archive,
        prefix: options.prefix,
        concurrency: options.concurrency,
        compression: options.compression,
        limits: sourceLimitsFromOptions(options as unknown as Record<string, unknown>),
        ...retryFromOptions(options),
        politeness: politenessFromOptions(options),
        ...(options.batchRecords !== undefined ? { batchBounds: { ...DEFAULT_BATCH_BOUNDS, records: Math.max(1, options.batchRecords) } } : {}),
        ...(options.from !== undefined ? { from: options.from } : {}),
        ...(options.until !== undefined ? { until: options.until } : {}),
        ...(options.set !== undefined ? { set: options.set } : {}),
        ...(credentials ? { credentials } : {}),
        ...(options.allowPrivateRefs ? { allowPrivateRefs: true } : {}),
        log: (line) => process.stderr.write(`${terminal ? '\r\x1b[K' : ''}oaibag: ${line}\n`),
        ...(terminal
          ? {
              progress: (counts, total) => {
                const seconds = (Date.now() - started) / 1000;
                const rate = counts.records / Math.max(seconds, 0.001);
                const eta = total !== undefined && total > counts.records ? `, about ${Math.ceil((total - counts.records) / rate)} s left` : '';
                const of = total !== undefined ? ` of ${total}` : '';
                process.stderr.write(`\r\x1b[K${counts.records}${of} records, ${(counts.bytes / 1e6).toFixed(1)} MB, ${rate.toFixed(1)} records/s${eta}`);
              },
            }
          : {}),
      });
      stop.dispose();
      if (terminal) process.stderr.write('\r\x1b[K');
      // A failed list says why on its last line of stderr, not only in the catalog.
      if (summary.reason !== undefined) process.stderr.write(`oaibag: the list failed: ${summary.reason} [ERR_HARVEST_PROTOCOL]\n`);
      process.stdout.write(options.json ? `${JSON.stringify(summary, null, 2)}\n` : formatSummary(summary));
      if (summary.status === 'interrupted') process.exitCode = EXIT_INTERRUPTED;
      else if (summary.status === 'failed') process.exitCode = EXIT_SOURCE;
      // partial: a record of the list failed, in this run or in an earlier run of the same list.
      else if (summary.status === 'partial' || summary.failed > 0) process.exitCode = EXIT_PARTIAL;
    });
}

export interface HarvestCommandOptions {
  archive: string;
  from?: string;
  until?: string;
  set?: string;
  prefix: string;
  concurrency: number;
  batchRecords?: number;
  compression: Compression;
  user?: string;
  passwordFile?: string;
  allowPrivateRefs?: boolean;
  json?: boolean;
  retries?: number;
  maxRetryWait?: number;
  delay?: number;
  maxConnections?: number;
}

export function formatSummary(summary: HarvestSummary): string {
  return (
    `harvest #${summary.harvestId} ${summary.status}: ${summary.records} records (${summary.added} added, ${summary.modified} modified, ` +
    `${summary.touched} touched, ${summary.deleted} deleted, ${summary.failed} failed), ${summary.bytes} bytes of payload, ` +
    `${summary.requests} requests; from ${summary.from ?? 'the beginning'}; next harvest from ${summary.watermark ?? 'the beginning'}\n`
  );
}
