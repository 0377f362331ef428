import { type DidlDocument, type DidlResource, escapeAttribute, escapeText, type HttpHeader, type OaiHeader, type ReceivedDidl } from '@oaibag/didl';

/** What the provenance of one version records (PREMIS 3 events of the capture). */
export interface CaptureFacts {
  header: OaiHeader;
  document: DidlDocument;
  baseUrl: string;
  harvestId: number;
  /** When the record was received and the bag written. */
  capturedAt: Date;
  /** One entry per payload file: its name in data/, size, digests, and how it came. */
  files: Array<{
    name: string;
    size: number;
    sha256: string;
    sha512: string;
    via: 'by-value' | 'by-reference';
    promisedSha256?: string;
    /** By-Reference: the record's `ref`, the URL that answered, and the redirects between. */
    fetched?: { ref: string; url: string; redirects: readonly string[] };
  }>;
  agent: string;
}

/**
 * The HTTP headers the record carried, one `Name: value` a line (the headers of the Item,
 * then of each Component that has its own), as a web archive would keep them.
 */
export function httpHeadersText(document: DidlDocument): string {
  const lines: string[] = [];
  const add = (headers: readonly HttpHeader[] | undefined) => {
    for (const { name, value } of headers ?? []) lines.push(`${name}: ${value}`);
  };
  add(document.item.headers);
  for (const component of document.item.components) add(component.headers);
  return lines.length > 0 ? `${lines.join('\n')}\n` : '';
}

/**
 * PREMIS 3 provenance of one version: the capture (harvest of the OAI-PMH record), the
 * message digest calculation done while the bytes were received, the fixity check against
 * the digest the record promised, and the ingestion into the archive, each with its agent
 * and outcome. Written as a standalone PREMIS document in metadata/premis.xml.
 */
export function premisXml(facts: CaptureFacts): string {
  const at = facts.capturedAt.toISOString();
  const agent = `<premis:linkingAgentIdentifier><premis:linkingAgentIdentifierType>software</premis:linkingAgentIdentifierType><premis:linkingAgentIdentifierValue>${escapeText(facts.agent)}</premis:linkingAgentIdentifierValue></premis:linkingAgentIdentifier>`;
  let counter = 0;
  const event = (type: string, outcome: string, detail: string) =>
    `  <premis:event>\n` +
    `    <premis:eventIdentifier><premis:eventIdentifierType>local</premis:eventIdentifierType><premis:eventIdentifierValue>harvest-${facts.harvestId}-event-${++counter}</premis:eventIdentifierValue></premis:eventIdentifier>\n` +
    `    <premis:eventType>${type}</premis:eventType>\n` +
    `    <premis:eventDateTime>${at}</premis:eventDateTime>\n` +
    `    <premis:eventDetailInformation><premis:eventDetail>${escapeText(detail)}</premis:eventDetail></premis:eventDetailInformation>\n` +
    `    <premis:eventOutcomeInformation><premis:eventOutcome>${outcome}</premis:eventOutcome></premis:eventOutcomeInformation>\n` +
    `    ${agent}\n` +
    `  </premis:event>\n`;

  let xml = '<?xml version="1.0" encoding="UTF-8"?>\n<premis:premis xmlns:premis="http://www.loc.gov/premis/v3" version="3.0">\n';
  for (const file of facts.files) {
    xml +=
      '  <premis:object xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="premis:file">\n' +
      `    <premis:objectIdentifier><premis:objectIdentifierType>bag-path</premis:objectIdentifierType><premis:objectIdentifierValue>data/${escapeText(file.name)}</premis:objectIdentifierValue></premis:objectIdentifier>\n` +
      '    <premis:objectCharacteristics>\n' +
      '      <premis:compositionLevel>0</premis:compositionLevel>\n' +
      `      <premis:fixity><premis:messageDigestAlgorithm>SHA-256</premis:messageDigestAlgorithm><premis:messageDigest>${file.sha256}</premis:messageDigest></premis:fixity>\n` +
      `      <premis:fixity><premis:messageDigestAlgorithm>SHA-512</premis:messageDigestAlgorithm><premis:messageDigest>${file.sha512}</premis:messageDigest></premis:fixity>\n` +
      `      <premis:size>${file.size}</premis:size>\n` +
      '    </premis:objectCharacteristics>\n' +
      '  </premis:object>\n';
  }
  if (facts.files.length === 0) {
    xml += event(
      'capture',
      'success',
      `OAI-PMH record ${facts.header.identifier} (datestamp ${facts.header.datestamp}) harvested from ${facts.baseUrl}; it carries no datastream (metadata only): the payload is empty`,
    );
  } else {
    xml += event(
      'capture',
      'success',
      `OAI-PMH record ${facts.header.identifier} (datestamp ${facts.header.datestamp}) harvested from ${facts.baseUrl}; datastreams ${facts.files.map((file) => `${file.name} ${file.via}`).join(', ')}`,
    );
    // Where each By-Reference datastream's bytes really came from, redirects included.
    for (const file of facts.files) {
      if (!file.fetched) continue;
      const { ref, url, redirects } = file.fetched;
      const path =
        redirects.length === 0 ? `fetched from ${url}` : `redirected ${redirects.length} time(s): ${[ref, ...redirects].join(' -> ')}; fetched from ${url}`;
      xml += event('capture', 'success', `data/${file.name}: By-Reference ${ref} ${path}`);
    }
    xml += event(
      'message digest calculation',
      'success',
      `SHA-256 and SHA-512 computed while the bytes were received: ${facts.files.map((file) => `${file.name} sha256 ${file.sha256}`).join(', ')}`,
    );
    const checked = facts.files.filter((file) => file.promisedSha256 !== undefined);
    xml += event(
      'fixity check',
      'success',
      checked.length > 0
        ? `SHA-256 equal to the digest the record carried for ${checked.map((file) => file.name).join(', ')}; sizes equal to its Content-Length`
        : 'the record carried no digest; sizes checked against its Content-Length',
    );
  }
  xml += event('ingestion', 'success', `stored as a BagIt 1.0 bag by harvest ${facts.harvestId}`);
  return `${xml}</premis:premis>\n`;
}

