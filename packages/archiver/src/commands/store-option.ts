// `--store s3://BUCKET/PREFIX` (with --store-endpoint, --store-region, --retain) on every
// command that opens an archive (docs/scale-out.md): the archive's bags on S3-compatible object
// storage. Default: OAIBAG_STORE, else the store the folder keeps (archive/archive-locations.ts).
// Credentials come from the AWS SDK's usual places (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY,
// a profile). The commands that only read bags (restore, verify, serve, export, export-rdf) read
// them through the store without probing it, so credentials that may only read will do. `repair`
// refuses an archive on a store: it rewrites files of bags in place, and a committed bag's
// objects are never rewritten (docs/scale-out.md, "What repair does not do on a store").
import type { Command } from 'commander';
import { notOnObjectStorage, storeLocation, useStoreAt } from '../archive/archive-locations.js';
import { parseDuration } from '../core/duration.js';
import { ArchiverError } from '../core/errors.js';

/** The commands that only read an archive: they leave its folder as it is. */
const READING = new Set(['status', 'audit', 'restore', 'export', 'export-rdf', 'serve', 'urls']);
/** The commands that do not work on object storage, and why (docs/scale-out.md). */
const FOLDER_ONLY = new Map([['repair', 'it rewrites damaged files of bags in place, and a committed bag on a store is never rewritten']]);

export interface StoreOptions {
  store?: string;
  storeEndpoint?: string;
  storeRegion?: string;
  retain?: string;
}

export function withStoreOptions(command: Command): Command {
  return command
    .option(
      '--store <URL>',
      "the bags on S3-compatible object storage (s3://BUCKET/PREFIX; default: $OAIBAG_STORE, else the one the archive folder keeps, else the folder's aips/)",
    )
    .option('--store-endpoint <URL>', "with --store: the S3 endpoint of a store other than AWS's (default: $AWS_ENDPOINT_URL_S3 or $AWS_ENDPOINT_URL)")
    .option('--store-region <REGION>', 'with --store: the region requests are signed for (default: $AWS_REGION, else us-east-1)')
    .option('--retain <DURATION>', 'with --store: keep every object committed under S3 Object Lock (COMPLIANCE) this long, e.g. 3650d');
}

export async function applyStoreOptions(command: string, archiveDir: string, options: StoreOptions): Promise<void> {
  const url = options.store ?? (process.env.OAIBAG_STORE || undefined);
  if (url === undefined) {
    if (options.storeEndpoint !== undefined || options.storeRegion !== undefined || options.retain !== undefined) {
      throw new ArchiverError('ERR_ARCHIVE_USAGE', '--store-endpoint, --store-region and --retain need --store');
    }
  } else {
    await useStoreAt(
      archiveDir,
      {
        url,
        endpoint: options.storeEndpoint,
        region: options.storeRegion,
        retainMs: options.retain === undefined ? undefined : parseDuration(options.retain, '--retain'),
      },
      !READING.has(command),
    );
  }
  const why = FOLDER_ONLY.get(command);
  if (why !== undefined && storeLocation(archiveDir) !== undefined) throw notOnObjectStorage(`oaibag ${command}`, archiveDir, why);
}
