// One harvest's list (harvest/harvest.ts starts it): page after page, each page's records
// checked and taken into the current batch (store-record.ts) up to `concurrency` at a time
// while the page is read in order; a batch full or the list's end commits the batch bag with
// the list state its last page leads to (harvest-batch.ts).
import { setTimeout as sleep } from 'node:timers/promises';
import { type DidlError, isDidlError } from '@oaibag/didl';
import type { Catalog } from '../catalog/catalog.js';
import type { HarvestCounts, ResumeState } from '../catalog/catalog-schema.js';
import { ArchiverError } from '../core/errors.js';
import { shown } from '../core/remote-text.js';
import { type BatchBounds, type BatchTally, HarvestBatch, type PageEntry } from '../ingest/ingest-batch.js';
import { PageRecords } from '../ingest/page-records.js';
import type { StoreContext } from '../ingest/store-record.js';
import { type ListPage, readListPage } from '../oai/list-page.js';
import { walkList } from '../oai/list-walk.js';
import type { OaiClient, OaiHttpResponse } from '../oai/oai-client.js';
import { DEFAULT_RETRY_POLICY, type RetryPolicy, retryDelayMs } from '../oai/retry-policy.js';
import type { HarvestPlan } from './harvest-plan.js';
import { receivedWhole } from './whole-page.js';

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
  /** When a batch bag is sealed (default: DEFAULT_BATCH_BOUNDS). */
  batchBounds?: BatchBounds | undefined;
}

/**
 * One harvest's list, page after page, from its plan to its end (the tokens followed, restarted
 * and refused by the one list loop, oai/list-walk.ts), and what a harvest carries from one page
 * to the next: the list's first responseDate (the watermark once it completes), the counts, and
 * the next page asked for while this one commits.
 */
export class HarvestList {
  readonly counts: HarvestCounts = { records: 0, added: 0, modified: 0, touched: 0, deleted: 0, failed: 0, bytes: 0, requests: 0 };
  /** Why the list failed, when `run` resolved `failed` (the list failure's code and message). */
  failure: string | undefined;
  /** The responseDate of the list's first page (of a resumed list: of its first harvest). */
  listResponseDate: string | null;
  private listDateRecorded = false;
  private completeListSize: number | undefined;
  /** The next page, asked for while this one is taken in: the repository prepares it meanwhile (the requests stay one after the other). */
  private prefetched: Promise<OaiHttpResponse> | undefined;
  private readonly batch: HarvestBatch;
  /** Pages read so far (a page asked for again keeps its number). */
  private pages = 0;
  /**
   * The harvest that started this list: this one, or the one whose saved token it resumes. Its
   * record failures and those of every run after it decide the list's outcome.
   */
  private readonly listHarvestId: number;
  /** The list state after the last page taken into the batch: saved when the batch commits. */
  private pendingState: ResumeState | null | undefined;

  constructor(private readonly setup: HarvestListSetup) {
    this.listResponseDate = setup.plan.resume?.listResponseDate ?? null;
    this.listHarvestId = setup.plan.resume?.harvestId ?? setup.harvestId;
    if (setup.plan.resume) setup.log('resuming the interrupted list from its saved resumption token');
    const { context } = setup;
    this.batch = new HarvestBatch({
      archiveDir: context.archiveDir,
      catalog: setup.catalog,
      flusher: context.flusher,
      sourceId: setup.sourceId,
      harvestId: setup.harvestId,
      baseUrl: context.baseUrl,
      repositoryName: context.repositoryName,
      ...(context.rightsManifest ? { rightsManifest: context.rightsManifest } : {}),
      prefix: setup.prefix,
      from: setup.plan.from,
      until: setup.plan.until,
      set: setup.set ?? null,
      ...(setup.batchBounds ? { bounds: setup.batchBounds } : {}),
    });
  }

