// One batch bag under construction (docs/aip-profile.md, format 2): the payload files whose
// bytes the archive does not hold yet, under paths derived from their URLs, and the batch's
// records and PREMIS events, appended page by page as gzip members. Sealed as one BagIt bag by
// the bag writer, with the bag-info.txt of the profile (bag-info.ts), and placed through the
// archive's AIP storage (aip-storage.ts).
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { type FileHandle, open, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzip as gzipCallback, gzipSync as gzipSyncDefault, constants as zlibConstants } from 'node:zlib';
import { TEMP_DIRECTORY } from '../archive/storage-path.js';
import { normalizePayloadPath, utf8Length } from '../bag/bag-paths.js';
import { type BagBuilder, createBagBuilder, type KnownDigests, type TagFileWriter } from '../bag/bag-writer.js';
import type { SealedBag } from '../bag/sealed-bag.js';
import { archiveIoError } from '../core/errors.js';
import { writeFully } from '../core/write-fully.js';
import {
  type BatchRecordFacts,
  type DeliveryFacts,
  deliveryEventXml,
  type EventContext,
  premisHead,
  premisObjectXml,
  premisTail,
  RECORDS_TAIL,
  recordEventsXml,
  recordsHead,
  recordXml,
} from './aip-metadata.js';
import type { AipStorage } from './aip-storage.js';
import { type BatchBagInfo, batchBagInfoLabels } from './bag-info.js';
import type { Placement, PlaceOptions } from './bag-placement.js';
import { folderStorage } from './folder-storage.js';
import { MAX_PAYLOAD_PATH_BYTES, safeFileName } from './payload-names.js';

/**
 * The metadata files at zlib's best compression: on the benchmark's records (2.6 MB of
 * records.xml, 3.8 MB of PREMIS for 1,338 records) level 9 took the time level 6 took and
 * wrote 2% less; every byte saved is saved for each record, for good.
 */
const GZIP_OPTIONS = { level: zlibConstants.Z_BEST_COMPRESSION };
const gzipSync = (data: string | Uint8Array): Buffer => gzipSyncDefault(data, GZIP_OPTIONS);
const gzipOnPool = promisify(gzipCallback);
/** Compressed on libuv's thread pool: the harvester's main thread reads the next page meanwhile. */
const gzip = (data: string | Uint8Array): Promise<Buffer> => gzipOnPool(data, GZIP_OPTIONS);

/** Where a batch's records go in its bag. */
export const RECORDS_FILE = 'metadata/records.xml.gz';
/** Where a batch's PREMIS document goes in its bag. */
export const PREMIS_FILE = 'metadata/premis.xml.gz';
/** The folder of data/ for payload files whose URL gives no path of their own (see `payloadPathFor`). */
export const BY_DIGEST_FOLDER = '_by-digest';

/** A datastream received (in memory or in a temporary file of the archive), with its digests. */
export interface ReceivedBytes extends KnownDigests {
  path: string | null;
  bytes: Buffer | null;
}

/** What a batch bag says about itself (records.xml's head, PREMIS event ids). */
export interface BatchBagSetup {
  archiveDir: string;
  /** The bag's place in the archive, relative and `/`-separated (chosen free by the caller). */
  destination: string;
  baseUrl: string;
  harvestId: number;
  /** The source's OAI-rights rightsManifest, kept at the head of records.xml. */
  rightsManifest?: string;
  /** Unique per bag in the archive: the prefix of its PREMIS event ids. */
  eventPrefix: string;
  agent: string;
  /** Where the bag is placed once sealed (default: the archive's folder). */
  storage?: AipStorage;
  /** The out-of-band delivery the records came in (`oaibag import`): an accession event, and each capture names it. */
  delivery?: DeliveryFacts;
  now?: () => Date;
}

/** The counts bag-info.txt and the catalog give for a batch. */
export interface BatchCounts {
  records: number;
  newPayloads: number;
  revisits: number;
  deletions: number;
  payloadBytes: number;
}

export class BatchBag {
  readonly counts: BatchCounts = { records: 0, newPayloads: 0, revisits: 0, deletions: 0, payloadBytes: 0 };
  /** sha-256 → data/ path of the payload files new in this bag (reserved before written). */
  private readonly held = new Map<string, string>();
  /** Paths of data/ taken by files, and the folders they imply. */
  private readonly files = new Set<string>();
  private readonly folders = new Set<string>();
  private readonly objects: Array<{ path: string; size: number; sha256: string; sha512: string; mimeType: string | undefined }> = [];
  /** The pages appended so far, compressed and written in order behind the reading (see append). */
  private writing: Promise<void> = Promise.resolve();
  /** Why writing the appended pages failed, once it has. */
  private writeFailure: unknown;
  /** Where the bag is placed once sealed: the archive's folder. */
  private readonly storage: AipStorage;
  private constructor(
    private readonly setup: BatchBagSetup,
    private readonly builder: BagBuilder,
    private readonly records: TagFileWriter,
    private readonly events: { path: string; handle: FileHandle },
  ) {
    this.storage = setup.storage ?? folderStorage(setup.archiveDir);
  }

