// A run's current ingest batch (docs/aip-profile.md, format 2): the records of one or more
// consecutive pages (a harvest's ListRecords pages, an import's files), kept as one batch bag,
// and committed to the catalog together with the resumption token that follows its last page.
//
// Commit order, so that a crash at any moment loses nothing and duplicates nothing:
//   1. seal the bag in tmp/ (records, PREMIS, manifests) and flush it to disk;
//   2. note it as pending in the catalog (durably);
//   3. rename it into aips/ and flush the folder;
//   4. in one durable transaction (the run's, ingest-run.ts): the bag and its payload files, the
//      versions, deletions and failures of its records, the list's new resumption token, and
//      the run's counts.
// A crash before 3 leaves tmp/ content (removed at the next start) and the previous token: the
// pages come again. A crash between 3 and 4 leaves a placed, pending bag: the next start
// indexes it from its own files (adoptPendingBags), and the pages that come again find every
// record of it known.
import { type BatchRecordFacts, describeDelivery } from '../aip/aip-metadata.js';
import type { BatchBagInfo } from '../aip/bag-info.js';
import { BatchBag, type ReceivedBytes } from '../aip/batch-bag.js';
import { bagPathFor } from '../aip/layout-names.js';
import { S3Storage } from '../aip/s3-storage.js';
import {
  countedAs,
  type HarvestCounts,
  type NewBag,
  type NewFailure,
  type NewVersion,
  type PayloadLocation,
  type ResumeState,
  type VersionFetch,
} from '../catalog/catalog-types.js';
import { ArchiverError } from '../core/errors.js';
import { ARCHIVER_VERSION } from '../core/version.js';
import { DEFAULT_BATCH_BOUNDS, DEFAULT_BATCH_PARTS } from './batch-bounds.js';
import type { IngestContext } from './ingest-context.js';

/** Names the software in PREMIS events. */
export const AGENT = `oaibag archiver ${ARCHIVER_VERSION}`;

/** What one commit changed, added to the run's counts. */
export type BatchTally = Omit<HarvestCounts, 'records' | 'requests'>;

/** One record of a page, in the list's order, as the batch takes it. */
export type PageEntry =
  | { kind: 'version'; facts: BatchRecordFacts & { kind: 'version' }; parts: string[]; fetches: VersionFetch[] }
  | { kind: 'deletion'; facts: BatchRecordFacts & { kind: 'deletion' } }
  | { kind: 'failure'; failure: NewFailure };

/** What a batch reads of its run's context: where its bags go, and the facts each carries in bag-info.txt. */
type BatchFacts = Pick<
  IngestContext,
  | 'archiveDir'
  | 'catalog'
  | 'flusher'
  | 'storage'
  | 'sourceId'
  | 'harvestId'
  | 'baseUrl'
  | 'repositoryName'
  | 'rightsManifest'
  | 'prefix'
  | 'from'
  | 'until'
  | 'set'
  | 'bounds'
  | 'delivery'
>;

/** What the list says when a batch is committed (bag-info.txt). */
export interface ListFacts {
  /** The responseDate of the list's first page (the watermark once it completes). */
  listResponseDate: string | null;
  /**
   * Set on the batch that ends the list: `partial` when a record failure of the list (of any run
   * that took part in it) is still open, and then the watermark does not move.
   */
  listEnd?: 'complete' | 'partial';
}

type Staged = { kind: 'version'; version: NewVersion } | { kind: 'deletion'; identifier: string; datestamp: string } | { kind: 'failure'; failure: NewFailure };

export class IngestBatch {
  private bag: BatchBag | undefined;
  private starting: Promise<BatchBag> | undefined;
  private staged: Staged[] = [];
  /** identifier, datestamp, sha-256 of the versions taken since the last commit. */
  private readonly states = new Set<string>();
  /** Payload locations looked up since the last commit, null for bytes no recorded bag holds (see heldElsewhere). */
  private readonly heldLookups = new Map<string, PayloadLocation | null>();
  /** Files of earlier bags this batch's revisits rely on (bag path → paths), for a store that retains. */
  private reliedOn = new Map<string, Set<string>>();
  private firstPage: number | undefined;
  private lastPage: number | undefined;
  private sequence = 0;

  /** `harvest`: the run, as its bags' Harvest-* labels name it. */
  constructor(private readonly harvest: BatchFacts) {}

