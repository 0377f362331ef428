// An import of a site's files or of DIDL records: one run of kind import (ingest/) of the source
// the delivery stands for, its records stored as a harvest stores its pages into batch bags that
// name the delivery (its name, size and sha-256, a PREMIS accession event). With a cut-off
// (`--until`) a complete import sets the source's watermark to the second after it, so the first
// harvest asks only what changed since; without it the next harvest lists everything and
// recognises what was imported (same identifier, datestamp and bytes: nothing new).
import { isStorageExhausted } from '../core/errors.js';
import type { MemoryBudget } from '../ingest/incoming-file.js';
import { IngestRun } from '../ingest/ingest-run.js';
import type { IngestSession } from '../ingest/ingest-session.js';
import { RunRow } from '../ingest/run-row.js';
import { OaiClient } from '../oai/oai-client.js';
import { type DeliveryCutOff, movesWatermark } from './delivery-cut-off.js';
import { DeliveryRecords } from './delivery-records.js';
import type { ImportOptions, ImportSummary } from './import-options.js';
import type { ScreenedDelivery } from './screen-delivery.js';

/** The import's options with what importDelivery settled. */
export interface RecordsImport extends ImportOptions {
  log: (line: string) => void;
  concurrency: number;
  budget: MemoryBudget;
  /** A site's base URL, normalized as the repository normalizes its own. */
  siteBase: string | undefined;
  cutOff: DeliveryCutOff | undefined;
}

/** Stores the records of a screened delivery (a site's files, DIDL records) as one import run. */
export async function importRecords(session: IngestSession, screened: ScreenedDelivery, options: RecordsImport): Promise<ImportSummary> {
  const sourceUrl = screened.source!;
  // A delivery's file of DIDL records is one "page" however many records it holds: the page
  // bounds of a harvest are not the import's (its own are the delivery's caps, checked first).
  const client = new OaiClient(sourceUrl, {
    ...(options.signal ? { signal: options.signal } : {}),
    limits: { pageRecords: Number.MAX_SAFE_INTEGER, pageParts: Number.MAX_SAFE_INTEGER, pageXmlBytes: Number.MAX_SAFE_INTEGER },
  });
  try {
    const { catalog } = session;
    const { cutOff } = options;
    const source = catalog.ensureSource(sourceUrl, options.sourceName ?? null);
    const row = RunRow.open(catalog, source.id, 'import', { prefix: 'oai_didl', delivery: screened.facts, ...(cutOff ? { until: cutOff.until } : {}) });
    const run = new IngestRun(session, row, {
      client,
      baseUrl: sourceUrl,
      repositoryName: source.repositoryName ?? sourceUrl,
      prefix: 'oai_didl',
      from: null,
      until: cutOff?.until ?? null,
      set: null,
      delivery: screened.facts,
      ...(options.batchBounds ? { bounds: options.batchBounds } : {}),
      concurrency: options.concurrency,
      budget: options.budget,
      ...(options.signal ? { signal: options.signal } : {}),
      log: options.log,
    });
    return await takeDelivery(run, new DeliveryRecords(run, screened, options.siteBase, options.progress), screened, options);
  } finally {
    await client.close();
  }
}

/**
 * Takes the delivery's files into the run and closes it: the last batch committed with the
 * import's end (and the watermark of a cut-off); on failure, what the batch holds (whole
 * records, verified) committed, the rerun recognising it, and the failure booked.
 */
async function takeDelivery(run: IngestRun, records: DeliveryRecords, screened: ScreenedDelivery, options: RecordsImport): Promise<ImportSummary> {
  const { catalog, baseUrl: sourceUrl } = run.context;
  const { cutOff, log } = options;
  try {
    await records.takeAll(options.signal);
    const stopped = options.signal?.aborted === true;
    const status = stopped ? 'interrupted' : run.counts.failed > 0 ? 'partial' : 'complete';
    const watermark = status === 'complete' ? watermarkToSet(catalog.source(sourceUrl)?.watermark ?? null, cutOff, log) : undefined;
    // The list's end, and for a cut-off the watermark: set in the last batch's transaction and
    // written into its bag as its List-Response-Date (the `from` of the next harvest, as a
    // harvest's list leaves it), so that reindex sets it again.
    await run.commit({
      listResponseDate: watermark ?? null,
      ...(status !== 'interrupted' ? { listEnd: status } : {}),
      ...(watermark !== undefined ? { watermark } : {}),
    });
    run.finish(status);
    if (stopped) log('stopped on request; importing the same delivery again continues it');
    else if (cutOff && status === 'partial')
      log(`some records failed: the watermark is not set (--until ${cutOff.until}), so the next harvest lists everything`);
    const { facts } = screened;
    const now = catalog.source(sourceUrl)?.watermark ?? null;
    return {
      importId: run.id,
      kind: facts.kind,
      delivery: facts,
      source: sourceUrl,
      status,
      watermark: now,
      skipped: records.skipped,
      bags: run.bags,
      ...run.counts,
    };
  } catch (error) {
    await records.discard();
    const settled = await run.settle();
    // A full disk is the import's story; else the batch's own failure, when it could not be kept.
    throw run.fail(isStorageExhausted(error) ? error : (settled ?? error), 'store');
  }
}

/**
 * The watermark a complete import with a cut-off sets: the cut-off's, unless the source has a
 * later one already (a harvest or an import since), which is kept.
 */
function watermarkToSet(current: string | null, cutOff: DeliveryCutOff | undefined, log: (line: string) => void): string | undefined {
  if (cutOff === undefined) return undefined;
  if (movesWatermark(current, cutOff.watermark)) return cutOff.watermark;
  log(`the source's watermark ${current} is not before the one --until ${cutOff.until} gives (${cutOff.watermark}): kept`);
  return undefined;
}
