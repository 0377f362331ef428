import { type BigIntStats, type FSWatcher, lstatSync, watch } from 'node:fs';
import { lstat } from 'node:fs/promises';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { type ExportPolicy, lastModifiedSeconds } from '@oaibag/oai-pmh';
import type { IndexedFile } from '../core/model.js';
import type { FileIndex, ScanRow } from './file-index.js';
import { type Inspection, inspectFile, type LinkRule, type SiteRoot } from './inspect-file.js';
import { ScanCursor } from './scan-cursor.js';
import { comparePaths, walkInPathOrder } from './tree-walk.js';

export interface ScanSummary {
  /** Files looked at. */
  files: number;
  added: number;
  changed: number;
  deleted: number;
  milliseconds: number;
}

export interface ScanProgress {
  files: number;
  directories: number;
}

/** Inspections under way at once while walking (a large file is hashed through libuv's pool). */
const INSPECT_CONCURRENCY = 16;
/** A scan's synchronous stretch between two turns of the event loop, so requests go on being answered. */
const SLICE_MS = 10;

/**
 * Keeps the index true to the tree. The datestamp rule lives here (docs/repository.md):
 * a change gets the time the index observed it, never the file's mtime, except in the very
 * first scan of an empty index, where mtimes (capped at now) say how old the site is.
 */
export class SiteIndexer {
  private readonly inFlight = new Map<string, Promise<IndexedFile | null>>();
  private scanning: Promise<ScanSummary> | null = null;
  private watcher: FSWatcher | null = null;
  private pendingEvents = new Set<string>();
  private eventTimer: NodeJS.Timeout | null = null;

  constructor(
    readonly root: SiteRoot,
    readonly index: FileIndex,
    readonly policy: ExportPolicy,
    private readonly linkAllowed: LinkRule = () => true,
  ) {}

  /**
   * Brings one path up to date and returns what is exported there now (null: nothing).
   * Used before a file or record is served, so a change the scanner has not seen yet gets
   * its datestamp before anyone is told about it.
   */
  refresh(relPath: string): Promise<IndexedFile | null> {
    return this.inFlight.get(relPath) ?? this.startRefresh(relPath, this.index.byPath(relPath), false);
  }

  /** One refresh of a path at a time: a request and a scan looking at it together share it. */
  private startRefresh(relPath: string, known: IndexedFile | undefined, initial: boolean): Promise<IndexedFile | null> {
    const work = (async () => {
      return this.apply(relPath, await inspectFile(this.root, relPath, this.policy, known, this.linkAllowed), known, initial);
    })().finally(() => this.inFlight.delete(relPath));
    this.inFlight.set(relPath, work);
    return work;
  }

  /** A full scan (or of one folder below the root); concurrent callers share one scan. */
  scan(onProgress?: (progress: ScanProgress) => void): Promise<ScanSummary> {
    this.scanning ??= this.scanFolder('', onProgress).finally(() => {
      this.scanning = null;
    });
    return this.scanning;
  }

  /** Watches the tree and refreshes what changes (latency only: scans keep the truth). */
  startWatching(onError: (error: Error) => void): void {
    try {
      this.watcher = watch(this.root.real, { recursive: true, persistent: false }, (_event, name) => {
        if (typeof name === 'string' && name.length > 0) this.queueEvent(name.split('\\').join('/'));
      });
      this.watcher.on('error', (error) => onError(error));
    } catch (error) {
      onError(error as Error);
    }
  }

  async close(): Promise<void> {
    this.watcher?.close();
    this.watcher = null;
    if (this.eventTimer) clearTimeout(this.eventTimer);
    await this.scanning?.catch(() => undefined);
    await Promise.allSettled([...this.inFlight.values()]);
  }

  private queueEvent(relPath: string): void {
    this.pendingEvents.add(relPath);
    this.eventTimer ??= setTimeout(() => {
      this.eventTimer = null;
      const paths = [...this.pendingEvents];
      this.pendingEvents.clear();
      void this.handleEvents(paths);
    }, 100);
  }

  private async handleEvents(paths: string[]): Promise<void> {
    for (const relPath of paths) {
      try {
        const stats = await lstat(join(this.root.real, relPath)).catch(() => null);
        if (stats?.isDirectory()) await this.scanFolder(relPath);
        else {
          await this.refresh(relPath);
          // A folder that went away takes its files with it (a scan of it finds none).
          if (!stats) await this.scanFolder(relPath);
        }
      } catch {
        // The periodic scan will catch up; an event is only a hint.
      }
    }
  }

