import { createHash } from 'node:crypto';
import { join } from 'node:path';
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
import type { DiskFlusher } from '../archive/flush-to-disk.js';
import { bagDirectoryFor } from '../archive/storage-path.js';
import { didlRecordXml, httpHeadersText, oaiHeaderXml, premisXml, receivedDidlXml, receivedHeaderXml, type StoredPayload } from '../bag/aip-metadata.js';
import { payloadBaseName, uniqueFileName } from '../bag/bag-paths.js';
import { createBagBuilder } from '../bag/bag-writer.js';
import type { SealedBag } from '../bag/sealed-bag.js';
import type { Catalog } from '../catalog/catalog.js';
import type { NewVersion } from '../catalog/catalog-schema.js';
import { ArchiverError, type ArchiverErrorCode } from '../core/errors.js';
import { ARCHIVER_VERSION } from '../core/version.js';
import type { OaiClient } from '../oai/oai-client.js';
import { discardIncoming, type IncomingFile, type MemoryBudget, receiveIncoming } from './incoming-file.js';

/** Names the software in PREMIS events. */
const AGENT = `oaibag archiver ${ARCHIVER_VERSION}`;

/** Where a record is going: the source, the harvest, and the labels every bag carries. */
export interface StoreContext {
  archiveDir: string;
  catalog: Catalog;
  client: OaiClient;
  sourceId: number;
  harvestId: number;
  baseUrl: string;
  repositoryName: string;
  /** Makes each page's bags durable (see PageLedger). */
  flusher: DiskFlusher;
  /** Memory for small datastreams not yet bagged (see `receiveIncoming`); none: always files. */
  budget?: MemoryBudget;
  /** Aborts By-Reference fetches; an aborted record is abandoned, not recorded as failed. */
  signal?: AbortSignal;
}

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
}

/** A record made ready for its page's commit: its version row, and its bag when it is new. */
export interface StoredRecord {
  version: NewVersion;
  /** The sealed bag, placed by the page's commit (PageLedger); absent for a known version. */
  bag?: SealedBag;
}

/**
 * Builds one verified record's bag and seals it, or recognises the record as a version already
 * stored, and returns what the page's commit needs (see PageLedger, which places the page's
 * bags together and records their versions). `received` holds the By-Value datastreams already written to temporary files,
 * in the order of the record's parts that have one. By-Reference parts are fetched here.
 * `asReceived` holds the header and DIDL elements as the reader kept them: they become
 * metadata/oai-header.xml and didl.xml; whatever is missing is written again from the parsed
 * record.
 * Every check is made before the bag is built; a refused record leaves nothing behind.
 */
export async function storeRecord(
  context: StoreContext,
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
      const next = byValue ? { file: byValue } : await fetchPart(context, document.identifier, part);
      got.push(next);
      verifyPart(document.identifier, part, next.file);
    }
    // No datastream at all (a DSpace item without bitstreams, a DIDL of descriptive metadata
    // only) is still a record: its AIP has an empty payload and the metadata as received.
    return await buildVersion(context, header, document, parts, got, asReceived);
  } finally {
    for (const file of [...got.map((part) => part.file), ...received]) await discardIncoming(file);
  }
}

