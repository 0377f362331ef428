// The parts of a WARC 1.1 record that `oaibag export --warc` writes (docs/import-export.md,
// "WARC, CDXJ and WACZ"), as bytes: the WARC header, the HTTP response head a response or
// revisit record's block starts with, the warcinfo block, the record ids and the digests.
// Pure functions: nothing here reads the archive or the clock, so that the same archive gives
// the same bytes.
import { createHash } from 'node:crypto';
import type { HttpHeader } from '@oaibag/didl';

export const CRLF = '\r\n';
/** What ends every record, after its block. */
export const RECORD_END = Buffer.from('\r\n\r\n', 'latin1');
/** The revisit profile of WARC 1.1 for bytes the export holds in an earlier record. */
export const IDENTICAL_PAYLOAD_PROFILE = 'http://netpreserve.org/warc/1.1/revisit/identical-payload-digest';
/** The block type of response and revisit records. */
export const HTTP_RESPONSE_TYPE = 'application/http; msgtype=response';
/** The status line of every response: the archive holds the bytes a successful GET gave (the DIDL keeps no status). */
export const STATUS_LINE = 'HTTP/1.1 200 OK';

/** Headers kept of one record at most: the rest of a longer list is left out. */
export const MAX_HEADERS = 256;
/** Bytes of header names and values kept of one record at most (as MAX_HEADERS). */
export const MAX_HEADER_BYTES = 32 * 1024;

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 base32 with its `=` padding, as warcio (base32-encode, "RFC4648") and Python's b32encode write it. */
export function base32(bytes: Uint8Array): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  while (out.length % 8 !== 0) out += '=';
  return out;
}

/** A SHA-256 as WARC-Payload-Digest and WARC-Block-Digest carry it: `sha256:` and base32 (warcio's `base32: true` form). */
export function warcDigest(sha256: Buffer | string): string {
  return `sha256:${base32(typeof sha256 === 'string' ? Buffer.from(sha256, 'hex') : sha256)}`;
}

/**
 * A record id from what identifies the record (no clock, no randomness): `<urn:uuid:…>` of the
 * SHA-256 of the parts, cut to 128 bits with the version (8, RFC 9562's custom) and variant set.
 */
export function recordId(...parts: string[]): string {
  const hash = createHash('sha256');
  hash.update('oaibag warc record\n');
  for (const part of parts) hash.update(`${part.length}:${part}\n`);
  const bytes = hash.digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x80;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `<urn:uuid:${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}>`;
}

/**
 * A catalog instant (ISO 8601 UTC, milliseconds) as WARC-Date: to the second,
 * `YYYY-MM-DDThh:mm:ssZ`, the form every WARC reader takes (a CDXJ timestamp has 14 digits).
 * Undefined when it is not an instant.
 */
export function warcDate(instant: string): string | undefined {
  const ms = Date.parse(instant);
  return Number.isNaN(ms) ? undefined : `${new Date(ms).toISOString().slice(0, 19)}Z`;
}

/**
 * A URI as a WARC header field may carry it: every byte outside printable ASCII (controls,
 * space, non-ASCII) percent-encoded as UTF-8, so that no value breaks a header line.
 */
