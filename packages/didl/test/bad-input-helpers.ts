/**
 * Fixtures and guards shared by the bad-input tests: a hand-written DIDL document whose
 * parts can be swapped out, an OAI-PMH page around such documents, a read that records what
 * the caller's handlers saw and that fails instead of hanging, and the DidlError contract.
 */
import assert from 'node:assert/strict';
import { inspect } from 'node:util';
import { DidlError, type DidlErrorCode, type DidlReadSummary, isDidlError, NS, type ReadDidlOptions, type ReadRecord, readDidl } from '../src/index.ts';

export const ID = 'http://example.org/papers/notes.txt';
/** 600 bytes: eleven 76-column base64 lines. Holds every byte value, so it is really binary. */
export const PAYLOAD = Buffer.from(Array.from({ length: 600 }, (_, i) => (i * 7 + 3) % 256));

import { split as chunks, sha256 } from './helpers.ts';
import { base64Lines } from './read-helpers.ts';

export { base64Lines, chunks, sha256 };

export interface DocParts {
  /** dii:Identifier values of the top Item, one Descriptor each (default [ID]). */
  identifiers?: string[];
  /** Content-Length header value; null: no such header (default PAYLOAD.length). */
  contentLength?: string | null;
  /** SHA-256 PREMIS digest of the Component; null: none (default sha256(PAYLOAD)). */
  digest?: string | null;
  /** By-Reference URL; null: no By-Reference Resource. */
  ref?: string | null;
  /** Content of the By-Value Resource; null: no By-Value Resource (default PAYLOAD in base64 lines). */
  base64?: string | null;
  /** `encoding` attribute of the By-Value Resource (default base64). */
  encoding?: string;
  /** Extra markup at the start of the top Item. */
  itemPrefix?: string;
  /** Write the XML declaration (default true; false to embed in an OAI-PMH page). */
  declaration?: boolean;
}

export const DIDL_NAMESPACES = `xmlns:didl="${NS.didl}" xmlns:dii="${NS.dii}" xmlns:http="${NS.http}" xmlns:premis="${NS.premis}"`;

/** A mod_oai style DIDL document, one element per line, like the writer's output. */
export function didlDoc(parts: DocParts = {}): string {
  const { identifiers = [ID], contentLength = String(PAYLOAD.length), digest = sha256(PAYLOAD), ref = ID, encoding = 'base64' } = parts;
  const base64 = parts.base64 === undefined ? base64Lines(PAYLOAD) : parts.base64;
  const lines: string[] = [];
  if (parts.declaration ?? true) lines.push('<?xml version="1.0" encoding="UTF-8"?>');
  lines.push(`<didl:DIDL ${DIDL_NAMESPACES}>`, '  <didl:Item>');
  if (parts.itemPrefix) lines.push(parts.itemPrefix);
  for (const identifier of identifiers) {
    lines.push(
      '    <didl:Descriptor>',
      `      <didl:Statement mimeType="application/xml"><dii:Identifier>${identifier}</dii:Identifier></didl:Statement>`,
      '    </didl:Descriptor>',
    );
  }
  lines.push(
    '    <didl:Descriptor>',
    '      <didl:Statement mimeType="application/xml"><http:header>',
    '        <http:Content-Type>text/plain</http:Content-Type>',
  );
  lines.push('        <http:X-Title>Caf\u00e9 \u2615 notes</http:X-Title>');
  if (contentLength !== null) lines.push(`        <http:Content-Length>${contentLength}</http:Content-Length>`);
  lines.push('      </http:header></didl:Statement>', '    </didl:Descriptor>', '    <didl:Component>');
  if (digest !== null) {
    lines.push(
      '      <didl:Descriptor>',
      '        <didl:Statement mimeType="application/xml"><premis:fixity><premis:messageDigestAlgorithm>SHA-256</premis:messageDigestAlgorithm>' +
        `<premis:messageDigest>${digest}</premis:messageDigest></premis:fixity></didl:Statement>`,
      '      </didl:Descriptor>',
    );
  }
  if (ref !== null) lines.push(`      <didl:Resource mimeType="text/plain" ref="${ref}"/>`);
  if (base64 !== null) lines.push(`      <didl:Resource mimeType="text/plain" encoding="${encoding}">`, base64, '      </didl:Resource>');
  lines.push('    </didl:Component>', '  </didl:Item>', '</didl:DIDL>', '');
  return lines.join('\n');
}

/** An OAI-PMH ListRecords page holding the given DIDL documents (without XML declarations). */
export function oaiPage(didls: string[]): string {
  const records = didls.map(
    (didl, i) =>
      `<record><header><identifier>oai:example.org:${i + 1}</identifier><datestamp>2026-11-22T00:00:00Z</datestamp></header>\n` +
      `<metadata>\n${didl}</metadata></record>\n`,
  );
  return (
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    `<OAI-PMH xmlns="${NS.oai}"><responseDate>2026-11-22T00:00:00Z</responseDate>\n` +
    '<request verb="ListRecords" metadataPrefix="oai_didl">http://example.org/oai</request>\n' +
    `<ListRecords>\n${records.join('')}<resumptionToken completeListSize="3" cursor="0"/></ListRecords></OAI-PMH>\n`
  );
}

