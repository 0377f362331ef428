import { Command, InvalidArgumentError } from 'commander';
import { DEFAULT_DELIVERY_LIMITS, type DeliveryLimits } from '../import/delivery.js';
import { DELIVERY_KINDS, type DeliveryKind } from '../import/delivery-kind.js';
import { importDelivery } from '../import/import-delivery.js';
import type { ImportSummary } from '../import/import-options.js';
import { DEFAULT_BATCH_BOUNDS } from '../ingest/batch-bounds.js';
import { EXIT_INTERRUPTED, EXIT_PARTIAL } from './exit-codes.js';
import { byteSize, httpUrl, wholeNumber } from './option-parsers.js';
import { stopSignal } from './stop-signal.js';

interface ImportCommandOptions {
  archive: string;
  kind?: DeliveryKind;
  baseUrl?: string;
  source?: string;
  sourceName?: string;
  until?: string;
  maxEntries?: number;
  maxEntrySize?: number;
  maxTotalSize?: number;
  maxRatio?: number;
  concurrency: number;
  batchRecords?: number;
  json?: boolean;
}

/** `oaibag import DELIVERY`: an out-of-band delivery into the archive (docs/import-export.md). */
export function importCommand(): Command {
  return new Command('import')
    .description("take an out-of-band delivery (a ZIP or a folder: a web site's files, DIDL records, or bags from oaibag export) into the archive")
    .argument('<DELIVERY>', 'the ZIP file or folder delivered')
    .option('--archive <DIR>', 'the archive folder (created when missing)', './archive')
    .option('--kind <KIND>', 'what the delivery holds: site, didl or bags (default: told from its contents)', deliveryKind)
    .option('--base-url <URL>', "a site's files: the URL their paths are relative to (each file's identifier is this URL and its path)", httpUrl('--base-url'))
    .option(
      '--source <URL>',
      "the OAI-PMH base URL the delivery stands for; harvesting it later continues the import (default: a site's --base-url followed by /oai, where oaibag-repository answers; the saved responses' request URL)",
      httpUrl('--source'),
    )
    .option('--source-name <NAME>', 'the name of that repository, for a source the archive does not know yet')
    .option(
      '--until <DATE>',
      "the delivery's cut-off (YYYY-MM-DD or YYYY-MM-DDThh:mm:ssZ): it holds the source's changes up to then, so the first harvest asks only what changed after it",
    )
    .option('--max-entries <N>', `refuse a delivery of more files (default ${DEFAULT_DELIVERY_LIMITS.maxEntries})`, wholeNumber)
    .option('--max-entry-size <SIZE>', `refuse a file larger than this, uncompressed (default ${gib(DEFAULT_DELIVERY_LIMITS.maxEntryBytes)})`, byteSize)
    .option('--max-total-size <SIZE>', `refuse a delivery larger than this, uncompressed (default ${gib(DEFAULT_DELIVERY_LIMITS.maxTotalBytes)})`, byteSize)
    .option(
      '--max-ratio <N>',
      `refuse a ZIP that inflates more than N times, per file (of 1 MiB or more) or in all (default ${DEFAULT_DELIVERY_LIMITS.maxRatio})`,
      wholeNumber,
    )
    .option('--concurrency <N>', 'records stored at once', wholeNumber, 4)
    .option('--batch-records <N>', 'seal a batch bag after the file that brings it to N records (default 1000)', wholeNumber)
    .option('--json', 'print the summary as JSON')
    .addHelpText(
      'after',
      '\nThe whole delivery is screened before anything is stored: a name that would land outside it\n' +
        '(.., an absolute path, a backslash, a drive letter), a symbolic link, two names equal after\n' +
        'Unicode NFC, an encrypted entry, a CRC or size mismatch, or a delivery over one of the caps\n' +
        'is refused with one line naming the entry (ERR_IMPORT_UNSAFE, ERR_IMPORT_DAMAGED). A ZIP\n' +
        'inside the delivery is a file like any other, never unpacked.\n' +
        "\nA site's files become the records oaibag-repository would give for them (identifier, datestamp\n" +
        'from the modification time, MIME type, its export rules: hidden, backup and server-side script\n' +
        'files are not resources). DIDL records (DIDL documents, saved ListRecords or GetRecord\n' +
        'responses) are read as a harvest reads them. Both are verified and bagged as a harvest does,\n' +
        "with the delivery's name, size and sha-256 in every bag. Bags from oaibag export are verified\n" +
        'in full and adopted as they are, at the place their name gives.\n' +
        "\nWith --until, a complete import sets the source's watermark to the second after the cut-off\n" +
        '(never back: a later one is kept), so that `oaibag harvest SOURCE` asks from= it, as a mirror\n' +
        'that took its bulk out of band continues. Files whose mode gives nobody read permission\n' +
        '(mode 000) are left out, as the repository leaves them out.\n' +
        '\nExit codes: 0 imported; 1 some records failed (named); 2 usage; 3 the delivery refused or\n' +
        'damaged; 4 an archive problem (full, locked, read-only); 130 stopped by SIGINT/SIGTERM (what was stored\n' +
        'is kept; the same command continues).',
    )
    .action(async (deliveryPath: string, options: ImportCommandOptions) => {
      const terminal = process.stderr.isTTY;
      const stop = stopSignal((name) =>
        process.stderr.write(`${terminal ? '\r\x1b[K' : ''}oaibag: ${name}: finishing the records in progress, then stopping\n`),
      );
      const limits: Partial<DeliveryLimits> = {
        ...(options.maxEntries !== undefined ? { maxEntries: options.maxEntries } : {}),
        ...(options.maxEntrySize !== undefined ? { maxEntryBytes: options.maxEntrySize } : {}),
        ...(options.maxTotalSize !== undefined ? { maxTotalBytes: options.maxTotalSize } : {}),
        ...(options.maxRatio !== undefined ? { maxRatio: options.maxRatio } : {}),
      };
      const summary = await importDelivery({
        archiveDir: options.archive,
        delivery: deliveryPath,
        signal: stop.signal,
        limits,
        concurrency: options.concurrency,
        ...(options.batchRecords !== undefined ? { batchBounds: { ...DEFAULT_BATCH_BOUNDS, records: options.batchRecords } } : {}),
        ...(options.kind ? { kind: options.kind } : {}),
        ...(options.baseUrl !== undefined ? { baseUrl: options.baseUrl } : {}),
        ...(options.source !== undefined ? { source: options.source } : {}),
        ...(options.sourceName !== undefined ? { sourceName: options.sourceName } : {}),
        ...(options.until !== undefined ? { until: options.until } : {}),
        log: (line) => process.stderr.write(`${terminal ? '\r\x1b[K' : ''}oaibag: ${line}\n`),
        ...(terminal
          ? {
              progress: (step) =>
                process.stderr.write(
                  step.stage === 'screening'
                    ? `\r\x1b[Kscreening: ${(step.done / 1e6).toFixed(1)} of ${(step.total / 1e6).toFixed(1)} MB`
                    : `\r\x1b[K${step.done} of ${step.total} files, ${step.counts.records} records, ${(step.counts.bytes / 1e6).toFixed(1)} MB stored`,
                ),
            }
          : {}),
      }).finally(() => stop.dispose());
      if (terminal) process.stderr.write('\r\x1b[K');
      process.stdout.write(options.json ? `${JSON.stringify(summary, null, 2)}\n` : formatImportSummary(summary));
      if (summary.status === 'interrupted') process.exitCode = EXIT_INTERRUPTED;
      else if (summary.failed > 0) process.exitCode = EXIT_PARTIAL;
    });
}

