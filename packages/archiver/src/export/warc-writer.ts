// The WARC files of one `oaibag export --warc`: records appended as gzip members (one a record,
// zlib level 6, so that each can be read alone at the offset its CDXJ line gives), a new file
// begun once the current one has reached the size bound (a record is never split: a file passes
// the bound by at most its last record), each file starting with its warcinfo record. Response
// records carry a version's payload file, read and checked while it is written; revisit
// records only the version's response head. Each record's CDXJ line goes to the export table,
// each HTML page's line to pages.jsonl when a WACZ is made.
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip, gzipSync } from 'node:zlib';
import type { WarcExportTable, WarcVersionDetails } from '../catalog/warc-queries.js';
import { ArchiverError } from '../core/errors.js';
import { cdxjLine } from './cdxj-index.js';
import type { ExportFile, ExportFiles } from './warc-files.js';
import type { RecordHeaders } from './warc-headers.js';
import { type PayloadPlace, readPayload, readWholePayload } from './warc-payload.js';
import {
  cdxMime,
  HTTP_RESPONSE_TYPE,
  IDENTICAL_PAYLOAD_PROFILE,
  RECORD_END,
  recordId,
  responseHead,
  targetUri,
  warcDate,
  warcDigest,
  warcHeader,
  warcinfoBlock,
} from './warc-record.js';

/** Each gzip member is deflated at this level: the same archive gives the same bytes with the same zlib. */
export const GZIP_LEVEL = 6;
/** A payload up to this size is read once, into memory; a larger one twice (its block digest first, then its bytes). */
const IN_MEMORY_BYTES = 4 * 1024 * 1024;
/** The start of an HTML payload searched for its title. */
const TITLE_WINDOW = 256 * 1024;
/** A title is cut at this many characters. */
const MAX_TITLE = 500;

/** What the records of one export are: counts for the summary. */
export interface WrittenRecords {
  responses: number;
  revisits: number;
  /** Payload bytes in response records. */
  payloadBytes: number;
}

export interface WarcWriterOptions {
  files: ExportFiles;
  table: WarcExportTable;
  place: PayloadPlace;
  /** The WARC files are `<name>-00001.warc.gz`, `-00002`… */
  name: string;
  maxFileBytes: number;
  /** WARC-Date of every warcinfo record: the export's instant. */
  instant: string;
  /** The warcinfo fields besides the file's name. */
  info: ReadonlyArray<readonly [string, string]>;
  /** pages/pages.jsonl of a WACZ, when one is made. */
  pages: ExportFile | undefined;
  progress: ((done: { records: number; bytes: number }) => void) | undefined;
}

export class WarcWriter {
  readonly written: WrittenRecords = { responses: 0, revisits: 0, payloadBytes: 0 };
  /** The WARC files, complete or being written, in order. */
  readonly warcFiles: ExportFile[] = [];
  private current: ExportFile | undefined;
  private recordsInFile = 0;
  private bytesBefore = 0;
  /** Page lines waiting to be written to pages.jsonl, CDXJ lines and titles to the table ({@link flush}). */
  private pendingPages: string[] = [];
  private pendingLines: Buffer[] = [];
  private readonly pendingTitles = new Map<number, string>();

  constructor(private readonly options: WarcWriterOptions) {}

