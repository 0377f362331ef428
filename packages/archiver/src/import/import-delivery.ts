// `oaibag import`: an out-of-band delivery (a ZIP or a folder) taken into the archive through the
// same verification and packaging as a harvest (docs/import-export.md). The archive is locked,
// then the delivery screened whole (screen-delivery.ts: hostile names, links, bombs, CRCs), so a
// refused one stores nothing; only then is the catalog opened. A web site's files and DIDL
// records are stored as one run of kind import (import-records.ts); serialized bags are adopted
// as they are (adopt-bags.ts).
import { basename } from 'node:path';
import { ArchiverError } from '../core/errors.js';
import { harvestMemoryBudget } from '../ingest/incoming-file.js';
import { ingestConcurrency } from '../ingest/ingest-context.js';
import { type IngestSession, lockForIngest, openIngestSession } from '../ingest/ingest-session.js';
import { adoptBags } from './adopt-bags.js';
import { deliveryCutOff } from './delivery-cut-off.js';
import type { ImportOptions, ImportSummary } from './import-options.js';
import { importRecords } from './import-records.js';
import { screenDelivery } from './screen-delivery.js';
import { siteBaseUrl } from './site-record.js';

export async function importDelivery(options: ImportOptions): Promise<ImportSummary> {
  const log = options.log ?? (() => undefined);
  const concurrency = ingestConcurrency(options.concurrency);
  const given = httpUrl(options.baseUrl, '--base-url');
  const siteBase = given === undefined ? undefined : siteBaseUrl(given);
  httpUrl(options.source, '--source');
  const cutOff = options.until === undefined ? undefined : deliveryCutOff(options.until);
  if (options.kind === 'site' && siteBase === undefined) {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', "--kind site needs --base-url, the URL the site's paths are relative to");
  }
  const budget = harvestMemoryBudget();
  // Screened and recognised under the archive's lock, before its catalog is opened: a refused
  // delivery, or one this import cannot take, leaves nothing (an archive folder this import
  // made is removed again).
  const lock = await lockForIngest(options.archiveDir, `import ${basename(options.delivery)}`);
  const screened = await screenDelivery(options, siteBase, cutOff, budget).catch(async (error: unknown) => {
    await lock.abandon();
    throw error;
  });
  let session: IngestSession;
  try {
    session = await openIngestSession(lock, log);
  } catch (error) {
    await screened.close();
    throw error;
  }
  try {
    if (screened.facts.kind === 'bags') return await adoptBags(session, screened.delivery, screened.facts, { ...options, log }, screened.bagZip);
    return await importRecords(session, screened, { ...options, log, concurrency, budget, siteBase, cutOff });
  } finally {
    await screened.close();
    await session.close();
  }
}

/** `value` when it is an http(s) URL; a usage error naming `option` otherwise. */
function httpUrl(value: string | undefined, option: string): string | undefined {
  if (value === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `${option} ${JSON.stringify(value)} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ArchiverError('ERR_ARCHIVE_USAGE', `${option} ${value} is not an http(s) URL`);
  return value;
}