  /**
   * Reads and commits every page; resolves `complete` at the end of the list, `partial` when it
   * ended with a record failure of the list still open (of this run or of an earlier run that
   * took part in it: the watermark must not move), or `failed` when the list itself failed (the
   * reason committed as a list failure). Throws HarvestStopped when
   * stopped on request, and the error of a page that kept failing.
   */
  async run(): Promise<'complete' | 'partial' | 'failed'> {
    const { signal, set, sourceId, harvestId, plan, prefix, client } = this.setup;
    const steps = walkList<PageResult>({
      verb: 'ListRecords',
      first: plan.firstArgs,
      start: plan.pageArgs,
      maxRestarts: MAX_LIST_RESTARTS,
      limits: client.limits,
      what: `ListRecords of ${shown(client.endpoint.href)}`,
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
          // again from the checkpoint; records already taken come again and cost nothing.
          this.setup.log(`${step.why}; restarting the list from the checkpoint`);
          this.listResponseDate = null;
          await this.take(page.entries);
          if (this.batch.full) await this.commit();
          break;
        case 'failed': {
          const message = step.errors.map((error) => `${shown(error.code, 40)}: ${shown(error.message)}`).join('; ');
          const code = shown(step.errors[0]!.code, 40);
          this.failure = `the repository ended the list with ${message}`;
          page.entries.push({ kind: 'failure', failure: { sourceId, harvestId, stage: 'list', code, message } });
          await this.take(page.entries);
          await this.commit();
          return 'failed';
        }
        case 'end': {
          this.recordListDate(page.responseDate);
          await this.take(page.entries);
          // The list is complete: its last batch and the end of the list state commit together.
          // Its outcome is decided over every run that took part in it, not this one alone.
          this.pendingState = null;
          const outcome = this.counts.failed > 0 || this.batch.leavesFailuresOpen(this.listHarvestId) ? 'partial' : 'complete';
          await this.commit(outcome);
          return outcome;
        }
        case 'loop':
          this.recordListDate(page.responseDate);
          page.entries.push({
            kind: 'failure',
            failure: {
              sourceId,
              harvestId,
              stage: 'list',
              code: 'tokenLoop',
              message: `the resumption token ${shown(step.token, 80)} came back a second time, also after ${MAX_LIST_RESTARTS} restarts of the list`,
            },
          });
          this.failure = `tokenLoop: the resumption token ${shown(step.token, 80)} came back a second time, also after ${MAX_LIST_RESTARTS} restarts of the list`;
          await this.take(page.entries);
          await this.commit();
          return 'failed';
        case 'next': {
          this.recordListDate(page.responseDate);
          // The next page, asked for while this one is taken in (see `prefetched`).
          if (!signal?.aborted) this.prefetched = settledLater(client.oai(step.next));
          await this.take(page.entries);
          this.pendingState = {
            token: step.next.resumptionToken!,
            listFrom: plan.from,
            listUntil: plan.until,
            set: set ?? null,
            prefix,
            listResponseDate: this.listResponseDate,
            harvestId: this.listHarvestId,
          };
          if (this.batch.full) await this.commit();
          break;
        }
      }
    }
    throw new Error('the list ended without its last page'); // walkList always ends with end, failed or loop
  }