  /**
   * Compares the tree below `relDir` with the index: the walk and the index's rows, both in
   * path order, merged as two sorted lists. A plain file whose row matches its lstat is
   * unchanged and costs no write; any other file is inspected (new, changed, a link); a row
   * with no file where it sorts is looked at again (gone, no longer exported, or created
   * since the walk passed). Synchronous calls throughout, in slices between turns of the
   * event loop (docs/repository.md, "The index").
   */
  private async scanFolder(relDir: string, onProgress?: (progress: ScanProgress) => void): Promise<ScanSummary> {
    const started = Date.now();
    const initial = relDir === '' && this.index.needsFirstScan();
    const summary: ScanSummary = { files: 0, added: 0, changed: 0, deleted: 0, milliseconds: 0 };
    const progress: ScanProgress = { files: 0, directories: 0 };
    const pending = new Set<Promise<void>>();
    const rows = new ScanCursor(this.index, relDir);
    let sliceStarted = performance.now();

    const lookAt = async (relPath: string) => {
      const job = this.inspectAndCount(relPath, initial, summary).finally(() => pending.delete(job));
      pending.add(job);
      if (pending.size >= INSPECT_CONCURRENCY) await Promise.race(pending);
    };

    this.index.beginBatch();
    try {
      for (const file of walkInPathOrder(this.root.real, relDir, this.policy, progress)) {
        summary.files++;
        progress.files++;
        if (onProgress && progress.files % 1000 === 0) onProgress({ ...progress });
        let row = rows.current();
        // Rows that sort before this file have no file in the tree.
        for (; row && comparePaths(row.path, file.path) < 0; row = rows.current()) {
          rows.advance();
          await lookAt(row.path);
        }
        const known = row?.path === file.path ? row : undefined;
        if (known) rows.advance();
        if (!(known && file.regular && this.unchangedByLstat(known))) await lookAt(file.path);
        if (performance.now() - sliceStarted > SLICE_MS) {
          await nextTurn();
          sliceStarted = performance.now();
        }
      }
      for (let row = rows.current(); row; row = rows.current()) {
        rows.advance();
        await lookAt(row.path);
      }
      await Promise.all(pending);
    } finally {
      this.index.endBatch();
    }
    if (initial) this.index.markFirstScanCompleted();
    summary.milliseconds = Date.now() - started;
    onProgress?.({ ...progress });
    return summary;
  }

  /** Inspects one path, brings its row up to date and counts what changed. */
  private async inspectAndCount(relPath: string, initial: boolean, summary: ScanSummary): Promise<void> {
    const known = this.index.byPath(relPath);
    const before = known && !known.deleted ? known.datestamp : undefined;
    const after = await (this.inFlight.get(relPath) ?? this.startRefresh(relPath, known, initial));
    if (!after && before !== undefined) summary.deleted++;
    else if (after && before === undefined) summary.added++;
    else if (after && after.datestamp !== before) summary.changed++;
  }

  /** The fast path of a rescan: a plain file whose lstat matches its row is not opened. */
  private unchangedByLstat(row: ScanRow): boolean {
    let stats: BigIntStats | undefined;
    try {
      stats = lstatSync(`${this.root.real}/${row.path}`, { bigint: true, throwIfNoEntry: false });
    } catch {
      return false;
    }
    if (!stats?.isFile()) return false;
    return (
      (stats.mode & 0o444n) !== 0n &&
      Number(stats.size) === row.size &&
      String(stats.mtimeNs) === row.mtime_ns &&
      String(stats.ctimeNs) === row.ctime_ns &&
      `${stats.dev}:${stats.ino}` === row.file_key
    );
  }

  /** Writes what an inspection found into the index, applying the datestamp rule. */
  private apply(relPath: string, inspection: Inspection, known: IndexedFile | undefined, initial: boolean): IndexedFile | null {
    if (inspection.kind !== 'file') {
      if (known && !known.deleted) this.index.markDeleted(relPath, this.index.observationDatestamp());
      return null;
    }
    const { facts } = inspection;
    if (known && !known.deleted) {
      if (inspection.unchanged) return known;
      if (sameVersion(known, facts)) return this.index.putStat(relPath, facts) ?? null;
    }
    const now = Math.floor(Date.now() / 1000);
    const datestamp = initial ? Math.min(lastModifiedSeconds(facts.mtimeNs), this.index.observationDatestamp(now)) : this.index.observationDatestamp(now);
    return this.index.putVersion(facts, Math.max(datestamp, 0));
  }
}

/** Same record in every format: the content, its size, its Last-Modified and its type. */
function sameVersion(known: IndexedFile, facts: Omit<IndexedFile, 'id' | 'datestamp' | 'deleted'>): boolean {
  return (
    known.sha256 === facts.sha256 &&
    known.size === facts.size &&
    known.mimeType === facts.mimeType &&
    lastModifiedSeconds(known.mtimeNs) === lastModifiedSeconds(facts.mtimeNs)
  );
}
