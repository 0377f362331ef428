import { Command } from 'commander';
import { sendNotice } from '../health/notify.js';
import { formatVerifyReport, verifyArchive } from '../verify/verify-archive.js';
import { verifyZipBag } from '../verify/verify-zip-bag.js';
import { EXIT_ARCHIVE } from './exit-codes.js';
import { notifyFromOptions, withNotifyOptions } from './notify-options.js';
import { wholeNumber } from './option-parsers.js';

/** `oaibag verify`: the fixity check of an archive (docs/verify.md). */
export function verifyCommand(): Command {
  return withNotifyOptions(new Command('verify'))
    .description('check the fixity of the archive: every bag checked for completeness and (unless --fast) every checksum recomputed')
    .option('--archive <DIR>', 'the archive folder', './archive')
    .option('--fast', 'check completeness, sizes and Payload-Oxum only (no checksums)')
    .option('--jobs <N>', 'bags verified at once, one worker thread each (default: the number of cores)', wholeNumber)
    .option('--json', 'print the report as JSON')
    .option('--no-record', 'record nothing in the catalog (no events, no summary): the check of a read-only archive')
    .option('--bag <FILE.zip>', 'check one serialized bag (oaibag export --bags) in place, without unpacking it')
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
        '\n--no-record writes nothing: the catalog is opened read-only and the lock is taken only if\n' +
        'the archive folder can be written, so a read-only snapshot or offsite copy can be checked.\n' +
        '\n--bag FILE.zip checks a serialized bag (oaibag export --bags) in place, read with yauzl: one\n' +
        'folder, no link, no encrypted entry, no name twice, every manifest line, Payload-Oxum and the\n' +
        'tag manifest; every bad entry named.\n' +
        '\nExit codes: 0 everything intact; 2 usage; 4 something is wrong (damage, each named; then\n' +
        'run oaibag repair on a folder; on a store, see docs/scale-out.md), or the archive is locked or\n' +
        'read-only without --no-record.\n' +
        '--on-failure/--notify tell of damage as mirror tells of a failed run (docs/operations.md).',
    )
    .action(
      async (options: {
        archive: string;
        fast?: boolean;
        jobs?: number;
        json?: boolean;
        bag?: string;
        record: boolean;
        onFailure?: string;
        notify?: string;
      }) => {
        if (options.bag !== undefined) {
          const zip = await verifyZipBag(options.bag);
          if (options.json) process.stdout.write(`${JSON.stringify(zip, null, 2)}\n`);
          else {
            for (const problem of zip.problems) process.stdout.write(`${problem}\n`);
            process.stdout.write(
              `${zip.file}: ${zip.ok ? 'a valid bag' : `${zip.problems.length} problem(s)`} (${zip.folder ?? 'no single folder'}, ${zip.entries} files, ` +
                `${zip.payloadFiles} payload files, ${zip.payloadBytes} bytes)\n`,
            );
          }
          if (!zip.ok) process.exitCode = EXIT_ARCHIVE;
          return;
        }
        const terminal = process.stderr.isTTY;
        const report = await verifyArchive({
          archiveDir: options.archive,
          fast: options.fast === true,
          record: options.record,
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
        if (!report.ok) process.exitCode = EXIT_ARCHIVE;
        const notify = notifyFromOptions(options, (line) => process.stderr.write(`oaibag: ${line}\n`));
        if (!report.ok && notify) {
          const first = report.problems[0]?.message;
          await sendNotice(
            {
              event: 'verify',
              archive: options.archive,
              outcome: 'damaged',
              reason: `${report.problems.length} problem(s) in ${report.damaged + report.missingBags} bag(s)${first ? `, first: ${first}` : ''}`,
              damaged: report.problems.length,
              at: new Date().toISOString(),
            },
            notify,
          );
        }
      },
    );
}
