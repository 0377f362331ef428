import assert from 'node:assert/strict';
import sax from 'sax';
import {
  type DidlDocument,
  type DidlReadSummary,
  type IncomingDatastream,
  isDidlError,
  type ReadDidlOptions,
  type ReadRecord,
  readDidl,
} from '../src/index.ts';
import { collect, sha256, split } from './helpers.ts';

export { split };

/** Namespace URIs spelled out, so fixtures do not depend on the code under test. */
export const DIDL = 'urn:mpeg:mpeg21:2002:02-DIDL-NS';
export const DII = 'urn:mpeg:mpeg21:2002:01-DII-NS';
export const HTTP = 'http://www.openarchives.org/OAI/2.0/http_header/';
export const PREMIS = 'http://www.loc.gov/premis/v3';
export const DC = 'http://purl.org/dc/elements/1.1/';
export const OAI_DC = 'http://www.openarchives.org/OAI/2.0/oai_dc/';
export const ENTITY_METADATA = 'http://www.openarchives.org/OAI/2.0/entity#metadata';
/** The four prefixes our own writer uses, declared on a root element. */
export const OUR_NS = `xmlns:didl="${DIDL}" xmlns:dii="${DII}" xmlns:http="${HTTP}" xmlns:premis="${PREMIS}"`;

/** Deterministic bytes of any length (every byte value shows up). */
export function bytesOf(length: number, seed = 1): Buffer {
  const out = Buffer.alloc(length);
  let x = seed * 2654435761;
  for (let i = 0; i < length; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

/** base64 in lines of `width` characters (0: one line), each line prefixed by `indent`. */
export function base64Lines(bytes: Uint8Array, width = 76, eol = '\n', indent = ''): string {
  const text = Buffer.from(bytes).toString('base64');
  if (width <= 0 || text.length === 0) return indent + text;
  const lines: string[] = [];
  for (let i = 0; i < text.length; i += width) lines.push(indent + text.slice(i, i + width));
  return lines.join(eol);
}

/** A PREMIS fixity Statement for `hex` (sha-256). */
export function fixity(hex: string, prefix = 'premis'): string {
  return (
    `<${prefix}:fixity><${prefix}:messageDigestAlgorithm>SHA-256</${prefix}:messageDigestAlgorithm>` +
    `<${prefix}:messageDigest>${hex}</${prefix}:messageDigest></${prefix}:fixity>`
  );
}

export interface Delivered {
  info: Omit<IncomingDatastream, 'bytes'>;
  bytes: Buffer;
}

export interface ReadResult {
  records: ReadRecord[];
  streams: Delivered[];
  summary: DidlReadSummary;
}

/** Reads a document (string, buffer or list of chunks), collecting records and datastreams. */
export async function read(input: string | Buffer | Buffer[], options: ReadDidlOptions = {}): Promise<ReadResult> {
  const chunks = typeof input === 'string' ? [Buffer.from(input, 'utf8')] : Buffer.isBuffer(input) ? [input] : input;
  const records: ReadRecord[] = [];
  const streams: Delivered[] = [];
  const summary = await readDidl(chunks, {
    onRecord: (record) => {
      records.push(record);
    },
    onDatastream: async ({ bytes, ...info }) => {
      const delivered: Delivered = { info, bytes: Buffer.alloc(0) };
      streams.push(delivered);
      delivered.bytes = await collect(bytes);
    },
    ...options,
  });
  return { records, streams, summary };
}

/** Reads a standalone DIDL document and returns its one record's document. */
export async function readOne(input: string | Buffer | Buffer[], options: ReadDidlOptions = {}) {
  const result = await read(input, options);
  if (result.records.length !== 1) throw new Error(`expected one record, got ${result.records.length}`);
  return { ...result, didl: result.records[0]!.didl! };
}

export interface ParsedElement {
  uri: string;
  local: string;
  attributes: Record<string, { uri: string; value: string }>;
  text: string;
}

/**
 * Parses XML with sax in strict mode with namespaces: throws on anything not well-formed or
 * on an unbound prefix. Returns every element with its resolved namespace.
 */
export function parseStrict(xml: string): ParsedElement[] {
  const parser = sax.parser(true, { xmlns: true });
  const elements: ParsedElement[] = [];
  const open: ParsedElement[] = [];
  parser.onerror = (error) => {
    throw new Error(`not well-formed: ${error.message.split('\n')[0]} in ${xml}`);
  };
  parser.onopentag = (node) => {
    const tag = node as sax.QualifiedTag;
    const attributes: ParsedElement['attributes'] = {};
    for (const [name, attribute] of Object.entries(tag.attributes)) attributes[name] = { uri: attribute.uri, value: attribute.value };
    const element: ParsedElement = { uri: tag.uri, local: tag.local, attributes, text: '' };
    elements.push(element);
    open.push(element);
  };
  parser.ontext = (text) => {
    const element = open[open.length - 1];
    if (element) element.text += text;
  };
  parser.oncdata = parser.ontext;
  parser.onclosetag = () => {
    open.pop();
  };
  parser.write(xml).close();
  return elements;
}

/** One Item, one Component, one By-Value Resource whose content is `content` as written. */
export function byValueDoc(payload: Buffer, content: string, id = 'http://www.example.org/data.bin'): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<didl:DIDL ${OUR_NS}>
  <didl:Item>
    <didl:Descriptor><didl:Statement mimeType="application/xml"><dii:Identifier>${id}</dii:Identifier></didl:Statement></didl:Descriptor>
    <didl:Descriptor><didl:Statement mimeType="application/xml"><http:header><http:X-Title>caf\u00e9 \u2615 \u{1F4D6}</http:X-Title><http:Content-Length>${payload.length}</http:Content-Length></http:header></didl:Statement></didl:Descriptor>
    <didl:Component>
      <didl:Descriptor><didl:Statement mimeType="application/xml">${fixity(sha256(payload))}</didl:Statement></didl:Descriptor>
      <didl:Resource mimeType="application/octet-stream" encoding="base64">${content}</didl:Resource>
    </didl:Component>
  </didl:Item>
</didl:DIDL>
`;
}

/** base64 text cut into pieces of 1, 2, ... 13, 1, ... characters, separated by space, LF or tab. */
export function ragged(text: string): string {
  let out = '';
  for (let i = 0, n = 1; i < text.length; i += n, n = (n % 13) + 1) out += text.slice(i, i + n) + ' \n\t'.charAt(n % 3);
  return out;
}

/** The single By-Value datastream decoded to `payload`, measured and delivered. */
export function assertDecoded(result: ReadResult & { didl: DidlDocument }, payload: Buffer, what: string): void {
  const resource = result.didl.item.components[0]!.resources.find((r) => r.byValue)!;
  assert.deepEqual(resource.byValue, { encoding: 'base64', size: payload.length, sha256: sha256(payload) }, what);
  assert.equal(result.streams.length, 1, what);
  assert.ok(result.streams[0]!.bytes.equals(payload), `${what}: delivered bytes differ`);
}

export async function rejectsWith(input: string, code: string): Promise<void> {
  await assert.rejects(readDidl([Buffer.from(input)]), (error: unknown) => isDidlError(error) && error.code === code);
}
