import { Command } from 'commander';
import { type FolderChanges, type RestoreCounts, type RestoredFile, type RestoreOptions, type RestoreSummary, restoreSite } from '../restore/restore.js';
import { EXIT_PARTIAL } from './exit-codes.js';

/** `oaibag restore --to DIR`: rebuilds the site from the archive's AIPs (docs/restore.md). */
export function restoreCommand(): Command {
  return new Command('restore')
    .description(
      'rebuild the web site from the archive: every resource live at --as-of, in its version then, at the path its URL gives, with its Last-Modified as mtime',
    )
    .requiredOption('--to <DIR>', 'the folder to rebuild the site in: empty or missing (created), else --force or --clean')
    .option('--archive <DIR>', 'the archive folder', './archive')
    .option('--source <BASEURL>', 'restore only this source (default: every source; with several, each goes under DIR/<host>[_<port>]/)')
    .option('--as-of <DATE>', 'the state at this instant: YYYY-MM-DD (the end of that day, UTC) or YYYY-MM-DDThh:mm:ssZ (default: the latest state)')
    .option('--force', 'restore over a --to that is not empty: files that differ are replaced, files not part of the state are left and listed')
    .option('--clean', 'make a --to that is not empty exactly the state: what is not part of it is removed (never outside --to)')
    .option('--dry-run', 'list what would be written (path, size, version datestamp), and what --force or --clean would do; change nothing')
    .option('--json', 'print the summary as JSON')
    .addHelpText(
      'after',
      '\nEvery byte is checked against the digest the archive recorded for it as it is written; only verified\n' +
        'bytes are renamed into place. Refused URLs, path collisions and damaged payload files are reported on\n' +
        'stderr (one line each) and skipped; the other resources are still restored.\n' +
        '\nExit codes: 0 all restored; 1 some resources were refused, collided, could not be written,\n' +
        'or their bytes are damaged, or --clean could not remove something; 2 usage (bad --as-of, unknown\n' +
        "--source, --to not empty without --force or --clean, --as-of before the archive's first version);\n" +
        '4 the archive cannot be read, or no room was left in --to (ERR_ARCHIVE_FULL: free space, run again).',
    )
    .action(async (options: RestoreCommandOptions) => {
      const terminal = process.stderr.isTTY;
      // A dry run's files go to stdout as the plan is read back, never gathered: the summary
      // around them is written as it would be with them in it.
      const listing = new PlannedListing(options.json === true, (text) => process.stdout.write(text));
      const summary = await restoreSite({
        archiveDir: options.archive,
        to: options.to,
        ...(options.source !== undefined ? { source: options.source } : {}),
        ...(options.asOf !== undefined ? { asOf: options.asOf } : {}),
        dryRun: options.dryRun === true,
        force: options.force === true,
        clean: options.clean === true,
        onPlanned: (file, partial) => listing.add(file, partial),
        ...restoreDisplay(terminal),
      });
      if (terminal) process.stderr.write('\r\x1b[K');
      listing.end(summary);
      if (summary.problems > 0) process.exitCode = EXIT_PARTIAL;
    });
}

/** Where the planned files of a dry run go in the output: the JSON's `planned` list, or the lines before the summary line. */
const PLANNED_SLOT = '\u0000planned\u0000';
/** Output is handed on in pieces of about this many characters. */
const OUTPUT_CHUNK = 64 * 1024;

/**
 * The output of `oaibag restore` written as it comes: the files of a dry run one at a time
 * (text lines, or entries of the JSON's `planned` list, the JSON's head written first), then
 * the rest of the summary. The same text as formatting the whole summary with them in it.
 */
export class PlannedListing {
  private pending = '';
  private started = false;
  private tail = '';

  constructor(
    private readonly json: boolean,
    private readonly write: (text: string) => void,
  ) {}

  add(file: RestoredFile, summary: RestoreSummary): void {
    if (!this.started) {
      this.started = true;
      if (this.json) {
        const whole = JSON.stringify({ ...summary, planned: [PLANNED_SLOT] }, null, 2);
        const slot = whole.indexOf(JSON.stringify(PLANNED_SLOT));
        this.pending = whole.slice(0, slot).replace(/\s*$/, '\n');
        this.tail = whole.slice(whole.indexOf('\n', slot));
      }
    } else if (this.json) this.pending += ',\n';
    this.pending += this.json ? JSON.stringify(file, null, 2).replace(/^/gm, '    ') : plannedLine(file);
    if (this.pending.length >= OUTPUT_CHUNK) this.flush();
  }

  /** The rest: the summary (or, with files listed, what follows them). */
  end(summary: RestoreSummary): void {
    if (!this.started) this.pending = this.json ? `${JSON.stringify(summary, null, 2)}\n` : formatRestoreSummary(summary);
    else if (this.json)
      this.pending += `${this.tail}\n`; // the summary was complete when the first file came
    else this.pending += formatRestoreSummary(summary);
    this.flush();
  }

