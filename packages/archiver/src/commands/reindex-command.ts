import { Command } from 'commander';
import { reindexArchive } from '../reindex/reindex.js';

/** `oaibag reindex`: rebuilds the catalog from the bags alone (docs/aip-profile.md). */
export function reindexCommand(): Command {
  return new Command('reindex')
    .description("rebuild the catalog (catalog.sqlite) from the archive's bags alone")
    .option('--archive <DIR>', 'the archive folder', './archive')
    .option('--force', 'replace an existing catalog; the old one is kept beside it as catalog.sqlite.<time>')
    .option('--json', 'print the summary as JSON')
    .addHelpText(
      'after',
      '\nThe bags are the archive and the catalog only indexes them: reindex reads every batch bag\n' +
        '(bag-info.txt and metadata/records.xml.gz) in the order written and records its sources,\n' +
        "harvests, resources, versions, deletions and payload files, the watermark of each source's\n" +
        'last complete list and its saved resumption token. audit, restore, urls and status then answer\n' +
        'as before, and the next harvest continues from the right place. Failures and verify events\n' +
        'live only in the catalog and are not rebuilt; a harvest that stored nothing wrote no bag.\n' +
        '\nThe new catalog is written under a temporary name and renamed into place when every bag was\n' +
        'read: a reindex that fails changes nothing. Holds the archive lock.\n' +
        '\nExit codes: 0 rebuilt; 2 usage (a catalog exists and --force was not given); 4 a bag\n' +
        'cannot be read (named), or the archive is locked or read-only. All codes: docs/operations.md.',
    )
    .action(async (options: { archive: string; force?: boolean; json?: boolean }) => {
      const terminal = process.stderr.isTTY;
      const summary = await reindexArchive({
        archiveDir: options.archive,
        force: options.force === true,
        ...(terminal ? { progress: (done: number, total: number) => process.stderr.write(`\r\x1b[K${done} of ${total} bags`) } : {}),
      });
      if (terminal) process.stderr.write('\r\x1b[K');
      if (summary.scheduleLost !== undefined) {
        process.stderr.write(
          `oaibag: the sources scheduled in the replaced catalog could not be read (${summary.scheduleLost}): add them again with oaibag sources add\n`,
        );
      }
      if (options.json) {
        process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
        return;
      }
      process.stdout.write(
        `rebuilt ${summary.catalog} from ${summary.bags} bag(s) in ${summary.seconds.toFixed(1)} s: ` +
          `${summary.sources} source(s), ${summary.harvests} harvest(s), ${summary.versions} version(s), ${summary.deletions} deletion(s)\n` +
          (summary.keptAs ? `the catalog it replaced is kept as ${summary.keptAs}\n` : ''),
      );
    });
}
