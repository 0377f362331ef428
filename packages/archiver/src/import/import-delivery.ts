// `oaibag import`: an out-of-band delivery (a ZIP or a folder) taken into the archive through the
// same verification and packaging as a harvest (docs/import-export.md). The delivery is screened
// whole first (delivery.ts: hostile names, links, bombs, CRCs), so a refused one stores nothing.
// A web site's files become the records the repository would give for them (site-record.ts),
// DIDL records are read with packages/didl exactly as a harvest reads a page; both are stored by
// the harvest's own record path (page-records.ts) into batch bags that name the delivery (its
// name, size and sha-256, a PREMIS accession event). Serialized bags are adopted as they are
// (adopt-bags.ts). An import is recorded as a harvest row of its source whose arguments name the
// delivery. With `--until` (the delivery's cut-off) a complete import sets the source's
// watermark to the second after it, so the first harvest asks only what changed since; without
// it the next harvest lists everything and recognises what was imported (same identifier,
// datestamp and bytes: nothing new).
import { basename } from 'node:path';
import { type ReadRecord, readDidl } from '@oaibag/didl';
import { formatDatestamp } from '@oaibag/oai-pmh';
import type { DeliveryFacts } from '../bag/aip-metadata.js';
import type { Catalog } from '../catalog/catalog.js';
import type { HarvestCounts } from '../catalog/catalog-schema.js';
import { ArchiverError, archiveFullError, isStorageExhausted } from '../core/errors.js';
import { declinedAsHeld, discardIncoming, harvestMemoryBudget, type IncomingFile, type MemoryBudget, receiveIncoming } from '../ingest/incoming-file.js';
import { type BatchTally, HarvestBatch } from '../ingest/ingest-batch.js';
import { type IngestSession, openIngestSession } from '../ingest/ingest-session.js';
import { PageRecords } from '../ingest/page-records.js';
import type { StoreContext } from '../ingest/store-record.js';
import { OaiClient } from '../oai/oai-client.js';
import { adoptBags } from './adopt-bags.js';
import { type Delivery, type DeliveryEntry, openDelivery } from './delivery.js';
import { type DeliveryCutOff, deliveryCutOff, movesWatermark } from './delivery-cut-off.js';
import { isHidden, type Recognised, recogniseDelivery } from './delivery-kind.js';
import { quoteName } from './delivery-model.js';
import type { ImportOptions, ImportSummary } from './import-options.js';
import { notAResource, repositoryOaiUrl, siteBaseUrl, siteRecord } from './site-record.js';

/** Files of a delivery taken as one "page" of the batch (bag-info.txt's Batch-Pages counts them). */
const FILES_PER_PAGE = 100;

/** A site's files read ahead of the record being taken. */
const READ_AHEAD = 8;