function deliveryKind(value: string): DeliveryKind {
  if ((DELIVERY_KINDS as readonly string[]).includes(value)) return value as DeliveryKind;
  throw new InvalidArgumentError(`expected ${DELIVERY_KINDS.join(', ')}`);
}

function gib(bytes: number): string {
  return bytes >= 1024 ** 4 ? `${bytes / 1024 ** 4}T` : `${bytes / 1024 ** 3}G`;
}

export function formatImportSummary(summary: ImportSummary): string {
  const { delivery } = summary;
  const what =
    summary.kind === 'bags'
      ? `${summary.bags} bag(s) adopted (${summary.added} versions, ${summary.deleted} deletions)`
      : `${summary.records} records (${summary.added} added, ${summary.modified} modified, ${summary.touched} touched, ${summary.failed} failed)` +
        `${summary.skipped > 0 ? `, ${summary.skipped} files not resources` : ''}, ${summary.bytes} bytes of payload in ${summary.bags} bag(s)`;
  return (
    `import${summary.importId !== null ? ` #${summary.importId}` : ''} ${summary.status}: ${delivery.name} (${delivery.kind}, ${delivery.size} bytes, sha-256 ${delivery.sha256}) ` +
    `for ${summary.source}: ${what}` +
    `${summary.kind !== 'bags' && summary.watermark !== null ? `; next harvest from ${summary.watermark}` : ''}\n`
  );
}