  /** A response record of `version`, its block the response head then the payload file's bytes. */
  async response(version: WarcVersionDetails, headers: RecordHeaders): Promise<void> {
    const { place } = this.options;
    const uri = targetUri(version.identifier, version.fetchedUrl);
    const date = this.dateOf(version);
    const head = responseHead(headers, { mimeType: version.mimeType, lastModified: version.lastModified, size: version.payload.size });
    const html = isHtml(head.contentType);
    const id = recordId('response', version.source, version.identifier, version.datestamp, version.sha256);
    const payloadDigest = warcDigest(version.payload.sha256);
    const fields = (blockDigest: string): Array<[string, string]> => [
      ['WARC-Type', 'response'],
      ['WARC-Record-ID', id],
      ['WARC-Date', date],
      ['WARC-Target-URI', uri],
      ['Content-Type', HTTP_RESPONSE_TYPE],
      ['WARC-Payload-Digest', payloadDigest],
      ['WARC-Block-Digest', blockDigest],
      ['Content-Length', String(head.bytes.byteLength + version.payload.size)],
    ];
    const file = await this.fileForRecord();
    const offset = file.bytes;
    let title: string | undefined;
    if (version.payload.size <= IN_MEMORY_BYTES) {
      const payload = await readWholePayload(place, version);
      const blockDigest = warcDigest(createHash('sha256').update(head.bytes).update(payload).digest());
      if (html) title = htmlTitle(payload.subarray(0, TITLE_WINDOW));
      await file.write(gzipSync(Buffer.concat([warcHeader(fields(blockDigest)), head.bytes, payload, RECORD_END]), { level: GZIP_LEVEL }));
    } else {
      // The block digest comes before the block: a first read hashes the bytes (and checks them),
      // the second writes them (and checks them again: a file that changed in between is damage).
      const block = createHash('sha256').update(head.bytes);
      let start: Buffer[] = [];
      let startBytes = 0;
      for await (const chunk of readPayload(place, version)) {
        block.update(chunk);
        if (html && startBytes < TITLE_WINDOW) {
          start.push(chunk.subarray(0, TITLE_WINDOW - startBytes));
          startBytes += Math.min(chunk.byteLength, TITLE_WINDOW - startBytes);
        }
      }
      if (html) title = htmlTitle(Buffer.concat(start));
      start = [];
      const header = warcHeader(fields(warcDigest(block.digest())));
      await pipeline(
        Readable.from(
          (async function* () {
            yield header;
            yield head.bytes;
            yield* readPayload(place, version);
            yield RECORD_END;
          })(),
        ),
        createGzip({ level: GZIP_LEVEL }),
        async (compressed: AsyncIterable<Buffer>) => {
          for await (const chunk of compressed) await file.write(chunk);
        },
      );
    }
    if (title !== undefined) this.pendingTitles.set(version.payload.id, title);
    this.written.responses += 1;
    this.written.payloadBytes += version.payload.size;
    this.recorded({ uri, date, mime: cdxMime(head.contentType), payloadDigest, offset, file, html, id, title });
  }

  /**
   * A revisit record of `version`, whose bytes the export wrote first in the response record of
   * `first`: WARC 1.1's identical-payload-digest profile, its block the response head alone.
   */
  async revisit(version: WarcVersionDetails, first: WarcVersionDetails, headers: RecordHeaders): Promise<void> {
    const uri = targetUri(version.identifier, version.fetchedUrl);
    const date = this.dateOf(version);
    const head = responseHead(headers, { mimeType: version.mimeType, lastModified: version.lastModified, size: version.payload.size });
    const id = recordId('revisit', version.source, version.identifier, version.datestamp, version.sha256);
    const payloadDigest = warcDigest(version.payload.sha256);
    const fields: Array<[string, string]> = [
      ['WARC-Type', 'revisit'],
      ['WARC-Record-ID', id],
      ['WARC-Date', date],
      ['WARC-Target-URI', uri],
      ['WARC-Profile', IDENTICAL_PAYLOAD_PROFILE],
      ['WARC-Refers-To', recordId('response', first.source, first.identifier, first.datestamp, first.sha256)],
      ['WARC-Refers-To-Target-URI', targetUri(first.identifier, first.fetchedUrl)],
      ['WARC-Refers-To-Date', this.dateOf(first)],
      ['Content-Type', HTTP_RESPONSE_TYPE],
      ['WARC-Payload-Digest', payloadDigest],
      ['WARC-Block-Digest', warcDigest(createHash('sha256').update(head.bytes).digest())],
      ['Content-Length', String(head.bytes.byteLength)],
    ];
    const file = await this.fileForRecord();
    const offset = file.bytes;
    await file.write(gzipSync(Buffer.concat([warcHeader(fields), head.bytes, RECORD_END]), { level: GZIP_LEVEL }));
    this.written.revisits += 1;
    const html = isHtml(head.contentType);
    const title = html ? (this.pendingTitles.get(version.payload.id) ?? this.options.table.title(version.payload.id)) : undefined;
    this.recorded({ uri, date, mime: 'warc/revisit', payloadDigest, offset, file, html, id, title });
  }

  /** Completes the last WARC file (an export of nothing still has one, holding its warcinfo record). */
  async finish(): Promise<void> {
    await this.flush();
    const file = this.current ?? (await this.startFile());
    await file.complete();
    this.current = undefined;
  }

  private dateOf(version: WarcVersionDetails): string {
    const date = warcDate(version.storedAt);
    if (date === undefined) {
      throw new ArchiverError('ERR_ARCHIVE_CATALOG', `the catalog's capture time of ${version.identifier} (${version.storedAt}) is not an instant`, {
        hint: 'oaibag reindex rebuilds the catalog from the bags',
      });
    }
    return date;
  }