/** 1-based line of the first occurrence of `marker` in `doc`. */
export function lineOf(doc: string, marker: string, from = 0): number {
  const at = doc.indexOf(marker, from);
  assert.ok(at >= 0, `fixture has no ${JSON.stringify(marker)}`);
  return doc.slice(0, at).split('\n').length;
}

export const TIMEOUT_MS = 10_000;

export class HangError extends Error {}

/** `promise`, or a HangError after TIMEOUT_MS: a hang fails the test instead of blocking the run. */
export async function guard<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new HangError(`${what} did not settle within ${TIMEOUT_MS / 1000} s (hang)`)), TIMEOUT_MS);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** What one onDatastream consumer saw: its bytes, and whether the stream ended cleanly or with an error. */
export interface StreamSeen {
  bytes: Buffer;
  clean: boolean;
  error?: unknown;
}

export interface Outcome {
  summary?: DidlReadSummary;
  error?: unknown;
  records: ReadRecord[];
  streams: StreamSeen[];
}

/**
 * Reads `input` (in chunks of `chunk` bytes) with a consumer that reads every datastream to
 * its end, recording records, streams and the rejection. Only a hang throws.
 */
export async function read(input: string | Buffer, options: ReadDidlOptions & { chunk?: number } = {}): Promise<Outcome> {
  const { chunk = 1 << 20, ...rest } = options;
  const bytes = typeof input === 'string' ? Buffer.from(input, 'utf8') : input;
  const outcome: Outcome = { records: [], streams: [] };
  const reading = readDidl(chunks(bytes, chunk), {
    onRecord: (record) => void outcome.records.push(record),
    onDatastream: async (datastream) => {
      const seen: StreamSeen = { bytes: Buffer.alloc(0), clean: false };
      outcome.streams.push(seen);
      const parts: Buffer[] = [];
      try {
        for await (const part of datastream.bytes) parts.push(part as Buffer);
        seen.clean = true;
      } catch (error) {
        seen.error = error;
      }
      seen.bytes = Buffer.concat(parts);
    },
    ...rest,
  });
  try {
    outcome.summary = await guard(reading, 'readDidl');
  } catch (error) {
    if (error instanceof HangError) throw error;
    outcome.error = error;
  }
  return outcome;
}

export interface Where {
  /** Expected 1-based line of the error. */
  line?: number;
  /** false when no position applies (writer errors, an empty input). */
  position?: boolean;
}

/** The DidlError contract: the class, a stable code, a one-line message, a position where one applies. */
export function assertDidlError(error: unknown, codes: DidlErrorCode | DidlErrorCode[], where: Where = {}): asserts error is DidlError {
  assert.ok(error instanceof DidlError && isDidlError(error), `expected a DidlError, got ${inspect(error)}`);
  const allowed = Array.isArray(codes) ? codes : [codes];
  assert.ok(allowed.includes(error.code), `code ${error.code} (${error.message}); expected ${allowed.join(' or ')}`);
  assert.equal(error.name, 'DidlError');
  assert.ok(error.message.length > 0, 'empty message');
  assert.ok(!/[\r\n]/.test(error.message), `message is not one line: ${JSON.stringify(error.message)}`);
  if (where.position !== false) {
    const position = error.position;
    assert.ok(position, `${error.code} has no position: ${error.message}`);
    assert.ok(Number.isInteger(position.line) && position.line >= 1, `bad line ${position.line}`);
    assert.ok(Number.isInteger(position.column) && position.column >= 1, `bad column ${position.column}`);
    assert.ok(error.message.includes(`at line ${position.line}, column ${position.column}`), `message does not name the position: ${error.message}`);
  }
  if (where.line !== undefined) assert.equal(error.position?.line, where.line, `line of ${error.code}: ${error.message}`);
}

/** Reads `input` and asserts it is refused with one of `codes`; returns the error and what the handlers saw. */
export async function expectRefused(
  input: string | Buffer,
  codes: DidlErrorCode | DidlErrorCode[],
  options: ReadDidlOptions & { chunk?: number } = {},
  where: Where = {},
): Promise<Outcome & { error: DidlError }> {
  const outcome = await read(input, options);
  assert.equal(outcome.summary, undefined, `read succeeded, expected ${String(codes)}`);
  assertDidlError(outcome.error, codes, where);
  return outcome as Outcome & { error: DidlError };
}

/** Every stream that was being read ended with `error` (the same DidlError), never cleanly. */
export function assertStreamsFailedWith(outcome: Outcome, error: DidlError): void {
  assert.ok(outcome.streams.length > 0, 'no datastream consumer was started');
  for (const seen of outcome.streams) {
    assert.equal(seen.clean, false, 'the consumer saw a clean end of a bad datastream');
    assertDidlError(seen.error, error.code);
    assert.equal(seen.error, error, 'the consumer saw another error than the one the read rejected with');
  }
}

/** Seeded PRNG (mulberry32): the fuzz loop is the same on every run. */
export { seededRandom as prng } from '../../../test/seeded-random.ts';