export async function importDelivery(options: ImportOptions): Promise<ImportSummary> {
  const log = options.log ?? (() => undefined);
  const concurrency = options.concurrency ?? 4;
  if (!Number.isSafeInteger(concurrency) || concurrency < 1)
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `concurrency must be a whole number of at least 1, not ${concurrency}`);
  const given = httpUrl(options.baseUrl, '--base-url');
  const baseUrl = given === undefined ? undefined : siteBaseUrl(given);
  httpUrl(options.source, '--source');
  const cutOff = options.until === undefined ? undefined : deliveryCutOff(options.until);
  if (options.kind === 'site' && baseUrl === undefined) {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', "--kind site needs --base-url, the URL the site's paths are relative to");
  }
  // A site's files (said so, or a base URL given) are kept in tmp/ as the screening reads
  // them: the delivery is then read once. What turns out to be another kind is let go.
  const keeping = baseUrl !== undefined && (options.kind === undefined || options.kind === 'site');
  const kept = new Map<string, IncomingFile>();
  const budget = harvestMemoryBudget();
  const letGo = async () => {
    for (const file of kept.values()) await discardIncoming(file);
    kept.clear();
  };
  let delivery: Delivery | undefined;
  let recognised: Recognised | undefined;
  let source: string | undefined;
  // Screened and recognised under the archive's lock, before its catalog is opened: a refused
  // delivery, or one this import cannot take, leaves nothing (an archive folder this import
  // made is removed again).
  const session = await openIngestSession(options.archiveDir, `import ${basename(options.delivery)}`, log, async () => {
    try {
      delivery = await openDelivery(options.delivery, {
        ...(options.limits ? { limits: options.limits } : {}),
        ...(options.progress ? { progress: (done: number, total: number) => options.progress?.({ stage: 'screening', done, total }) } : {}),
        ...(keeping
          ? {
              keep: (name: string) =>
                notAResource(name) !== null
                  ? undefined
                  : async (bytes: AsyncIterable<Uint8Array>) => {
                      kept.set(name, await receiveIncoming(options.archiveDir, bytes, budget, { sha256: false }));
                    },
            }
          : {}),
      });
      recognised = await recogniseDelivery(delivery, options.kind);
      if (recognised.kind !== 'site') await letGo();
      if (recognised.kind === 'site' && baseUrl === undefined) {
        throw new ArchiverError('ERR_IMPORT_KIND', `${delivery.name} holds a web site's files: give --base-url, the URL its paths are relative to`, {
          path: delivery.path,
        });
      }
      if (recognised.kind === 'bags') refuseForBags(delivery, cutOff);
      // A site's files join the source oaibag-repository serves for their base URL, whose
      // records have the same identifiers: harvesting it continues the import.
      source = options.source ?? (recognised.kind === 'site' ? repositoryOaiUrl(baseUrl!) : recognised.requestUrl);
      if (source === undefined && recognised.kind === 'didl') {
        throw new ArchiverError(
          'ERR_ARCHIVE_USAGE',
          `${delivery.name} does not say which repository its records came from: give --source, its OAI-PMH base URL`,
        );
      }
    } catch (error) {
      await letGo();
      await delivery?.close();
      throw error;
    }
  });
  try {
    const screened = delivery!;
    const kind = recognised!.kind;
    const facts: DeliveryFacts = { name: screened.name, size: screened.size, sha256: screened.sha256, kind };
    if (kind === 'bags') return await adoptBags(session, screened, facts, { ...options, log });
    return await ingestRecords(session, screened, facts, source!, kept, { ...options, log, concurrency, budget, siteBase: baseUrl, cutOff });
  } finally {
    await letGo();
    await delivery?.close();
    await session.close();
  }
}

