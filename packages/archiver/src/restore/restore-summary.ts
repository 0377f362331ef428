// What `oaibag restore` reports: the options it takes, the summary it returns (and `--json`
// prints), and RestoreReport, which fills the summary and logs each problem as it is found.
import { isStorageExhausted, noRoomError } from '../core/errors.js';
import type { PlanVersion } from './restore-plan.js';

export interface RestoreOptions {
  archiveDir: string;
  /** The folder the site is rebuilt in (created when missing). */
  to: string;
  /** Restore only this source (its OAI-PMH base URL, as harvested); default: every source. */
  source?: string;
  /** `YYYY-MM-DD` (end of that day, UTC) or a date-time with a zone; default: the latest state. */
  asOf?: string;
  /** Decide and report what would be written, write nothing. */
  dryRun?: boolean;
  /** A non-empty `to` is restored over: files not part of the state are left and listed (else refused). */
  force?: boolean;
  /** A non-empty `to` is made exactly the state: what is not part of it is removed (else refused). */
  clean?: boolean;
  /** Each problem, one line, as it is found (the command prints them on stderr). */
  log?: (line: string) => void;
  /** After each file, with the totals planned (bytes as the catalog records them). */
  progress?: (done: RestoreCounts, total: RestoreCounts) => void;
  /**
   * Dry run: each file that would be written, in path order, handed over instead of gathered
   * in `summary.planned` (which then stays empty), so that a plan of millions of files is
   * never held at once. Called last, when the rest of the summary is complete.
   */
  onPlanned?: (file: RestoredFile, summary: RestoreSummary) => void;
  /** Rows read from the catalog and from the plan at a time (tests set it low); default: restore-queries.ts and restore-plan-table.ts. */
  pageRows?: number;
}

export interface RestoreCounts {
  files: number;
  bytes: number;
}

/** A file written (or, with `dryRun`, that would be written). */
export interface RestoredFile {
  /** Relative to the restore folder, `/`-separated. */
  path: string;
  identifier: string;
  /** Bytes (dry run: the catalog's size of the version, for a compound object all its parts). */
  size: number;
  datestamp: string;
}

/** A resource not restored, and why. `kind`: the URL is refused, or two resources claim one path, or something in the folder is in the way. */
export interface RefusedResource {
  kind: 'path' | 'collision' | 'in-the-way';
  identifier: string;
  reason: string;
}

/**
 * A version restore could not write because its bytes fail their check (a payload file missing,
 * a link, or not matching the digest or size the catalog records): nothing of it is written.
 * `oaibag verify` reports the whole bag and every version relying on the file.
 */
export interface DamageFound {
  identifier: string;
  /**
   * The bag holding the payload file (for a revisit, an earlier bag than the record's), as a
   * path the user can hand to `oaibag verify`.
   */
  bag: string;
  /** What is wrong, naming the payload file by its archive path (`<bag>/data/…`). */
  problem: string;
  expected?: string;
  found?: string;
}

/** The most extra paths a summary lists (all are counted): the restore folder is the user's, and may hold millions. */
export const LISTED_EXTRA_PATHS = 10_000;

/**
 * The most entries each other list of a summary holds (`refused`, `damaged`, `failed`,
 * `extraParts`, `folder.replaced`, `folder.notRemoved`): the first ones found; `counts` has
 * them all. A source of a million URLs with a query would otherwise fill memory with refusals.
 */
export const LISTED_ENTRIES = 10_000;

/** How many entries each list of the summary has in all (each list holds the first {@link LISTED_ENTRIES}). */
export interface RestoreListCounts {
  refused: number;
  damaged: number;
  failed: number;
  extraParts: number;
  replaced: number;
  notRemoved: number;
}

/**
 * What a restore into a non-empty folder found there and did about it (`--force` or `--clean`;
 * with `dryRun`, what it would do).
 */
export interface FolderChanges {
  mode: 'force' | 'clean';
  /**
   * Files, links and other non-folders not part of the restored state: left (`force`) or removed
   * (`clean`). A file at the place of a resource that could not be restored counts too, unless it
   * already has that resource's bytes.
   */
  extra: number;
  /** Their relative paths, the first {@link LISTED_EXTRA_PATHS}, in path order. */
  extraPaths: string[];
  /** Folders no file of the state goes into (those inside them included): left or removed. */
  extraFolders: number;
  /** Files of the state that were there with other bytes (or as a link): replaced. */
  replaced: Array<{ path: string; identifier: string }>;
  /** Files of the state that were there with its bytes already (written again all the same, mtime included). */
  unchanged: number;
  /** What `clean` could not remove, and why: each one a problem. */
  notRemoved: Array<{ path: string; message: string }>;
}

