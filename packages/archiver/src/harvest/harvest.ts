import { mkdir } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { type IncomingDatastream, isDidlError, type ReadRecord } from '@oaibag/didl';
import { acquireArchiveLock } from '../archive/archive-lock.js';
import { type DiskFlusher, defaultFlushMode, openDiskFlusher } from '../archive/flush-to-disk.js';
import { cleanupLeftovers } from '../bag/bag-writer.js';
import { Catalog } from '../catalog/catalog.js';
import type { HarvestCounts, HarvestStatus } from '../catalog/catalog-schema.js';
import { oaiDateOf, parseCommandLineDate } from '../core/command-line-date.js';
import { ArchiverError, archiveFullError, isStorageExhausted } from '../core/errors.js';
import { identifyRepository } from '../oai/identify.js';
import { type ListPage, readListPage } from '../oai/list-page.js';
import { type Credentials, OaiClient, type OaiHttpResponse } from '../oai/oai-client.js';
import type { ResolveHost } from '../oai/origin-pools.js';
import { DEFAULT_RETRY_POLICY, type RetryPolicy, retryDelayMs } from '../oai/retry-policy.js';
import { adoptPendingBags } from './adopt-pending-bags.js';
import { planHarvest } from './harvest-plan.js';
import { discardIncoming, harvestMemoryBudget, type IncomingFile, receiveIncoming } from './incoming-file.js';
import { PageLedger, type PageTally } from './page-ledger.js';
import { RecordRefused, type StoreContext, storeRecord } from './store-record.js';

/** How many times one harvest starts its list again (badResumptionToken, a token loop). */
const MAX_LIST_RESTARTS = 2;

export interface HarvestOptions {
  /** The repository's OAI-PMH base URL. */
  baseUrl: string;
  archiveDir: string;
  /** Without it, the harvest continues from the catalog's watermark for this source. */
  from?: string;
  until?: string;
  set?: string;
  prefix?: string;
  credentials?: Credentials;
  /**
   * By-Reference URLs (and their redirects) may lead to loopback, private, link-local and other
   * non-public addresses, also of kinds the repository is not on itself (see address-policy.ts).
   */
  allowPrivateRefs?: boolean;
  /** How host names of other origins are resolved (tests; default: the system's resolver). */
  resolveHost?: ResolveHost;
  /**
   * Records stored at once (By-Reference fetches and bag writes overlap; the page itself is
   * read in order). Every record of a page is stored before its resumption token is saved.
   */
  concurrency?: number;
  retry?: RetryPolicy;
  /**
   * Stops the harvest early (SIGINT/SIGTERM in `oaibag harvest` and `oaibag mirror`): the page
   * being read is abandoned, records already being stored are finished, what was stored is
   * committed, and the harvest ends `interrupted` with its last resumption token saved, so the
   * next harvest resumes. Aborted before the harvest is recorded (during Identify), the
   * signal's AbortError is thrown instead.
   */
  signal?: AbortSignal;
  log?: (line: string) => void;
  /**
   * Called after each record with the counts so far and, when the repository gives it, the
   * list's completeListSize (for a progress display with an ETA).
   */
  progress?: (counts: Readonly<HarvestCounts>, completeListSize?: number) => void;
}

export interface HarvestSummary extends HarvestCounts {
  harvestId: number;
  from: string | null;
  until: string | null;
  status: Exclude<HarvestStatus, 'running'>;
  /** The `from` of the next incremental harvest. */
  watermark: string | null;
}

/**
 * One harvest: Identify, then ListRecords page by page (resumption tokens, retried pages),
 * each record verified and stored as a bag, deletions recorded. The watermark moves to the
 * responseDate of the list's first page only when the list completed and no record failed,
 * so nothing that was not stored is ever skipped by the next harvest.
 */
