// One harvest's list (harvest/harvest.ts starts it): page after page read from the repository
// (a page that breaks off asked for again), each page's records taken into the run (ingest/)
// up to `concurrency` at a time while the page is read in order; a batch full or the list's
// end commits the run's batch with the list state its last page leads to.
import { setTimeout as sleep } from 'node:timers/promises';
import { type DidlError, isDidlError } from '@oaibag/didl';
import type { HarvestCounts, NewFailure, ResumeState } from '../catalog/catalog-types.js';
import { ArchiverError } from '../core/errors.js';
import { shown } from '../core/remote-text.js';
import type { PageEntry } from '../ingest/ingest-batch.js';
import type { IngestRun } from '../ingest/ingest-run.js';
import { type ListPage, readListPage } from '../oai/list-page.js';
import { type ListStep, walkList } from '../oai/list-walk.js';
import type { OaiHttpResponse } from '../oai/oai-client.js';
import { DEFAULT_RETRY_POLICY, type RetryPolicy, retryDelayMs } from '../oai/retry-policy.js';
import type { HarvestPlan } from './harvest-plan.js';
import { receivedWhole } from './whole-page.js';

/** How many times one harvest starts its list again (badResumptionToken, a token loop). */
const MAX_LIST_RESTARTS = 2;

/** What a {@link HarvestList} is told besides its run and plan. */
export interface HarvestListOptions {
  retry?: RetryPolicy | undefined;
  /** After each record and page, with the counts so far and the list's completeListSize when known. */
  progress?: ((counts: Readonly<HarvestCounts>, completeListSize?: number) => void) | undefined;
}

type Outcome = 'complete' | 'partial' | 'failed';

/**
 * One harvest's list, page after page, from its plan to its end (the tokens followed, restarted
 * and refused by the one list loop, oai/list-walk.ts), and what a harvest carries from one page
 * to the next: the list's first responseDate (the watermark once it completes), the list state,
 * and the next page asked for while this one is taken in.
 */
export class HarvestList {
  /** Why the list failed, when `walk` resolved `failed` (the list failure's code and message). */
  failure: string | undefined;
  /** The responseDate of the list's first page (of a resumed list: of its first harvest). */
  listResponseDate: string | null;
  private listDateRecorded = false;
  private completeListSize: number | undefined;
  /** The next page, asked for while this one is taken in: the repository prepares it meanwhile (the requests stay one after the other). */
  private prefetched: Promise<OaiHttpResponse> | undefined;
  /**
   * The harvest that started this list: this one, or the one whose saved token it resumes. Its
   * record failures and those of every run after it decide the list's outcome.
   */
  private readonly listHarvestId: number;
  /** The list state after the last page taken into the batch: saved when the batch commits. */
  private pendingState: ResumeState | null | undefined;

  constructor(
    private readonly run: IngestRun,
    private readonly plan: HarvestPlan,
    private readonly options: HarvestListOptions = {},
  ) {
    this.listResponseDate = plan.resume?.listResponseDate ?? null;
    this.listHarvestId = plan.resume?.harvestId ?? run.id;
    if (plan.resume) run.context.log('resuming the interrupted list from its saved resumption token');
  }

