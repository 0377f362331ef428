// The original HTTP response headers of some records of a batch bag, read from its
// metadata/records.xml.gz (docs/aip-profile.md) for `oaibag export --warc`: the `http:header`
// elements of each record's DIDL as received. Streamed through the DIDL package's tokenizer and
// stopped once every record asked for was read: memory holds the headers asked for, never the
// file. Read through the AIP storage, so a bag on object storage is read as one in a folder.
//
// Which headers describe the record's first datastream is the DIDL profile's rule
// (docs/didl-profile.md, "Which headers and digest describe a datastream"): the first
// Component's own, else, when the Item has one Component, the Item's (from its Descriptors or a
// nested metadata Item).
import { pipeline } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { type HttpHeader, NS, type XmlTag, XmlTokenizer } from '@oaibag/didl';
import { AIP_NAMESPACE } from '../aip/aip-metadata.js';
import type { AipStorage } from '../aip/aip-storage.js';
import { RECORDS_FILE } from '../aip/batch-bag.js';
import { ArchiverError } from '../core/errors.js';
import { MAX_HEADER_BYTES, MAX_HEADERS } from './warc-record.js';

/** The headers found for one record: undefined when its DIDL recorded none that describe its first datastream. */
export type RecordHeaders = HttpHeader[] | undefined;

/** One record being read: where its DIDL's parts are, and the headers gathered so far. */
interface RecordState {
  n: number;
  /** Depth of the top Item, once open. */
  itemDepth: number | undefined;
  /** Components of the top Item seen so far, and the one open (its number, from 1). */
  components: number;
  openComponent: number | undefined;
  componentDepth: number;
  itemHeaders: HttpHeader[] | undefined;
  componentHeaders: HttpHeader[] | undefined;
  /** The `http:header` element being read: its depth and where its fields go. */
  header: { depth: number; into: HttpHeader[]; bytes: number } | undefined;
  /** The field being read: its name and text. */
  field: { name: string; text: string } | undefined;
}

/**
 * The headers of the records numbered `wanted` of the bag `bagPath`. A records file that is
 * missing, not gzip or not well-formed, or that lacks a record asked for, is damage
 * (ERR_ARCHIVE_DAMAGED naming the file).
 */
export async function readRecordHeaders(storage: AipStorage, bagPath: string, wanted: ReadonlySet<number>): Promise<Map<number, RecordHeaders>> {
  const found = new Map<number, RecordHeaders>();
  const file = storage.where(`${bagPath}/${RECORDS_FILE}`);
  const damaged = (why: string, cause?: unknown): ArchiverError =>
    new ArchiverError('ERR_ARCHIVE_DAMAGED', `damaged bag ${storage.where(bagPath)}: ${file} ${why}`, {
      cause,
      path: storage.where(bagPath),
      hint: 'nothing was exported; oaibag verify checks every bag',
    });
  if (wanted.size === 0) return found;
  const stack: Array<{ uri: string; local: string }> = [];
  let record: RecordState | undefined;
  const tokenizer = new XmlTokenizer({
    openTag: (tag: XmlTag) => {
      stack.push({ uri: tag.uri, local: tag.local });
      const depth = stack.length;
      if (depth === 2 && tag.uri === AIP_NAMESPACE && tag.local === 'record') {
        const n = Number(tag.attributes.n?.value);
        record = wanted.has(n) && !found.has(n) ? newRecord(n) : undefined;
        return;
      }
      if (record === undefined) return;
      if (tag.uri === NS.didl) {
        if (tag.local === 'Item' && record.itemDepth === undefined && depth === 4) record.itemDepth = depth;
        else if (tag.local === 'Component' && record.itemDepth !== undefined && depth === record.itemDepth + 1) {
          record.components += 1;
          record.openComponent = record.components;
          record.componentDepth = depth;
        }
        return;
      }
      if (tag.uri !== NS.http) return;
      if (record.header === undefined && tag.local === 'header' && record.itemDepth !== undefined) {
        if (record.openComponent === 1 && record.componentHeaders === undefined) record.header = { depth, into: (record.componentHeaders = []), bytes: 0 };
        else if (record.openComponent === undefined && record.itemHeaders === undefined) record.header = { depth, into: (record.itemHeaders = []), bytes: 0 };
      } else if (record.header !== undefined && depth === record.header.depth + 1) {
        const name = tag.local === 'field' ? (tag.attributes.name?.value ?? '') : tag.local;
        record.field = { name, text: '' };
      }
    },
    closeTag: () => {
      const depth = stack.length;
      stack.pop();
      if (record === undefined) return;
      if (depth === 2) {
        found.set(record.n, record.componentHeaders ?? (record.components <= 1 ? record.itemHeaders : undefined));
        record = undefined;
        return;
      }
      const header = record.header;
      if (header !== undefined && record.field !== undefined && depth === header.depth + 1) {
        const value = record.field.text.trim();
        header.bytes += Buffer.byteLength(record.field.name) + Buffer.byteLength(value) + 4;
        if (header.into.length < MAX_HEADERS && header.bytes <= MAX_HEADER_BYTES) header.into.push({ name: record.field.name, value });
        record.field = undefined;
      } else if (header !== undefined && depth === header.depth) record.header = undefined;
      else if (record.openComponent !== undefined && depth === record.componentDepth) record.openComponent = undefined;
    },
    text: (text) => {
      const field = record?.field;
      // A value longer than every header of a record may hold is cut: it is left out when it ends.
      if (field !== undefined && field.text.length <= MAX_HEADER_BYTES) field.text += text;
    },
    cdata: (text) => {
      const field = record?.field;
      if (field !== undefined && field.text.length <= MAX_HEADER_BYTES) field.text += text;
    },
    comment: () => {},
    doctype: () => {},
    processingInstruction: () => {},
    error: (reason) => {
      throw damaged(`is not well-formed XML: ${reason}`);
    },
  });
  const source = pipeline(storage.read(`${bagPath}/${RECORDS_FILE}`), createGunzip(), () => undefined);
  try {
    source.setEncoding('utf8'); // characters split between chunks are joined
    for await (const chunk of source as AsyncIterable<string>) {
      tokenizer.write(chunk);
      if (found.size === wanted.size) break;
    }
    if (found.size < wanted.size) tokenizer.end();
  } catch (error) {
    if (error instanceof ArchiverError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    throw damaged(code === 'ENOENT' ? 'is missing' : `cannot be read: ${(error as Error).message}`, error);
  } finally {
    source.destroy();
  }
  for (const n of wanted) if (!found.has(n)) throw damaged(`has no record ${n}, which the catalog places there`);
  return found;
}

function newRecord(n: number): RecordState {
  return {
    n,
    itemDepth: undefined,
    components: 0,
    openComponent: undefined,
    componentDepth: 0,
    itemHeaders: undefined,
    componentHeaders: undefined,
    header: undefined,
    field: undefined,
  };
}
