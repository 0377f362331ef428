// The apply step of a restore: the planned files written into the restore folder. Each is
// staged in turn (stage-version.ts: read from the payload files the catalog names, verified,
// written under a temporary name, in synchronous calls); verified files wait and are made durable
// a batch at a time (one syncfs where available), then renamed: the same guarantee as fsyncing
// each, for a fraction of the cost (see flush-to-disk.ts). Outcomes are taken in the plan's
// order, so reports and the summary do not depend on timing.
import { lstatSync, renameSync, rmSync } from 'node:fs';
import { mkdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { AipStorage } from '../aip/aip-storage.js';
import { type DiskFlusher, fsyncFolderIfPossible, openDiskFlusher } from '../archive/flush-to-disk.js';
import { ArchiverError, isStorageExhausted } from '../core/errors.js';
import { compareExisting, type ExistingFile } from './existing-file.js';
import { Damage, holdingBag } from './restore-bag.js';
import type { PlanVersion } from './restore-plan.js';
import { listEntry, type RestoreCounts, type RestoreReport } from './restore-summary.js';
import { InTheWay, removeStaleTemporaries, type StagedVersion, stageStoredVersion, stageVersion } from './stage-version.js';

/** A resource of the plan: the version to write and where it goes. */
export interface PlannedFile {
  version: PlanVersion;
  /** Relative to the restore folder, `/`-separated. */
  path: string;
  segments: string[];
}

/** A file staged, or why not; with what was at its place before (only looked at in a restore folder that was not empty). */
type Outcome = { entry: PlannedFile; bag: string; staged?: StagedVersion; error?: unknown; before?: ExistingFile };

/**
 * A restore into a folder that was not empty: the planned paths where something other than a
 * folder already is (folder-survey.ts), and whether `--clean` removes what is not the state's.
 */
export interface ExistingFiles {
  present: { has(path: string): boolean };
  clean: boolean;
}

/**
 * A batch is made durable and renamed at this many files or bytes, whichever comes first. Its
 * flush runs while the next batch is staged (syncfs in the helper process, fsyncs in the thread
 * pool), and the batch is renamed before the next one is flushed.
 */
const BATCH_FILES = 256;
const BATCH_BYTES = 256 * 1024 * 1024;
/** Folders remembered as checked real directories, at most. */
const KNOWN_FOLDERS = 100_000;

/** Writes planned files into `root` (an absolute folder), reporting each outcome. */
export class SiteWriter {
  /** Relative folders known to be real directories. */
  private readonly folders = new Set<string>();
  /** Folders whose entries changed: flushed at the end. */
  private readonly touched: Set<string>;
  /** Outcomes in plan order since the last batch was handed to the flusher, and the files and bytes staged among them. */
  private current: Outcome[] = [];
  private currentFiles = 0;
  private currentBytes = 0;
  /** The batch being made durable: its outcomes (in plan order, those not yet taken) and the flush's error, if any. */
  private flushing: { outcomes: Outcome[]; flushed: Promise<unknown> } | undefined;
  private existing: ExistingFiles | undefined;

  private constructor(
    private readonly archiveDir: string,
    private readonly root: string,
    private readonly flusher: DiskFlusher,
    private readonly report: RestoreReport,
    private readonly progress: ((done: RestoreCounts, total: RestoreCounts) => void) | undefined,
    /** The archive's object store, when its bags are there; undefined for bags in its folder. */
    private readonly store: AipStorage | undefined,
  ) {
    this.touched = new Set([root]);
  }

  /**
   * Makes the restore folder (ERR_ARCHIVE_IO when it cannot be made) and removes the temporary
   * files a killed restore left in it. With `store`, payloads are read from the archive's
   * object store instead of its folder.
   */
  static async open(
    archiveDir: string,
    root: string,
    report: RestoreReport,
    progress?: (done: RestoreCounts, total: RestoreCounts) => void,
    store?: AipStorage,
  ): Promise<SiteWriter> {
    await mkdir(root, { recursive: true }).catch((error: unknown) => {
      throw new ArchiverError('ERR_ARCHIVE_IO', `cannot create the restore folder ${root}: ${(error as Error).message}`, { cause: error, path: root });
    });
    const stale = await removeStaleTemporaries(root);
    if (stale > 0) report.note(`removed ${stale} temporary file(s) left by an interrupted restore`);
    return new SiteWriter(archiveDir, root, await openDiskFlusher(root), report, progress, store);
  }

  /**
   * Writes every file of `work`, then makes the folders durable. Always closes the flusher. With
   * `existing`, each file already at a planned place is compared with the state's bytes: replaced
   * and reported when it differs; when its resource cannot be written, it is reported as not part
   * of the state (and removed with `clean`) unless it has the state's bytes already.
   */
  async writeAll(work: Iterable<PlannedFile>, total: RestoreCounts, existing?: ExistingFiles): Promise<void> {
    this.existing = existing;
    try {
      for (const entry of work) {
        const outcome = await this.stage(entry);
        this.current.push(outcome);
        if (outcome.staged) {
          this.currentFiles += 1;
          this.currentBytes += outcome.staged.size;
        }
        // Out of room: the verified files staged so far are still placed, then the restore stops (taking this outcome throws).
        if (isStorageExhausted(outcome.error)) await this.drain(total);
        else if (this.currentFiles >= BATCH_FILES || this.currentBytes >= BATCH_BYTES) await this.rotate(total);
      }
      await this.drain(total);
      if (this.flusher.mode === 'filesystem') await this.flusher.flush({ folders: [this.root] }).catch(() => undefined);
      else for (const folder of this.touched) await fsyncFolderIfPossible(folder);
    } finally {
      // Files staged and not renamed when something failed: removed.
      for (const outcome of [...(this.flushing?.outcomes ?? []), ...this.current]) if (outcome.staged) removeQuietly(outcome.staged.temp);
      await this.flusher.close();
    }
  }

  private async stage(entry: PlannedFile): Promise<Outcome> {
    // A cache: a folder forgotten is only checked again (lstat), and a site of a million folders does not fill memory.
    if (this.folders.size > KNOWN_FOLDERS) this.folders.clear();
    const bag = holdingBag(this.archiveDir, entry.version, this.store);
    let staged: StagedVersion;
    try {
      staged =
        this.store === undefined
          ? stageVersion(this.archiveDir, this.root, entry.version, entry.segments, this.folders, this.touched)
          : await stageStoredVersion(this.store, this.archiveDir, this.root, entry.version, entry.segments, this.folders, this.touched);
    } catch (error) {
      return { entry, bag, error };
    }
    const part = entry.version.parts[0];
    if (part === undefined || !this.existing?.present.has(entry.path)) return { entry, bag, staged };
    return { entry, bag, staged, before: await compareExisting(staged.target, part) };
  }

  /**
   * A planned file that was not written (damaged, in the way, failed): what an earlier restore
   * left at its place is not this state's, unless it has the state's bytes. Reported as extra,
   * and removed with --clean (never through a link: present paths were reached through real
   * folders, and unlink removes a link itself).
   */
  private async unwritten(entry: PlannedFile): Promise<void> {
    const part = entry.version.parts[0];
    if (this.existing === undefined || part === undefined || !this.existing.present.has(entry.path)) return;
    const target = join(this.root, ...entry.segments);
    const before = await compareExisting(target, part);
    if (before === 'same') this.report.existing(entry.path, entry.version.identifier, true);
    if (before !== 'different') return;
    this.report.extra(entry.path);
    if (this.existing.clean) await unlink(target).catch((error: unknown) => this.report.notRemoved(entry.path, error));
  }

  /** Takes the batch being flushed (once it is durable), then starts the flush of the current one. */
  private async rotate(total: RestoreCounts): Promise<void> {
    await this.settle(total);
    const outcomes = this.current;
    this.current = [];
    this.currentFiles = 0;
    this.currentBytes = 0;
    const files = outcomes.flatMap((outcome) => (outcome.staged ? [outcome.staged.temp] : []));
    // The flush's error, if any, is what it resolves to: it is taken in plan order with the outcomes.
    this.flushing = {
      outcomes,
      flushed: this.flusher.flush({ files }).then(
        () => undefined,
        (error: unknown) => error ?? new Error('the flush failed'),
      ),
    };
  }

  /** Every outcome taken: the batch being flushed, then the current one, flushed and taken. */
  private async drain(total: RestoreCounts): Promise<void> {
    await this.rotate(total);
    await this.settle(total);
  }

  /** Waits for the batch being flushed, then takes its outcomes in plan order: a failure is reported, a verified file renamed into place. */
  private async settle(total: RestoreCounts): Promise<void> {
    const batch = this.flushing;
    if (batch === undefined) return;
    const flushError = await batch.flushed;
    for (let outcome = batch.outcomes.shift(); outcome !== undefined; outcome = batch.outcomes.shift()) {
      await this.take(outcome, flushError);
      this.tick(total);
    }
    this.flushing = undefined;
  }

  /** One outcome, in plan order, once its batch's flush has ended (with `flushError` when it failed). */
  private async take(outcome: Outcome, flushError: unknown): Promise<void> {
    const { entry, bag, staged, error } = outcome;
    if (staged === undefined) {
      if (error instanceof Damage) this.report.damaged(entry.version, bag, error.message, error.expected, error.found);
      else if (error instanceof InTheWay) this.report.refuse('in-the-way', entry.version.identifier, error.message);
      else this.report.failed(entry.version.identifier, entry.path, error, this.root);
      await this.unwritten(entry);
      return;
    }
    const summary = this.report.summary;
    try {
      // Not known to be durable: not renamed.
      if (flushError !== undefined) throw flushError;
      if (lstatSync(staged.target, { throwIfNoEntry: false })?.isDirectory()) throw new InTheWay(`${entry.path} is a folder in the restore folder`);
      renameSync(staged.temp, staged.target);
      this.touched.add(staged.folder);
      summary.restored += 1;
      summary.bytes += staged.size;
      if (staged.extraParts.length > 0)
        listEntry(summary, 'extraParts', summary.extraParts, { identifier: entry.version.identifier, bag, parts: staged.extraParts });
      if (outcome.before === 'same' || outcome.before === 'different') this.report.existing(entry.path, entry.version.identifier, outcome.before === 'same');
    } catch (error) {
      removeQuietly(staged.temp);
      if (error instanceof InTheWay) this.report.refuse('in-the-way', entry.version.identifier, error.message);
      else this.report.failed(entry.version.identifier, entry.path, error, this.root);
      await this.unwritten(entry);
    }
  }

  private tick(total: RestoreCounts): void {
    this.progress?.({ files: this.report.summary.restored, bytes: this.report.summary.bytes }, total);
  }
}

/** Removes a temporary file; an error there must not hide the one being reported. */
function removeQuietly(path: string): void {
  try {
    rmSync(path, { force: true });
  } catch {
    // left behind: the next restore into this folder removes it (removeStaleTemporaries)
  }
}
