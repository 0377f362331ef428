import { createReadStream, type ReadStream } from 'node:fs';
import type { Base64WriteResult } from './base64-decoder.js';
import type { DatastreamHandler, DeclineHeld } from './datastream.js';
import { DidlError, type DidlPosition } from './errors.js';
import { inputFileError } from './input-file.js';
import type { OaiPage } from './model.js';
import { ReceivedXmlCapture } from './received-xml.js';
import { RecordBuilder, type RecordHandler } from './record-builder.js';
import { Utf8Segments } from './utf8-text.js';
import { findForbiddenXmlChar } from './xml-text.js';
import { XmlTokenizer } from './xml-tokenizer.js';

export interface ReadDidlOptions {
  /** Called for each record (a standalone document is one record), awaited before reading on. */
  onRecord?: RecordHandler;
  /** Called for each By-Value datastream with a stream of its decoded bytes. */
  onDatastream?: DatastreamHandler;
  /** Declines datastreams whose promised SHA-256 the caller holds already (see DeclineHeld). */
  declineHeld?: DeclineHeld;
  /**
   * 'throw' (default): the first bad record rejects the whole read.
   * 'report': a bad record is handed to onRecord with `error` set and reading goes on;
   * only errors that make the rest unreadable (not well-formed XML, truncation) reject.
   */
  recordErrors?: 'throw' | 'report';
  /** Deepest element nesting accepted (default 100). */
  maxDepth?: number;
  /** Largest text value or kept Descriptor, in characters (default 4 MiB). */
  maxMetadataChars?: number;
  /** Bytes a datastream stream buffers before the reader waits (default 1 MiB). */
  highWaterMark?: number;
  /**
   * Also hand over each record's DIDL element as received (`ReadRecord.receivedDidl`): its
   * bytes, with the place of each By-Value content marked instead of the base64 (default false).
   */
  keepReceivedXml?: boolean;
  /**
   * Read identifiers as MPEG-21 allows rather than as the mod_oai profile requires (default
   * false): several `dii:Identifier`s on the top Item are not an error (the first is the
   * record's, the others are in `item.otherIdentifiers`), and none at all falls back to the
   * DIDL's `DIDLDocumentId`, then to the OAI-PMH header's identifier (`identifierFrom` says
   * which). DSpace, aDORe and DARE-style repositories write such records; `oaibag harvest`
   * reads this way.
   */
  lenientIdentifier?: boolean;
  /**
   * The chunks are the reader's to change, and nobody else changes them (default false): the
   * base64 of a By-Value Resource is then decoded into the chunk it came in, the datastream's
   * bytes are views of it, and so are the runs of markup `keepReceivedXml` keeps, so that
   * reading allocates nothing per chunk for them (a network body's chunks, a file's).
   */
  chunksAreOurs?: boolean;
}

export interface DidlReadSummary {
  /** What the root element was. */
  kind: 'didl' | 'oai-pmh';
  /** Records handed to onRecord. */
  records: number;
  /** OAI-PMH envelope facts (empty errors list for a standalone DIDL document). */
  page: OaiPage;
}

const LT = 0x3c;
const GT = 0x3e;
const AMP = 0x26;

/**
 * Reads a DIDL document, or an OAI-PMH response whose records carry DIDL, from a stream of
 * bytes (UTF-8). The XML tokenizer (xml-tokenizer.ts) reads the markup; the text of a By-Value
 * Resource, which is nearly all of the bytes in a large record, bypasses it: the driver scans
 * for the next `<` and hands the run to the base64 decoder directly.
 */
export async function readDidl(input: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, options: ReadDidlOptions = {}): Promise<DidlReadSummary> {
  const reader = new DidlStreamReader(options);
  try {
    for await (const chunk of input) await reader.write(chunk);
    await reader.end();
  } catch (error) {
    await reader.abort(error);
    throw error;
  }
  return reader.summary();
}

/** readDidl over a file, read in 1 MiB chunks. */
export async function readDidlFile(path: string, options: ReadDidlOptions = {}): Promise<DidlReadSummary> {
  let stream: ReadStream | undefined;
  try {
    stream = createReadStream(path, { highWaterMark: 1 << 20 });
    return await readDidl(stream, { chunksAreOurs: true, ...options });
  } catch (error) {
    throw inputFileError(path, error) ?? error;
  } finally {
    stream?.destroy();
  }
}

class DidlStreamReader {
  private readonly xml: XmlTokenizer;
  private readonly builder: RecordBuilder;
  private readonly text = new Utf8Segments();
  private readonly received: ReceivedXmlCapture | undefined;
  private started = false;
  private readonly inPlace: boolean;

