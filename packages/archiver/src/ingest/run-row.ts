// A run's row in the catalog (`harvests`), from the moment it is opened, before anything is asked
// of the source (so a run that never reaches its records still leaves its trace for `oaibag
// status`), to its end: its arguments, its outcome and, for a failed or interrupted one, why.
import type { Catalog } from '../catalog/catalog.js';
import type { FailureStage, HarvestArguments, HarvestCounts, HarvestStatus, RunKind } from '../catalog/catalog-types.js';
import { ArchiverError, archiveFullError, isStorageExhausted } from '../core/errors.js';

/** Why a run stopped on request (SIGINT, SIGTERM, a mirror stopping). */
export const STOPPED_REASON = 'stopped on request; the next harvest resumes';

export class RunRow {
  private constructor(
    private readonly catalog: Catalog,
    readonly id: number,
    readonly kind: RunKind,
    readonly sourceId: number,
  ) {}

  /** Opens the row of a run of `kind` of the source, `running`. */
  static open(catalog: Catalog, sourceId: number, kind: RunKind, args: HarvestArguments): RunRow {
    return new RunRow(catalog, catalog.startRun(sourceId, kind, args), kind, sourceId);
  }

  /** Replaces the arguments the run was opened with (a harvest's, once Identify has told how to ask). */
  setArguments(args: HarvestArguments): void {
    this.catalog.setRunArguments(this.id, args);
  }

  /** Closes the row with its outcome and counts (and why, for a failed, partial or interrupted run). */
  finish(status: Exclude<HarvestStatus, 'running'>, counts: Partial<HarvestCounts>, reason?: string): void {
    this.catalog.finishRun(this.id, status, counts, reason);
  }

  /**
   * Closes a run that never reached its records (Identify failed, the format was refused, it was
   * stopped): `interrupted` when stopped, else `failed`, with its reason. A full disk may refuse
   * the row; the next run then marks it interrupted.
   */
  endAttempt(error: unknown): void {
    const stopped = (error as Error | undefined)?.name === 'AbortError';
    try {
      this.finish(stopped ? 'interrupted' : 'failed', {}, reasonOf(error));
    } catch (bookkeeping) {
      if (!isStorageExhausted(bookkeeping)) throw bookkeeping;
    }
  }

  /**
   * Books a run's failure: the error as a failure of `stage` (of `store` for a full disk, which
   * becomes ERR_ARCHIVE_FULL) and the row closed `failed` with its counts and reason. Returns the
   * error to throw; one that is not an ArchiverError (a bug) is returned as it is, unrecorded.
   */
  fail(error: unknown, counts: HarvestCounts, stage: FailureStage, archiveDir: string): unknown {
    const stop = isStorageExhausted(error) ? archiveFullError(archiveDir, error) : error;
    if (!(stop instanceof ArchiverError)) return stop;
    try {
      this.catalog.recordFailure({
        sourceId: this.sourceId,
        harvestId: this.id,
        stage: stop.code === 'ERR_ARCHIVE_FULL' ? 'store' : stage,
        code: stop.code,
        message: stop.message,
      });
      this.finish('failed', counts, reasonOf(stop));
    } catch (bookkeeping) {
      // A full disk may refuse these rows too; the next run marks this one interrupted.
      if (!isStorageExhausted(bookkeeping)) throw bookkeeping;
    }
    return stop;
  }
}

/** One line for the catalog: the error's message and code. */
function reasonOf(error: unknown): string {
  if (error instanceof ArchiverError) return `${error.message} [${error.code}]`;
  if ((error as Error | undefined)?.name === 'AbortError') return STOPPED_REASON;
  return `${(error as Error | undefined)?.message ?? String(error)} [ERR_ARCHIVE_INTERNAL]`;
}
