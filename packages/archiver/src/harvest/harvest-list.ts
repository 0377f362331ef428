// One harvest's list (harvest/harvest.ts starts it): page after page, each page's records
// checked and stored (store-record.ts) up to `concurrency` at a time while the page is read in
// order, each page committed with the list state it leads to (page-ledger.ts).
import { setTimeout as sleep } from 'node:timers/promises';
import { type IncomingDatastream, isDidlError, type ReadRecord } from '@oaibag/didl';
import type { Catalog } from '../catalog/catalog.js';
import type { HarvestCounts, ResumeState } from '../catalog/catalog-schema.js';
import { ArchiverError, archiveFullError, isStorageExhausted } from '../core/errors.js';
import { type ListPage, readListPage } from '../oai/list-page.js';
import { walkList } from '../oai/list-walk.js';
import type { OaiClient, OaiHttpResponse } from '../oai/oai-client.js';
import { DEFAULT_RETRY_POLICY, type RetryPolicy, retryDelayMs } from '../oai/retry-policy.js';
import type { HarvestPlan } from './harvest-plan.js';
import { discardIncoming, type IncomingFile, receiveIncoming } from './incoming-file.js';
import { PageLedger, type PageTally } from './page-ledger.js';
import { RecordRefused, type StoreContext, storeRecord } from './store-record.js';

/** How many times one harvest starts its list again (badResumptionToken, a token loop). */
const MAX_LIST_RESTARTS = 2;

/** What a {@link HarvestList} works with. */
export interface HarvestListSetup {
  /** Stops the list between pages (see HarvestOptions.signal). */
  signal?: AbortSignal | undefined;
  set?: string | undefined;
  retry?: RetryPolicy | undefined;
  /** After each record and page, with the counts so far and the list's completeListSize when known. */
  progress?: ((counts: Readonly<HarvestCounts>, completeListSize?: number) => void) | undefined;
  catalog: Catalog;
  client: OaiClient;
  plan: HarvestPlan;
  sourceId: number;
  harvestId: number;
  prefix: string;
  log: (line: string) => void;
  concurrency: number;
  context: StoreContext;
}

/**
 * One harvest's list, page after page, from its plan to its end (the tokens followed, restarted
 * and refused by the one list loop, oai/list-walk.ts), and what a harvest carries from one page
 * to the next: the list's first responseDate (the watermark once it completes), the counts, and
 * the next page asked for while this one commits.
 */
export class HarvestList {
  readonly counts: HarvestCounts = { records: 0, added: 0, modified: 0, touched: 0, deleted: 0, failed: 0, bytes: 0, requests: 0 };
  /** The responseDate of the list's first page (of a resumed list: of its first harvest). */
  listResponseDate: string | null;
  private listDateRecorded = false;
  private completeListSize: number | undefined;
  /** The next page, asked for while this one commits: the repository prepares it while the page's bags are flushed and recorded (the requests stay one after the other). */
  private prefetched: Promise<OaiHttpResponse> | undefined;

  constructor(private readonly setup: HarvestListSetup) {
    this.listResponseDate = setup.plan.resume?.listResponseDate ?? null;
    if (setup.plan.resume) setup.log('resuming the interrupted list from its saved resumption token');
  }

