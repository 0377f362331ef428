import type { Catalog } from './catalog.js';
import type { NewFailure, NewVersion, ResumeState, VersionChange } from './catalog-schema.js';

/** What one page's commit changed, for the harvest's counts. */
export interface PageTally {
  added: number;
  modified: number;
  touched: number;
  deleted: number;
  /** Payload bytes of the versions that were new. */
  bytes: number;
}

type Entry =
  | { kind: 'version'; version: NewVersion }
  | { kind: 'deletion'; sourceId: number; identifier: string; datestamp: string; harvestId: number }
  | { kind: 'failure'; failure: NewFailure };

/**
 * The catalog rows one page of a list produces (stored versions, deletions, failures), kept in
 * arrival order and written in one durable transaction together with the list's new
 * resumption token: after a crash the catalog holds whole pages, and the saved token never
 * points past a record whose row is missing. Bags are on disk before their page commits; each
 * was noted as pending before its rename (see `adoptPendingBags`), so none is ever lost.
 */
export class PageLedger {
  private entries: Entry[] = [];

  get size(): number {
    return this.entries.length;
  }

  stageVersion(version: NewVersion): void {
    this.entries.push({ kind: 'version', version });
  }

  stageDeletion(sourceId: number, identifier: string, datestamp: string, harvestId: number): void {
    this.entries.push({ kind: 'deletion', sourceId, identifier, datestamp, harvestId });
  }

  stageFailure(failure: NewFailure): void {
    this.entries.push({ kind: 'failure', failure });
  }

  /**
   * Writes the staged rows, and the list state when given (a token, or null when the list
   * ended), in one transaction; empties the ledger. Versions and deletions already recorded
   * (a page delivered again) change nothing and are not counted.
   */
  commit(catalog: Catalog, resume?: { sourceId: number; state: ResumeState | null }): PageTally {
    const tally: PageTally = { added: 0, modified: 0, touched: 0, deleted: 0, bytes: 0 };
    const entries = this.entries;
    this.entries = [];
    if (entries.length === 0 && resume === undefined) return tally;
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
    });
    return tally;
  }
}

/** A resource that reappears after a deletion counts as added in a harvest's summary. */
function countedAs(change: VersionChange): 'added' | 'modified' | 'touched' {
  return change === 'restored' ? 'added' : change;
}
