// The records of one page (a ListRecords page, or files of an out-of-band delivery), taken the
// one way a run takes them: By-Value datastreams received as the DIDL reader decodes them
// (bytes the archive holds declined), each record verified and stored (store-record.ts) up to
// `concurrency` at a time while the page is read on, and taken into the run's batch in page
// order (ingest-batch.ts). `oaibag harvest` and `oaibag import` both read through it.
import type { DidlDocument, IncomingDatastream, OaiHeader, ReadDidlOptions, ReadRecord } from '@oaibag/didl';
import { oaiHeaderXml } from '../aip/aip-metadata.js';
import { compactDatestamp } from '../archive/storage-path.js';
import type { HarvestCounts, NewFailure } from '../catalog/catalog-types.js';
import { ArchiverError, archiveFullError, isStorageExhausted } from '../core/errors.js';
import { shown } from '../core/remote-text.js';
import { limitError } from '../oai/source-limits.js';
import { declinedAsHeld, discardIncoming, type IncomingFile, receiveIncoming } from './incoming-file.js';
import type { IngestBatch, PageEntry } from './ingest-batch.js';
import type { IngestContext } from './ingest-context.js';
import { RecordRefused, recordParts, storeRecord } from './store-record.js';

export interface PageRecordsSetup {
  context: IngestContext;
  batch: IngestBatch;
  /** The run's counts: `records` and `failed` move as records are read. */
  counts: HarvestCounts;
  /** The page's number in the run, from 1 (bag-info.txt's Batch-Pages). */
  page: number;
  /** After each record (a progress display). */
  progress?: (() => void) | undefined;
}

/**
 * Records taken into the batch at once while the page is still being read, in list order, as
 * soon as that many in a row are done: enough to write records.xml in runs, few enough to hold
 * (held until the page ended, a page that never ends grew the harvester by some 20 KB a record).
 */
export const DELIVER_EVERY = 64;

/** One record of the page: its entry once processed (undefined when it adds nothing). */
interface Slot {
  entry: PageEntry | undefined;
  done: boolean;
}

