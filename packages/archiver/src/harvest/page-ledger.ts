import type { DiskFlusher } from '../archive/flush-to-disk.js';
import { placeSealedBags } from '../bag/bag-placement.js';
import type { SealedBag } from '../bag/sealed-bag.js';
import type { Catalog } from '../catalog/catalog.js';
import type { HarvestCounts, NewFailure, NewVersion, ResumeState, VersionChange } from '../catalog/catalog-schema.js';

/**
 * What one page's commit changed, added to the harvest's counts: `failed` counts the bags that
 * could not be placed (a different bag at their destination), `bytes` the payload of the new
 * versions.
 */
export type PageTally = Omit<HarvestCounts, 'records' | 'requests'>;

type Entry =
  | { kind: 'version'; version: NewVersion; bag?: SealedBag }
  | { kind: 'deletion'; sourceId: number; identifier: string; datestamp: string; harvestId: number }
  | { kind: 'failure'; failure: NewFailure };

/**
 * What one page of a list produces (stored versions with their sealed bags, deletions,
 * failures), kept in arrival order. The commit places the page's bags together (two flushes to
 * disk for the whole page, see `placeSealedBags`), then writes the rows in one durable
 * transaction together with the list's new resumption token: after a crash the catalog holds
 * whole pages, and the saved token never points past a record whose row is missing. The bags
 * are noted as pending before their renames (see `adoptPendingBags`), so none is ever lost.
 */
export class PageLedger {
  private entries: Entry[] = [];

  /**
   * @param archiveDir where the sealed bags go.
   * @param flusher makes them durable (a harvest's, see `openDiskFlusher`; default one-shot).
   */
  constructor(
    private readonly archiveDir: string,
    private readonly flusher?: DiskFlusher,
  ) {}

  get size(): number {
    return this.entries.length;
  }

  /** A version to record; `bag` is its new sealed bag (absent for a version already stored). */
  stageVersion(version: NewVersion, bag?: SealedBag): void {
    this.entries.push({ kind: 'version', version, ...(bag ? { bag } : {}) });
  }

  stageDeletion(sourceId: number, identifier: string, datestamp: string, harvestId: number): void {
    this.entries.push({ kind: 'deletion', sourceId, identifier, datestamp, harvestId });
  }

  stageFailure(failure: NewFailure): void {
    this.entries.push({ kind: 'failure', failure });
  }

  /**
   * Places the staged bags, then writes the staged rows, and the list state when given (a
   * token, or null when the list ended), in one transaction; empties the ledger. A bag that
   * cannot be placed becomes a failure of its record (retried by the next harvest). Versions
   * and deletions already recorded (a page delivered again) change nothing and are not counted.
   * When the page's bags cannot be made durable, nothing of the page is recorded and the error
   * is thrown (its records come again with the page). `inTransaction` is called with the tally
   * inside the page's transaction, so that what it writes (the harvest's counts) commits with
   * the page or not at all.
   */
  async commit(catalog: Catalog, resume?: { sourceId: number; state: ResumeState | null }, inTransaction?: (tally: PageTally) => void): Promise<PageTally> {
    const tally: PageTally = { added: 0, modified: 0, touched: 0, deleted: 0, failed: 0, bytes: 0 };
    const entries = this.entries;
    this.entries = [];
    if (entries.length === 0 && resume === undefined) return tally;
    await this.placeBags(catalog, entries, tally);
    catalog.transaction(() => {
      for (const entry of entries) {
        if (entry.kind === 'version') {
          const recorded = catalog.recordVersion(entry.version);
          if (recorded.known) continue;
          tally[countedAs(recorded.change)]++;
          tally.bytes += recorded.version.size;
        } else if (entry.kind === 'deletion') {
          if (catalog.recordDeletion(entry.sourceId, entry.identifier, entry.datestamp, entry.harvestId)) tally.deleted++;
        } else {
          catalog.recordFailure(entry.failure);
        }
      }
      if (resume) catalog.saveResumeState(resume.sourceId, resume.state);
      inTransaction?.(tally);
    });
    return tally;
  }

  /** Places the entries' bags; an entry whose bag was refused becomes a failure in place. */
  private async placeBags(catalog: Catalog, entries: Entry[], tally: PageTally): Promise<void> {
    const withBags = entries.flatMap((entry, index) => (entry.kind === 'version' && entry.bag ? [{ index, version: entry.version, bag: entry.bag }] : []));
    if (withBags.length === 0) return;
    const placements = await placeSealedBags(
      this.archiveDir,
      withBags.map((item) => item.bag),
      {
        // Noted durably before the renames: a crash between a rename and the page's commit
        // leaves a note the next start uses to adopt the bag (adoptPendingBags).
        beforeRename: () => catalog.transaction(() => withBags.forEach((item) => catalog.addPendingBag(item.version))),
        ...(this.flusher ? { flusher: this.flusher } : {}),
      },
    );
    placements.forEach((placement, i) => {
      const { index, version } = withBags[i]!;
      if (!placement.error) return;
      catalog.removePendingBag(version.bagPath);
      tally.failed++;
      entries[index] = {
        kind: 'failure',
        failure: {
          sourceId: version.sourceId,
          harvestId: version.harvestId ?? null,
          identifier: version.identifier,
          datestamp: version.datestamp,
          stage: 'store',
          code: placement.error.code,
          message: placement.error.message,
          expected: null,
          found: null,
        },
      };
    });
  }
}

/** A resource that reappears after a deletion counts as added in a harvest's summary. */
function countedAs(change: VersionChange): 'added' | 'modified' | 'touched' {
  return change === 'restored' ? 'added' : change;
}
