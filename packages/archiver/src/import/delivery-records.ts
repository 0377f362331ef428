// A delivery's files turned into records and taken into the import's run (ingest/), page by
// page: a site's files as the records the repository would give for them (site-record.ts), read
// a few ahead of the record that takes them; DIDL files read with packages/didl as a harvest
// reads a page, one after the other (a file's records overlap already).
import { readDidl } from '@oaibag/didl';
import { formatDatestamp } from '@oaibag/oai-pmh';
import { ArchiverError, isStorageExhausted } from '../core/errors.js';
import { declinedAsHeld, discardIncoming, type IncomingFile, receiveIncoming } from '../ingest/incoming-file.js';
import type { IngestRun } from '../ingest/ingest-run.js';
import type { PageRecords } from '../ingest/page-records.js';
import type { Delivery, DeliveryEntry } from './delivery.js';
import { isHidden } from './delivery-kind.js';
import type { ImportOptions } from './import-options.js';
import type { ScreenedDelivery } from './screen-delivery.js';
import { notAResource, siteRecord } from './site-record.js';

/** Files of a delivery taken as one "page" of the batch (bag-info.txt's Batch-Pages counts them). */
const FILES_PER_PAGE = 100;

/** A site's files read ahead of the record being taken. */
const READ_AHEAD = 8;

export class DeliveryRecords {
  /** Files left out (see ImportSummary.skipped). */
  skipped = 0;
  /** Files done, left out ones included. */
  private done = 0;
  /** Why each entry is left out, or null for one taken. */
  private readonly reasons: Array<string | null>;
  /** A site's files being read ahead, by their index. */
  private readonly ahead = new Map<number, Promise<IncomingFile>>();

  constructor(
    private readonly run: IngestRun,
    private readonly screened: ScreenedDelivery,
    /** A site's base URL, normalized as the repository normalizes its own. */
    private readonly siteBase: string | undefined,
    private readonly progress: ImportOptions['progress'],
  ) {
    const site = screened.facts.kind === 'site';
    this.reasons = screened.delivery.entries.map((entry) => (site ? notAResource(entry.name) : isHidden(entry.name) ? 'hidden' : null));
  }

  /**
   * Takes every file of the delivery into the run, a page at a time, committing the batch
   * whenever it is full, except after the last page: that one the import commits with its end
   * (reindex reads the import's end from its last bag). Stops between pages when stopped.
   */
  async takeAll(signal: AbortSignal | undefined): Promise<void> {
    const { delivery, facts } = this.screened;
    // Files the delivery keeps private (mode 000): the repository never exports them.
    for (const file of delivery.withheld) {
      this.skipped++;
      this.run.context.log(`${facts.kind === 'site' ? 'not a resource' : 'not read'} (unreadable: nobody may read it): ${file.name}`);
    }
    const total = delivery.entries.length;
    for (let start = 0; start < total; start += FILES_PER_PAGE) {
      if (signal?.aborted) break;
      await this.takePage(start, Math.min(total, start + FILES_PER_PAGE));
      if (this.run.full && start + FILES_PER_PAGE < total) await this.run.commit();
      this.report();
    }
  }

  /** Drops the site files read ahead and not taken (the import is failing). */
  async discard(): Promise<void> {
    for (const reading of this.ahead.values()) await discardIncoming(await reading.catch(() => undefined));
    this.ahead.clear();
  }

  /** The files from `start` to `end` as one page of the run; what a failing page took is kept. */
  private async takePage(start: number, end: number): Promise<void> {
    const records = this.run.pageRecords(() => this.report());
    try {
      for (let index = start; index < end; index++) {
        await this.takeFile(records, index);
        this.done++;
      }
      await this.run.takePage(await records.finish());
    } catch (error) {
      await this.run.takePage(await records.abandon());
      throw error;
    }
  }

  private async takeFile(records: PageRecords, index: number): Promise<void> {
    const { delivery, facts } = this.screened;
    const entry = delivery.entries[index]!;
    const reason = this.reasons[index];
    if (reason !== null) {
      this.skipped++;
      this.run.context.log(`${facts.kind === 'site' ? 'not a resource' : 'not read'} (${reason}): ${entry.name}`);
    } else if (facts.kind === 'didl') {
      await takeDidlFile(records, delivery, entry);
    } else {
      this.readAhead(index);
      const received = await this.ahead.get(index)!;
      this.ahead.delete(index);
      await records.take(siteRecord(this.siteBase!, entry), [received]);
    }
  }

  /** Starts reading the site's files from `from` on (a few), those not read yet. */
  private readAhead(from: number): void {
    const entries = this.screened.delivery.entries;
    for (let index = from; index < Math.min(entries.length, from + READ_AHEAD); index++) {
      if (this.reasons[index] !== null || this.ahead.has(index)) continue;
      const reading = this.siteFile(entries[index]!);
      reading.catch(() => undefined); // awaited in its turn
      this.ahead.set(index, reading);
    }
  }

  /**
   * The bytes of a site's file for its record: declined when the archive holds them already (the
   * screening measured them; the record becomes a revisit), else those the screening kept, else
   * read from the delivery again.
   */
  private async siteFile(entry: DeliveryEntry): Promise<IncomingFile> {
    const { kept, delivery } = this.screened;
    const file = kept.get(entry.name);
    kept.delete(entry.name);
    if (this.run.holdsPayload(entry.sha256)) {
      await discardIncoming(file);
      return declinedAsHeld();
    }
    const { archiveDir, budget } = this.run.context;
    if (file === undefined) return receiveIncoming(archiveDir, delivery.open(entry), budget);
    // Kept without its own sha-256: the screening's, of the same bytes (the record holds the file to it).
    file.sha256 = entry.sha256;
    return file;
  }

  private report(): void {
    this.progress?.({ stage: 'storing', done: this.done, total: this.screened.delivery.entries.length, counts: this.run.counts });
  }
}

/**
 * One file of DIDL records: a saved OAI-PMH response (its records with their own headers) or a
 * standalone DIDL document (its identifier, dated by the file's modification time).
 */
async function takeDidlFile(records: PageRecords, delivery: Delivery, entry: DeliveryEntry): Promise<void> {
  const datestamp = formatDatestamp(Number(entry.mtimeNs / 1_000_000_000n));
  try {
    const summary = await readDidl(delivery.open(entry), { ...records.readOptions(datestamp), recordErrors: 'report' });
    for (const error of summary.page.errors) {
      if (error.code !== 'noRecordsMatch')
        throw new ArchiverError('ERR_IMPORT_DAMAGED', `${delivery.name}: ${entry.name} is an OAI-PMH error response (${error.code}: ${error.message})`);
    }
  } catch (error) {
    if (error instanceof ArchiverError || isStorageExhausted(error)) throw error;
    throw new ArchiverError('ERR_IMPORT_DAMAGED', `${delivery.name}: ${entry.name} cannot be read as DIDL records: ${(error as Error).message}`, {
      path: delivery.path,
      cause: error,
    });
  }
}
