// The apply step of a restore: the planned files written into the restore folder. Each is
// staged in turn (stage-version.ts: read from the payload files the catalog names, verified,
// written under a temporary name, in synchronous calls); verified files wait and are made durable
// a batch at a time (one syncfs where available), then renamed: the same guarantee as fsyncing
// each, for a fraction of the cost (see flush-to-disk.ts). Outcomes are taken in the plan's
// order, so reports and the summary do not depend on timing.
import { lstatSync, renameSync, rmSync } from 'node:fs';
import { mkdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { type DiskFlusher, fsyncFolderIfPossible, openDiskFlusher } from '../archive/flush-to-disk.js';
import { ArchiverError, isStorageExhausted } from '../core/errors.js';
import { compareExisting, type ExistingFile } from './existing-file.js';
import { Damage, holdingBag } from './restore-bag.js';
import type { PlanVersion } from './restore-plan.js';
import { listEntry, type RestoreCounts, type RestoreReport } from './restore-summary.js';
import { InTheWay, removeStaleTemporaries, type StagedVersion, stageVersion } from './stage-version.js';

/** A resource of the plan: the version to write and where it goes. */
export interface PlannedFile {
  version: PlanVersion;
  /** Relative to the restore folder, `/`-separated. */
  path: string;
  segments: string[];
}

/** A verified file under its temporary name, waiting for its batch to be made durable. */
interface StagedFile extends StagedVersion {
  entry: PlannedFile;
  bag: string;
  before?: ExistingFile | undefined;
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

/** A batch is made durable and renamed at this many files or bytes, whichever comes first. */
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
  private batch: StagedFile[] = [];
  private existing: ExistingFiles | undefined;
  private batchBytes = 0;

  private constructor(
    private readonly archiveDir: string,
    private readonly root: string,
    private readonly flusher: DiskFlusher,
    private readonly report: RestoreReport,
    private readonly progress: ((done: RestoreCounts, total: RestoreCounts) => void) | undefined,
  ) {
    this.touched = new Set([root]);
  }

  /**
   * Makes the restore folder (ERR_ARCHIVE_IO when it cannot be made) and removes the temporary
   * files a killed restore left in it.
   */
  static async open(
    archiveDir: string,
    root: string,
    report: RestoreReport,
    progress?: (done: RestoreCounts, total: RestoreCounts) => void,
  ): Promise<SiteWriter> {
    await mkdir(root, { recursive: true }).catch((error: unknown) => {
      throw new ArchiverError('ERR_ARCHIVE_IO', `cannot create the restore folder ${root}: ${(error as Error).message}`, { cause: error, path: root });
    });
    const stale = await removeStaleTemporaries(root);
    if (stale > 0) report.note(`removed ${stale} temporary file(s) left by an interrupted restore`);
    return new SiteWriter(archiveDir, root, await openDiskFlusher(root), report, progress);
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
      for (const entry of work) await this.take(await this.stage(entry), total);
      await this.place(total);
      if (this.flusher.mode === 'filesystem') await this.flusher.flush({ folders: [this.root] }).catch(() => undefined);
      else for (const folder of this.touched) await fsyncFolderIfPossible(folder);
    } finally {
      // Files staged when something failed: removed.
      for (const file of this.batch) removeQuietly(file.temp);
      await this.flusher.close();
    }
  }

  private async stage(entry: PlannedFile): Promise<Outcome> {
    // A cache: a folder forgotten is only checked again (lstat), and a site of a million folders does not fill memory.
    if (this.folders.size > KNOWN_FOLDERS) this.folders.clear();
    const bag = holdingBag(this.archiveDir, entry.version);
    let staged: StagedVersion;
    try {
      staged = stageVersion(this.archiveDir, this.root, entry.version, entry.segments, this.folders, this.touched);
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

  /** One outcome, in plan order: a staged file joins the batch; a failure is reported. */
  private async take(outcome: Outcome, total: RestoreCounts): Promise<void> {
    const { entry, bag, staged, error } = outcome;
    if (staged) {
      this.batch.push({ ...staged, entry, bag, before: outcome.before });
      this.batchBytes += staged.size;
      if (this.batch.length >= BATCH_FILES || this.batchBytes >= BATCH_BYTES) await this.place(total);
      return;
    }
    // Out of room: the verified files staged so far are still placed, then the restore stops.
    if (isStorageExhausted(error)) await this.place(total);
    if (error instanceof Damage) this.report.damaged(entry.version, bag, error.message, error.expected, error.found);
    else if (error instanceof InTheWay) this.report.refuse('in-the-way', entry.version.identifier, error.message);
    else this.report.failed(entry.version.identifier, entry.path, error, this.root);
    await this.unwritten(entry);
    this.tick(total);
  }

  /** Makes the batch durable, then renames each file into place. */
  private async place(total: RestoreCounts): Promise<void> {
    const staged = this.batch;
    this.batch = [];
    this.batchBytes = 0;
    try {
      await this.flusher.flush({ files: staged.map((file) => file.temp) });
    } catch (error) {
      for (const file of staged) {
        removeQuietly(file.temp);
        this.report.failed(file.entry.version.identifier, file.entry.path, error, this.root);
        await this.unwritten(file.entry);
      }
      return;
    }
    const summary = this.report.summary;
    for (const file of staged) {
      try {
        if (lstatSync(file.target, { throwIfNoEntry: false })?.isDirectory()) throw new InTheWay(`${file.entry.path} is a folder in the restore folder`);
        renameSync(file.temp, file.target);
        this.touched.add(file.folder);
        summary.restored += 1;
        summary.bytes += file.size;
        if (file.extraParts.length > 0)
          listEntry(summary, 'extraParts', summary.extraParts, { identifier: file.entry.version.identifier, bag: file.bag, parts: file.extraParts });
        if (file.before === 'same' || file.before === 'different') this.report.existing(file.entry.path, file.entry.version.identifier, file.before === 'same');
      } catch (error) {
        removeQuietly(file.temp);
        if (error instanceof InTheWay) this.report.refuse('in-the-way', file.entry.version.identifier, error.message);
        else this.report.failed(file.entry.version.identifier, file.entry.path, error, this.root);
        await this.unwritten(file.entry);
      }
      this.tick(total);
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