export function headerSafeUri(uri: string): string {
  let out = '';
  for (const char of uri) {
    const code = char.codePointAt(0)!;
    if (code > 0x20 && code < 0x7f) out += char;
    else for (const byte of Buffer.from(char, 'utf8')) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/**
 * The URI a version is written under: its record's identifier when it is an http(s) URL (every
 * resource of a web site, and mod_oai's); otherwise the URL that answered with the first
 * datastream's bytes, when it came By-Reference; otherwise the identifier as it is (a URI all the
 * same: `info:…`, `oai:…`).
 */
export function targetUri(identifier: string, fetchedUrl: string | null): string {
  if (/^https?:\/\//i.test(identifier) || fetchedUrl === null) return headerSafeUri(identifier);
  return headerSafeUri(fetchedUrl);
}

/** The WARC header of a record: the version line, the fields in the order given, the empty line. */
export function warcHeader(fields: ReadonlyArray<readonly [string, string]>): Buffer {
  return Buffer.from(`WARC/1.1${CRLF}${fields.map(([name, value]) => `${name}: ${value}${CRLF}`).join('')}${CRLF}`, 'utf8');
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** The headers that describe the bytes as sent, not as stored: each is written again for the stored bytes. */
const REWRITTEN = new Set(['content-length', 'transfer-encoding', 'content-encoding']);

/** What a version's response head is built from besides its recorded headers. */
export interface HeadFacts {
  /** The version's MIME type, as the record gave it (for a record without headers). */
  mimeType: string | null;
  /** The record's Last-Modified (for a record without headers). */
  lastModified: string | null;
  /** The stored bytes' length: the Content-Length written. */
  size: number;
}

/** An HTTP response head: its bytes (status line, fields, empty line), and its Content-Type. */
export interface ResponseHead {
  bytes: Buffer;
  contentType: string | undefined;
}

/**
 * The HTTP response head of a version: the status line (always `HTTP/1.1 200 OK`), then the
 * headers its DIDL record recorded, in their order, repeats kept, made consistent with the
 * stored bytes, which the archive keeps decoded and whole: Content-Length is written with their
 * length, in the place of the first one recorded (or last); Transfer-Encoding and
 * Content-Encoding are not written; a recorded value of those three that differs from what is
 * written is kept as `X-Oaibag-Original-<Name>`. A name that is not an HTTP token is left out; a
 * control character in a value becomes a space. A record without headers (`undefined`, or none
 * usable) gets Content-Type (the version's MIME type, else application/octet-stream) and
 * Last-Modified (when known), then Content-Length.
 */
export function responseHead(recorded: readonly HttpHeader[] | undefined, facts: HeadFacts): ResponseHead {
  const kept: Array<[string, string]> = [];
  for (const header of recorded ?? []) {
    const name = header.name.trim();
    if (!TOKEN.test(name)) continue;
    kept.push([name, header.value.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim()]);
  }
  if (kept.length === 0) {
    kept.push(['Content-Type', facts.mimeType ?? 'application/octet-stream']);
    if (facts.lastModified !== null) kept.push(['Last-Modified', facts.lastModified]);
  }
  const length = String(facts.size);
  const fields: Array<[string, string]> = [];
  const originals: Array<[string, string]> = [];
  let lengthWritten = false;
  for (const [name, value] of kept) {
    const lower = name.toLowerCase();
    if (!REWRITTEN.has(lower)) {
      fields.push([name, value]);
      continue;
    }
    if (lower === 'content-length' && !lengthWritten) {
      fields.push(['Content-Length', length]);
      lengthWritten = true;
    }
    if (!(lower === 'content-length' && value === length)) originals.push([`X-Oaibag-Original-${name}`, value]);
  }
  if (!lengthWritten) fields.push(['Content-Length', length]);
  fields.push(...originals);
  const contentType = fields.find(([name]) => name.toLowerCase() === 'content-type')?.[1];
  const text = `${STATUS_LINE}${CRLF}${fields.map(([name, value]) => `${name}: ${value}${CRLF}`).join('')}${CRLF}`;
  return { bytes: Buffer.from(text, 'utf8'), contentType };
}

/** The MIME type a CDXJ line names: the Content-Type up to its first `;`, trimmed (warcio's rule). */
export function cdxMime(contentType: string | undefined): string | undefined {
  if (contentType === undefined) return undefined;
  return contentType.split(';', 1)[0]!.trim();
}

/** The warcinfo block (application/warc-fields) of every file of one export. */
export function warcinfoBlock(fields: ReadonlyArray<readonly [string, string]>): Buffer {
  return Buffer.from(fields.map(([name, value]) => `${name}: ${value.replace(/[\r\n]+/g, ' ')}${CRLF}`).join(''), 'utf8');
}