export async function harvest(options: HarvestOptions): Promise<HarvestSummary> {
  const prefix = options.prefix ?? 'oai_didl';
  const log = options.log ?? (() => undefined);
  let completeListSize: number | undefined;
  const concurrency = options.concurrency ?? 4;
  if (!Number.isSafeInteger(concurrency) || concurrency < 1)
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `concurrency must be a whole number of at least 1, not ${concurrency}`);
  defaultFlushMode(); // refuses a bad OAIBAG_SYNC before anything is written
  // The user's dates in the one command-line grammar, sent as OAI-PMH's UTC forms.
  const userFrom = options.from === undefined ? undefined : oaiDateOf(parseCommandLineDate(options.from, '--from'));
  const userUntil = options.until === undefined ? undefined : oaiDateOf(parseCommandLineDate(options.until, '--until'));
  const progress = options.progress && ((counts: Readonly<HarvestCounts>) => options.progress!(counts, completeListSize));
  await mkdir(options.archiveDir, { recursive: true });
  const lock = await acquireArchiveLock(options.archiveDir, `harvest ${options.baseUrl}`);
  const catalog = Catalog.open(options.archiveDir);
  const client = new OaiClient(options.baseUrl, {
    ...(options.credentials ? { credentials: options.credentials } : {}),
    ...(options.retry ? { retry: options.retry } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.allowPrivateRefs !== undefined ? { allowPrivateRefs: options.allowPrivateRefs } : {}),
    ...(options.resolveHost ? { resolveHost: options.resolveHost } : {}),
    onRetry: ({ attempt, delayMs, reason }) => log(`retry ${attempt} in ${Math.round(delayMs / 1000)} s: ${reason}`),
  });
  let flusher: DiskFlusher | undefined;
  try {
    flusher = await openDiskFlusher(options.archiveDir);
    catalog.interruptRunningHarvests();
    await cleanupLeftovers(options.archiveDir);
    const adopted = await adoptPendingBags(options.archiveDir, catalog);
    if (adopted > 0) log(`recorded ${adopted} bag(s) written just before an interruption`);
    const facts = await identifyRepository(client, prefix);
    const source = catalog.upsertSource(options.baseUrl, facts);
    const plan = planHarvest({
      prefix,
      set: options.set,
      from: userFrom,
      until: userUntil,
      watermark: source.watermark,
      resume: source.resume,
      granularity: facts.granularity,
    });
    const from = plan.from ?? undefined;
    const harvestId = catalog.startHarvest(source.id, { from: plan.from, until: plan.until, set: options.set ?? null, prefix });
    const counts: HarvestCounts = { records: 0, added: 0, modified: 0, touched: 0, deleted: 0, failed: 0, bytes: 0, requests: 0 };
    const context: StoreContext = {
      archiveDir: options.archiveDir,
      catalog,
      client,
      sourceId: source.id,
      harvestId,
      baseUrl: options.baseUrl,
      repositoryName: facts.repositoryName ?? options.baseUrl,
      flusher,
      budget: harvestMemoryBudget(),
      ...(options.signal ? { signal: options.signal } : {}),
    };

    const { firstArgs, resume } = plan;
    let pageArgs: Record<string, string> = plan.pageArgs;
    let listResponseDate: string | null = resume?.listResponseDate ?? null;
    if (resume) log(`resuming the interrupted list from its saved resumption token`);
    let listDateRecorded = false;
    const seenTokens = new Set<string>();
    let restarts = 0;
    let status: Exclude<HarvestStatus, 'running'> = 'complete';

    const restart = (why: string): boolean => {
      // The repository forgot the token (restart, expiry) or the tokens loop: start the list
      // again from the checkpoint; records already stored come again and cost nothing.
      if (restarts >= MAX_LIST_RESTARTS) return false;
      restarts++;
      log(`${why}; restarting the list from the checkpoint`);
      pageArgs = firstArgs;
      listResponseDate = null;
      seenTokens.clear();
      return true;
    };

    // The harvest's row gets its counts with each page, in the page's transaction: a killed
    // harvest's row tells what its committed pages did.
    const commit = async (ledger: PageLedger, state?: Parameters<Catalog['saveResumeState']>[1]): Promise<void> => {
      let after: HarvestCounts | undefined;
      await ledger.commit(catalog, state === undefined ? undefined : { sourceId: source.id, state }, (tally) => {
        after = { ...counts, requests: client.requests };
        addTally(after, tally);
        catalog.updateHarvestCounts(harvestId, after);
      });
      if (after) Object.assign(counts, { ...after, requests: counts.requests });
      progress?.(counts);
    };
    // The next page, asked for while this one commits: the repository prepares it while the
    // page's bags are flushed and recorded (the requests stay one after the other).
    let prefetched: Promise<OaiHttpResponse> | undefined;
    try {
      for (;;) {
        if (options.signal?.aborted) throw new HarvestStopped();
        const asked = prefetched;
        prefetched = undefined;
        const page = await readPage(client, pageArgs, context, counts, options.retry ?? DEFAULT_RETRY_POLICY, log, concurrency, commit, progress, asked);
        completeListSize = page.completeListSize ?? completeListSize;
        const errors = page.errors;
        if (errors.some((error) => error.code === 'badResumptionToken') && restart('the repository refused the resumption token')) {
          await commit(page.ledger);
          continue;
        }
        if (errors.length > 0 && !(errors.length === 1 && errors[0]!.code === 'noRecordsMatch')) {
          const message = errors.map((error) => `${error.code}: ${error.message}`).join('; ');
          page.ledger.stageFailure({ sourceId: source.id, harvestId, stage: 'list', code: errors[0]!.code, message });
          await commit(page.ledger);
          status = 'failed';
          break;
        }
        if (listResponseDate === null && page.responseDate) {
          // The list's first responseDate: the watermark once the list completes.
          listResponseDate = page.responseDate;
          catalog.setListResponseDate(harvestId, listResponseDate);
        } else if (listResponseDate !== null && !listDateRecorded) {
          catalog.setListResponseDate(harvestId, listResponseDate); // a resumed list's, from its first harvest
        }
        listDateRecorded = listResponseDate !== null;
        const token = page.token;
        if (!token) {
          // The list is complete: its last page and the end of the list state commit together.
          await commit(page.ledger, null);
          break;
        }
        if (seenTokens.has(token)) {
          if (restart('a resumption token came back a second time')) {
            await commit(page.ledger);
            continue;
          }
          page.ledger.stageFailure({
            sourceId: source.id,
            harvestId,
            stage: 'list',
            code: 'tokenLoop',
            message: `the resumption token ${token.slice(0, 80)} came back a second time, also after ${MAX_LIST_RESTARTS} restarts of the list`,
          });
          await commit(page.ledger);
          status = 'failed';
          break;
        }
        seenTokens.add(token);
        pageArgs = { verb: 'ListRecords', resumptionToken: token };
        if (!options.signal?.aborted) prefetched = settledLater(client.oai(pageArgs));
        await commit(page.ledger, {
          token,
          listFrom: from ?? null,
          listUntil: userUntil ?? null,
          set: options.set ?? null,
          prefix,
          listResponseDate,
          harvestId,
        });
      }
    } catch (error) {
      release(prefetched);
      if (error instanceof HarvestStopped) {
        // Stopped on request: what was stored is committed, the last page's token stays saved.
        log('stopped on request; the next harvest resumes from the last complete page');
        status = 'interrupted';
        counts.requests = client.requests;
        catalog.finishHarvest(harvestId, status, counts);
        return { harvestId, from: from ?? null, until: userUntil ?? null, status, watermark: source.watermark, ...counts };
      }
      // A page that kept failing (or no room left): the harvest ends failed, with its reason in
      // the catalog; the saved token and the watermark stay, so the next harvest resumes.
      const stop = isStorageExhausted(error) ? archiveFullError(options.archiveDir, error) : error;
      if (!(stop instanceof ArchiverError)) throw stop;
      counts.requests = client.requests;
      try {
        catalog.recordFailure({
          sourceId: source.id,
          harvestId,
          stage: stop.code === 'ERR_ARCHIVE_FULL' ? 'store' : 'list',
          code: stop.code,
          message: stop.message,
        });
        catalog.finishHarvest(harvestId, 'failed', counts);
      } catch (bookkeeping) {
        // A full disk may refuse these rows too; the next harvest marks this one interrupted.
        if (!isStorageExhausted(bookkeeping)) throw bookkeeping;
      }
      throw stop;
    }

    counts.requests = client.requests;
    if (status === 'complete') {
      catalog.resolveListFailures(source.id);
      if (counts.failed > 0) status = 'partial';
      else if (listResponseDate) catalog.setWatermark(source.id, listResponseDate);
    }
    catalog.finishHarvest(harvestId, status, counts);
    const watermark = catalog.source(options.baseUrl)?.watermark ?? null;
    return { harvestId, from: from ?? null, until: userUntil ?? null, status, watermark, ...counts };
  } catch (error) {
    // Before the list (adopting bags, starting the harvest) a full disk is the same story.
    throw isStorageExhausted(error) ? archiveFullError(options.archiveDir, error) : error;
  } finally {
    await flusher?.close();
    await client.close();
    catalog.close();
    await lock.release();
  }
}

