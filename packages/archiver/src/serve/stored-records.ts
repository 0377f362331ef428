// The records as received, read back from a batch bag's metadata/records.xml.gz for `oaibag
// serve` (docs/aip-profile.md): each record's OAI-PMH header, its DIDL (base64 replaced by
// pointers) and its `about` containers, as the XML text the bag keeps.
//
// A bag is sealed once placed and never changes, so what was read is kept: a ListRecords walk
// reads each bag once, not once per page. The cache is bounded by the text it holds.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { NS } from '@oaibag/didl';
import { AIP_NAMESPACE } from '../aip/aip-metadata.js';
import { RECORDS_FILE } from '../aip/batch-bag.js';
import { ArchiverError } from '../core/errors.js';
import { scanXmlSpans } from '../core/xml-spans.js';

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
  private readonly cache = new Map<string, { records: Map<number, StoredRecordXml>; chars: number }>();
  private cachedChars = 0;

  constructor(private readonly archiveDir: string) {}

  /** The record `n` of the bag at `bagPath` (relative to the archive); throws ERR_ARCHIVE_DAMAGED when it is not there. */
  async record(bagPath: string, n: number): Promise<StoredRecordXml> {
    const records = await this.bag(bagPath);
    const record = records.get(n);
    if (!record) throw new ArchiverError('ERR_ARCHIVE_DAMAGED', `${bagPath}/${RECORDS_FILE} has no record ${n}`, { path: bagPath });
    return record;
  }

  private async bag(bagPath: string): Promise<Map<number, StoredRecordXml>> {
    const cached = this.cache.get(bagPath);
    if (cached) {
      // Most recently used last.
      this.cache.delete(bagPath);
      this.cache.set(bagPath, cached);
      return cached.records;
    }
    const file = join(this.archiveDir, ...bagPath.split('/'), ...RECORDS_FILE.split('/'));
    let text: string;
    try {
      text = (await gunzipAsync(await readFile(file), { maxOutputLength: MAX_RECORDS_BYTES })).toString('utf8');
    } catch (error) {
      throw new ArchiverError('ERR_ARCHIVE_DAMAGED', `${file} cannot be read: ${(error as Error).message}`, { path: file });
    }
    let records: Map<number, StoredRecordXml>;
    try {
      records = splitRecords(text);
    } catch (error) {
      throw new ArchiverError('ERR_ARCHIVE_DAMAGED', `${file}: ${(error as Error).message}`, { path: file });
    }
    let chars = 0;
    for (const record of records.values())
      chars += record.header.length + (record.didl?.length ?? 0) + record.about.reduce((sum, about) => sum + about.length, 0);
    this.cache.set(bagPath, { records, chars });
    this.cachedChars += chars;
    for (const [key, entry] of this.cache) {
      if (this.cachedChars <= CACHE_CHARS || key === bagPath) break;
      this.cache.delete(key);
      this.cachedChars -= entry.chars;
    }
    return records;
  }
}

/** Cuts records.xml into its records: the children of each `<record>` or `<deleted>`. */
function splitRecords(text: string): Map<number, StoredRecordXml> {
  const records = new Map<number, StoredRecordXml>();
  let depth = 0;
  let current: StoredRecordXml | undefined;
  let childStart = -1;
  let childKind: 'header' | 'didl' | 'about' | undefined;
  scanXmlSpans(text, {
    open(tag, start) {
      depth++;
      if (depth === 2 && tag.uri === AIP_NAMESPACE && (tag.local === 'record' || tag.local === 'deleted')) {
        const n = Number(tag.attributes.n?.value);
        if (!Number.isSafeInteger(n)) throw new Error(`<${tag.local}> without a whole n`);
        current = { n, header: '', about: [] };
        records.set(n, current);
      } else if (depth === 3 && current) {
        if (tag.uri === NS.oai && tag.local === 'header') childKind = 'header';
        else if (tag.uri === NS.oai && tag.local === 'about') childKind = 'about';
        else if (tag.uri === NS.didl && tag.local === 'DIDL') childKind = 'didl';
        else childKind = undefined;
        childStart = start;
      }
    },
    close(_name, _start, end) {
      if (depth === 3 && current && childKind) {
        const element = text.slice(childStart, end);
        if (childKind === 'about') current.about.push(element);
        else current[childKind] = element;
        childKind = undefined;
      } else if (depth === 2) {
        current = undefined;
      }
      depth--;
    },
  });
  return records;
}