  /**
   * Reads and commits every page; resolves `complete` at the end of the list, `partial` when it
   * ended with a record failure of the list still open (of this run or of an earlier run that
   * took part in it: the watermark must not move), or `failed` when the list itself failed (the
   * reason committed as a list failure). Throws HarvestStopped when stopped on request, and the
   * error of a page that kept failing.
   */
  async walk(): Promise<Outcome> {
    const { client, signal } = this.run.context;
    const steps = walkList<PageResult>({
      verb: 'ListRecords',
      first: this.plan.firstArgs,
      start: this.plan.pageArgs,
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
      this.completeListSize = step.page.completeListSize ?? this.completeListSize;
      const outcome = await this.takeStep(step);
      if (outcome !== undefined) return outcome;
    }
    throw new Error('the list ended without its last page'); // walkList always ends with end, failed or loop
  }

  /**
   * Commits what the batch holds with the list state of its last complete page (a harvest
   * stopped on request, or failing): the next harvest resumes after it. Returns the commit's
   * failure (no room left), the batch bag then removed.
   */
  async settle(): Promise<unknown> {
    this.releasePrefetched();
    const failure = await this.run.settle(this.commitFacts());
    if (failure === undefined) this.reportProgress();
    return failure;
  }

  /** Takes one step of the list into the run; the list's outcome once it ended. */
  private async takeStep(step: ListStep<PageResult>): Promise<Outcome | undefined> {
    const { page } = step;
    switch (step.kind) {
      case 'restart':
        // The repository forgot the token (restart, expiry) or the tokens loop: the list starts
        // again from the checkpoint; records already taken come again and cost nothing.
        this.run.context.log(`${step.why}; restarting the list from the checkpoint`);
        this.listResponseDate = null;
        await this.run.takePage(page.entries);
        if (this.run.full) await this.commit();
        return undefined;
      case 'failed': {
        const message = step.errors.map((error) => `${shown(error.code, 40)}: ${shown(error.message)}`).join('; ');
        return this.failList(page.entries, shown(step.errors[0]!.code, 40), message, `the repository ended the list with ${message}`);
      }
      case 'end':
        return this.end(page);
      case 'loop': {
        this.recordListDate(page.responseDate);
        const message = `the resumption token ${shown(step.token, 80)} came back a second time, also after ${MAX_LIST_RESTARTS} restarts of the list`;
        return this.failList(page.entries, 'tokenLoop', message, `tokenLoop: ${message}`);
      }
      case 'next':
        await this.next(page, step.next);
        return undefined;
    }
  }

  /** A page with a token: taken in while the next one is asked for, its token saved with the batch. */
  private async next(page: PageResult, nextArgs: Record<string, string>): Promise<void> {
    const { client, signal, set, prefix } = this.run.context;
    this.recordListDate(page.responseDate);
    // The next page, asked for while this one is taken in (see `prefetched`).
    if (!signal?.aborted) this.prefetched = settledLater(client.oai(nextArgs));
    await this.run.takePage(page.entries);
    this.pendingState = {
      token: nextArgs.resumptionToken!,
      listFrom: this.plan.from,
      listUntil: this.plan.until,
      set,
      prefix,
      listResponseDate: this.listResponseDate,
      harvestId: this.listHarvestId,
    };
    if (this.run.full) await this.commit();
  }

  /**
   * The list's last page: its last batch and the end of the list state commit together. Its
   * outcome is decided over every run that took part in the list, not this one alone.
   */
  private async end(page: PageResult): Promise<Outcome> {
    this.recordListDate(page.responseDate);
    await this.run.takePage(page.entries);
    this.pendingState = null;
    const outcome = this.run.counts.failed > 0 || this.run.leavesFailuresOpen(this.listHarvestId) ? 'partial' : 'complete';
    await this.commit(outcome);
    return outcome;
  }

  /** The list itself failed: its page's records and the list failure committed, the list `failed`. */
  private async failList(entries: PageEntry[], code: string, message: string, failure: string): Promise<Outcome> {
    const { sourceId, harvestId } = this.run.context;
    this.failure = failure;
    const listFailure: NewFailure = { sourceId, harvestId, stage: 'list', code, message };
    await this.run.takePage([...entries, { kind: 'failure', failure: listFailure }]);
    await this.commit();
    return 'failed';
  }

  /** Frees the connection of a prefetched page that will not be read. */
  private releasePrefetched(): void {
    void this.prefetched?.then(
      (response) => response.body.destroy(),
      () => undefined,
    );
    this.prefetched = undefined;
  }

  /** Records the list's first responseDate on the harvest's row, once. */
  private recordListDate(responseDate: string | undefined): void {
    const { catalog, harvestId } = this.run.context;
    if (this.listResponseDate === null && responseDate) {
      this.listResponseDate = responseDate;
      catalog.setListResponseDate(harvestId, responseDate);
    } else if (this.listResponseDate !== null && !this.listDateRecorded) {
      catalog.setListResponseDate(harvestId, this.listResponseDate); // a resumed list's, from its first harvest
    }
    this.listDateRecorded = this.listResponseDate !== null;
  }

  /** Commits the run's batch with the list state of its last page (and the list's end). */
  private async commit(listEnd?: 'complete' | 'partial'): Promise<void> {
    await this.run.commit({ ...this.commitFacts(), ...(listEnd ? { listEnd } : {}) });
    this.reportProgress();
  }

  /**
   * The list's facts for a commit. The pending state is handed over once: a batch that fails to
   * commit must not let a later commit save its token.
   */
  private commitFacts(): { listResponseDate: string | null; state: ResumeState | null | undefined; requests: number } {
    const state = this.pendingState;
    this.pendingState = undefined;
    return { listResponseDate: this.listResponseDate, state, requests: this.run.context.client.requests };
  }

  private reportProgress(): void {
    this.options.progress?.(this.run.counts, this.completeListSize);
  }

  /**
   * Fetches and processes one page. A page that breaks off or is not well-formed is asked for
   * again (its records already stored are recognised); after the retries it is an error.
   */
  private readPage(args: Record<string, string>, prefetched?: Promise<OaiHttpResponse>): Promise<PageResult> {
    // The page's lookups (known states, held payloads) in one read transaction: nothing is
    // written to the catalog until the batch commits, after the page.
    return this.run.context.catalog.readSession(() => this.readPageAttempts(args, prefetched));
  }

  private async readPageAttempts(args: Record<string, string>, prefetched?: Promise<OaiHttpResponse>): Promise<PageResult> {
    const { client, archiveDir, signal, log } = this.run.context;
    const policy = this.options.retry ?? DEFAULT_RETRY_POLICY;
    for (let attempt = 0; ; attempt++) {
      // The page's records go into the batch (its bag in tmp/) as they are done, so a page holds
      // only the records in flight; they are committed with the page's token when it ends.
      const records = this.run.pageRecords(() => this.reportProgress());
      try {
        // The first attempt may have been asked for already; a retry always asks again.
        const asked = attempt === 0 && prefetched ? prefetched : client.oai(args);
        // One connection to the host: the page must be in before its records' datastreams can go.
        const response = client.repositoryConnections === 1 ? receivedWhole(asked, archiveDir) : asked;
        const page = await readListPage(response, `ListRecords of ${client.endpoint.href}`, records.readOptions());
        return { entries: await records.finish(), ...page };
      } catch (error) {
        // What the broken attempt did take is kept in the batch: the page asked for again
        // recognises those records.
        await this.run.takePage(await records.abandon());
        if (signal?.aborted) throw new HarvestStopped();
        if (error instanceof ArchiverError) throw error;
        if (attempt >= policy.retries || refusedAsSent(error)) {
          const failed = refusedAsSent(error) ? `is refused (${(error as DidlError).code})` : `failed ${attempt + 1} times`;
          throw new ArchiverError('ERR_HARVEST_PROTOCOL', `a ListRecords page of ${shown(client.endpoint.href)} ${failed}: ${shown((error as Error).message)}`);
        }
        const delayMs = retryDelayMs(attempt + 1, policy);
        log(`page failed (${isDidlError(error) ? error.code : shown((error as Error).message)}); asking again in ${Math.round(delayMs / 1000)} s`);
        await sleep(delayMs, undefined, signal ? { signal } : {}).catch(() => {
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

/** A page read and processed: its records in list order (taken into the run by the caller) and what it says about the list. */
interface PageResult extends ListPage {
  entries: PageEntry[];
}

/** Thrown inside a harvest when its signal stops it; never leaves `harvest()`. */
export class HarvestStopped extends Error {}