async function fetchPart(context: StoreContext, identifier: string, part: Part): Promise<ReceivedPart> {
  const ref = new URL(part.ref!);
  const response = await context.client.getDatastream(ref, `the datastream of ${identifier}`).catch((error: Error) => {
    context.signal?.throwIfAborted();
    // The client's own errors name the URL and keep their code (a refused address, a redirect
    // loop, an HTTP status); anything else is named here.
    if (error instanceof ArchiverError) throw new RecordRefused(error.message, 'fetch', undefined, undefined, error.code);
    throw new RecordRefused(`fetching ${ref.href} failed: ${error.message}`, 'fetch', undefined, undefined, 'ERR_HARVEST_UNREACHABLE');
  });
  const url = response.url;
  const file = await receiveIncoming(context.archiveDir, response.body, context.budget).catch((error: Error) => {
    context.signal?.throwIfAborted();
    throw new RecordRefused(`reading ${url.href} failed: ${error.message}`, 'fetch', undefined, undefined, 'ERR_HARVEST_UNREACHABLE');
  });
  // What the server says now must be what the record promised. A Content-Length of an
  // encoded body (a server that compressed although asked not to) measures other bytes.
  const promised = componentHeaders(part.item, part.component);
  const encoded = response.headers['content-encoding'] !== undefined && response.headers['content-encoding'] !== 'identity';
  for (const name of ['content-length', 'etag', 'last-modified']) {
    if (name === 'content-length' && encoded) continue;
    const expected = getHeader(promised, name);
    const raw = response.headers[name];
    const found = Array.isArray(raw) ? raw[0] : raw;
    if (expected !== undefined && found !== undefined && expected !== found) {
      await discardIncoming(file);
      throw new RecordRefused(`${url.href}: the response's ${name} differs from the record's`, 'verify', expected, found);
    }
  }
  return { file, fetched: { ref: ref.href, url: url.href, redirects: response.redirects } };
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

async function buildVersion(
  context: StoreContext,
  header: OaiHeader,
  document: DidlDocument,
  parts: Part[],
  got: ReceivedPart[],
  asReceived: AsReceived,
): Promise<StoredRecord> {
  const { catalog, sourceId } = context;
  const files = got.map((part) => part.file);
  // One digest for the version: the payload's own for one file, else of the part digests (for
  // no file at all, the sha-256 of nothing).
  const sha256 = files.length === 1 ? files[0]!.sha256 : combinedDigest(files);
  const size = files.reduce((sum, file) => sum + file.size, 0);
  const known = catalog.knownVersion(sourceId, header.identifier, header.datestamp, sha256);
  if (known) {
    const version = {
      sourceId,
      identifier: header.identifier,
      datestamp: known.datestamp,
      size: known.size,
      sha256: known.sha256,
      mimeType: known.mimeType,
      bagPath: known.bagPath,
      harvestId: known.harvestId,
    };
    return { version };
  }

  const previous = catalog.latestVersion(sourceId, header.identifier);
  const builder = await createBagBuilder(context.archiveDir);
  try {
    const taken = new Set<string>();
    const names: string[] = [];
    const baseName = payloadBaseName(document.identifier);
    for (const file of files) {
      const name = uniqueFileName(baseName, taken);
      taken.add(name);
      names.push(name);
      // Same bytes as the previous version (a touch): link its payload, costing no space.
      const reuse = previous && previous.sha256 === file.sha256 && files.length === 1 ? join(context.archiveDir, previous.bagPath, 'data', name) : undefined;
      const linked = reuse ? await builder.linkPayload(name, reuse, file).catch(() => undefined) : undefined;
      if (linked) continue;
      if (file.bytes !== null) builder.addPayloadBytes(name, file.bytes, file);
      else await builder.linkPayload(name, file.path!, file);
    }
    await builder.addTagFile('oai-header.xml', asReceived.header ? receivedHeaderXml(asReceived.header) : oaiHeaderXml(header));
    await builder.addTagFile('didl.xml', await didlXml(document, asReceived.didl, parts, names, files));
    const headersText = httpHeadersText(document);
    if (headersText !== '') await builder.addTagFile('http-headers.txt', headersText);
    await builder.addTagFile(
      'premis.xml',
      premisXml({
        header,
        document,
        baseUrl: context.baseUrl,
        harvestId: context.harvestId,
        capturedAt: new Date(),
        agent: AGENT,
        files: files.map((file, index) => {
          const digest = componentDigest(parts[index]!.item, parts[index]!.component);
          return {
            name: names[index]!,
            size: file.size,
            sha256: file.sha256,
            sha512: file.sha512,
            via: parts[index]!.byValue ? ('by-value' as const) : ('by-reference' as const),
            ...(digest && isSha256(digest.algorithm) ? { promisedSha256: digest.value } : {}),
            ...(got[index]!.fetched ? { fetched: got[index]!.fetched } : {}),
          };
        }),
      }),
    );
    const destination = bagDirectoryFor(header.identifier, header.datestamp, sha256);
    const version: NewVersion = {
      sourceId,
      identifier: header.identifier,
      datestamp: header.datestamp,
      size,
      sha256,
      mimeType: parts[0]?.mimeType ?? null,
      bagPath: destination,
      harvestId: context.harvestId,
      payloadFiles: files.length,
      fetches: got.flatMap((part, index) => (part.fetched ? [{ payload: names[index]!, ...part.fetched }] : [])),
    };
    const bag = await builder.seal({
      destination,
      bagInfo: [
        ['External-Identifier', document.identifier],
        ['OAI-Identifier', header.identifier],
        ['OAI-Datestamp', header.datestamp],
        ['OAI-Base-URL', context.baseUrl],
        ['Harvest-Id', String(context.harvestId)],
        ['Source-Repository-Name', context.repositoryName],
      ],
    });
    return { version, bag };
  } catch (error) {
    await builder.abort().catch(() => undefined);
    throw error;
  }
}

function combinedDigest(files: IncomingFile[]): string {
  const hash = createHash('sha256');
  for (const file of files) hash.update(`${file.sha256}\n`);
  return hash.digest('hex');
}

/** metadata/didl.xml: the DIDL as received when the reader kept it, else written again. */
async function didlXml(
  document: DidlDocument,
  receivedDidl: ReceivedDidl | undefined,
  parts: Part[],
  names: string[],
  files: IncomingFile[],
): Promise<string | Buffer> {
  const stored = new Map<DidlResource, StoredPayload>();
  parts.forEach((part, index) => {
    const resource = part.byValue ? part.component.resources.find((candidate) => candidate.byValue) : undefined;
    if (resource) stored.set(resource, { name: names[index]!, sha256: files[index]!.sha256 });
  });
  const payloadOf = (resource: DidlResource): StoredPayload | undefined => stored.get(resource);
  return receivedDidl ? receivedDidlXml(receivedDidl, payloadOf) : didlRecordXml(document, payloadOf);
}
