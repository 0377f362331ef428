// The metadata of a batch bag (docs/aip-profile.md, format 2): metadata/records.xml.gz, the
// batch's records as received with what the archive did with each datastream, and
// metadata/premis.xml.gz, the PREMIS 3 objects and events. Both are written in pieces, one
// gzip member per piece (a page of records), so the writer never holds a whole batch and a
// reader sees one plain XML document (gzip readers join members).
import { type DidlDocument, type DidlResource, escapeAttribute, escapeText, type OaiHeader, ownedCopy, type ReceivedDidl } from '@oaibag/didl';

/** Namespace of our own elements in records.xml (docs/aip-profile.md). */
export const AIP_NAMESPACE = 'urn:oaibag:aip:2';

/** How a datastream of a record came. */
export type Delivery = 'by-value' | 'by-reference';

/** One datastream of a stored record and where the archive holds its bytes. */
export interface RecordPayload {
  /** 1 for the record's first datastream. */
  part: number;
  /** `data/…` in the bag that holds the bytes. */
  path: string;
  /** Set for a revisit: the bag (relative to the archive) that already held the bytes. */
  revisitOf?: string;
  size: number;
  sha256: string;
  /** For bytes stored in this bag. */
  sha512?: string;
  via: Delivery;
  /** The digest the record promised, when it carried one. */
  promisedSha256?: string;
  /** By-Reference: the record's `ref`, the URL that answered, and the redirects between. */
  fetched?: { ref: string; url: string; redirects: readonly string[] };
}

/** A stored record, as its batch bag keeps it. */
export interface StoredRecordFacts {
  kind: 'version';
  identifier: string;
  datestamp: string;
  /** The version's digest: the payload's own for one file, else of the parts' digests. */
  sha256: string;
  size: number;
  mimeType: string | null;
  lastModified: string | null;
  payloads: RecordPayload[];
  /** The OAI-PMH header and the DIDL, as received (By-Value base64 replaced by pointers). */
  headerXml: Uint8Array;
  didlXml: Uint8Array;
  /** The record's OAI-PMH `about` containers as received, in order (provenance, rights…). */
  aboutXml?: readonly Uint8Array[];
}

/** A deleted record's header, kept as a tombstone. */
export interface DeletedRecordFacts {
  kind: 'deletion';
  identifier: string;
  datestamp: string;
  headerXml: Uint8Array;
  aboutXml?: readonly Uint8Array[];
}

export type BatchRecordFacts = StoredRecordFacts | DeletedRecordFacts;

/** What the head of records.xml names. */
export interface BatchLabels {
  baseUrl: string;
  harvestId: number;
  /** The bag, relative to the archive. */
  bagPath: string;
  /** The source's OAI-rights rightsManifest as received: the rights of every record of the bag. */
  rightsManifest?: string;
}

export function recordsHead(labels: BatchLabels): string {
  return (
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    `<records xmlns="${AIP_NAMESPACE}" source="${escapeAttribute(labels.baseUrl)}" harvest="${labels.harvestId}" bag="${escapeAttribute(labels.bagPath)}">\n` +
    (labels.rightsManifest ? `${labels.rightsManifest}\n` : '')
  );
}

export const RECORDS_TAIL = '</records>\n';

/** One record of records.xml: `n` is its place in the bag, from 1. */
export function recordXml(n: number, facts: BatchRecordFacts): Buffer {
  const common = `n="${n}" identifier="${escapeAttribute(facts.identifier)}" datestamp="${escapeAttribute(facts.datestamp)}"`;
  if (facts.kind === 'deletion') {
    return Buffer.concat([Buffer.from(`<deleted ${common}>`), facts.headerXml, ...aboutParts(facts.aboutXml), Buffer.from('</deleted>\n')]);
  }
  let head =
    `<record ${common} sha256="${facts.sha256}" size="${facts.size}"` +
    (facts.mimeType !== null ? ` mimeType="${escapeAttribute(facts.mimeType)}"` : '') +
    (facts.lastModified !== null ? ` lastModified="${escapeAttribute(facts.lastModified)}"` : '') +
    '>\n';
  for (const payload of facts.payloads) {
    const where = `part="${payload.part}"${payload.revisitOf !== undefined ? ` bag="${escapeAttribute(payload.revisitOf)}"` : ''} path="${escapeAttribute(payload.path)}"`;
    const digests = `size="${payload.size}" sha256="${payload.sha256}"${payload.sha512 !== undefined ? ` sha512="${payload.sha512}"` : ''}`;
    const element = payload.revisitOf !== undefined ? 'revisit' : 'payload';
    if (!payload.fetched) {
      head += `<${element} ${where} ${digests} via="${payload.via}"/>\n`;
      continue;
    }
    const { ref, url, redirects } = payload.fetched;
    head +=
      `<${element} ${where} ${digests} via="${payload.via}">` +
      `<fetch ref="${escapeAttribute(ref)}" url="${escapeAttribute(url)}">` +
      redirects.map((to) => `<redirect to="${escapeAttribute(to)}"/>`).join('') +
      `</fetch></${element}>\n`;
  }
  return Buffer.concat([Buffer.from(head), facts.headerXml, Buffer.from('\n'), facts.didlXml, ...aboutParts(facts.aboutXml), Buffer.from('\n</record>\n')]);
}