/** What `oaibag restore` did; `--json` prints this. */
export interface RestoreSummary {
  archive: string;
  to: string;
  /** The instant restored (`YYYY-MM-DDThh:mm:ssZ`), null for the latest state. */
  asOf: string | null;
  dryRun: boolean;
  sources: string[];
  /** Files written (dry run: that would be written). */
  restored: number;
  bytes: number;
  /** Resources that had a version but are deleted at the instant. */
  deleted: number;
  /** Resources live at the instant whose record carried no datastream (metadata only): nothing to write. */
  metadataOnly: number;
  /** Refused resources (the first {@link LISTED_ENTRIES}; `counts.refused` has them all), as are the lists below. */
  refused: RefusedResource[];
  damaged: DamageFound[];
  /** Resources whose file could not be written (I/O errors), with the message. */
  failed: Array<{ identifier: string; path: string; message: string }>;
  /** Compound objects: the first part is restored at the URL's path, the other parts (archive paths, `<bag>/data/…`) are not. */
  extraParts: Array<{ identifier: string; bag: string; parts: string[] }>;
  /** Dry run only: every file that would be written, in path order (empty when they went to `onPlanned`). */
  planned: RestoredFile[];
  /** What `to` held before, with `force` or `clean`; null when it was empty or new. */
  folder: FolderChanges | null;
  /** refused + damaged + failed (+ unreadable datestamps) + not removed: the command exits 1 when > 0. */
  problems: number;
  /** The size of each list above, all counted (a list holds the first {@link LISTED_ENTRIES}). */
  counts: RestoreListCounts;
}

/** Adds an entry to one of the summary's lists (up to {@link LISTED_ENTRIES}) and counts it. */
export function listEntry<T>(summary: RestoreSummary, kind: keyof RestoreListCounts, list: T[], entry: T): void {
  summary.counts[kind] += 1;
  if (list.length < LISTED_ENTRIES) list.push(entry);
}

/** The summary's problems, from its counts (refused, damaged, failed, not removed). */
export function countProblems(summary: RestoreSummary): number {
  const { refused, damaged, failed, notRemoved } = summary.counts;
  return refused + damaged + failed + notRemoved;
}

const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;
/** Text from a remote repository shown on one line, control characters escaped. */
const show = (text: string): string => text.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** How a damaged payload file is told, on one line: the bag holding it, the resource, the problem naming the file. */
export function damageLine(identifier: string, bag: string, problem: string): string {
  return `damaged bag ${show(bag)} (${show(identifier)}): ${show(problem)}`;
}

/** The restore's summary as it fills, each problem logged on one line when it is found. */
export class RestoreReport {
  constructor(
    readonly summary: RestoreSummary,
    private readonly log: (line: string) => void,
  ) {}

  /** A line of news that is not a problem. */
  note(line: string): void {
    this.log(line);
  }

  /** The record of a non-empty restore folder's changes (started by {@link takeFolder}). */
  private get changes(): FolderChanges {
    if (this.summary.folder === null) throw new Error('the restore folder was empty: nothing to report about it');
    return this.summary.folder;
  }

  /** Starts the record of what a non-empty restore folder holds besides the state. */
  takeFolder(mode: FolderChanges['mode']): void {
    this.summary.folder = { mode, extra: 0, extraPaths: [], extraFolders: 0, replaced: [], unchanged: 0, notRemoved: [] };
  }

  /** A file (link, …) in the restore folder that is not part of the state. */
  extra(path: string): void {
    const changes = this.changes;
    changes.extra += 1;
    if (changes.extraPaths.length < LISTED_EXTRA_PATHS) changes.extraPaths.push(path);
  }

  extraFolder(): void {
    this.changes.extraFolders += 1;
  }

  /** A file of the state that was in the restore folder: with other bytes (replaced) or with its own. */
  existing(path: string, identifier: string, same: boolean): void {
    if (same) this.changes.unchanged += 1;
    else listEntry(this.summary, 'replaced', this.changes.replaced, { path, identifier });
  }

  /** Something --clean could not remove: a problem, logged. */
  notRemoved(path: string, error: unknown): void {
    const message = (error as Error).message;
    listEntry(this.summary, 'notRemoved', this.changes.notRemoved, { path, message });
    this.log(`cannot remove ${show(path)}: ${show(message)}`);
  }

  refuse(kind: RefusedResource['kind'], identifier: string, reason: string): void {
    listEntry(this.summary, 'refused', this.summary.refused, { kind, identifier, reason });
    this.log(`${kind === 'path' ? 'refused' : kind} ${show(identifier)}: ${show(reason)}`);
  }

  damaged(version: PlanVersion, bag: string, problem: string, expected?: string, found?: string): void {
    listEntry(this.summary, 'damaged', this.summary.damaged, {
      identifier: version.identifier,
      bag,
      problem,
      ...(expected !== undefined ? { expected } : {}),
      ...(found !== undefined ? { found } : {}),
    });
    this.log(damageLine(version.identifier, bag, problem));
  }

  /**
   * A file that could not be written. No room left below `root` would fail every file after
   * this one too: the restore stops instead, with one line (ERR_ARCHIVE_FULL).
   */
  failed(identifier: string, path: string, error: unknown, root?: string): void {
    if (root !== undefined && isStorageExhausted(error)) {
      throw noRoomError(
        `the restore folder ${root}`,
        root,
        error,
        'free space there, then run the same restore again with --force (or --clean): the folder is no longer empty',
      );
    }
    const message = (error as Error).message;
    listEntry(this.summary, 'failed', this.summary.failed, { identifier, path, message });
    this.log(`failed ${show(identifier)}: ${path === '' ? '' : `cannot write ${show(path)}: `}${show(message)}`);
  }
}