  /** True once the batch holds enough to be committed (see BatchBounds). */
  get full(): boolean {
    const bounds = this.harvest.bounds ?? DEFAULT_BATCH_BOUNDS;
    const counts = this.bag?.counts;
    return (
      counts !== undefined &&
      (counts.records >= bounds.records || counts.payloadBytes >= bounds.bytes || counts.newPayloads + counts.revisits >= (bounds.parts ?? DEFAULT_BATCH_PARTS))
    );
  }

  /**
   * Claims a record state for this batch: false when it is stored already (in the catalog or
   * earlier in this batch: a record delivered twice costs nothing).
   */
  claimState(identifier: string, datestamp: string, sha256: string): boolean {
    const key = `${identifier}\n${datestamp}\n${sha256}`;
    if (this.states.has(key)) return false;
    if (this.harvest.catalog.hasVersion(this.harvest.sourceId, identifier, datestamp, sha256)) return false;
    this.states.add(key);
    return true;
  }

  /** Gives back a claim whose record could not be taken after all (it may come again). */
  releaseState(identifier: string, datestamp: string, sha256: string): void {
    this.states.delete(`${identifier}\n${datestamp}\n${sha256}`);
  }

  /** Whether the archive holds bytes with this sha-256 (in a recorded bag, or in this batch's). */
  holdsPayload(sha256: string): boolean {
    return this.heldElsewhere(sha256) !== undefined || this.bag?.heldHere(sha256) !== undefined;
  }

  /** Whether the archive has recorded this deletion already. */
  knownDeletion(identifier: string, datestamp: string): boolean {
    return this.harvest.catalog.knownDeletion(this.harvest.sourceId, identifier, datestamp);
  }

  /**
   * Where the archive will hold a datastream's bytes: a revisit of the bag that holds them
   * already (by sha-256, archive-wide), or a new payload file of this batch's bag.
   */
  async takePayload(
    place: () => { segments: readonly string[] | undefined; fallbackName: string },
    file: ReceivedBytes & { declined?: true },
    mimeType?: string,
  ): Promise<{ path: string; revisitOf?: string }> {
    const held = this.heldElsewhere(file.sha256);
    if (held) {
      let paths = this.reliedOn.get(held.bagPath);
      if (paths === undefined) this.reliedOn.set(held.bagPath, (paths = new Set()));
      paths.add(held.path);
      return { path: held.path, revisitOf: held.bagPath };
    }
    const bag = await this.openBag();
    const here = bag.heldHere(file.sha256);
    if (here !== undefined) return { path: here, revisitOf: bag.destination };
    if (file.declined) {
      // Declined as held, yet not held: the promise and the bytes agreed (verified), so this
      // cannot happen; refuse the record rather than store a version without its bytes.
      throw new ArchiverError('ERR_HARVEST_VERIFY', `bytes with sha-256 ${file.sha256} were declined as held, and the archive does not hold them`);
    }
    // Only new bytes need a place of their own (a URL made into a path: not for a revisit).
    const { segments, fallbackName } = place();
    return { path: await bag.addPayload(segments, fallbackName, file, mimeType) };
  }

  /**
   * Where a recorded bag holds bytes with this sha-256. A payload's place never changes once
   * recorded, and no payload is recorded but by this batch's commit (the run holds the archive
   * lock), so the answer `holdsPayload` found for a datastream, found or not, is kept for its
   * record's `takePayload`: new bytes cost one lookup, not two (forgotten when the batch commits).
   */
  private heldElsewhere(sha256: string): PayloadLocation | undefined {
    const known = this.heldLookups.get(sha256);
    if (known !== undefined) return known ?? undefined;
    const held = this.harvest.catalog.payload(sha256);
    this.heldLookups.set(sha256, held ?? null);
    return held;
  }

  /** Appends one page's records (in list order) to the batch; `page` counts from 1 in this run. */
  async addPage(page: number, entries: readonly PageEntry[]): Promise<void> {
    const kept = entries.filter((entry) => entry.kind !== 'failure') as Array<Exclude<PageEntry, { kind: 'failure' }>>;
    if (kept.length > 0) {
      const bag = await this.openBag();
      const numbers = await bag.append(kept.map((entry) => entry.facts));
      this.firstPage ??= page;
      this.lastPage = page;
      let next = 0;
      for (const entry of entries) {
        if (entry.kind === 'failure') {
          this.staged.push(entry);
          continue;
        }
        const record = numbers[next++]!;
        const { facts } = entry;
        if (entry.kind === 'deletion') {
          this.staged.push({ kind: 'deletion', identifier: facts.identifier, datestamp: facts.datestamp });
          continue;
        }
        this.staged.push({
          kind: 'version',
          version: {
            sourceId: this.harvest.sourceId,
            identifier: facts.identifier,
            datestamp: facts.datestamp,
            size: entry.facts.size,
            sha256: entry.facts.sha256,
            mimeType: entry.facts.mimeType,
            bagPath: bag.destination,
            record,
            harvestId: this.harvest.harvestId,
            parts: entry.parts,
            lastModified: entry.facts.lastModified,
            fetches: entry.fetches,
          },
        });
      }
    } else {
      for (const entry of entries) if (entry.kind === 'failure') this.staged.push(entry);
    }
  }

