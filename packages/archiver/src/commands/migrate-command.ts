import { Command } from 'commander';
import { parseDuration } from '../core/duration.js';
import { migrateArchive } from '../migrate/migrate-archive.js';

interface MigrateCommandOptions {
  archive: string;
  toCatalog: string;
  toStore: string;
  storeEndpoint?: string;
  storeRegion?: string;
  retain?: string;
  json?: boolean;
}

/** `oaibag migrate`: moves a folder archive (aips/ and catalog.sqlite) onto an object store and PostgreSQL (docs/scale-out.md). */
export function migrateCommand(): Command {
  return new Command('migrate')
    .description("move an archive's bags onto S3-compatible object storage and its catalog into PostgreSQL")
    .option('--archive <DIR>', 'the archive folder (its bags in aips/, its catalog in catalog.sqlite)', './archive')
    .requiredOption('--to-catalog <URL>', 'the PostgreSQL catalog to move to: postgres://USER@HOST:PORT/DATABASE, an empty database')
    .requiredOption('--to-store <URL>', 'the object store to move the bags to: s3://BUCKET/PREFIX, a prefix that holds no bags')
    .option('--store-endpoint <URL>', "the S3 endpoint of a store other than AWS's (default: $AWS_ENDPOINT_URL_S3 or $AWS_ENDPOINT_URL)")
    .option('--store-region <REGION>', 'the region requests are signed for (default: $AWS_REGION, else us-east-1)')
    .option('--retain <DURATION>', 'keep every object under S3 Object Lock (COMPLIANCE) this long from the migration’s start, e.g. 3650d')
    .option('--json', 'print the summary as JSON')
    .addHelpText(
      'after',
      '\nEvery bag is verified, committed on the store under its own name (claim, objects, commit\n' +
        'record) and each object read back and checked by its SHA-256. Then the catalog is copied\n' +
        'row for row into PostgreSQL, and only then does the archive folder switch to both\n' +
        '(locations.json). Killed at any point, the same command finishes the job. aips/ and\n' +
        'catalog.sqlite are left in the folder: remove them once you have checked the archive.\n' +
        'Holds the archive lock. Credentials come from the AWS SDK and PostgreSQL usual places.\n' +
        '\nExit codes: 0 migrated; 2 usage (the archive is on a store already, the catalog is not\n' +
        'empty, the store prefix holds bags); 4 the archive is locked, a bag is damaged, the store\n' +
        'or the catalog failed. All codes: docs/operations.md.',
    )
    .action(async (options: MigrateCommandOptions) => {
      const terminal = process.stderr.isTTY;
      const summary = await migrateArchive({
        archiveDir: options.archive,
        catalog: options.toCatalog,
        store: {
          url: options.toStore,
          endpoint: options.storeEndpoint,
          region: options.storeRegion,
          retainMs: options.retain === undefined ? undefined : parseDuration(options.retain, '--retain'),
        },
        ...(terminal ? { progress: (done: number, total: number) => process.stderr.write(`\r\x1b[K${done} of ${total} bags`) } : {}),
      });
      if (terminal) process.stderr.write('\r\x1b[K');
      if (options.json) {
        process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
        return;
      }
      const rows = Object.values(summary.rows).reduce((sum, n) => sum + n, 0);
      process.stdout.write(
        `migrated ${summary.archive} in ${summary.seconds.toFixed(1)} s: ${summary.bags} bag(s) on ${summary.store} ` +
          `(${summary.copied} copied, ${summary.present} there already), ` +
          `${summary.resumed && rows === 0 ? 'the catalog copied before' : `${rows} catalog row(s)`} in ${summary.catalog}\n` +
          `the folder now uses both; its aips/ and ${'catalog.sqlite'} are left in place: remove them once checked\n`,
      );
    });
}
