import { basename } from 'node:path';
import { Command } from 'commander';
import { ArchiverError } from '../core/errors.js';
import { exportBags } from '../export/export-bags.js';
import { type ExportedSite, exportSite } from '../restore/site-zip.js';
import { EXIT_PARTIAL } from './exit-codes.js';
import { restoreCounts, restoreDisplay, restoredState } from './restore-command.js';

interface ExportCommandOptions {
  to: string;
  archive: string;
  bags?: boolean;
  site?: boolean;
  asOf?: string;
  source?: string;
}

/** `oaibag export --bags | --site`: the archive's bags as serialized bags, or the site as one ZIP (docs/import-export.md). */
export function exportCommand(): Command {
  return new Command('export')
    .description(
      'write the archive out: every bag as one deterministic ZIP (--bags), for a partner or offsite storage, or the site as of a date as one ZIP (--site)',
    )
    .requiredOption('--to <PATH>', 'with --bags, the folder to write into (created if absent); with --site, the ZIP file to write')
    .option('--archive <DIR>', 'the archive folder', './archive')
    .option('--bags', 'each bag as <harvest>-<batch>.zip, unpacking to that one folder, and SHA256SUMS beside them')
    .option('--site', 'the site as oaibag restore rebuilds it, as one ZIP file: every file verified as restore does, with its original mtime')
    .option(
      '--as-of <DATE>',
      'with --site: the state at this instant, as restore: YYYY-MM-DD (the end of that day, UTC) or YYYY-MM-DDThh:mm:ssZ (default: the latest state)',
    )
    .option('--source <BASEURL>', 'only the bags of this source (--bags); only this source, as restore (--site; default: every source)')
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
        '\nEach ZIP is written under a temporary name (.partial), made durable and renamed: an export\n' +
        'stopped half-way leaves no partial ZIP under its final name. Exit codes: 0 written; 1 (--site)\n' +
        'resources were refused as restore refuses them (the ZIP is written without them); 2 usage\n' +
        '(--bags with --site, --to an existing folder with --site, a bad --as-of, an unknown --source\n' +
        'with --site); 4 the archive cannot be read, a payload file is damaged, the file or folder\n' +
        'cannot be written (named). All codes: docs/operations.md.',
    )
    .action(async (options: ExportCommandOptions) => {
      if (options.bags && options.site) throw new ArchiverError('ERR_ARCHIVE_USAGE', '--bags and --site cannot go together: run export once for each');
      if (!options.bags && !options.site) throw new ArchiverError('ERR_ARCHIVE_USAGE', 'say what to export: --bags or --site');
      if (options.asOf !== undefined && !options.site) throw new ArchiverError('ERR_ARCHIVE_USAGE', '--as-of goes with --site: --bags exports every bag');
      if (options.site) return exportSiteCommand(options);
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

/** The summary line of `export --site`: files, bytes, the instant, the ZIP, then restore's counts. */
export function formatSiteSummary(site: ExportedSite): string {
  const { summary } = site;
  return `exported ${summary.restored} files (${summary.bytes} bytes) of ${restoredState(summary)} to ${site.file} (${site.zipBytes} bytes); ${restoreCounts(summary)}`;
}