  /**
   * Seals and places the batch bag (when it holds any record) and hands back what is left to
   * record: everything staged, with the list state when given (a token, or null when the list
   * ended), for `PlacedBatch.record` in the run's transaction; undefined when the batch holds
   * nothing at all. The batch starts empty again. When the bag cannot be made durable or
   * placed, nothing of the batch is recorded and the error is thrown: its records come again
   * with their pages.
   */
  async place(list: ListFacts, state: ResumeState | null | undefined): Promise<PlacedBatch | undefined> {
    const { catalog, harvestId } = this.harvest;
    const bag = this.starting ? await this.starting : undefined;
    const staged = this.staged;
    // Set by the first page that keeps a record: a bag opened by a datastream whose record then
    // failed has none.
    const pages = this.firstPage !== undefined && this.lastPage !== undefined ? ([this.firstPage, this.lastPage] as const) : null;
    const reliedOn = this.reliedOn;
    this.reset();
    if (bag === undefined && staged.length === 0 && state === undefined) return undefined;
    // The instant the batch's versions are stored at, in its bag-info.txt and in the catalog alike.
    const baggedAt = new Date().toISOString();
    let placed: NewBag | undefined;
    if (bag !== undefined) {
      const sealed = await bag.seal(this.bagInfo(pages, list, state, baggedAt));
      const placement = await bag.place(sealed, {
        // Noted durably before the rename: a crash between the rename and the commit below
        // leaves a note the next start uses to index the bag from its files (adoptPendingBags).
        beforeRename: () => catalog.addPendingBag(bag.destination, harvestId),
        flusher: this.harvest.flusher,
        reliedOn,
      });
      if (placement.error) {
        // On object storage a commit whose answer was lost may have happened: the note stays,
        // and the next start records the bag if its commit record is there (adoptPendingBags).
        if (!(this.harvest.storage instanceof S3Storage)) catalog.removePendingBag(bag.destination);
        throw placement.error;
      }
      placed = {
        bagPath: bag.destination,
        sourceId: this.harvest.sourceId,
        harvestId,
        ...bag.counts,
        payloads: sealed.files.map((file) => ({ sha256: file.sha256, size: file.size, path: file.path })),
      };
    }
    return new PlacedBatch(this.harvest, { bag: placed, staged, state, listEnded: list.listEnd !== undefined, baggedAt });
  }

  /**
   * Whether a record failure of the list stays open once this batch commits: one staged here, or
   * one recorded since run `sinceHarvestId` (the list's first run) that no record of this
   * batch resolves. Decides the List-End of the list's last batch (docs/archiver.md, "No silent
   * loss"). Costs one query per record of the batch, never a scan of the failures.
   */
  leavesFailuresOpen(sinceHarvestId: number): boolean {
    const { catalog, sourceId } = this.harvest;
    // Each record's last word in this batch, in the order the transaction will apply them.
    const lastWord = new Map<string, boolean>();
    for (const entry of this.staged) {
      if (entry.kind === 'failure') {
        if (entry.failure.identifier != null) lastWord.set(entry.failure.identifier, true);
      } else lastWord.set(entry.kind === 'version' ? entry.version.identifier : entry.identifier, false);
    }
    let resolvedHere = 0;
    for (const [identifier, failing] of lastWord) {
      if (failing) return true;
      if (catalog.hasOpenRecordFailureSince(sourceId, identifier, sinceHarvestId)) resolvedHere++;
    }
    return catalog.openRecordFailuresSince(sourceId, sinceHarvestId) > resolvedHere;
  }

  /** Removes the batch bag being built (the run is failing and nothing more is committed). */
  async abort(): Promise<void> {
    const bag = this.starting ? await this.starting.catch(() => undefined) : undefined;
    this.reset();
    await bag?.abort();
  }

  private reset(): void {
    this.bag = undefined;
    this.starting = undefined;
    this.staged = [];
    this.states.clear();
    this.heldLookups.clear();
    this.reliedOn = new Map();
    this.firstPage = undefined;
    this.lastPage = undefined;
  }