  static async start(setup: BatchBagSetup): Promise<BatchBag> {
    const builder = await createBagBuilder(setup.archiveDir, setup.now ? { now: setup.now } : {});
    try {
      const records = await builder.openTagFile(RECORDS_FILE.slice('metadata/'.length));
      await records.write(
        gzipSync(
          recordsHead({
            baseUrl: setup.baseUrl,
            harvestId: setup.harvestId,
            bagPath: setup.destination,
            ...(setup.rightsManifest ? { rightsManifest: setup.rightsManifest } : {}),
          }),
        ),
      );
      // The events are written beside the bag and joined to the objects when it is sealed:
      // PREMIS wants every object before the first event.
      const eventsPath = join(setup.archiveDir, TEMP_DIRECTORY, `premis-events-${randomBytes(8).toString('hex')}`);
      const handle = await open(eventsPath, 'wx');
      if (setup.delivery) {
        const at = (setup.now?.() ?? new Date()).toISOString();
        await writeFully(handle, gzipSync(deliveryEventXml(setup.delivery, { baseUrl: setup.baseUrl, idPrefix: setup.eventPrefix, at, agent: setup.agent })));
      }
      return new BatchBag(setup, builder, records, { path: eventsPath, handle });
    } catch (error) {
      await builder.abort();
      throw archiveIoError(error, `cannot start a batch bag in ${setup.archiveDir}`);
    }
  }

  get destination(): string {
    return this.setup.destination;
  }

  /** The data/ path of bytes with this sha-256 that this bag holds (or is writing). */
  heldHere(sha256: string): string | undefined {
    return this.held.get(sha256);
  }

  /**
   * Takes a datastream's bytes into data/, at the path its URL gives (`urlSegments`, see
   * `freePath`) or, when that path cannot be used, under `_by-digest/`. Bytes already in this
   * bag are not written again. `mimeType` is the format PREMIS gives the file. Returns the
   * bag-relative path (`data/…`).
   */
  async addPayload(urlSegments: readonly string[] | undefined, fallbackName: string, file: ReceivedBytes, mimeType?: string): Promise<string> {
    const existing = this.held.get(file.sha256);
    if (existing !== undefined) return existing;
    const relName = this.freePath(urlSegments, fallbackName, file.sha256);
    this.held.set(file.sha256, `data/${relName}`);
    try {
      const written = file.bytes !== null ? this.builder.addPayloadBytes(relName, file.bytes, file) : await this.builder.linkPayload(relName, file.path!, file);
      this.objects.push({ path: written.path, size: written.size, sha256: written.sha256, sha512: written.sha512, mimeType });
      this.counts.newPayloads++;
      this.counts.payloadBytes += written.size;
      this.held.set(file.sha256, written.path);
      return written.path;
    } catch (error) {
      this.held.delete(file.sha256);
      throw error;
    }
  }

  /** Appends records (in the list's order) to records.xml and their events to the PREMIS events. */
  async append(entries: readonly BatchRecordFacts[]): Promise<number[]> {
    if (entries.length === 0) return [];
    if (this.writeFailure !== undefined) throw this.writeFailure;
    const context: EventContext = {
      baseUrl: this.setup.baseUrl,
      idPrefix: this.setup.eventPrefix,
      at: (this.setup.now?.() ?? new Date()).toISOString(),
      agent: this.setup.agent,
      ...(this.setup.delivery ? { delivery: this.setup.delivery } : {}),
    };
    const numbers: number[] = [];
    const records: Buffer[] = [];
    // Each record's events made UTF-8 on their own: one string for the run of records, turned
    // into bytes whole, cost some 30 µs a record against 4 (see utf8Joined).
    const events: string[] = [];
    for (const facts of entries) {
      const n = ++this.counts.records;
      numbers.push(n);
      if (facts.kind === 'deletion') this.counts.deletions++;
      else this.counts.revisits += facts.payloads.filter((payload) => payload.revisitOf !== undefined).length;
      records.push(recordXml(n, facts));
      events.push(recordEventsXml(n, facts, context));
    }
    // Compressed and written behind the caller, in order: a failure is thrown by the next
    // append or by seal, so that nothing of a batch that could not be written is committed.
    const recordBytes = Buffer.concat(records);
    const eventBytes = utf8Joined(events);
    const previous = this.writing;
    this.writing = (async () => {
      await previous;
      const [recordsGz, eventsGz] = await Promise.all([gzip(recordBytes), gzip(eventBytes)]);
      await this.records.write(recordsGz);
      await writeFully(this.events.handle, eventsGz);
    })().catch((error: unknown) => {
      this.writeFailure ??= archiveIoError(error, `cannot write the records of ${this.setup.destination}`);
      throw this.writeFailure;
    });
    this.writing.catch(() => undefined); // awaited by the next append or by seal
    return numbers;
  }

