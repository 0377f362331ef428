import { createHash } from 'node:crypto';
import {
  componentDigest,
  componentHeaders,
  type DidlComponent,
  type DidlDocument,
  type DidlItem,
  type DidlResource,
  getHeader,
  isSha256,
  type OaiHeader,
  type ReceivedDidl,
} from '@oaibag/didl';
import { didlRecordXml, oaiHeaderXml, type RecordPayload, receivedDidlXml, type StoredPayload, type StoredRecordFacts } from '../aip/aip-metadata.js';
import { payloadBaseName } from '../aip/payload-names.js';
import { restorePathFor } from '../aip/restore-path.js';
import type { VersionFetch } from '../catalog/catalog-types.js';
import { ArchiverError, type ArchiverErrorCode } from '../core/errors.js';
import { shown } from '../core/remote-text.js';
import { limitError } from '../oai/source-limits.js';
import { discardIncoming, type IncomingFile, receiveIncoming } from './incoming-file.js';
import type { IngestBatch } from './ingest-batch.js';
import type { IngestContext } from './ingest-context.js';

/** One datastream of the record, in document order, with the facts it promised. */
interface Part {
  item: DidlItem;
  component: DidlComponent;
  mimeType?: string;
  ref?: string;
  byValue: boolean;
}

/**
 * A record that cannot be stored: the reason, both values for a mismatch, and the code
 * (ERR_HARVEST_VERIFY unless a fetch failed with a code of its own).
 */
export class RecordRefused extends ArchiverError {
  constructor(
    message: string,
    readonly stage: 'fetch' | 'verify' | 'store',
    readonly expected?: string,
    readonly found?: string,
    code: ArchiverErrorCode = 'ERR_HARVEST_VERIFY',
  ) {
    super(code, message);
  }
}

/** A datastream received, and for a By-Reference one where its bytes came from. */
interface ReceivedPart {
  file: IncomingFile;
  fetched?: { ref: string; url: string; redirects: string[] };
}

/** The datastreams of a record in document order: top Item first, then nested Items. */
export function recordParts(document: DidlDocument): Part[] {
  const parts: Part[] = [];
  const walk = (item: DidlItem) => {
    for (const component of item.components) {
      const byValue = component.resources.find((resource) => resource.byValue);
      const ref = component.resources.find((resource) => resource.ref)?.ref;
      if (!byValue && !ref) continue;
      const mimeType = (byValue ?? component.resources[0])?.mimeType;
      parts.push({ item, component, byValue: byValue !== undefined, ...(ref ? { ref } : {}), ...(mimeType ? { mimeType } : {}) });
    }
    for (const child of item.items) walk(child);
  };
  walk(document.item);
  return parts;
}

/** The record's OAI-PMH header and DIDL elements as received (readDidl's `keepReceivedXml`). */
export interface AsReceived {
  header?: Uint8Array;
  didl?: ReceivedDidl;
  /** The record's `about` containers (provenance, rights…), kept with it byte for byte. */
  about?: readonly Uint8Array[];
}

/** A record made ready for its batch: what its bag keeps, and what its version row needs. */
export type StoredRecord =
  | {
      known: false;
      facts: StoredRecordFacts;
      parts: string[];
      fetches: VersionFetch[];
    }
  /** This exact state (identifier, datestamp, content) is already stored: nothing to add. */
  | { known: true };

/**
 * Verifies one record's datastreams and takes them into the run's current batch: bytes the
 * archive does not hold yet go into the batch bag's data/, bytes it holds (a touch, a revert,
 * the same file at another URL) become revisits of the bag that holds them. `received` holds
 * the By-Value datastreams already received, in the order of the record's parts that have one.
 * By-Reference parts are fetched here. `asReceived` holds the header and DIDL elements as the
 * reader kept them; whatever is missing is written again from the parsed record. Every check
 * is made before anything is taken: a refused record leaves nothing behind.
 */
export async function storeRecord(
  context: IngestContext,
  batch: IngestBatch,
  header: OaiHeader,
  document: DidlDocument,
  received: IncomingFile[],
  asReceived: AsReceived = {},
): Promise<StoredRecord> {
  const parts = recordParts(document);
  const got: ReceivedPart[] = [];
  try {
    // received[] holds one file per By-Value Resource; a second one in a Component would be
    // matched to the wrong part, or its bytes dropped: refuse the record instead.
    const crowded = parts.find((part) => part.component.resources.filter((resource) => resource.byValue).length > 1);
    if (crowded) {
      const count = crowded.component.resources.filter((resource) => resource.byValue).length;
      throw new RecordRefused(`${document.identifier}: a Component carries ${count} By-Value Resources; one per Component is supported`, 'verify');
    }
    let byValueIndex = 0;
    for (const part of parts) {
      const byValue = part.byValue ? received[byValueIndex++] : undefined;
      if (part.byValue && !byValue) throw new RecordRefused(`the record's datastream ${got.length + 1} was not received`, 'store');
      if (byValue && byValue.sha256 === '') {
        // Received without its own sha-256 (or declined as held): the reader's, of the same
        // decoded bytes. verifyPart then holds them to the record's promise.
        const read = part.component.resources.find((resource) => resource.byValue)?.byValue;
        if (!read?.sha256 || (byValue.declined ? read.size < 0 : read.size !== byValue.size))
          throw new RecordRefused(`the record's datastream ${got.length + 1} has no digest from the reader`, 'store');
        if (byValue.declined) byValue.size = read.size;
        byValue.sha256 = read.sha256;
      }
      const next = byValue ? { file: byValue } : await fetchPart(context, document.identifier, part);
      got.push(next);
      verifyPart(document.identifier, part, next.file);
    }
    // No datastream at all (a DSpace item without bitstreams, a DIDL of descriptive metadata
    // only) is still a record: its version has no payload file and its metadata as received.
    return await takeRecord(batch, header, document, parts, got, asReceived);
  } finally {
    for (const file of [...got.map((part) => part.file), ...received]) await discardIncoming(file);
  }
}

