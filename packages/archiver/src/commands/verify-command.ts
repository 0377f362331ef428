import { Command } from 'commander';
import { formatVerifyReport, verifyArchive } from '../verify/verify-archive.js';
import { EXIT_PROBLEMS } from './exit-codes.js';
import { wholeNumber } from './option-parsers.js';

/** `oaibag verify`: the fixity check of an archive (docs/verify.md). */
export function verifyCommand(): Command {
  return new Command('verify')
    .description('check the fixity of the archive: every bag checked for completeness and (unless --fast) every checksum recomputed')
    .option('--archive <DIR>', 'the archive folder', './archive')
    .option('--fast', 'check completeness, sizes and Payload-Oxum only (no checksums)')
    .option('--jobs <N>', 'bags verified at once, one worker thread each (default: the number of cores)', wholeNumber)
    .option('--json', 'print the report as JSON')
    .addHelpText(
      'after',
      '\nEach problem is one line naming the bag and the file (missing, unexpected, checksum with\n' +
        'expected and found, size against the catalog, Payload-Oxum). Under a damaged or missing payload\n' +
        'file, one line per version relying on it: the version that brought the bytes and every later\n' +
        'revisit of them ("relied on by <identifier> (datestamp <d>), a revisit recorded in <bag>").\n' +
        'A catalogued bag not on disk is a missing-bag (every version whose record or bytes were in it\n' +
        'is named), a bag in aips/harvest-<n>/batch-<n> the catalog does not list an uncatalogued-bag.\n' +
        'One PREMIS "fixity check" event per bag is written to the catalog (never into the bags).\n' +
        'Holds the archive lock: no harvest meanwhile.\n' +
        '\nExit codes: 0 everything intact; 1 something is wrong (or the archive is locked); 2 usage.',
    )
    .action(async (options: { archive: string; fast?: boolean; jobs?: number; json?: boolean }) => {
      const terminal = process.stderr.isTTY;
      const report = await verifyArchive({
        archiveDir: options.archive,
        fast: options.fast === true,
        ...(options.jobs !== undefined ? { jobs: options.jobs } : {}),
        ...(terminal
          ? {
              progress: (done: number, total: number, bytes: number) =>
                process.stderr.write(`\r\x1b[K${done} of ${total} bags, ${(bytes / 1e6).toFixed(1)} MB`),
            }
          : {}),
      });
      if (terminal) process.stderr.write('\r\x1b[K');
      process.stdout.write(options.json ? `${JSON.stringify(report, null, 2)}\n` : formatVerifyReport(report));
      if (!report.ok) process.exitCode = EXIT_PROBLEMS;
    });
}