  constructor(options: ReadDidlOptions) {
    this.inPlace = options.chunksAreOurs === true;
    if (options.keepReceivedXml) this.received = new ReceivedXmlCapture(this.inPlace);
    const maxDepth = options.maxDepth ?? 100;
    this.builder = new RecordBuilder(
      {
        onRecord: options.onRecord,
        onDatastream: options.onDatastream,
        declineHeld: options.declineHeld,
        recordErrors: options.recordErrors ?? 'throw',
        maxDepth,
        maxMetadataChars: options.maxMetadataChars ?? 4 << 20,
        highWaterMark: options.highWaterMark ?? 1 << 20,
        lenientIdentifier: options.lenientIdentifier === true,
        ...(this.received ? { received: this.received } : {}),
      },
      () => this.position(),
    );
    const builder = this.builder;
    this.xml = new XmlTokenizer(
      {
        openTag: (tag) => builder.onOpenTag(tag),
        closeTag: () => builder.onCloseTag(),
        text: (text) => builder.onText(text),
        cdata: (text) => builder.onText(text),
        comment: (text) => builder.onComment(text),
        doctype: () => {
          throw new DidlError('ERR_DIDL_DOCTYPE', 'a DOCTYPE declaration is not accepted (no DTDs, no entity declarations)', {
            position: this.position(),
          });
        },
        processingInstruction: (target, body) => {
          if (target === 'xml') checkDeclaredEncoding(body, this.position());
        },
        error: (reason, tooLarge) => {
          if (tooLarge) throw new DidlError('ERR_DIDL_TOO_LARGE', reason, { position: this.position() });
          throw new DidlError('ERR_DIDL_NOT_WELL_FORMED', `not well-formed XML: ${reason}`, { position: this.position() });
        },
      },
      // One deeper than the record builder's bound, whose error names the option.
      { maxDepth: maxDepth + 1 },
    );
  }

  async write(chunk: Uint8Array): Promise<void> {
    let bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (!this.started && bytes.length > 0) {
      this.started = true;
      bytes = stripByteOrderMark(bytes);
    }
    let pos = 0;
    while (pos < bytes.length) {
      const active = this.builder.active;
      // The content of a By-Value Resource (character data, or a reference a chunk cut in two):
      // never markup, never kept.
      if (active && this.xml.inCharacterData) {
        const lt = bytes.indexOf(LT, pos);
        const end = lt === -1 ? bytes.length : lt;
        // Fast path: the run of base64 text up to the next markup, without the tokenizer. Once a
        // reference forced this Resource onto the tokenizer's path, its text must keep its order there.
        if (!active.viaTokenizer && end > pos) pos = await this.decodeRun(bytes, pos, end);
        if (pos < end) {
          active.viaTokenizer = true;
          this.feed(bytes.subarray(pos, end));
          pos = end;
          if (this.builder.hasTasks) await this.runTasks();
        }
        if (lt === -1) break;
      }
      // Markup: feed the tokenizer up to and including the next '>', so that we regain control
      // right after the start tag of a By-Value Resource.
      const gt = bytes.indexOf(GT, pos);
      const end = gt === -1 ? bytes.length : gt + 1;
      const run = bytes.subarray(pos, end);
      this.received?.markup(run);
      this.feed(run);
      if (this.received && this.xml.idle) this.received.settled();
      pos = end;
      if (this.builder.hasTasks) await this.runTasks();
    }
  }

  async end(): Promise<void> {
    const last = this.text.end();
    if (last === undefined) {
      throw new DidlError('ERR_DIDL_TRUNCATED', 'the document ends inside a UTF-8 character (truncated?)', { position: this.position() });
    }
    if (last) this.xml.write(last);
    if (!this.started) throw new DidlError('ERR_DIDL_TRUNCATED', 'the document is empty');
    if (!this.builder.rootClosed) {
      throw new DidlError('ERR_DIDL_TRUNCATED', 'the document ends before its root element is closed (truncated?)', {
        position: this.position(),
      });
    }
    this.xml.end();
    if (this.builder.hasTasks) await this.runTasks();
  }

  async abort(error: unknown): Promise<void> {
    await this.builder.abort(error instanceof Error ? error : new Error(String(error)));
  }

  summary(): DidlReadSummary {
    return { kind: this.builder.rootKind ?? 'didl', records: this.builder.records, page: this.builder.page };
  }

