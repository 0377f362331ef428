// The XML of the core's answers: headers, records and the elements of the verbs that list no
// items. Text is escaped here; what a source hands over as XML (metadata, about, descriptions)
// is written as it is.
import { escapeText } from '@oaibag/didl';
import { formatDatestamp } from '../oai-date.js';
import type { IdentifyFacts, ItemHeader, ItemRecord, MetadataFormatDescription, SetDescription } from './item-source.js';

export function headerXml(header: ItemHeader): string {
  let xml =
    `<header${header.deleted ? ' status="deleted"' : ''}><identifier>${escapeText(header.identifier)}</identifier>` +
    `<datestamp>${formatDatestamp(header.datestamp)}</datestamp>`;
  for (const spec of header.setSpecs) xml += `<setSpec>${escapeText(spec)}</setSpec>`;
  return `${xml}</header>\n`;
}

/** One `<record>`: the header, and for a live item its metadata and `about` containers; the record is closed in any case. */
export async function* recordXml(record: ItemRecord): AsyncGenerator<string> {
  try {
    const header = headerXml(record.header);
    if (record.header.deleted || record.metadata === undefined) {
      yield `<record>${header}</record>\n`;
      return;
    }
    yield `<record>${header}<metadata>\n`;
    yield* record.metadata;
    yield `</metadata>\n${record.about ?? ''}</record>\n`;
  } finally {
    await record.close?.();
  }
}

export function identifyXml(facts: IdentifyFacts, endpoint: string, now: number): string {
  let xml =
    `<Identify>\n<repositoryName>${escapeText(facts.repositoryName)}</repositoryName>\n<baseURL>${escapeText(endpoint)}</baseURL>\n` +
    '<protocolVersion>2.0</protocolVersion>\n';
  for (const email of facts.adminEmails) xml += `<adminEmail>${escapeText(email)}</adminEmail>\n`;
  xml +=
    `<earliestDatestamp>${formatDatestamp(facts.earliestDatestamp ?? now)}</earliestDatestamp>\n` +
    `<deletedRecord>${facts.deletedRecord}</deletedRecord>\n<granularity>YYYY-MM-DDThh:mm:ssZ</granularity>\n`;
  for (const coding of facts.compression ?? []) xml += `<compression>${escapeText(coding)}</compression>\n`;
  for (const description of facts.descriptions ?? []) xml += `<description>${description}</description>\n`;
  return `${xml}</Identify>\n`;
}

export function listMetadataFormatsXml(formats: readonly MetadataFormatDescription[]): string {
  let xml = '<ListMetadataFormats>\n';
  for (const format of formats) {
    xml +=
      `<metadataFormat><metadataPrefix>${escapeText(format.prefix)}</metadataPrefix><schema>${escapeText(format.schema)}</schema>` +
      `<metadataNamespace>${escapeText(format.namespace)}</metadataNamespace></metadataFormat>\n`;
  }
  return `${xml}</ListMetadataFormats>\n`;
}

export function listSetsXml(sets: readonly SetDescription[]): string {
  let xml = '<ListSets>\n';
  for (const { spec, name } of sets) xml += `<set><setSpec>${escapeText(spec)}</setSpec><setName>${escapeText(name)}</setName></set>\n`;
  return `${xml}</ListSets>\n`;
}
