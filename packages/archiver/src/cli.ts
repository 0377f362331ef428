#!/usr/bin/env node
import { readFile } from 'node:fs/promises';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { Catalog } from './catalog.js';
import { ArchiverError } from './errors.js';
import { harvest, type HarvestSummary } from './harvest.js';

/** Exit codes (docs/archiver.md). */
const EXIT_RECORDS_FAILED = 1;
const EXIT_USAGE = 2;
const EXIT_SOURCE = 3;

const program = new Command('oaibag')
  .description('Harvest web sites over OAI-PMH (oai_didl) into an archive of BagIt AIPs catalogued in SQLite.')
  .showHelpAfterError()
  .exitOverride();

program
  .command('harvest')
  .description('harvest what changed since the last harvest of BASEURL (deletions included) into the archive')
  .argument('<BASEURL>', "the repository's OAI-PMH base URL, e.g. https://example.org/oai")
  .option('--archive <DIR>', 'the archive folder (created when missing)', './archive')
  .option('--from <DATE>', 'harvest from this date (default: continue from the last complete harvest)')
  .option('--until <DATE>', 'harvest up to this date')
  .option('--set <SPEC>', 'harvest only this set (e.g. mime:image)')
  .option('--prefix <PREFIX>', 'metadata format to harvest', 'oai_didl')
  .option('--concurrency <N>', 'records stored at once (By-Reference fetches and bag writes overlap)', (value: string) => {
    const count = Number(value);
    if (!/^\d+$/.test(value) || count < 1) throw new InvalidArgumentError('expected a whole number of at least 1');
    return count;
  }, 4)
  .option('--user <NAME>', 'user name for HTTP Basic authentication')
  .option('--password-file <FILE>', 'file whose first line is the password (never on the command line)')
  .option('--json', 'print the summary as JSON')
  .addHelpText(
    'after',
    '\nExit codes: 0 all done; 1 finished, but some records failed (they are retried next time);\n' +
      '2 usage; 3 the source is unreachable, not an OAI-PMH repository, or the list failed.',
  )
  .action(async (baseUrl: string, options: HarvestCommandOptions) => {
    if ((options.user === undefined) !== (options.passwordFile === undefined)) {
      throw new ArchiverError('ERR_ARCHIVE_USAGE', '--user and --password-file go together');
    }
    const credentials = options.user !== undefined ? { user: options.user, password: await readPasswordFile(options.passwordFile!) } : undefined;
    const started = Date.now();
    const terminal = process.stderr.isTTY;
    const summary = await harvest({
      baseUrl,
      archiveDir: options.archive,
      prefix: options.prefix,
      concurrency: options.concurrency,
      ...(options.from !== undefined ? { from: options.from } : {}),
      ...(options.until !== undefined ? { until: options.until } : {}),
      ...(options.set !== undefined ? { set: options.set } : {}),
      ...(credentials ? { credentials } : {}),
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
    if (terminal) process.stderr.write('\r\x1b[K');
    process.stdout.write(options.json ? `${JSON.stringify(summary, null, 2)}\n` : formatSummary(summary));
    if (summary.status === 'failed') process.exitCode = EXIT_SOURCE;
    else if (summary.failed > 0) process.exitCode = EXIT_RECORDS_FAILED;
  });

program
  .command('status')
  .description('summarise an archive: sources, last harvest, counts, failures outstanding')
  .option('--archive <DIR>', 'the archive folder', './archive')
  .option('--json', 'print JSON')
  .action((options: { archive: string; json?: boolean }) => {
    const catalog = Catalog.open(options.archive, { create: false });
    try {
      const status = catalog.status();
      if (options.json) {
        process.stdout.write(`${JSON.stringify(status, null, 2)}\n`);
        return;
      }
      let text = `archive ${options.archive} (catalog schema ${status.schemaVersion})\n`;
      for (const source of status.sources) {
        const last = source.lastHarvest;
        text +=
          `\n${source.source.baseUrl}\n` +
          `  watermark: ${source.source.watermark ?? 'none (never completed)'}\n` +
          `  last harvest: ${last ? `#${last.id} ${last.status}, ${last.startedAt}` : 'none'}\n` +
          `  resources: ${source.liveResources} live, ${source.deletedResources} deleted; versions: ${source.versions}; payload: ${source.payloadBytes} bytes\n` +
          `  failures outstanding: ${source.openFailures}\n`;
      }
      process.stdout.write(text);
    } finally {
      catalog.close();
    }
  });

interface HarvestCommandOptions {
  archive: string;
  from?: string;
  until?: string;
  set?: string;
  prefix: string;
  concurrency: number;
  user?: string;
  passwordFile?: string;
  json?: boolean;
}

function formatSummary(summary: HarvestSummary): string {
  return (
    `harvest #${summary.harvestId} ${summary.status}: ${summary.records} records (${summary.added} added, ${summary.modified} modified, ` +
    `${summary.touched} touched, ${summary.deleted} deleted, ${summary.failed} failed), ${summary.bytes} bytes of payload, ` +
    `${summary.requests} requests; from ${summary.from ?? 'the beginning'}; next harvest from ${summary.watermark ?? 'the beginning'}\n`
  );
}

async function readPasswordFile(file: string): Promise<string> {
  const text = await readFile(file, 'utf8');
  return text.split(/\r?\n/)[0] ?? '';
}

async function main(): Promise<void> {
  try {
    await program.parseAsync(process.argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      process.exitCode = error.exitCode === 0 ? 0 : EXIT_USAGE;
      return;
    }
    if (error instanceof ArchiverError) {
      process.stderr.write(`oaibag: ${error.message} [${error.code}]${error.hint ? ` (hint: ${error.hint})` : ''}\n`);
      process.exitCode = error.code === 'ERR_ARCHIVE_USAGE' ? EXIT_USAGE : error.code.startsWith('ERR_HARVEST_') ? EXIT_SOURCE : 1;
      return;
    }
    const code = (error as NodeJS.ErrnoException | undefined)?.code;
    if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) {
      process.stderr.write(`oaibag: ${(error as Error).message} [${code}]\n`);
      process.exitCode = 1;
      return;
    }
    throw error;
  }
}

await main();
