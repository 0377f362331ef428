import { basename } from 'node:path';
import { Command } from 'commander';
import { ArchiverError } from '../core/errors.js';
import { exportBags } from '../export/export-bags.js';
import { DEFAULT_EXPORT_NAME, type ExportedWarc, exportWarc } from '../export/warc-export.js';
import { type ExportedSite, exportSite } from '../restore/site-zip.js';
import { EXIT_PARTIAL } from './exit-codes.js';
import { byteSize } from './option-parsers.js';
import { restoreCounts, restoreDisplay, restoredState } from './restore-command.js';
import { stopSignal } from './stop-signal.js';

interface ExportCommandOptions {
  to: string;
  archive: string;
  bags?: boolean;
  site?: boolean;
  warc?: boolean;
  wacz?: boolean;
  since?: string;
  name?: string;
  warcSize?: number;
  asOf?: string;
  source?: string;
}

/** `oaibag export --bags | --site | --warc`: the archive's bags as serialized bags, the site as one ZIP, or WARC files (docs/import-export.md). */
export function exportCommand(): Command {
  return new Command('export')
    .description(
      'write the archive out: every bag as one deterministic ZIP (--bags), for a partner or offsite storage, the site as of a date as one ZIP (--site), or the versions as WARC files with a CDXJ index or one WACZ (--warc)',
    )
    .requiredOption('--to <PATH>', 'with --bags and --warc, the folder to write into (created if absent); with --site, the ZIP file to write')
    .option('--archive <DIR>', 'the archive folder', './archive')
    .option('--bags', 'each bag as <harvest>-<batch>.zip, unpacking to that one folder, and SHA256SUMS beside them')
    .option('--site', 'the site as oaibag restore rebuilds it, as one ZIP file: every file verified as restore does, with its original mtime')
    .option('--warc', 'the versions as WARC 1.1 records (gzip), <name>-00001.warc.gz…, with their CDXJ index <name>.cdxj')
    .option('--wacz', 'with --warc: one WACZ 1.1.1 file, <name>.wacz, holding the WARC files, the index and the pages, instead')
    .option(
      '--as-of <DATE>',
      "with --site: the state at this instant, as restore: YYYY-MM-DD (the end of that day, UTC) or YYYY-MM-DDThh:mm:ssZ (default: the latest state); with --warc: the archive as it stood then (each resource's version captured last by then, none deleted by then)",
    )
    .option('--since <DATE>', 'with --warc: only the versions captured at or after this instant (YYYY-MM-DD: from the start of that day, UTC)')
    .option('--name <NAME>', `with --warc: the files' names (default: ${DEFAULT_EXPORT_NAME})`)
    .option('--warc-size <SIZE>', 'with --warc: a WARC file ends, and the next begins, once it holds this many bytes (default: 1G)', byteSize)
    .option(
      '--source <BASEURL>',
      'only the bags of this source (--bags); only this source, as restore (--site; default: every source); only its versions (--warc)',
    )
    .addHelpText(
      'after',
      "\n--bags: the same bag always gives the same bytes (entries in a fixed order, the bag's Bagged-At\n" +
        'as every time, mode 0644, every entry stored, ZIP64 past 4 GB), so a partner compares SHA-256s\n' +
        'with SHA256SUMS.\n' +
        '\n--site: one entry per file oaibag restore would write, at the same relative path, with the same\n' +
        'mtime (Info-ZIP timestamp, to the second), deflated, mode 0644, in code-unit order of the names,\n' +
        'no folder entries: the same archive and --as-of give the same bytes. Each payload is streamed\n' +
        'from its bag into the ZIP while its size and SHA-256 are checked against the catalog; a damaged\n' +
        'one stops the export (one line naming the resource and the bag, ERR_ARCHIVE_DAMAGED) and no ZIP\n' +
        'is left. Prints "<sha256>  <name>" on stdout and a summary on stderr.\n' +
        '\n--warc: every version with payload bytes (or --as-of, --since), in capture order, as a response\n' +
        'record (the original HTTP headers, then the bytes, checked against the catalog) or, for bytes\n' +
        'written earlier in the same export, a revisit record (identical-payload-digest); deletions are\n' +
        'not written. Record ids, dates and gzip level come from the archive alone: the same archive gives\n' +
        'the same bytes. The CDXJ index is sorted as pywb and warcio sort it. Prints "<sha256>  <name>" for\n' +
        'each file on stdout and a summary on stderr.\n' +
        '\nEach file is written under a temporary name (.partial), made durable and renamed: an export\n' +
        'stopped half-way leaves no partial file under its final name. Exit codes: 0 written; 1 (--site)\n' +
        'resources were refused as restore refuses them (the ZIP is written without them); 2 usage\n' +
        '(two of --bags, --site and --warc, --to an existing folder with --site or an existing file with\n' +
        '--warc, a bad --as-of or --since, an unknown --source with --site or --warc); 4 the archive cannot\n' +
        'be read, a payload or records file is damaged, the file or folder cannot be written (named). All\n' +
        'codes: docs/operations.md.',
    )
    .action(async (options: ExportCommandOptions) => {
      const kinds = [options.bags && '--bags', options.site && '--site', options.warc && '--warc'].filter(Boolean);
      if (kinds.length > 1) throw new ArchiverError('ERR_ARCHIVE_USAGE', `${kinds.join(' and ')} cannot go together: run export once for each`);
      if (kinds.length === 0) throw new ArchiverError('ERR_ARCHIVE_USAGE', 'say what to export: --bags, --site or --warc');
      if (options.asOf !== undefined && options.bags)
        throw new ArchiverError('ERR_ARCHIVE_USAGE', '--as-of goes with --site or --warc: --bags exports every bag');
      for (const [given, option] of [
        [options.wacz, '--wacz'],
        [options.since, '--since'],
        [options.name, '--name'],
        [options.warcSize, '--warc-size'],
      ] as const) {
        if (given !== undefined && !options.warc) throw new ArchiverError('ERR_ARCHIVE_USAGE', `${option} goes with --warc`);
      }
      if (options.site) return exportSiteCommand(options);
      if (options.warc) return exportWarcCommand(options);
      const terminal = process.stderr.isTTY;
      const written = await exportBags({
        archiveDir: options.archive,
        to: options.to,
        ...(options.source !== undefined ? { source: options.source } : {}),
        ...(terminal ? { progress: (done: number, total: number) => process.stderr.write(`\r\x1b[K${done} of ${total} bags`) } : {}),
      });
      if (terminal) process.stderr.write('\r\x1b[K');
      for (const bag of written) process.stdout.write(`${bag.sha256}  ${bag.folder}.zip  (${bag.entries} files, ${bag.bytes} bytes)\n`);
      process.stderr.write(`exported ${written.length} bag(s) to ${options.to}\n`);
    });
}

