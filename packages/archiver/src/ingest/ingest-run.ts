// One run that adds to the archive: a harvest over OAI-PMH or an import of a delivery, fed page
// by page by its source (harvest/, import/). The run owns its row, its batch and its counts: it
// takes each page's records into the batch, commits the batch with its tally (the counts, the
// list state and a watermark in the batch's transaction), settles what the batch holds when the
// source fails or stops, and books the outcome or the failure on its row.
import type { FailureStage, HarvestCounts, HarvestStatus, ResumeState } from '../catalog/catalog-types.js';
import { zeroCounts } from '../catalog/catalog-types.js';
import { type BatchTally, IngestBatch, type PageEntry } from './ingest-batch.js';
import type { IngestContext } from './ingest-context.js';
import type { IngestSession } from './ingest-session.js';
import { PageRecords } from './page-records.js';
import type { RunRow } from './run-row.js';

/** What the source knows of its run; the rest of the context comes from the session and the row. */
export type RunFacts = Omit<IngestContext, 'kind' | 'archiveDir' | 'catalog' | 'flusher' | 'storage' | 'sourceId' | 'harvestId'>;

/** What a commit records besides the batch's records. */
export interface CommitFacts {
  /** The responseDate of the list's first page (for an import: the watermark it sets), in bag-info.txt. */
  listResponseDate?: string | null;
  /** Set on the batch that ends the run's list (see ListFacts). */
  listEnd?: 'complete' | 'partial';
  /** Where the list stands after the batch's last page: its token, or null once it ended. */
  state?: ResumeState | null | undefined;
  /** The source's new watermark (an import with a cut-off), set in the batch's transaction. */
  watermark?: string;
  /** The requests made so far, for the row (a harvest's). */
  requests?: number;
}

export class IngestRun {
  readonly context: IngestContext;
  /** What the run did so far (what its row says after each commit). */
  readonly counts: HarvestCounts = zeroCounts();
  /** Batch bags committed. */
  bags = 0;
  private readonly batch: IngestBatch;
  /** Pages taken so far (a page asked for again gets the next number). */
  private pages = 0;

  constructor(
    session: IngestSession,
    readonly row: RunRow,
    facts: RunFacts,
  ) {
    const { archiveDir, catalog, flusher, storage } = session;
    this.context = { ...facts, kind: row.kind, archiveDir, catalog, flusher, storage, sourceId: row.sourceId, harvestId: row.id };
    this.batch = new IngestBatch(this.context);
  }

  /** The run's row id (its bags' Harvest-Id). */
  get id(): number {
    return this.row.id;
  }

  /** True once the batch holds enough to be committed (see BatchBounds). */
  get full(): boolean {
    return this.batch.full;
  }

  /** Whether the archive holds bytes with this sha-256 (recorded, or in the batch's bag). */
  holdsPayload(sha256: string): boolean {
    return this.batch.holdsPayload(sha256);
  }

  /** Whether a record failure of the list (since run `sinceRunId`) stays open once the batch commits. */
  leavesFailuresOpen(sinceRunId: number): boolean {
    return this.batch.leavesFailuresOpen(sinceRunId);
  }

  /** The records of the next page, taken into the batch as they are done; `progress` after each. */
  pageRecords(progress?: () => void): PageRecords {
    return new PageRecords({ context: this.context, batch: this.batch, counts: this.counts, page: this.pages + 1, progress });
  }

  /** Takes the rest of a page's records (in list order) into the batch; the next page gets the next number. */
  async takePage(entries: readonly PageEntry[]): Promise<void> {
    await this.batch.addPage(++this.pages, entries);
  }

  /**
   * Commits the batch: its bag placed, then its records, the list state, the run's counts (the
   * row tells what a killed run's committed batches did) and a watermark in one transaction.
   */
  async commit(facts: CommitFacts = {}): Promise<void> {
    const { catalog, sourceId, harvestId } = this.context;
    const list = { listResponseDate: facts.listResponseDate ?? null, ...(facts.listEnd ? { listEnd: facts.listEnd } : {}) };
    const placed = await this.batch.place(list, facts.state);
    if (placed === undefined) {
      // Nothing to record (every record known, or left out): the watermark on its own.
      if (facts.watermark !== undefined) catalog.setWatermark(sourceId, facts.watermark);
      return;
    }
    const after = catalog.transaction(() => {
      const counts = withTally(this.counts, placed.record());
      catalog.updateRunCounts(harvestId, { ...counts, requests: facts.requests ?? counts.requests });
      if (facts.watermark !== undefined) catalog.setWatermark(sourceId, facts.watermark);
      return counts;
    });
    Object.assign(this.counts, after);
    if (placed.bagPath !== undefined) this.bags++;
  }

  /**
   * After the source failed or was stopped: commits what the batch holds (whole records,
   * verified; the next run recognises them) with `facts`. Returns the commit's failure, if any,
   * the batch bag then removed.
   */
  async settle(facts: CommitFacts = {}): Promise<unknown> {
    try {
      await this.commit(facts);
      return undefined;
    } catch (failure) {
      await this.batch.abort();
      return failure;
    }
  }

  /** Closes the row with the run's outcome and counts. */
  finish(status: Exclude<HarvestStatus, 'running'>, reason?: string): void {
    this.row.finish(status, this.counts, reason);
  }

  /** Books the run's failure (see RunRow.fail); returns the error to throw (ERR_ARCHIVE_FULL for a full disk). */
  fail(error: unknown, stage: FailureStage): unknown {
    return this.row.fail(error, this.counts, stage, this.context.archiveDir);
  }
}

/** The counts with a commit's tally added. */
function withTally(counts: HarvestCounts, tally: BatchTally): HarvestCounts {
  const sum = { ...counts };
  for (const key of Object.keys(tally) as Array<keyof BatchTally>) sum[key] += tally[key];
  return sum;
}