  /**
   * Commits what the batch holds with the list state of its last complete page (a harvest
   * stopped on request, or failing): the next harvest resumes after it. When even that cannot
   * be written (no room left), the batch bag is removed and the error thrown.
   */
  async settle(): Promise<void> {
    try {
      await this.commit();
    } catch (error) {
      await this.batch.abort();
      throw error;
    }
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

  /** Takes a page's records into the batch, in list order. */
  private async take(entries: readonly PageEntry[]): Promise<void> {
    await this.batch.addPage(++this.pages, entries);
  }

  /**
   * Commits the batch with the list state of its last page. The harvest's row gets its counts
   * in the batch's transaction: a killed harvest's row tells what its committed batches did.
   */
  private async commit(listEnd?: 'complete' | 'partial'): Promise<void> {
    const { catalog, client, harvestId } = this.setup;
    let after: HarvestCounts | undefined;
    const state = this.pendingState;
    // Cleared first: a batch that fails to commit must not let a later commit save its token.
    this.pendingState = undefined;
    await this.batch.commit({ listResponseDate: this.listResponseDate, ...(listEnd ? { listEnd } : {}) }, state, (tally) => {
      after = { ...this.counts, requests: client.requests };
      addTally(after, tally);
      catalog.updateRunCounts(harvestId, after);
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
  private readPage(args: Record<string, string>, prefetched?: Promise<OaiHttpResponse>): Promise<PageResult> {
    // The page's lookups (known states, held payloads) in one read transaction: nothing is
    // written to the catalog until the batch commits, after the page.
    return this.setup.catalog.readSession(() => this.readPageAttempts(args, prefetched));
  }

  private async readPageAttempts(args: Record<string, string>, prefetched?: Promise<OaiHttpResponse>): Promise<PageResult> {
    const { client, context, log, concurrency } = this.setup;
    const policy = this.setup.retry ?? DEFAULT_RETRY_POLICY;
    const counts = this.counts;
    const batch = this.batch;
    for (let attempt = 0; ; attempt++) {
      // The page's records go into the batch (its bag in tmp/) as they are done, so a page holds
      // only the records in flight; they are committed with the page's token when it ends.
      const records = new PageRecords({
        context,
        batch,
        counts,
        log,
        concurrency,
        progress: () => this.reportProgress(),
        deliver: (entries) => batch.addPage(this.pages + 1, entries),
      });
      try {
        // The first attempt may have been asked for already; a retry always asks again.
        const asked = attempt === 0 && prefetched ? prefetched : client.oai(args);
        // One connection to the host: the page must be in before its records' datastreams can go.
        const response = client.repositoryConnections === 1 ? receivedWhole(asked, context.archiveDir) : asked;
        const page = await readListPage(response, `ListRecords of ${client.endpoint.href}`, records.readOptions());
        return { entries: await records.finish(), ...page };
      } catch (error) {
        // What the broken attempt did take is kept in the batch: the page asked for again
        // recognises those records.
        await this.take(await records.abandon());
        if (context.signal?.aborted) throw new HarvestStopped();
        if (error instanceof ArchiverError || attempt >= policy.retries || refusedAsSent(error)) {
          if (error instanceof ArchiverError) throw error;
          const failed = refusedAsSent(error) ? `is refused (${(error as DidlError).code})` : `failed ${attempt + 1} times`;
          throw new ArchiverError('ERR_HARVEST_PROTOCOL', `a ListRecords page of ${shown(client.endpoint.href)} ${failed}: ${shown((error as Error).message)}`);
        }
        const delayMs = retryDelayMs(attempt + 1, policy);
        log(`page failed (${isDidlError(error) ? error.code : shown((error as Error).message)}); asking again in ${Math.round(delayMs / 1000)} s`);
        await sleep(delayMs, undefined, context.signal ? { signal: context.signal } : {}).catch(() => {
          throw new HarvestStopped();
        });
      }
    }
  }
}

/**
 * A page refused for what its XML is, not for how it arrived: a DOCTYPE, a construct past the
 * reader's bounds (nesting, attributes, a name or a text too long), an encoding other than
 * UTF-8. Asked again it comes back the same, so it fails the list at once, like a limit; a page
 * cut short or not well-formed is still asked again.
 */
function refusedAsSent(error: unknown): error is DidlError {
  return isDidlError(error) && (error.code === 'ERR_DIDL_DOCTYPE' || error.code === 'ERR_DIDL_TOO_LARGE' || error.code === 'ERR_DIDL_ENCODING');
}

/** Marks a promise as handled now (it is awaited later), so an early rejection is not reported as unhandled. */
function settledLater<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
}

/** A page read and processed: its records in list order (taken into the batch by the caller) and what it says about the list. */
interface PageResult extends ListPage {
  entries: PageEntry[];
}

/** Thrown inside a harvest when its signal stops it; never leaves `harvest()`. */
export class HarvestStopped extends Error {}

function addTally(counts: HarvestCounts, tally: BatchTally): void {
  for (const key of Object.keys(tally) as Array<keyof BatchTally>) counts[key] += tally[key];
}