async function exportSiteCommand(options: ExportCommandOptions): Promise<void> {
  const terminal = process.stderr.isTTY;
  const site = await exportSite({
    archiveDir: options.archive,
    to: options.to,
    ...(options.source !== undefined ? { source: options.source } : {}),
    ...(options.asOf !== undefined ? { asOf: options.asOf } : {}),
    ...restoreDisplay(terminal),
  });
  if (terminal) process.stderr.write('\r\x1b[K');
  process.stdout.write(`${site.sha256}  ${basename(site.file)}\n`);
  process.stderr.write(`${formatSiteSummary(site)}\n`);
  if (site.summary.problems > 0) process.exitCode = EXIT_PARTIAL;
}

async function exportWarcCommand(options: ExportCommandOptions): Promise<void> {
  const terminal = process.stderr.isTTY;
  const stop = stopSignal(() => process.stderr.write(`${terminal ? '\r\x1b[K' : ''}oaibag: stopping; the files begun are removed\n`));
  let exported: ExportedWarc;
  try {
    exported = await exportWarc({
      archiveDir: options.archive,
      to: options.to,
      ...(options.name !== undefined ? { name: options.name } : {}),
      ...(options.asOf !== undefined ? { asOf: options.asOf } : {}),
      ...(options.since !== undefined ? { since: options.since } : {}),
      ...(options.source !== undefined ? { source: options.source } : {}),
      ...(options.wacz === true ? { wacz: true } : {}),
      ...(options.warcSize !== undefined ? { maxFileBytes: Math.max(1, options.warcSize) } : {}),
      ...(terminal
        ? {
            progress: (done: { records: number; bytes: number }) =>
              process.stderr.write(`\r\x1b[K${done.records} records, ${(done.bytes / 1e6).toFixed(1)} MB`),
          }
        : {}),
      signal: stop.signal,
    });
  } finally {
    stop.dispose();
  }
  if (terminal) process.stderr.write('\r\x1b[K');
  for (const file of exported.files) process.stdout.write(`${file.sha256}  ${file.name}\n`);
  process.stderr.write(`${formatWarcSummary(exported, options.to)}\n`);
}

/** The summary line of `export --warc`: what was chosen, the records, the files. */
export function formatWarcSummary(exported: ExportedWarc, to: string): string {
  const records = `${exported.responses + exported.revisits} records (${exported.responses} responses, ${exported.revisits} revisits; ${exported.payloadBytes} payload bytes)`;
  const files = exported.files.map((file) => `${file.name} (${file.bytes} bytes)`).join(', ');
  return `exported ${records} of ${exported.selection} to ${to}: ${files}`;
}

/** The summary line of `export --site`: files, bytes, the instant, the ZIP, then restore's counts. */
export function formatSiteSummary(site: ExportedSite): string {
  const { summary } = site;
  return `exported ${summary.restored} files (${summary.bytes} bytes) of ${restoredState(summary)} to ${site.file} (${site.zipBytes} bytes); ${restoreCounts(summary)}`;
}