/** A site's files or DIDL records, stored as a harvest stores its pages. */
async function ingestRecords(
  session: IngestSession,
  delivery: Delivery,
  facts: DeliveryFacts,
  sourceUrl: string,
  /** A site's files kept in tmp/ by the screening, by name (taken from it as they are stored). */
  kept: Map<string, IncomingFile>,
  options: ImportOptions & {
    log: (line: string) => void;
    concurrency: number;
    budget: MemoryBudget;
    /** A site's base URL, normalized as the repository normalizes its own. */
    siteBase: string | undefined;
    cutOff: DeliveryCutOff | undefined;
  },
): Promise<ImportSummary> {
  const { log, concurrency, cutOff } = options;
  const baseUrl = facts.kind === 'site' ? options.siteBase! : undefined;
  const { catalog, flusher } = session;
  // A delivery's file of DIDL records is one "page" however many records it holds: the page
  // bounds of a harvest are not the import's (its own are the delivery's caps, checked first).
  const client = new OaiClient(sourceUrl, {
    ...(options.signal ? { signal: options.signal } : {}),
    limits: { pageRecords: Number.MAX_SAFE_INTEGER, pageParts: Number.MAX_SAFE_INTEGER, pageXmlBytes: Number.MAX_SAFE_INTEGER },
  });
  try {
    const source = catalog.ensureSource(sourceUrl, options.sourceName ?? null);
    const importId = catalog.startRun(source.id, 'import', { prefix: 'oai_didl', delivery: facts, ...(cutOff ? { until: cutOff.until } : {}) });
    const counts: HarvestCounts = { records: 0, added: 0, modified: 0, touched: 0, deleted: 0, failed: 0, bytes: 0, requests: 0 };
    const context: StoreContext = {
      archiveDir: options.archiveDir,
      catalog,
      client,
      sourceId: source.id,
      harvestId: importId,
      baseUrl: sourceUrl,
      repositoryName: source.repositoryName ?? sourceUrl,
      flusher,
      budget: options.budget,
      ...(options.signal ? { signal: options.signal } : {}),
    };
    const batch = new HarvestBatch({
      archiveDir: options.archiveDir,
      catalog,
      flusher,
      sourceId: source.id,
      harvestId: importId,
      baseUrl: sourceUrl,
      repositoryName: context.repositoryName,
      prefix: 'oai_didl',
      from: null,
      until: cutOff?.until ?? null,
      set: null,
      delivery: facts,
      ...(options.batchBounds ? { bounds: options.batchBounds } : {}),
    });
    const run = new ImportRun(catalog, batch, source.id, importId, counts);
    const total = delivery.entries.length;
    const report = (done: number) => options.progress?.({ stage: 'storing', done, total, counts });
    let skipped = 0;
    // Files the delivery keeps private (mode 000): the repository never exports them.
    for (const file of delivery.withheld) {
      skipped++;
      log(`${facts.kind === 'site' ? 'not a resource' : 'not read'} (unreadable: nobody may read it): ${file.name}`);
    }
    let page = 0;
    let done = 0;
    const entries = delivery.entries;
    // A site's files are read a few ahead of the records that take them (their reads and
    // hashing overlap); DIDL files one after the other (a file's records overlap already).
    const reasons = entries.map((entry) => (facts.kind === 'site' ? notAResource(entry.name) : isHidden(entry.name) ? 'hidden' : null));
    const ahead = new Map<number, Promise<IncomingFile>>();
    const readAhead = (from: number) => {
      for (let index = from; index < Math.min(total, from + READ_AHEAD); index++) {
        if (facts.kind !== 'site' || reasons[index] !== null || ahead.has(index)) continue;
        const entry = entries[index]!;
        const reading = readSiteFile(entry, kept, batch, () => receiveIncoming(options.archiveDir, delivery.open(entry), context.budget));
        reading.catch(() => undefined); // awaited in its turn
        ahead.set(index, reading);
      }
    };
    try {
      for (let start = 0; start < total; start += FILES_PER_PAGE) {
        if (options.signal?.aborted) break;
        const records = new PageRecords({
          context,
          batch,
          counts,
          log,
          concurrency,
          progress: () => report(done),
          // Records go into the batch bag as they are done, not held to the end of the page.
          deliver: (taken) => batch.addPage(page + 1, taken),
        });
        try {
          for (let index = start; index < Math.min(total, start + FILES_PER_PAGE); index++) {
            const entry = entries[index]!;
            if (reasons[index] !== null) {
              skipped++;
              log(`${facts.kind === 'site' ? 'not a resource' : 'not read'} (${reasons[index]}): ${entry.name}`);
            } else if (facts.kind === 'didl') {
              await takeDidlFile(records, delivery, entry);
            } else {
              readAhead(index);
              const received = await ahead.get(index)!;
              ahead.delete(index);
              await records.take(siteRecord(baseUrl!, entry), [received]);
            }
            done++;
          }
          await batch.addPage(++page, await records.finish());
        } catch (error) {
          await batch.addPage(++page, await records.abandon());
          throw error;
        }
        // The last bag is committed below, with List-End (reindex reads the import's end from it).
        if (batch.full && start + FILES_PER_PAGE < total) await run.commit();
        report(done);
      }
      const stopped = options.signal?.aborted === true;
      const listEnd = stopped ? undefined : counts.failed > 0 ? 'partial' : 'complete';
      await run.commit(listEnd, listEnd === 'complete' ? watermarkToSet(catalog.source(sourceUrl)?.watermark ?? null, cutOff, log) : undefined);
      const status = stopped ? 'interrupted' : counts.failed > 0 ? 'partial' : 'complete';
      catalog.finishRun(importId, status, counts);
      if (stopped) log('stopped on request; importing the same delivery again continues it');
      else if (cutOff && status === 'partial')
        log(`some records failed: the watermark is not set (--until ${cutOff.until}), so the next harvest lists everything`);
      const watermark = catalog.source(sourceUrl)?.watermark ?? null;
      return { importId, kind: facts.kind, delivery: facts, source: sourceUrl, status, watermark, skipped, bags: run.bags, ...counts };
    } catch (error) {
      for (const reading of ahead.values()) await discardIncoming(await reading.catch(() => undefined));
      // What the batch holds (whole records, verified) is committed; the rerun recognises it.
      const settled = await run.commit().then(
        () => undefined,
        async (failure: unknown) => {
          await batch.abort();
          return failure;
        },
      );
      const stop = isStorageExhausted(error) ? archiveFullError(options.archiveDir, error) : (settled ?? error);
      if (stop instanceof ArchiverError) {
        catalog.recordFailure({ sourceId: source.id, harvestId: importId, stage: 'store', code: stop.code, message: stop.message });
        catalog.finishRun(importId, 'failed', counts);
      }
      throw stop;
    }
  } finally {
    await client.close();
  }
}