  /**
   * Reads and commits every page; resolves `complete` at the end of the list or `failed` when
   * the list itself failed (the reason committed as a list failure). Throws HarvestStopped when
   * stopped on request, and the error of a page that kept failing.
   */
  async run(): Promise<'complete' | 'failed'> {
    const { signal, set, sourceId, harvestId, plan, prefix, client } = this.setup;
    const steps = walkList<PageResult>({
      verb: 'ListRecords',
      first: plan.firstArgs,
      start: plan.pageArgs,
      maxRestarts: MAX_LIST_RESTARTS,
      readPage: (args) => {
        if (signal?.aborted) throw new HarvestStopped();
        const asked = this.prefetched;
        this.prefetched = undefined;
        return this.readPage(args, asked);
      },
    });
    for await (const step of steps) {
      const { page } = step;
      this.completeListSize = page.completeListSize ?? this.completeListSize;
      switch (step.kind) {
        case 'restart':
          // The repository forgot the token (restart, expiry) or the tokens loop: the list starts
          // again from the checkpoint; records already stored come again and cost nothing.
          this.setup.log(`${step.why}; restarting the list from the checkpoint`);
          this.listResponseDate = null;
          await this.commit(page.ledger);
          break;
        case 'failed': {
          const message = step.errors.map((error) => `${error.code}: ${error.message}`).join('; ');
          page.ledger.stageFailure({ sourceId, harvestId, stage: 'list', code: step.errors[0]!.code, message });
          await this.commit(page.ledger);
          return 'failed';
        }
        case 'end':
          this.recordListDate(page.responseDate);
          // The list is complete: its last page and the end of the list state commit together.
          await this.commit(page.ledger, null);
          return 'complete';
        case 'loop':
          this.recordListDate(page.responseDate);
          page.ledger.stageFailure({
            sourceId,
            harvestId,
            stage: 'list',
            code: 'tokenLoop',
            message: `the resumption token ${step.token.slice(0, 80)} came back a second time, also after ${MAX_LIST_RESTARTS} restarts of the list`,
          });
          await this.commit(page.ledger);
          return 'failed';
        case 'next': {
          this.recordListDate(page.responseDate);
          // The next page, asked for while this one commits (see `prefetched`).
          if (!signal?.aborted) this.prefetched = settledLater(client.oai(step.next));
          await this.commit(page.ledger, {
            token: step.next.resumptionToken!,
            listFrom: plan.from,
            listUntil: plan.until,
            set: set ?? null,
            prefix,
            listResponseDate: this.listResponseDate,
            harvestId,
          });
          break;
        }
      }
    }
    throw new Error('the list ended without its last page'); // walkList always ends with end, failed or loop
  }

  /** Frees the connection of a prefetched page that will not be read. */
  releasePrefetched(): void {
    void this.prefetched?.then(
      (response) => response.body.destroy(),
      () => undefined,
    );
    this.prefetched = undefined;
  }

  /** Records the list's first responseDate on the harvest's row, once. */
  private recordListDate(responseDate: string | undefined): void {
    const { catalog, harvestId } = this.setup;
    if (this.listResponseDate === null && responseDate) {
      this.listResponseDate = responseDate;
      catalog.setListResponseDate(harvestId, responseDate);
    } else if (this.listResponseDate !== null && !this.listDateRecorded) {
      catalog.setListResponseDate(harvestId, this.listResponseDate); // a resumed list's, from its first harvest
    }
    this.listDateRecorded = this.listResponseDate !== null;
  }

  /**
   * Commits a page's rows, with the list state they lead to when given. The harvest's row gets
   * its counts in the page's transaction: a killed harvest's row tells what its committed pages did.
   */
  private async commit(ledger: PageLedger, state?: ResumeState | null): Promise<void> {
    const { catalog, client, sourceId, harvestId } = this.setup;
    let after: HarvestCounts | undefined;
    await ledger.commit(catalog, state === undefined ? undefined : { sourceId, state }, (tally) => {
      after = { ...this.counts, requests: client.requests };
      addTally(after, tally);
      catalog.updateHarvestCounts(harvestId, after);
    });
    if (after) Object.assign(this.counts, { ...after, requests: this.counts.requests });
    this.reportProgress();
  }

  private reportProgress(): void {
    this.setup.progress?.(this.counts, this.completeListSize);
  }

  /**
   * Fetches and processes one page. A page that breaks off or is not well-formed is asked for
   * again (its records already stored are recognised); after the retries it is an error.
   */
  private async readPage(args: Record<string, string>, prefetched?: Promise<OaiHttpResponse>): Promise<PageResult> {
    const { client, context, log, concurrency } = this.setup;
    const policy = this.setup.retry ?? DEFAULT_RETRY_POLICY;
    const counts = this.counts;
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
              .then(() => this.reportProgress())
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
        await this.commit(ledger);
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
}

/** Marks a promise as handled now (it is awaited later), so an early rejection is not reported as unhandled. */
function settledLater<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
}

/** A page read and processed: its catalog rows (committed by the caller with the list state they lead to) and what it says about the list. */
interface PageResult extends ListPage {
  ledger: PageLedger;
}

/** Thrown inside a harvest when its signal stops it; never leaves `harvest()`. */
export class HarvestStopped extends Error {}

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