/** One page's records as they are read; a new one for every page (and every attempt at it). */
export class PageRecords {
  /** The records not yet delivered, in list order. */
  private slots: Slot[] = [];
  /** Records of the page so far, delivered ones included. */
  private records = 0;
  /** Payload parts of the page's records so far, counted as each record arrives. */
  private parts = 0;
  private pending: IncomingFile[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  private firstError: unknown;
  /** Bytes of the received XML the page's entries hold until the page is stored. */
  private heldXml = 0;

  constructor(private readonly setup: PageRecordsSetup) {}

  /**
   * The DIDL reader's handlers for this page (with `keepReceivedXml` and `lenientIdentifier`).
   * `standaloneDatestamp` dates a record that comes without a header (a standalone DIDL document
   * of a delivery: its identifier is the DIDL's); without it such a record adds nothing.
   */
  readOptions(standaloneDatestamp?: string): ReadDidlOptions {
    const { batch, context } = this.setup;
    return {
      keepReceivedXml: true,
      lenientIdentifier: true,
      // Bytes the record promises and the archive holds (a touch, a revert): declined, only
      // hashed by the reader; storeRecord holds that digest to the promise.
      declineHeld: (promisedSha256: string) => {
        if (!batch.holdsPayload(promisedSha256)) return false;
        this.pending.push(declinedAsHeld());
        return true;
      },
      onDatastream: async (datastream: IncomingDatastream) => {
        // The reader hashes each By-Value datastream with sha-256 itself (storeRecord takes it).
        this.pending.push(await receiveIncoming(context.archiveDir, datastream.bytes, context.budget, { sha256: false }));
      },
      onRecord: (record: ReadRecord) => {
        const received = this.pending;
        this.pending = [];
        return this.take(record, received, standaloneDatestamp);
      },
    };
  }

  /**
   * Takes one record with the datastreams received for it (in the order of its By-Value parts),
   * stored while the caller reads on; waits only when `concurrency` records are in flight.
   */
  async take(record: ReadRecord, received: IncomingFile[], standaloneDatestamp?: string): Promise<void> {
    const { context, batch, counts } = this.setup;
    // A page is committed when it ends: one that never does must not grow the batch (nor, for
    // an import's file, the memory) without end.
    const limits = context.client.limits;
    const parts = this.parts + (record.didl ? recordParts(record.didl).length : 0);
    if (this.records >= limits.pageRecords || this.heldXml > limits.pageXmlBytes || parts > limits.pageParts) {
      for (const file of received) await discardIncoming(file);
      throw this.records >= limits.pageRecords
        ? limitError('pageRecords', limits, 'a page', `more than ${limits.pageRecords} records before its end`)
        : parts > limits.pageParts
          ? limitError('pageParts', limits, 'a page', `more than ${limits.pageParts} datastreams before its end`)
          : limitError('pageXmlBytes', limits, 'a page', `more than ${limits.pageXmlBytes} bytes of record XML held before its end`);
    }
    this.records++;
    // Counted as the record arrives, before any of its datastreams is fetched.
    this.parts = parts;
    await this.deliverDone();
    const header = record.header ?? standaloneHeader(record, standaloneDatestamp);
    const slot: Slot = { entry: undefined, done: false };
    this.slots.push(slot);
    const job = processRecord(context, batch, header ? { ...record, header } : record, received, counts)
      .then((entry) => {
        slot.entry = entry;
        this.heldXml += heldXmlOf(entry);
      })
      .then(() => this.setup.progress?.())
      .catch((error: unknown) => {
        this.firstError ??= error;
      })
      .finally(() => {
        slot.done = true;
        this.inFlight.delete(job);
      });
    this.inFlight.add(job);
    if (this.inFlight.size >= context.concurrency) await Promise.race(this.inFlight);
  }

  /** Waits for the records in flight; the page's entries in order, or the first error. */
  async finish(): Promise<PageEntry[]> {
    await Promise.all(this.inFlight);
    if (this.firstError !== undefined) throw this.firstError;
    return this.entries();
  }

  /**
   * After a broken read: waits for the records in flight, drops datastreams received for a
   * record that never came, and gives back what was taken (the page asked for again, or the
   * delivery read again, recognises those records).
   */
  async abandon(): Promise<PageEntry[]> {
    await Promise.all(this.inFlight);
    for (const file of this.pending) await discardIncoming(file);
    this.pending = [];
    return this.entries();
  }

  private entries(): PageEntry[] {
    const entries = this.slots.map((slot) => slot.entry).filter((entry): entry is PageEntry => entry !== undefined);
    this.slots = [];
    return entries;
  }

  /** Takes the records done at the head of the page into the batch, once there are DELIVER_EVERY of them. */
  private async deliverDone(): Promise<void> {
    if (this.firstError !== undefined) return;
    let ready = 0;
    while (ready < this.slots.length && this.slots[ready]!.done) ready++;
    if (ready < DELIVER_EVERY) return;
    const entries = this.slots
      .splice(0, ready)
      .map((slot) => slot.entry)
      .filter((entry): entry is PageEntry => entry !== undefined);
    for (const entry of entries) this.heldXml -= heldXmlOf(entry);
    await this.setup.batch.addPage(this.setup.page, entries);
  }
}

/** The header of a standalone DIDL document's record: the DIDL's identifier, the datestamp given. */
function standaloneHeader(record: ReadRecord, datestamp: string | undefined): OaiHeader | undefined {
  if (!record.didl || datestamp === undefined) return undefined;
  return { identifier: record.didl.identifier, datestamp, setSpecs: [], deleted: false };
}

/** The bytes of received XML an entry holds until its page is stored. */
function heldXmlOf(entry: PageEntry | undefined): number {
  if (entry === undefined || entry.kind === 'failure') return 0;
  const facts = entry.facts;
  let bytes = facts.headerXml.byteLength;
  if (facts.kind === 'version') bytes += facts.didlXml.byteLength;
  for (const about of facts.aboutXml ?? []) bytes += about.byteLength;
  return bytes;
}

/** One record of a page: its entry for the batch, or undefined when it adds nothing (known, no header). */
async function processRecord(
  context: IngestContext,
  batch: IngestBatch,
  record: ReadRecord,
  received: IncomingFile[],
  counts: HarvestCounts,
): Promise<PageEntry | undefined> {
  const header = record.header;
  counts.records++;
  const didl = record.error ? undefined : record.didl;
  // A datestamp that is not an OAI-PMH one is refused here, as docs/archiver.md says, rather
  // than stored for `oaibag restore` (which orders versions by it) to fail on.
  const refusal = header && datestampRefusal(header.datestamp);
  if (!header || refusal || header.deleted || !didl) for (const file of received) await discardIncoming(file);
  if (!header) return undefined;
  if (refusal) {
    return failed(context, counts, header, {
      stage: 'verify',
      code: refusal.code,
      message: refusal.message,
      expected: 'YYYY-MM-DD or YYYY-MM-DDThh:mm:ssZ',
      found: shown(header.datestamp),
    });
  }
  if (header.deleted) return batch.knownDeletion(header.identifier, header.datestamp) ? undefined : deletionOf(record, header);
  if (!didl) {
    const error = record.error;
    const reason = {
      stage: 'verify',
      code: error?.code ?? 'ERR_HARVEST_FORMAT',
      message: error?.message ?? 'the record carries no DIDL',
      expected: error?.expected === undefined ? null : String(error.expected),
      found: error?.found === undefined ? null : String(error.found),
    } as const;
    return failed(context, counts, header, reason, error?.message ?? 'no DIDL');
  }
  return stored(context, batch, { ...record, header, didl }, received, counts);
}

/** A deletion the archive does not know yet, its header (and `about`s) as received. */
function deletionOf(record: ReadRecord, header: OaiHeader): PageEntry {
  const headerXml = record.receivedHeader ?? Buffer.from(oaiHeaderXml(header), 'utf8');
  return {
    kind: 'deletion',
    facts: {
      kind: 'deletion',
      identifier: header.identifier,
      datestamp: header.datestamp,
      headerXml,
      ...(record.receivedAbout ? { aboutXml: record.receivedAbout } : {}),
    },
  };
}

/** A record with its DIDL, verified and stored (storeRecord): its version, or its failure. */
async function stored(
  context: IngestContext,
  batch: IngestBatch,
  record: ReadRecord & { header: OaiHeader; didl: DidlDocument },
  received: IncomingFile[],
  counts: HarvestCounts,
): Promise<PageEntry | undefined> {
  try {
    const asReceived = {
      ...(record.receivedHeader ? { header: record.receivedHeader } : {}),
      ...(record.receivedDidl ? { didl: record.receivedDidl } : {}),
      ...(record.receivedAbout ? { about: record.receivedAbout } : {}),
    };
    const stored = await storeRecord(context, batch, record.header, record.didl, received, asReceived);
    if (stored.known) return undefined;
    return { kind: 'version', facts: stored.facts, parts: stored.parts, fetches: stored.fetches };
  } catch (error) {
    // No room left is the archive's problem, not this record's: the whole run stops.
    if (isStorageExhausted(error)) throw archiveFullError(context.archiveDir, error);
    if (!(error instanceof ArchiverError)) throw error;
    const refused = error instanceof RecordRefused ? error : undefined;
    return failed(context, counts, record.header, {
      stage: refused?.stage ?? 'store',
      code: error.code,
      message: error.message,
      expected: refused?.expected ?? null,
      found: refused?.found ?? null,
    });
  }
}

/** The error of a datestamp that is not an OAI-PMH one (`YYYY-MM-DD`, `YYYY-MM-DDThh:mm:ssZ`); undefined for a good one. */
function datestampRefusal(datestamp: string): ArchiverError | undefined {
  try {
    compactDatestamp(datestamp);
    return undefined;
  } catch (error) {
    if (error instanceof ArchiverError) return error;
    throw error;
  }
}

/** A failure of one record of the run, counted and logged, for the batch. */
function failed(
  context: IngestContext,
  counts: HarvestCounts,
  header: { identifier: string; datestamp: string },
  reason: Pick<NewFailure, 'stage' | 'code' | 'message' | 'expected' | 'found'>,
  logged = reason.message,
): PageEntry {
  counts.failed++;
  context.log(`failed: ${shown(header.identifier)}: ${logged} [${reason.code}]`);
  return {
    kind: 'failure',
    failure: { sourceId: context.sourceId, harvestId: context.harvestId, identifier: header.identifier, datestamp: header.datestamp, ...reason },
  };
}
