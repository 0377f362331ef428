import { type Dir, type FSWatcher, watch } from 'node:fs';
import { lstat, opendir } from 'node:fs/promises';
import { join } from 'node:path';
import { type ExportPolicy, lastModifiedSeconds } from '@oaibag/oai-pmh';
import type { IndexedFile } from '../core/model.js';
import type { FileIndex } from './file-index.js';
import { type Inspection, inspectFile, type LinkRule, type SiteRoot, sameSignature, statSignature } from './inspect-file.js';

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

/** Parallel inspections while walking: keeps libuv's thread pool busy on many small files. */
const INSPECT_CONCURRENCY = 16;

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
    const running = this.inFlight.get(relPath);
    if (running) return running;
    const work = (async () => {
      const known = this.index.byPath(relPath);
      return this.apply(relPath, await inspectFile(this.root, relPath, this.policy, known, this.linkAllowed), known, false, 0);
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
          // A folder that went away takes its files with it.
          if (!stats) await this.refreshKnownBelow(relPath);
        }
      } catch {
        // The periodic scan will catch up; an event is only a hint.
      }
    }
  }

  private async refreshKnownBelow(relDir: string): Promise<void> {
    for (const path of this.index.unseenLivePaths(Number.MAX_SAFE_INTEGER, relDir)) await this.refresh(path);
  }

  private async scanFolder(relDir: string, onProgress?: (progress: ScanProgress) => void): Promise<ScanSummary> {
    const started = Date.now();
    const initial = relDir === '' && this.index.needsFirstScan();
    const generation = this.index.nextScanGeneration();
    const summary: ScanSummary = { files: 0, added: 0, changed: 0, deleted: 0, milliseconds: 0 };
    const progress: ScanProgress = { files: 0, directories: 0 };
    const pending = new Set<Promise<void>>();

    const inspectOne = async (relPath: string, plainFile: boolean) => {
      if (plainFile && (await this.unchangedByLstat(relPath, generation))) return;
      const known = this.index.byPath(relPath);
      const inspection = await inspectFile(this.root, relPath, this.policy, known, this.linkAllowed);
      const before = known && !known.deleted ? known.datestamp : undefined;
      const after = this.apply(relPath, inspection, known, initial, generation);
      if (!after && before !== undefined) summary.deleted++;
      else if (after && before === undefined) summary.added++;
      else if (after && after.datestamp !== before) summary.changed++;
    };

    const walk = async (dir: string): Promise<void> => {
      if (dir !== '' && this.policy.excludedDirectoryReason(dir)) return;
      let handle: Dir;
      try {
        handle = await opendir(join(this.root.real, dir));
      } catch {
        return; // vanished or unreadable: its files are found missing below
      }
      progress.directories++;
      for await (const entry of handle) {
        // Node puts U+FFFD where a name is not valid UTF-8: such a file cannot be named in a URL.
        if (entry.name.includes('\uFFFD')) continue;
        const relPath = dir === '' ? entry.name : `${dir}/${entry.name}`;
        if (entry.isDirectory()) {
          await walk(relPath);
          continue;
        }
        // Symbolic links to folders are not followed (loops, and one file under two names).
        if (!entry.isFile() && !entry.isSymbolicLink()) continue;
        if (this.policy.excludedReason(relPath)) continue;
        summary.files++;
        progress.files++;
        if (onProgress && progress.files % 1000 === 0) onProgress({ ...progress });
        const job = inspectOne(relPath, entry.isFile()).finally(() => pending.delete(job));
        pending.add(job);
        if (pending.size >= INSPECT_CONCURRENCY) await Promise.race(pending);
      }
    };

    this.index.beginBatch();
    try {
      await walk(relDir);
      await Promise.all(pending);
    } finally {
      this.index.endBatch();
    }
    // Whatever was live below relDir and not seen is gone (or no longer exported): look again
    // one at a time, because it may have been created after the walk passed its folder.
    for (const path of this.index.unseenLivePaths(generation, relDir)) {
      const result = await this.refresh(path);
      if (result === null) summary.deleted++;
    }
    if (initial) this.index.markFirstScanCompleted();
    summary.milliseconds = Date.now() - started;
    onProgress?.({ ...progress });
    return summary;
  }

  /** The fast path of a rescan: a plain file whose lstat matches the index is not opened. */
  private async unchangedByLstat(relPath: string, generation: number): Promise<boolean> {
    const known = this.index.byPath(relPath);
    if (!known || known.deleted) return false;
    try {
      const stats = await lstat(join(this.root.real, relPath), { bigint: true });
      if (!stats.isFile() || (stats.mode & 0o444n) === 0n || !sameSignature(known, statSignature(stats))) return false;
    } catch {
      return false;
    }
    this.index.markSeen(relPath, generation);
    return true;
  }

  /** Writes what an inspection found into the index, applying the datestamp rule. */
  private apply(relPath: string, inspection: Inspection, known: IndexedFile | undefined, initial: boolean, generation: number): IndexedFile | null {
    if (inspection.kind !== 'file') {
      if (known && !known.deleted) this.index.markDeleted(relPath, this.index.observationDatestamp());
      return null;
    }
    const { facts } = inspection;
    if (known && !known.deleted) {
      if (inspection.unchanged) {
        if (generation > 0) this.index.markSeen(relPath, generation);
        return known;
      }
      if (sameVersion(known, facts)) {
        this.index.putStat(relPath, facts, generation);
        return this.index.byPath(relPath) ?? null;
      }
    }
    const now = Math.floor(Date.now() / 1000);
    const datestamp = initial ? Math.min(lastModifiedSeconds(facts.mtimeNs), this.index.observationDatestamp(now)) : this.index.observationDatestamp(now);
    return this.index.putVersion(facts, Math.max(datestamp, 0), generation);
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
