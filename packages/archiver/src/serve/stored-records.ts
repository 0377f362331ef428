// The records as received, read back from a batch bag's metadata/records.xml.gz for `oaibag
// serve` (docs/aip-profile.md): each record's OAI-PMH header, its DIDL (base64 replaced by
// pointers) and its `about` containers, as the XML text the bag keeps.
//
// A bag is sealed once placed and never changes, so what was read is kept: a ListRecords walk
// inflates each bag once, not once per page. The cache is bounded by the text it holds. A bag's
// text is cut into records only as far as the record asked for (a list asks for them in the
// bag's order): a page pays for its own records, and the first page of a bag costs about what
// the others do, rather than the whole bag's 1,000 records. Malformed XML is found when the
// reading reaches it; the records before it were whole elements and are served. On an archive
// whose bags are on object storage, records.xml.gz is read through the store.
import { isAscii } from 'node:buffer';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { NS } from '@oaibag/didl';
import { AIP_NAMESPACE } from '../aip/aip-metadata.js';
import type { AipStorage } from '../aip/aip-storage.js';
import { RECORDS_FILE } from '../aip/batch-bag.js';
import { ArchiverError } from '../core/errors.js';
import { XmlSpanScanner } from '../core/xml-spans.js';

/** One record of records.xml, its parts as the text the bag keeps. */
export interface StoredRecordXml {
  n: number;
  /** The OAI-PMH `header` element as received. */
  header: string;
  /** The DIDL element as received (absent for a deletion). */
  didl?: string;
  /** The record's `about` containers as received, in order. */
  about: string[];
}

/** The text kept in memory across bags (UTF-16 code units). */
const CACHE_CHARS = 32 * 1024 * 1024;
/** A records.xml larger than this is refused rather than read into memory. */
const MAX_RECORDS_BYTES = 512 * 1024 * 1024;

const gunzipAsync = promisify(gunzip);

export class StoredRecords {
  private readonly cache = new Map<string, BagRecords>();
  private cachedChars = 0;
  /** Bags being read (by a request or ahead of one): a second reader waits for the first. */
  private readonly reading = new Map<string, Promise<BagRecords>>();

  constructor(
    private readonly archiveDir: string,
    /** The archive's object store, when its bags are there. */
    private readonly store?: AipStorage,
  ) {}

  /**
   * Starts reading a bag that a request is about to ask for, unless it is cached or being read.
   * A failure is left for that request to meet: it reads the bag again and reports it.
   */
  readAhead(bagPath: string): void {
    if (this.cache.has(bagPath) || this.reading.has(bagPath)) return;
    this.bag(bagPath).catch(() => undefined);
  }

  /** The record `n` of the bag at `bagPath` (relative to the archive); throws ERR_ARCHIVE_DAMAGED when it is not there. */
  async record(bagPath: string, n: number): Promise<StoredRecordXml> {
    const bag = await this.bag(bagPath);
    const record = bag.record(n);
    if (!record) throw new ArchiverError('ERR_ARCHIVE_DAMAGED', `${bagPath}/${RECORDS_FILE} has no record ${n}`, { path: bagPath });
    return record;
  }

  private bag(bagPath: string): Promise<BagRecords> {
    const cached = this.cache.get(bagPath);
    if (cached) {
      // Most recently used last.
      this.cache.delete(bagPath);
      this.cache.set(bagPath, cached);
      return Promise.resolve(cached);
    }
    let reading = this.reading.get(bagPath);
    if (!reading) {
      reading = this.read(bagPath).finally(() => this.reading.delete(bagPath));
      this.reading.set(bagPath, reading);
    }
    return reading;
  }

