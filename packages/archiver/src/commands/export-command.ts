import { Command } from 'commander';
import { ArchiverError } from '../core/errors.js';
import { exportBags } from '../export/export-bags.js';

/** `oaibag export --bags`: the archive's bags as serialized bags (docs/import-export.md). */
export function exportCommand(): Command {
  return new Command('export')
    .description('write the archive out: every bag as one deterministic ZIP (--bags), for a partner or offsite storage')
    .requiredOption('--to <DIR>', 'the folder to write into (created if absent)')
    .option('--archive <DIR>', 'the archive folder', './archive')
    .option('--bags', 'each bag as <harvest>-<batch>.zip, unpacking to that one folder, and SHA256SUMS beside them')
    .option('--source <BASEURL>', 'only the bags of this source')
    .addHelpText(
      'after',
      "\nThe same bag always gives the same bytes (entries in a fixed order, the bag's Bagged-At as every\n" +
        'time, mode 0644, every entry stored, ZIP64 past 4 GB), so a partner compares SHA-256s with\n' +
        'SHA256SUMS. Each ZIP is written under a temporary name, made durable and renamed: an export\n' +
        'stopped half-way leaves no partial ZIP under its final name. Exit codes: 0 written; 1 the\n' +
        'archive cannot be read or the folder written (named); 2 usage.',
    )
    .action(async (options: { to: string; archive: string; bags?: boolean; source?: string }) => {
      if (!options.bags) throw new ArchiverError('ERR_ARCHIVE_USAGE', 'say what to export: --bags');
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