/** Marks a promise as handled now (it is awaited later), so an early rejection is not reported as unhandled. */
function settledLater<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
}

/** Frees the connection of a prefetched page that will not be read. */
function release(prefetched: Promise<OaiHttpResponse> | undefined): void {
  void prefetched?.then(
    (response) => response.body.destroy(),
    () => undefined,
  );
}

/** A page read and processed: its catalog rows (committed by the caller with the list state they lead to) and what it says about the list. */
interface PageResult extends ListPage {
  ledger: PageLedger;
}

/**
 * Fetches and processes one page. A page that breaks off or is not well-formed is asked for
 * again (its records already stored are recognised); after the retries it is an error.
 */
async function readPage(
  client: OaiClient,
  args: Record<string, string>,
  context: StoreContext,
  counts: HarvestCounts,
  policy: RetryPolicy,
  log: (line: string) => void,
  concurrency: number,
  commit: (ledger: PageLedger) => Promise<void>,
  progress?: (counts: Readonly<HarvestCounts>) => void,
  prefetched?: Promise<OaiHttpResponse>,
): Promise<PageResult> {
  for (let attempt = 0; ; attempt++) {
    const ledger = new PageLedger(context.archiveDir, context.flusher);
    let pending: IncomingFile[] = [];
    const inFlight = new Set<Promise<void>>();
    let firstError: unknown;
    try {
      // The first attempt may have been asked for already; a retry always asks again.
      const response = attempt === 0 && prefetched ? prefetched : client.oai(args);
      const page = await readListPage(response, `ListRecords of ${client.endpoint.href}`, {
        keepReceivedXml: true,
        lenientIdentifier: true,
        onDatastream: async (datastream: IncomingDatastream) => {
          pending.push(await receiveIncoming(context.archiveDir, datastream.bytes, context.budget));
        },
        onRecord: async (record: ReadRecord) => {
          const received = pending;
          pending = [];
          const job = processRecord(context, ledger, record, received, counts, log)
            .then(() => progress?.(counts))
            .catch((error: unknown) => {
              firstError ??= error;
            })
            .finally(() => inFlight.delete(job));
          inFlight.add(job);
          if (inFlight.size >= concurrency) await Promise.race(inFlight);
        },
      });
      await Promise.all(inFlight);
      if (firstError !== undefined) throw firstError;
      return { ledger, ...page };
    } catch (error) {
      await Promise.all(inFlight);
      for (const file of pending) await discardIncoming(file);
      // What the broken attempt did store is kept (without a token): the page asked for again
      // recognises those records.
      await commit(ledger);
      if (context.signal?.aborted) throw new HarvestStopped();
      if (error instanceof ArchiverError || attempt >= policy.retries) {
        if (error instanceof ArchiverError) throw error;
        throw new ArchiverError(
          'ERR_HARVEST_PROTOCOL',
          `a ListRecords page of ${client.endpoint.href} failed ${attempt + 1} times: ${(error as Error).message}`,
        );
      }
      const delayMs = retryDelayMs(attempt + 1, policy);
      log(`page failed (${isDidlError(error) ? error.code : (error as Error).message}); asking again in ${Math.round(delayMs / 1000)} s`);
      await sleep(delayMs, undefined, context.signal ? { signal: context.signal } : {}).catch(() => {
        throw new HarvestStopped();
      });
    }
  }
}