/**
 * Takes a verified record into the batch: its version state claimed (a state stored already
 * adds nothing), each datastream held or revisited, its metadata as received. A failure gives
 * the claim back, so the record can come again.
 */
async function takeRecord(
  batch: IngestBatch,
  header: OaiHeader,
  document: DidlDocument,
  parts: Part[],
  got: ReceivedPart[],
  asReceived: AsReceived,
): Promise<StoredRecord> {
  const files = got.map((part) => part.file);
  // One digest for the version: the payload's own for one file, else of the part digests (for
  // no file at all, the sha-256 of nothing).
  const sha256 = files.length === 1 ? files[0]!.sha256 : combinedDigest(files);
  const size = files.reduce((sum, file) => sum + file.size, 0);
  if (!batch.claimState(header.identifier, header.datestamp, sha256)) return { known: true };
  try {
    return await takeClaimed();
  } catch (error) {
    batch.releaseState(header.identifier, header.datestamp, sha256);
    throw error;
  }

  async function takeClaimed(): Promise<StoredRecord> {
    const payloads: RecordPayload[] = [];
    for (const [index, file] of files.entries()) {
      const place = await batch.takePayload(() => payloadPlace(header, document, parts[index]!, index + 1), file, parts[index]!.mimeType);
      const digest = componentDigest(parts[index]!.item, parts[index]!.component);
      payloads.push({
        part: index + 1,
        path: place.path,
        ...(place.revisitOf !== undefined ? { revisitOf: place.revisitOf } : { sha512: file.sha512 }),
        size: file.size,
        sha256: file.sha256,
        via: parts[index]!.byValue ? 'by-value' : 'by-reference',
        ...(digest && isSha256(digest.algorithm) ? { promisedSha256: digest.value.toLowerCase() } : {}),
        ...(got[index]!.fetched ? { fetched: got[index]!.fetched } : {}),
      });
    }
    const headerXml = asReceived.header ?? Buffer.from(oaiHeaderXml(header), 'utf8');
    const didlXml = await didlOf(document, asReceived.didl, parts, payloads);
    return {
      known: false,
      facts: {
        kind: 'version',
        identifier: header.identifier,
        datestamp: header.datestamp,
        sha256,
        size,
        mimeType: parts[0]?.mimeType ?? null,
        lastModified: lastModifiedOf(document, parts),
        payloads,
        headerXml,
        didlXml,
        ...(asReceived.about ? { aboutXml: asReceived.about } : {}),
      },
      parts: files.map((file) => file.sha256),
      fetches: got.flatMap((part, index) => (part.fetched ? [{ part: index + 1, ...part.fetched }] : [])),
    };
  }
}

/**
 * Where a datastream goes in the batch bag, so that a person opening it sees the site's files:
 * the record's URL as a path (`<host>/<path>`; part 2 and on of a compound record as
 * `<path>.part-2`…) when the record is identified by an http(s) URL (mod_oai), else the
 * datastream's own `ref` URL (a DSpace bitstream, a DARE object file); `fallbackName` names it
 * when neither gives a usable path (see BatchBag).
 */
function payloadPlace(header: OaiHeader, document: DidlDocument, part: Part, n: number): { segments: string[] | undefined; fallbackName: string } {
  const record = [document.identifier, header.identifier].map((url) => restorePathFor(url, { withHost: true })).find((path) => path.ok);
  if (record?.ok) {
    const segments = [...record.segments];
    if (n > 1) segments[segments.length - 1] = `${segments[segments.length - 1]}.part-${n}`;
    return { segments, fallbackName: payloadBaseName(document.identifier) };
  }
  const own = part.ref !== undefined ? restorePathFor(part.ref, { withHost: true }) : undefined;
  return { segments: own?.ok ? own.segments : undefined, fallbackName: payloadBaseName(part.ref ?? document.identifier) };
}

function combinedDigest(files: IncomingFile[]): string {
  const hash = createHash('sha256');
  for (const file of files) hash.update(`${file.sha256}\n`);
  return hash.digest('hex');
}