  private async read(bagPath: string): Promise<BagRecords> {
    const file =
      this.store === undefined ? join(this.archiveDir, ...bagPath.split('/'), ...RECORDS_FILE.split('/')) : this.store.where(`${bagPath}/${RECORDS_FILE}`);
    let text: string;
    try {
      const gzipped = this.store === undefined ? await readFile(file) : await readStored(this.store, `${bagPath}/${RECORDS_FILE}`);
      // 1 MiB output chunks: 16 KiB ones cost a copy of each into the joined buffer.
      const xml = await gunzipAsync(gzipped, { maxOutputLength: MAX_RECORDS_BYTES, chunkSize: 1 << 20 });
      // Most bags are ASCII throughout, which decodes as Latin-1 with one copy: 0.2 ms for a bag
      // of 1,000 records against 15-20 ms through the UTF-8 decoder, which the others take.
      text = isAscii(xml) ? xml.toString('latin1') : xml.toString('utf8');
    } catch (error) {
      throw new ArchiverError('ERR_ARCHIVE_DAMAGED', `${file} cannot be read: ${(error as Error).message}`, { path: file });
    }
    const bag = new BagRecords(text, file);
    // The records are slices of the text: the text is what the cache holds.
    this.cache.set(bagPath, bag);
    this.cachedChars += text.length;
    for (const [key, entry] of this.cache) {
      if (this.cachedChars <= CACHE_CHARS || key === bagPath) break;
      this.cache.delete(key);
      this.cachedChars -= entry.chars;
    }
    return bag;
  }
}

/** A records.xml.gz on object storage, whole; one larger than MAX_RECORDS_BYTES (compressed) is refused. */
async function readStored(store: AipStorage, path: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of store.read(path, { offset: 0, length: MAX_RECORDS_BYTES + 1 }) as AsyncIterable<Buffer>) {
    total += chunk.byteLength;
    if (total > MAX_RECORDS_BYTES) throw new Error(`larger than the ${MAX_RECORDS_BYTES} bytes a records file may have`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** One bag's records.xml, cut into its records (the children of each `<record>` or `<deleted>`) as far as asked. */
class BagRecords {
  private readonly records = new Map<number, StoredRecordXml>();
  private readonly scanner: XmlSpanScanner;
  private damage: ArchiverError | undefined;
  /** The record being read (its children are not all read yet). */
  private current: StoredRecordXml | undefined;

  constructor(
    private readonly text: string,
    private readonly file: string,
  ) {
    let depth = 0;
    let childStart = -1;
    let childKind: 'header' | 'didl' | 'about' | undefined;
    this.scanner = new XmlSpanScanner(text, {
      open: (tag, start) => {
        depth++;
        if (depth === 2 && tag.uri === AIP_NAMESPACE && (tag.local === 'record' || tag.local === 'deleted')) {
          const n = Number(tag.attributes.n?.value);
          if (!Number.isSafeInteger(n)) throw new Error(`<${tag.local}> without a whole n`);
          this.current = { n, header: '', about: [] };
        } else if (depth === 3 && this.current) {
          if (tag.uri === NS.oai && tag.local === 'header') childKind = 'header';
          else if (tag.uri === NS.oai && tag.local === 'about') childKind = 'about';
          else if (tag.uri === NS.didl && tag.local === 'DIDL') childKind = 'didl';
          else childKind = undefined;
          childStart = start;
        }
      },
      close: (_name, _start, end) => {
        const current = this.current;
        if (depth === 3 && current && childKind) {
          const element = text.slice(childStart, end);
          if (childKind === 'about') current.about.push(element);
          else current[childKind] = element;
          childKind = undefined;
        } else if (depth === 2 && current) {
          this.records.set(current.n, current);
          this.current = undefined;
        }
        depth--;
      },
    });
  }

  get chars(): number {
    return this.text.length;
  }

  /** Record `n`, reading on until it is whole; undefined when the file ends without it. */
  record(n: number): StoredRecordXml | undefined {
    for (;;) {
      const record = this.records.get(n);
      if (record) return record;
      if (this.damage) throw this.damage;
      try {
        if (!this.scanner.step()) return undefined;
      } catch (error) {
        this.damage = new ArchiverError('ERR_ARCHIVE_DAMAGED', `${this.file}: ${(error as Error).message}`, { path: this.file });
      }
    }
  }
}