/**
 * The bytes of a site's file for its record: declined when the archive holds them already (the
 * screening measured them; the record becomes a revisit), else those the screening kept, else
 * read from the delivery again.
 */
async function readSiteFile(
  entry: DeliveryEntry,
  kept: Map<string, IncomingFile>,
  batch: HarvestBatch,
  read: () => Promise<IncomingFile>,
): Promise<IncomingFile> {
  const file = kept.get(entry.name);
  kept.delete(entry.name);
  if (batch.holdsPayload(entry.sha256)) {
    await discardIncoming(file);
    return declinedAsHeld();
  }
  if (file === undefined) return read();
  // Kept without its own sha-256: the screening's, of the same bytes (the record holds the file to it).
  file.sha256 = entry.sha256;
  return file;
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

/** Commits an import's batches, adding each commit's tally to the import's counts in its transaction. */
class ImportRun {
  bags = 0;

  constructor(
    private readonly catalog: Catalog,
    private readonly batch: HarvestBatch,
    private readonly sourceId: number,
    private readonly importId: number,
    private readonly counts: HarvestCounts,
  ) {}

  /**
   * Commits the batch; the last one with the list's end and, for a cut-off, the watermark: set
   * in the same transaction, and written into the bag as its List-Response-Date (the `from` of
   * the next harvest, as a harvest's list leaves it), so that reindex sets it again.
   */
  async commit(listEnd?: 'complete' | 'partial', watermark?: string): Promise<void> {
    const placing = this.batch.hasBag;
    let committed = false;
    await this.batch.commit({ listResponseDate: watermark ?? null, ...(listEnd ? { listEnd } : {}) }, undefined, (tally: BatchTally) => {
      for (const key of Object.keys(tally) as Array<keyof BatchTally>) this.counts[key] += tally[key];
      this.catalog.updateRunCounts(this.importId, this.counts);
      if (watermark !== undefined) this.catalog.setWatermark(this.sourceId, watermark);
      committed = true;
    });
    // Nothing left to commit (every file recognised or left out): the watermark on its own.
    if (watermark !== undefined && !committed) this.catalog.setWatermark(this.sourceId, watermark);
    if (placing) this.bags++;
  }
}

/**
 * Serialized bags carry their sources' watermarks (their lists' ends) and are taken whole: a
 * cut-off is not theirs to give, and a file of theirs nobody may read is a bag not whole.
 */
function refuseForBags(delivery: Delivery, cutOff: DeliveryCutOff | undefined): void {
  if (cutOff) {
    throw new ArchiverError(
      'ERR_ARCHIVE_USAGE',
      `--until is for a site's files or DIDL records: the serialized bags of ${delivery.name} carry their sources' watermarks`,
    );
  }
  const private_ = delivery.withheld[0];
  if (private_) {
    throw new ArchiverError(
      'ERR_IMPORT_DAMAGED',
      `${delivery.name}: entry ${quoteName(private_.name)} gives nobody read permission (mode 000): serialized bags are taken whole`,
      {
        path: delivery.path,
      },
    );
  }
}

/**
 * One file of DIDL records: a saved OAI-PMH response (its records with their own headers) or a
 * standalone DIDL document (its identifier, dated by the file's modification time).
 */
async function takeDidlFile(records: PageRecords, delivery: Delivery, entry: DeliveryEntry): Promise<void> {
  const datestamp = formatDatestamp(Number(entry.mtimeNs / 1_000_000_000n));
  try {
    const headerFor = (record: ReadRecord) => ({ identifier: record.didl!.identifier, datestamp, setSpecs: [], deleted: false });
    const summary = await readDidl(delivery.open(entry), { ...records.readOptions(headerFor), recordErrors: 'report' });
    for (const error of summary.page.errors) {
      if (error.code !== 'noRecordsMatch')
        throw new ArchiverError('ERR_IMPORT_DAMAGED', `${delivery.name}: ${entry.name} is an OAI-PMH error response (${error.code}: ${error.message})`);
    }
  } catch (error) {
    if (error instanceof ArchiverError || isStorageExhausted(error)) throw error;
    throw new ArchiverError('ERR_IMPORT_DAMAGED', `${delivery.name}: ${entry.name} cannot be read as DIDL records: ${(error as Error).message}`, {
      path: delivery.path,
      cause: error,
    });
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