  /** The file the next record goes to: the current one, or a new one once it reached the bound. */
  private async fileForRecord(): Promise<ExportFile> {
    if (this.current !== undefined && (this.recordsInFile === 0 || this.current.bytes < this.options.maxFileBytes)) return this.current;
    if (this.current !== undefined) {
      this.bytesBefore += this.current.bytes;
      await this.current.complete();
    }
    return this.startFile();
  }

  private async startFile(): Promise<ExportFile> {
    const { files, name, instant, info } = this.options;
    const fileName = `${name}-${String(this.warcFiles.length + 1).padStart(5, '0')}.warc.gz`;
    const file = await files.create(fileName);
    this.warcFiles.push(file);
    this.current = file;
    this.recordsInFile = 0;
    const block = warcinfoBlock(info);
    const header = warcHeader([
      ['WARC-Type', 'warcinfo'],
      ['WARC-Record-ID', recordId('warcinfo', fileName, block.toString('utf8'))],
      ['WARC-Date', instant],
      ['WARC-Filename', fileName],
      ['Content-Type', 'application/warc-fields'],
      ['WARC-Block-Digest', warcDigest(createHash('sha256').update(block).digest())],
      ['Content-Length', String(block.byteLength)],
    ]);
    await file.write(gzipSync(Buffer.concat([header, block, RECORD_END]), { level: GZIP_LEVEL }));
    return file;
  }

  /** After a record: its CDXJ line, its page, the progress. */
  private recorded(record: {
    uri: string;
    date: string;
    mime: string | undefined;
    payloadDigest: string;
    offset: number;
    file: ExportFile;
    html: boolean;
    id: string;
    title: string | undefined;
  }): void {
    const { pages, progress } = this.options;
    this.recordsInFile += 1;
    const line = cdxjLine({
      url: record.uri,
      date: record.date,
      mime: record.mime,
      status: 200,
      payloadDigest: record.payloadDigest,
      offset: record.offset,
      length: record.file.bytes - record.offset,
      filename: record.file.name,
    });
    this.pendingLines.push(Buffer.from(line, 'utf8'));
    if (pages !== undefined && record.html) {
      const page: Record<string, string> = { id: record.id.replace(/^<urn:uuid:|-|>$/g, ''), url: record.uri, ts: record.date };
      if (record.title) page.title = record.title;
      this.pendingPages.push(`${JSON.stringify(page)}\n`);
    }
    progress?.({ records: this.written.responses + this.written.revisits, bytes: this.bytesBefore + record.file.bytes });
  }

  /**
   * Puts what the records written since the last call gathered where it goes: their CDXJ lines
   * and titles into the table, in one transaction, and their page lines into pages.jsonl. Called
   * after each page of records, so that what waits is one page's.
   */
  async flush(): Promise<void> {
    const { table, pages } = this.options;
    const lines = this.pendingLines;
    this.pendingLines = [];
    table.batch(() => {
      for (const line of lines) table.addIndexLine(line);
      for (const [payloadId, title] of this.pendingTitles) table.setTitle(payloadId, title);
    });
    this.pendingTitles.clear();
    if (pages === undefined || this.pendingPages.length === 0) return;
    const text = this.pendingPages.join('');
    this.pendingPages = [];
    await pages.write(Buffer.from(text, 'utf8'));
  }
}

/** Whether a Content-Type names an HTML page (text/html or application/xhtml+xml). */
function isHtml(contentType: string | undefined): boolean {
  const essence = cdxMime(contentType)?.toLowerCase();
  return essence === 'text/html' || essence === 'application/xhtml+xml';
}

/** The text of the first `<title>` of an HTML page's first bytes (read as UTF-8), whitespace collapsed, or undefined. */
export function htmlTitle(bytes: Buffer): string | undefined {
  const match = /<title\b[^>]*>([\s\S]*?)<\/title\s*>/i.exec(bytes.toString('utf8'));
  if (!match) return undefined;
  const text = decodeEntities(match[1]!).replace(/\s+/g, ' ').trim();
  return text === '' ? undefined : [...text].slice(0, MAX_TITLE).join('');
}

const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' };

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]{1,6}|#[0-9]{1,7}|[a-z]+);/gi, (whole, name: string) => {
    if (name.startsWith('#')) {
      const code = name[1] === 'x' || name[1] === 'X' ? Number.parseInt(name.slice(2), 16) : Number(name.slice(1));
      return code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff) ? String.fromCodePoint(code) : whole;
    }
    return NAMED[name.toLowerCase()] ?? whole;
  });
}