  private openBag(): Promise<BatchBag> {
    this.starting ??= this.startBag().then((bag) => {
      this.bag = bag;
      return bag;
    });
    return this.starting;
  }

  /** A new bag at the first free `aips/harvest-<id>/batch-<n>` (under the archive lock). */
  private async startBag(): Promise<BatchBag> {
    const { archiveDir, harvestId, storage } = this.harvest;
    let destination: string;
    do {
      this.sequence++;
      destination = bagPathFor({ harvestId, batch: this.sequence });
    } while (await storage.taken(destination));
    return BatchBag.start({
      archiveDir,
      storage,
      destination,
      baseUrl: this.harvest.baseUrl,
      harvestId,
      ...(this.harvest.rightsManifest ? { rightsManifest: this.harvest.rightsManifest } : {}),
      eventPrefix: `h${harvestId}-b${this.sequence}`,
      agent: AGENT,
      ...(this.harvest.delivery ? { delivery: this.harvest.delivery } : {}),
    });
  }

  /** What bag-info.txt says of a batch (aip/bag-info.ts writes it; the bag adds its counts). */
  private bagInfo(
    pages: BatchBagInfo['pages'],
    list: ListFacts,
    state: ResumeState | null | undefined,
    baggedAt: string,
  ): Omit<BatchBagInfo, 'records' | 'newPayloads' | 'revisits' | 'deletions'> {
    const h = this.harvest;
    const started = h.catalog.harvest(h.harvestId)?.startedAt;
    const description = h.delivery
      ? `Records imported from the ${describeDelivery(h.delivery)} for ${h.baseUrl} by import ${h.harvestId}${pages ? `, files ${pages[0]}-${pages[1]} of it` : ''}`
      : `Records harvested over OAI-PMH from ${h.baseUrl} by harvest ${h.harvestId}${pages ? `, pages ${pages[0]}-${pages[1]} of its list` : ''}`;
    return {
      description,
      baseUrl: h.baseUrl,
      repositoryName: h.repositoryName,
      harvestId: h.harvestId,
      harvestStarted: started ?? null,
      metadataPrefix: h.prefix,
      delivery: h.delivery ?? null,
      harvestFrom: h.from,
      harvestUntil: h.until,
      harvestSet: h.set,
      listResponseDate: list.listResponseDate,
      pages,
      resumptionToken: state ? state.token : null,
      listEnd: list.listEnd ?? null,
      baggedAt,
    };
  }
}

/** A batch whose bag is in place (or that has no bag), to be recorded (see IngestBatch.place). */
export class PlacedBatch {
  constructor(
    private readonly harvest: Pick<BatchFacts, 'catalog' | 'sourceId' | 'harvestId'>,
    private readonly batch: {
      bag: NewBag | undefined;
      staged: Staged[];
      state: ResumeState | null | undefined;
      listEnded: boolean;
      baggedAt: string;
    },
  ) {}

  /** The bag placed, if any (`aips/harvest-…/batch-…`). */
  get bagPath(): string | undefined {
    return this.batch.bag?.bagPath;
  }

  /**
   * Records the bag and its payload files, then each staged version, deletion and failure, the
   * list state and the list's end, in one durable transaction (joined when the caller has one
   * open: the run's counts commit with it). Returns what it changed.
   */
  record(): BatchTally {
    const { catalog, sourceId, harvestId } = this.harvest;
    const { bag, staged, state, listEnded, baggedAt } = this.batch;
    const tally: BatchTally = { added: 0, modified: 0, touched: 0, deleted: 0, failed: 0, bytes: 0 };
    return catalog.transaction(() => {
      if (bag !== undefined) catalog.recordBag(bag);
      for (const entry of staged) {
        if (entry.kind === 'version') {
          const recorded = catalog.recordVersion({ ...entry.version, storedAt: baggedAt });
          if (recorded.known) continue;
          tally[countedAs(recorded.change)]++;
          tally.bytes += recorded.version.size;
        } else if (entry.kind === 'deletion') {
          if (catalog.recordDeletion(sourceId, entry.identifier, entry.datestamp, harvestId, bag?.bagPath, baggedAt)) tally.deleted++;
        } else {
          catalog.recordFailure(entry.failure);
        }
      }
      if (state !== undefined) catalog.saveResumeState(sourceId, state);
      if (bag !== undefined && listEnded) catalog.setListEnded(harvestId, baggedAt);
      return tally;
    });
  }
}