/** Thrown inside a harvest when its signal stops it; never leaves `harvest()`. */
class HarvestStopped extends Error {}

async function processRecord(
  context: StoreContext,
  ledger: PageLedger,
  record: ReadRecord,
  received: IncomingFile[],
  counts: HarvestCounts,
  log: (line: string) => void,
): Promise<void> {
  const { sourceId, harvestId } = context;
  const header = record.header;
  counts.records++;
  if (!header) {
    for (const file of received) await discardIncoming(file);
    return;
  }
  if (header.deleted) {
    ledger.stageDeletion(sourceId, header.identifier, header.datestamp, harvestId);
    return;
  }
  if (record.error || !record.didl) {
    for (const file of received) await discardIncoming(file);
    counts.failed++;
    const error = record.error;
    ledger.stageFailure({
      sourceId,
      harvestId,
      identifier: header.identifier,
      datestamp: header.datestamp,
      stage: 'verify',
      code: error?.code ?? 'ERR_HARVEST_FORMAT',
      message: error?.message ?? 'the record carries no DIDL',
      expected: error?.expected === undefined ? null : String(error.expected),
      found: error?.found === undefined ? null : String(error.found),
    });
    log(`failed: ${header.identifier}: ${error?.message ?? 'no DIDL'}`);
    return;
  }
  try {
    const asReceived = { ...(record.receivedHeader ? { header: record.receivedHeader } : {}), ...(record.receivedDidl ? { didl: record.receivedDidl } : {}) };
    const stored = await storeRecord(context, header, record.didl, received, asReceived);
    ledger.stageVersion(stored.version, stored.bag);
  } catch (error) {
    // No room left is the archive's problem, not this record's: the whole harvest stops.
    if (isStorageExhausted(error)) throw archiveFullError(context.archiveDir, error);
    if (!(error instanceof ArchiverError)) throw error;
    counts.failed++;
    const refused = error instanceof RecordRefused ? error : undefined;
    ledger.stageFailure({
      sourceId,
      harvestId,
      identifier: header.identifier,
      datestamp: header.datestamp,
      stage: refused?.stage ?? 'store',
      code: error.code,
      message: error.message,
      expected: refused?.expected ?? null,
      found: refused?.found ?? null,
    });
    log(`failed: ${header.identifier}: ${error.message}`);
  }
}

function addTally(counts: HarvestCounts, tally: PageTally): void {
  for (const key of Object.keys(tally) as Array<keyof PageTally>) counts[key] += tally[key];
}