/** Namespace of our own elements in the tag files (docs/aip-profile.md). */
export const AIP_NAMESPACE = 'urn:oaibag:aip:1';

/** The record's OAI-PMH `header` element as received (namespaces from the envelope declared on it). */
export function receivedHeaderXml(received: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from('<?xml version="1.0" encoding="UTF-8"?>\n'), received, Buffer.from('\n')]);
}

/** The record's OAI-PMH header, written again from what was read (when it was not kept as received). */
export function oaiHeaderXml(header: OaiHeader): string {
  return (
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    `<header xmlns="http://www.openarchives.org/OAI/2.0/"${header.deleted ? ' status="deleted"' : ''}>\n` +
    `  <identifier>${escapeText(header.identifier)}</identifier>\n` +
    `  <datestamp>${escapeText(header.datestamp)}</datestamp>\n` +
    header.setSpecs.map((spec) => `  <setSpec>${escapeText(spec)}</setSpec>\n`).join('') +
    '</header>\n'
  );
}

/** Where a By-Value datastream of the record was stored: its payload file and SHA-256. */
export interface StoredPayload {
  name: string;
  sha256: string;
}

/**
 * The record's DIDL element as received, byte for byte, except that the base64 content of each
 * By-Value Resource is replaced by a pointer to its payload file (`<oaibag:byValue payload size
 * sha256/>`), so that no byte is stored twice; namespaces it inherited from the OAI-PMH
 * response are declared on its root (see ReceivedDidl).
 */
export function receivedDidlXml(received: ReceivedDidl, payloadOf: (resource: DidlResource) => StoredPayload | undefined): Buffer {
  const parts: Uint8Array[] = [Buffer.from('<?xml version="1.0" encoding="UTF-8"?>\n')];
  for (const part of received.parts) {
    if (part instanceof Uint8Array) {
      parts.push(part);
      continue;
    }
    const payload = payloadOf(part);
    const size = part.byValue?.size ?? 0;
    const sha256 = payload?.sha256 ?? part.byValue?.sha256 ?? '';
    const where = payload ? ` payload="data/${escapeAttribute(payload.name)}"` : '';
    parts.push(Buffer.from(`<oaibag:byValue xmlns:oaibag="${AIP_NAMESPACE}"${where} size="${size}" sha256="${sha256}"/>`, 'utf8'));
  }
  parts.push(Buffer.from('\n'));
  return Buffer.concat(parts);
}

/**
 * The record's DIDL, written again from what was read (when it was not kept as received):
 * identifier, headers, digests, refs and the Descriptors we do not interpret of the top Item,
 * each By-Value Resource holding a pointer to its payload file instead of its base64.
 */
export async function didlRecordXml(document: DidlDocument, payloadOf: (resource: DidlResource) => StoredPayload | undefined): Promise<string> {
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
              `<oaibag:byValue xmlns:oaibag="${AIP_NAMESPACE}"${stored ? ` payload="data/${escapeAttribute(stored.name)}"` : ''} size="${byValue.byValue!.size}" sha256="${stored?.sha256 ?? byValue.byValue!.sha256}"/>` +
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
  let xml = '';
  for await (const part of writeDidl({
    identifier: document.identifier,
    ...(document.item.headers ? { headers: document.item.headers } : {}),
    descriptors: document.item.descriptors,
    components,
    ...(document.documentId !== undefined ? { documentId: document.documentId } : {}),
  })) {
    xml += part;
  }
  return xml;
}