  private flush(): void {
    if (this.pending !== '') this.write(this.pending);
    this.pending = '';
  }
}

/** One file of a dry run: path (control characters as `?`), bytes, version datestamp. */
function plannedLine(file: RestoredFile): string {
  return `${file.path.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?')}\t${file.size}\t${file.datestamp}\n`;
}

export interface RestoreCommandOptions {
  to: string;
  archive: string;
  source?: string;
  asOf?: string;
  dryRun?: boolean;
  force?: boolean;
  clean?: boolean;
  json?: boolean;
}

/**
 * How a restore (and `export --site`) shows itself on stderr: each problem on one line as it is
 * found and, on a terminal, a progress line redrawn in place (files and megabytes done of the
 * total, rate); the caller clears it at the end.
 */
export function restoreDisplay(terminal: boolean | undefined): Pick<RestoreOptions, 'log' | 'progress'> {
  const started = Date.now();
  return {
    log: (line) => process.stderr.write(`${terminal ? '\r\x1b[K' : ''}oaibag: ${line}\n`),
    ...(terminal
      ? {
          progress: (done: RestoreCounts, total: RestoreCounts) => {
            const seconds = Math.max((Date.now() - started) / 1000, 0.001);
            process.stderr.write(
              `\r\x1b[K${done.files} of ${total.files} files, ${(done.bytes / 1e6).toFixed(1)} of ${(total.bytes / 1e6).toFixed(1)} MB, ${(done.bytes / 1e6 / seconds).toFixed(1)} MB/s`,
            );
          },
        }
      : {}),
  };
}

/** `the latest state` or `the state as of <instant>`. */
export function restoredState(summary: RestoreSummary): string {
  return summary.asOf === null ? 'the latest state' : `the state as of ${summary.asOf}`;
}

/** What was skipped and what went wrong, as the summary line ends. */
export function restoreCounts(summary: RestoreSummary): string {
  return (
    `${summary.deleted} deleted resources skipped; ` +
    (summary.metadataOnly > 0 ? `${summary.metadataOnly} resources without payload (metadata only) skipped; ` : '') +
    `${summary.counts.refused} refused; ${summary.counts.damaged} damaged; ` +
    `${summary.counts.failed} failed` +
    (summary.counts.extraParts > 0 ? `; ${summary.counts.extraParts} compound objects restored by their first part only` : '')
  );
}

/**
 * The human form of a restore's outcome: with --dry-run, one tab-separated line per file
 * (path, bytes, version datestamp) before the summary line; the problems were already printed
 * on stderr as they were found.
 */
export function formatRestoreSummary(summary: RestoreSummary): string {
  const lines = summary.planned.map((file) => plannedLine(file).slice(0, -1));
  const verb = summary.dryRun ? 'would restore' : 'restored';
  lines.push(`${verb} ${summary.restored} files (${summary.bytes} bytes) of ${restoredState(summary)} into ${summary.to}; ${restoreCounts(summary)}`);
  if (summary.folder !== null) lines.push(...folderLines(summary, summary.folder));
  return `${lines.join('\n')}\n`;
}

/** Names shown on a line of text; --json lists them all (up to its own bound). */
const NAMES_SHOWN = 5;

/** A few paths, control characters as `?`, and how many more. */
function someNames(paths: readonly string[], total: number): string {
  const shown = paths.slice(0, NAMES_SHOWN).map((path) => path.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?'));
  return `${shown.join(', ')}${total > shown.length ? ` and ${total - shown.length} more (--json lists them)` : ''}`;
}

const plural = (count: number, noun: string): string => `${count} ${noun}${count === 1 ? '' : 's'}`;

/** What a restore into a folder that was not empty replaced, left or removed there (lines after the summary). */
function folderLines(summary: RestoreSummary, folder: FolderChanges): string[] {
  const lines: string[] = [];
  const would = summary.dryRun ? 'would ' : '';
  if (summary.counts.replaced > 0) {
    const paths = folder.replaced.slice(0, NAMES_SHOWN).map((file) => file.path);
    lines.push(
      `${would}${summary.dryRun ? 'replace' : 'replaced'} ${plural(summary.counts.replaced, 'file')} that differed from this state: ${someNames(paths, summary.counts.replaced)}`,
    );
  }
  if (folder.extra > 0 || folder.extraFolders > 0) {
    const what = `${plural(folder.extra, 'file')}${folder.extraFolders > 0 ? ` and ${plural(folder.extraFolders, 'folder')}` : ''} not part of this state`;
    const names = folder.extra > 0 ? `: ${someNames(folder.extraPaths, folder.extra)}` : '';
    if (folder.mode === 'clean') lines.push(`${would}${summary.dryRun ? 'remove' : 'removed'} ${what} from ${summary.to}${names}`);
    else lines.push(`${would}${summary.dryRun ? 'leave' : 'left'} ${what} in ${summary.to}${names}`);
  }
  return lines;
}