/** The Last-Modified the record gives its first datastream (or its Item), as sent. */
function lastModifiedOf(document: DidlDocument, parts: Part[]): string | null {
  const first = parts[0];
  const headers = first ? componentHeaders(first.item, first.component) : (document.item.headers ?? []);
  return getHeader(headers, 'last-modified') ?? null;
}

/** The DIDL as received when the reader kept it, else written again; base64 replaced by pointers. */
async function didlOf(document: DidlDocument, receivedDidl: ReceivedDidl | undefined, parts: Part[], payloads: RecordPayload[]): Promise<Buffer> {
  const stored = new Map<DidlResource, StoredPayload>();
  parts.forEach((part, index) => {
    const resource = part.byValue ? part.component.resources.find((candidate) => candidate.byValue) : undefined;
    const payload = payloads[index]!;
    if (resource) stored.set(resource, { path: payload.path, sha256: payload.sha256, ...(payload.revisitOf !== undefined ? { bag: payload.revisitOf } : {}) });
  });
  const payloadOf = (resource: DidlResource): StoredPayload | undefined => stored.get(resource);
  return receivedDidl ? receivedDidlXml(receivedDidl, payloadOf) : didlRecordXml(document, payloadOf);
}
async function fetchPart(context: IngestContext, identifier: string, part: Part): Promise<ReceivedPart> {
  const ref = new URL(part.ref!);
  const response = await context.client.getDatastream(ref, `the datastream of ${identifier}`).catch((error: Error) => {
    context.signal?.throwIfAborted();
    // The client's own errors name the URL and keep their code (a refused address, a redirect
    // loop, an HTTP status); anything else is named here.
    if (error instanceof ArchiverError) throw new RecordRefused(error.message, 'fetch', undefined, undefined, error.code);
    throw new RecordRefused(`fetching ${ref.href} failed: ${error.message}`, 'fetch', undefined, undefined, 'ERR_HARVEST_UNREACHABLE');
  });
  const url = response.url;
  // What the server says must be what the record promised, checked before a byte is read. A
  // Content-Length of an encoded body (a server that compressed although asked not to)
  // measures other bytes.
  const promised = componentHeaders(part.item, part.component);
  const encoded = response.headers['content-encoding'] !== undefined && response.headers['content-encoding'] !== 'identity';
  for (const name of ['content-length', 'etag', 'last-modified']) {
    if (name === 'content-length' && encoded) continue;
    const expected = getHeader(promised, name);
    const raw = response.headers[name];
    const found = Array.isArray(raw) ? raw[0] : raw;
    if (expected !== undefined && found !== undefined && expected !== found) {
      response.body.destroy();
      throw new RecordRefused(`${shown(url.href)}: the response's ${name} differs from the record's`, 'verify', shown(expected), shown(found));
    }
  }
  // Never more than the promised size plus one byte, nor than the limit when nothing is promised.
  const promisedSize = promisedLength(promised);
  const limits = context.client.limits;
  const file = await receiveIncoming(context.archiveDir, response.body, context.budget, {
    maxBytes: promisedSize ?? limits.datastreamBytes,
    tooLarge: (size) =>
      promisedSize !== undefined
        ? new RecordRefused(`${shown(url.href)}: more bytes than the record's Content-Length ${promisedSize}`, 'verify', String(promisedSize), `>= ${size}`)
        : limitError('datastreamBytes', limits, `the datastream ${shown(url.href)}`, `more than ${limits.datastreamBytes} bytes`),
  }).catch((error: Error) => {
    response.body.destroy();
    context.signal?.throwIfAborted();
    if (error instanceof RecordRefused) throw error;
    if (error instanceof ArchiverError) throw new RecordRefused(error.message, 'fetch', undefined, undefined, error.code);
    throw new RecordRefused(`reading ${shown(url.href)} failed: ${error.message}`, 'fetch', undefined, undefined, 'ERR_HARVEST_UNREACHABLE');
  });
  return { file, fetched: { ref: ref.href, url: url.href, redirects: response.redirects } };
}

/** The Content-Length a record promises, when it is a whole number. */
function promisedLength(headers: ReturnType<typeof componentHeaders>): number | undefined {
  const value = getHeader(headers, 'content-length');
  return value !== undefined && /^\d{1,15}$/.test(value.trim()) ? Number(value.trim()) : undefined;
}

function verifyPart(identifier: string, part: Part, file: IncomingFile): void {
  const headers = componentHeaders(part.item, part.component);
  const length = getHeader(headers, 'content-length');
  if (length !== undefined && Number(length) !== file.size) {
    throw new RecordRefused(`${identifier}: ${file.size} bytes received, the record's Content-Length says ${length}`, 'verify', length, String(file.size));
  }
  const digest = componentDigest(part.item, part.component);
  if (digest && isSha256(digest.algorithm) && digest.value.toLowerCase() !== file.sha256) {
    throw new RecordRefused(`${identifier}: the sha-256 of the bytes received differs from the record's`, 'verify', digest.value, file.sha256);
  }
}