/** The record's `about` containers, each on a line of its own after the header or the DIDL. */
function aboutParts(about: readonly Uint8Array[] | undefined): Uint8Array[] {
  return (about ?? []).flatMap((element) => [NEWLINE, element]);
}

const NEWLINE = Buffer.from('\n');

// ---------------------------------------------------------------------------------------------
// PREMIS 3: objects (the payload files the bag brings), events per record, the agent.

const PREMIS = 'http://www.loc.gov/premis/v3';

export function premisHead(): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<premis:premis xmlns:premis="${PREMIS}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" version="3.0">\n`;
}

/** A payload file of the bag, as a PREMIS file object identified by its path in the bag. */
export function premisObjectXml(file: { path: string; size: number; sha256: string; sha512: string; mimeType?: string | undefined }): string {
  return (
    '<premis:object xsi:type="premis:file">' +
    `<premis:objectIdentifier><premis:objectIdentifierType>bag-path</premis:objectIdentifierType><premis:objectIdentifierValue>${escapeText(file.path)}</premis:objectIdentifierValue></premis:objectIdentifier>` +
    '<premis:objectCharacteristics><premis:compositionLevel>0</premis:compositionLevel>' +
    `<premis:fixity><premis:messageDigestAlgorithm>SHA-256</premis:messageDigestAlgorithm><premis:messageDigest>${file.sha256}</premis:messageDigest></premis:fixity>` +
    `<premis:fixity><premis:messageDigestAlgorithm>SHA-512</premis:messageDigestAlgorithm><premis:messageDigest>${file.sha512}</premis:messageDigest></premis:fixity>` +
    `<premis:size>${file.size}</premis:size>` +
    // PREMIS 3 requires a format: the MIME type the record gave the datastream.
    `<premis:format><premis:formatDesignation><premis:formatName>${escapeText(file.mimeType ?? 'application/octet-stream')}</premis:formatName></premis:formatDesignation></premis:format>` +
    '</premis:objectCharacteristics></premis:object>\n'
  );
}

/** An out-of-band delivery a bag's records came in (`oaibag import`), as its provenance names it. */
export interface DeliveryFacts {
  /** The ZIP's or folder's base name. */
  name: string;
  /** Its bytes (a folder: the sum of its files'). */
  size: number;
  /** The ZIP's sha-256 (a folder: of its manifest, see docs/import-export.md). */
  sha256: string;
  kind: 'site' | 'didl' | 'bags';
}

/** How a delivery is named in PREMIS details and bag-info.txt. */
export function describeDelivery(delivery: DeliveryFacts): string {
  return `out-of-band delivery ${delivery.name} (${delivery.size} bytes, sha-256 ${delivery.sha256})`;
}

/** What the events of one record say besides the record itself. */
export interface EventContext {
  baseUrl: string;
  /** Set when the records came in a delivery rather than over OAI-PMH. */
  delivery?: DeliveryFacts;
  /** Prefix of the event identifiers: unique per bag (`h12-b3`). */
  idPrefix: string;
  at: string;
  agent: string;
}

/**
 * The PREMIS events of one record: capture, fixity check and ingestion for a stored record
 * (for a revisit, the fixity check is against the digest of the bytes already held); capture
 * and deletion for a tombstone. Each names the record's payload files as linking objects.
 */
export function recordEventsXml(n: number, facts: BatchRecordFacts, context: EventContext): string {
  let k = 0;
  const event = (type: string, detail: string, objects: string[] = []): string =>
    '<premis:event>' +
    `<premis:eventIdentifier><premis:eventIdentifierType>local</premis:eventIdentifierType><premis:eventIdentifierValue>${context.idPrefix}-r${n}-e${++k}</premis:eventIdentifierValue></premis:eventIdentifier>` +
    `<premis:eventType>${type}</premis:eventType><premis:eventDateTime>${context.at}</premis:eventDateTime>` +
    `<premis:eventDetailInformation><premis:eventDetail>${escapeText(detail)}</premis:eventDetail></premis:eventDetailInformation>` +
    '<premis:eventOutcomeInformation><premis:eventOutcome>success</premis:eventOutcome></premis:eventOutcomeInformation>' +
    `<premis:linkingAgentIdentifier><premis:linkingAgentIdentifierType>software</premis:linkingAgentIdentifierType><premis:linkingAgentIdentifierValue>${escapeText(context.agent)}</premis:linkingAgentIdentifierValue></premis:linkingAgentIdentifier>` +
    objects.join('') +
    '</premis:event>\n';
  const record = `record ${n} (${facts.identifier}, datestamp ${facts.datestamp})`;
  const came = context.delivery ? `imported from the ${describeDelivery(context.delivery)} for ${context.baseUrl}` : `harvested from ${context.baseUrl}`;
  if (facts.kind === 'deletion') {
    return event('capture', `${record} ${came}`) + event('deletion', `${record}: the repository reports it deleted; its earlier versions stay`);
  }
  const objects = facts.payloads.map((payload) =>
    payload.revisitOf !== undefined ? linkingObject('archive-path', `${payload.revisitOf}/${payload.path}`) : linkingObject('bag-path', payload.path),
  );
  if (facts.payloads.length === 0) {
    return event('capture', `${record} ${came}; no datastream (metadata only)`) + event('ingestion', `${record}: metadata kept in records.xml`);
  }
  const captured = facts.payloads.map((payload) => {
    if (!payload.fetched) return `part ${payload.part} ${payload.via}`;
    const { ref, url, redirects } = payload.fetched;
    return redirects.length === 0 ? `part ${payload.part} by-reference from ${url}` : `part ${payload.part} by-reference ${[ref, ...redirects].join(' -> ')}`;
  });
  const checked = facts.payloads.map((payload) => {
    const against =
      payload.revisitOf !== undefined
        ? 'equal to the held payload'
        : payload.promisedSha256 !== undefined
          ? "equal to the record's digest"
          : 'computed on receipt (the record carried none)';
    return `part ${payload.part} sha-256 ${payload.sha256} ${against}`;
  });
  const ingested = facts.payloads.map((payload) =>
    payload.revisitOf !== undefined
      ? `part ${payload.part} already held at ${payload.revisitOf}/${payload.path} (revisit)`
      : `part ${payload.part} stored as ${payload.path}`,
  );
  return (
    event('capture', `${record} ${came}; ${captured.join(', ')}`, objects) +
    event('fixity check', checked.join('; '), objects) +
    event('ingestion', ingested.join('; '), objects)
  );
}

/**
 * The accession of an out-of-band delivery: one event per bag of an import, before its records'
 * events, naming the delivery (its sha-256 as the linking object) and what it was taken as.
 */
export function deliveryEventXml(delivery: DeliveryFacts, context: Omit<EventContext, 'delivery'>): string {
  return (
    '<premis:event>' +
    `<premis:eventIdentifier><premis:eventIdentifierType>local</premis:eventIdentifierType><premis:eventIdentifierValue>${context.idPrefix}-accession</premis:eventIdentifierValue></premis:eventIdentifier>` +
    `<premis:eventType>accession</premis:eventType><premis:eventDateTime>${context.at}</premis:eventDateTime>` +
    `<premis:eventDetailInformation><premis:eventDetail>${escapeText(`${describeDelivery(delivery)}, read as ${delivery.kind === 'site' ? "a web site's files" : 'DIDL records'} for ${context.baseUrl}; its records verified and packaged as a harvest's`)}</premis:eventDetail></premis:eventDetailInformation>` +
    '<premis:eventOutcomeInformation><premis:eventOutcome>success</premis:eventOutcome></premis:eventOutcomeInformation>' +
    `<premis:linkingAgentIdentifier><premis:linkingAgentIdentifierType>software</premis:linkingAgentIdentifierType><premis:linkingAgentIdentifierValue>${escapeText(context.agent)}</premis:linkingAgentIdentifierValue></premis:linkingAgentIdentifier>` +
    linkingObject('delivery-sha256', delivery.sha256) +
    '</premis:event>\n'
  );
}

function linkingObject(type: string, value: string): string {
  return `<premis:linkingObjectIdentifier><premis:linkingObjectIdentifierType>${type}</premis:linkingObjectIdentifierType><premis:linkingObjectIdentifierValue>${escapeText(value)}</premis:linkingObjectIdentifierValue></premis:linkingObjectIdentifier>`;
}

export function premisTail(agent: string): string {
  return (
    '<premis:agent>' +
    `<premis:agentIdentifier><premis:agentIdentifierType>software</premis:agentIdentifierType><premis:agentIdentifierValue>${escapeText(agent)}</premis:agentIdentifierValue></premis:agentIdentifier>` +
    `<premis:agentName>${escapeText(agent)}</premis:agentName><premis:agentType>software</premis:agentType>` +
    '</premis:agent>\n</premis:premis>\n'
  );
}

// ---------------------------------------------------------------------------------------------
// The record's OAI-PMH header and DIDL, as received or written again.

/** Where a By-Value datastream of the record is held: the pointer that replaces its base64. */
export interface StoredPayload {
  path: string;
  /** For bytes held by another bag (a revisit). */
  bag?: string;
  sha256: string;
}

/** The record's OAI-PMH header, written again from what was read (when it was not kept as received). */
export function oaiHeaderXml(header: OaiHeader): string {
  return (
    `<header xmlns="http://www.openarchives.org/OAI/2.0/"${header.deleted ? ' status="deleted"' : ''}>` +
    `<identifier>${escapeText(header.identifier)}</identifier>` +
    `<datestamp>${escapeText(header.datestamp)}</datestamp>` +
    header.setSpecs.map((spec) => `<setSpec>${escapeText(spec)}</setSpec>`).join('') +
    '</header>'
  );
}

function byValuePointer(stored: StoredPayload | undefined, size: number, sha256: string): string {
  const where = stored ? `${stored.bag !== undefined ? ` bag="${escapeAttribute(stored.bag)}"` : ''} path="${escapeAttribute(stored.path)}"` : '';
  return `<oaibag:byValue xmlns:oaibag="${AIP_NAMESPACE}"${where} size="${size}" sha256="${sha256}"/>`;
}

/**
 * The record's DIDL element as received, byte for byte, except that the base64 content of each
 * By-Value Resource is replaced by a pointer to the payload file holding its bytes
 * (`<oaibag:byValue path size sha256/>`, with `bag` for bytes another bag holds), so that no
 * byte is stored twice; namespaces it inherited from the OAI-PMH response are declared on its
 * root (see ReceivedDidl).
 */
export function receivedDidlXml(received: ReceivedDidl, payloadOf: (resource: DidlResource) => StoredPayload | undefined): Buffer {
  const parts: Uint8Array[] = [];
  for (const part of received.parts) {
    if (part instanceof Uint8Array) {
      parts.push(part);
      continue;
    }
    const payload = payloadOf(part);
    parts.push(Buffer.from(byValuePointer(payload, part.byValue?.size ?? 0, payload?.sha256 ?? part.byValue?.sha256 ?? ''), 'utf8'));
  }
  // Memory of its own, not a slice of Node's shared pool: a record's DIDL is held until its
  // page ends, and a pool slice held keeps a whole 8 KiB slab (see ownedCopy).
  return ownedCopy(parts);
}

/**
 * The record's DIDL, written again from what was read (when it was not kept as received):
 * identifier, headers, digests, refs and the Descriptors we do not interpret of the top Item,
 * each By-Value Resource holding a pointer to its payload file instead of its base64.
 */
export async function didlRecordXml(document: DidlDocument, payloadOf: (resource: DidlResource) => StoredPayload | undefined): Promise<Buffer> {
  const { writeDidl } = await import('@oaibag/didl');
  const components = document.item.components
    .filter((component) => component.resources.some((resource) => resource.byValue || resource.ref))
    .map((component) => {
      const byValue = component.resources.find((resource) => resource.byValue);
      const ref = component.resources.find((resource) => resource.ref)?.ref;
      const stored = byValue ? payloadOf(byValue) : undefined;
      // As in the record kept as received: the By-Value Resource, its base64 replaced by the pointer.
      const kept = byValue
        ? [
            `<didl:Resource mimeType="${escapeAttribute(byValue.mimeType ?? 'application/octet-stream')}" encoding="base64">` +
              byValuePointer(stored, byValue.byValue!.size, stored?.sha256 ?? byValue.byValue!.sha256) +
              '</didl:Resource>',
          ]
        : [];
      return {
        mimeType: (byValue ?? component.resources[0])?.mimeType ?? 'application/octet-stream',
        ...(ref ? { ref } : {}),
        ...(component.digest ? { digest: component.digest } : {}),
        ...(component.headers ? { headers: component.headers } : {}),
        descriptors: component.descriptors,
        resources: kept,
      };
    });
  const pieces: string[] = [];
  for await (const part of writeDidl({
    identifier: document.identifier,
    ...(document.item.headers ? { headers: document.item.headers } : {}),
    descriptors: document.item.descriptors,
    components,
    ...(document.documentId !== undefined ? { documentId: document.documentId } : {}),
  })) {
    pieces.push(part);
  }
  // writeDidl begins with an XML declaration: inside records.xml the element stands alone.
  return ownedCopy([Buffer.from(pieces.join('').replace(/^<\?xml[^>]*\?>\s*/, ''), 'utf8')]);
}
