import { Command } from 'commander';
import { formatRepairReport, repairArchive } from '../repair/repair-archive.js';
import { EXIT_ARCHIVE } from './exit-codes.js';
import { wholeNumber } from './option-parsers.js';
import { stopSignal } from './stop-signal.js';

/** `oaibag repair`: damaged payload files put back from a replica or the source (docs/repair.md). */
export function repairCommand(): Command {
  return new Command('repair')
    .description('check the archive, then put back each damaged or missing payload file from a replica (--from) or the source, only bytes the manifests name')
    .option('--archive <DIR>', 'the archive folder', './archive')
    .option(
      '--from <REPLICA>',
      'a replica: another archive folder, a ZIP of oaibag export --bags, or a folder of them (repeatable, tried in order)',
      collect,
      [],
    )
    .option('--no-source', 'never ask the source for its current copy of By-Reference bytes')
    .option('--allow-private-refs', "let the source's By-Reference URLs lead to private addresses, as harvest --allow-private-refs")
    .option('--dry-run', 'find and check the bytes, write nothing')
    .option('--jobs <N>', 'bags verified at once by the fixity check (default: the number of cores)', wholeNumber)
    .option('--json', 'print the report as JSON')
    .addHelpText(
      'after',
      '\nRuns the fixity check of `oaibag verify`, then, for each payload file damaged or missing,\n' +
        'looks for bytes with its recorded sha-256 in each --from (in order), then at the source\n' +
        '(the By-Reference URL the catalog recorded, fetched as a harvest fetches). Bytes are written\n' +
        'to a temporary name beside the file, and renamed into place only when their size and every\n' +
        "manifest digest are the bag's. A missing bag is copied back whole from a --from archive\n" +
        'folder when every check of it passes. One PREMIS "recovery" event per file; the bags written\n' +
        'into are checked again and the result recorded. Holds the archive lock while writing.\n' +
        '\nExit codes: 0 the archive is intact afterwards; 4 damage remains (each named) or the archive\n' +
        'cannot be written; 2 usage (a --from that is not a replica).',
    )
    .action(
      async (options: { archive: string; from: string[]; source: boolean; allowPrivateRefs?: boolean; dryRun?: boolean; jobs?: number; json?: boolean }) => {
        const stop = stopSignal(() => process.stderr.write('oaibag: stopping after the file being repaired\n'));
        try {
          const report = await repairArchive({
            archiveDir: options.archive,
            from: options.from,
            source: options.source,
            dryRun: options.dryRun === true,
            signal: stop.signal,
            ...(options.allowPrivateRefs === true ? { allowPrivateRefs: true } : {}),
            ...(options.jobs !== undefined ? { jobs: options.jobs } : {}),
          });
          process.stdout.write(options.json ? `${JSON.stringify(report, null, 2)}\n` : formatRepairReport(report));
          if (!report.ok) process.exitCode = EXIT_ARCHIVE;
        } finally {
          stop.dispose();
        }
      },
    );
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}