  /** Decodes base64 in bytes[start, end); returns where it stopped (end unless a non-base64 byte). */
  private async decodeRun(bytes: Buffer, start: number, end: number): Promise<number> {
    const active = this.builder.active!;
    if (active.discarding) {
      this.advance(bytes, start, end);
      return end;
    }
    const result: Base64WriteResult & { head?: Buffer } = this.inPlace
      ? active.decoder.writeInPlace(bytes, start, end)
      : active.decoder.write(bytes, start, end);
    const stop = result.stoppedAt;
    this.advancePosition(stop - start, result.newlines, result.lastNewline === -1 ? -1 : stop - 1 - result.lastNewline);
    if (result.head) this.builder.deliver(result.head);
    this.builder.deliver(result.bytes);
    if (stop < end && bytes[stop] !== AMP) {
      const found = bytes[stop]!;
      const shown = found >= 0x20 && found < 0x7f ? JSON.stringify(String.fromCharCode(found)) : `byte 0x${found.toString(16).padStart(2, '0')}`;
      const reason = active.decoder.sawPadding && found !== 0x3d ? `${shown} after base64 padding` : `${shown} is not base64`;
      this.builder.failByValue(new DidlError('ERR_DIDL_BAD_BASE64', reason, this.builder.errorContext()));
      this.advance(bytes, stop, end);
      if (this.builder.hasTasks) await this.runTasks();
      return end;
    }
    if (this.builder.hasTasks) await this.runTasks();
    return stop;
  }

  /** Skips bytes the tokenizer never sees, keeping its line/column right for later errors. */
  private advance(bytes: Buffer, start: number, end: number): void {
    let newlines = 0;
    let last = -1;
    for (let i = bytes.indexOf(0x0a, start); i !== -1 && i < end; i = bytes.indexOf(0x0a, i + 1)) {
      newlines++;
      last = i;
    }
    this.advancePosition(end - start, newlines, last === -1 ? -1 : end - 1 - last);
  }

  private advancePosition(length: number, newlines: number, columnAfterLastNewline: number): void {
    // Bytes the fast path took never went through the tokenizer (which holds nothing back
    // then): we move its position on ourselves (base64 is ASCII: bytes = chars).
    const xml = this.xml;
    xml.position += length;
    if (newlines > 0) {
      xml.line += newlines;
      xml.column = columnAfterLastNewline;
    } else {
      xml.column += length;
    }
  }

  private feed(bytes: Buffer): void {
    const text = this.text.write(bytes);
    if (text === undefined) throw this.notUtf8();
    const forbidden = findForbiddenXmlChar(text);
    if (forbidden !== -1) {
      const code = text.charCodeAt(forbidden).toString(16).toUpperCase().padStart(4, '0');
      const end = this.xml.endPosition();
      const before = text.slice(0, forbidden);
      const lines = before.split('\n').length - 1;
      throw new DidlError('ERR_DIDL_NOT_WELL_FORMED', `not well-formed XML: character U+${code} is not allowed in XML 1.0`, {
        position:
          lines === 0
            ? { line: end.line + 1, column: end.column + 1 + forbidden }
            : { line: end.line + 1 + lines, column: forbidden - before.lastIndexOf('\n') },
      });
    }
    if (text.length > 0) this.xml.write(text);
  }

  private async runTasks(): Promise<void> {
    for (let tasks = this.builder.takeTasks(); tasks.length > 0; tasks = this.builder.takeTasks()) {
      for (const task of tasks) await task();
    }
  }

  private notUtf8(): DidlError {
    return new DidlError('ERR_DIDL_ENCODING', 'bytes that are not valid UTF-8', { position: this.position() });
  }

  private position(): DidlPosition {
    return { line: this.xml.line + 1, column: this.xml.column + 1 };
  }
}

function stripByteOrderMark(bytes: Buffer): Buffer {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return bytes.subarray(3);
  if ((bytes[0] === 0xfe && bytes[1] === 0xff) || (bytes[0] === 0xff && bytes[1] === 0xfe)) {
    throw new DidlError('ERR_DIDL_ENCODING', 'the document is UTF-16; only UTF-8 is accepted', { position: { line: 1, column: 1 } });
  }
  return bytes;
}

function checkDeclaredEncoding(body: string, position: DidlPosition): void {
  const match = /encoding\s*=\s*["']([^"']+)["']/.exec(body);
  if (!match) return;
  const name = match[1]!.toLowerCase().replace(/[^a-z0-9]/g, '');
  if (name !== 'utf8' && name !== 'usascii' && name !== 'ascii') {
    throw new DidlError('ERR_DIDL_ENCODING', `the document declares encoding ${match[1]}; only UTF-8 is accepted`, { position });
  }
}