  /**
   * Ends records.xml, writes premis.xml (objects, the events, the agent) and the BagIt tag
   * files, bag-info.txt from `info` and the batch's counts: the bag is complete in tmp/, ready
   * for {@link place}. On failure nothing stays.
   */
  async seal(info: Omit<BatchBagInfo, 'records' | 'newPayloads' | 'revisits' | 'deletions'>): Promise<SealedBag> {
    try {
      await this.writing;
      await this.records.write(gzipSync(RECORDS_TAIL));
      await this.records.close();
      await this.events.handle.close();
      const premis = await this.builder.openTagFile(PREMIS_FILE.slice('metadata/'.length));
      await premis.write(await gzip(utf8Joined([premisHead(), ...this.objects.map(premisObjectXml)])));
      // The events' gzip members, as they are: a gzip stream may be any number of members.
      await premis.write(await readFile(this.events.path));
      await premis.write(gzipSync(premisTail(this.setup.agent)));
      await premis.close();
      rmSync(this.events.path, { force: true });
    } catch (error) {
      await this.abort();
      throw archiveIoError(error, `cannot finish the metadata of ${this.setup.destination}`);
    }
    const { records, newPayloads, revisits, deletions } = this.counts;
    return this.builder.seal({ destination: this.setup.destination, bagInfo: batchBagInfoLabels({ ...info, records, newPayloads, revisits, deletions }) });
  }

  /** Places the sealed bag at its destination in the archive (see AipStorage.placeBags). */
  async place(sealed: SealedBag, options: PlaceOptions = {}): Promise<Placement> {
    const [placement] = await this.storage.placeBags([sealed], options);
    return placement!;
  }

  /** Removes everything written so far. */
  async abort(): Promise<void> {
    await this.writing.catch(() => undefined);
    await this.records.close().catch(() => undefined); // closed once: a second close is refused, and ignored
    await this.events.handle.close().catch(() => undefined);
    rmSync(this.events.path, { force: true });
    await this.builder.abort();
  }

  /**
   * The path below data/ for a payload file: the URL's segments (`host/a/b.pdf`) when each is a
   * name every BagIt tool reads back as written and no file or folder of this bag stands in the
   * way; else `_by-digest/<sha[0:2]>/<sha-256>/<name>`, which nothing else uses.
   */
  private freePath(urlSegments: readonly string[] | undefined, fallbackName: string, sha256: string): string {
    // In NFC, as the bag writer names every file (RFC 8493 section 7.2.3).
    const mapped = urlSegments && urlSegments.length > 0 ? urlSegments.map((segment) => segment.normalize('NFC')) : undefined;
    const usable = mapped?.every((segment) => safeFileName(segment) === segment && segment !== BY_DIGEST_FOLDER) === true;
    let relName = usable ? checkedPath(mapped!.join('/')) : undefined;
    if (relName !== undefined && utf8Length(relName) > MAX_PAYLOAD_PATH_BYTES) relName = undefined;
    if (relName !== undefined && !this.free(relName)) relName = undefined;
    relName ??= `${BY_DIGEST_FOLDER}/${sha256.slice(0, 2)}/${sha256}/${fallbackName}`;
    this.files.add(relName);
    const segments = relName.split('/');
    for (let i = 1; i < segments.length; i++) this.folders.add(segments.slice(0, i).join('/'));
    return relName;
  }

  private free(relName: string): boolean {
    if (this.files.has(relName) || this.folders.has(relName) || this.builder.hasPayload(relName)) return false;
    const segments = relName.split('/');
    for (let i = 1; i < segments.length; i++) if (this.files.has(segments.slice(0, i).join('/'))) return false;
    return true;
  }
}

/**
 * The strings as one run of UTF-8 bytes, each converted on its own. Node turns a short string
 * into bytes several times faster than a long one: the PREMIS events of 64 records joined into
 * one string and converted cost 23–40 µs a record, converted record by record 3.4–4.4
 * (measured 2026-11-27 on this machine, Node 20).
 */
function utf8Joined(pieces: readonly string[]): Buffer {
  return Buffer.concat(pieces.map((piece) => Buffer.from(piece, 'utf8')));
}

/** The path in NFC when the bag writer accepts it as it is, else undefined. */
function checkedPath(relName: string): string | undefined {
  try {
    const normal = normalizePayloadPath(relName);
    return normal === relName ? normal : undefined;
  } catch {
    return undefined;
  }
}
