// The metadata formats `oaibag serve` disseminates (docs/serve.md, "Metadata formats"): what
// each writes for one archived version, from the catalog's facts and the record the bag keeps.
import { escapeText, NS } from '@oaibag/didl';
import { HTTP_HEADER_SCHEMA_PATH } from '@oaibag/oai-pmh';
import type { PayloadLocation } from '../catalog/catalog-types.js';
import type { ArchiveItem, ServedVersion } from '../catalog/served-items.js';
import { scanXmlSpans, standaloneElement } from '../core/xml-spans.js';
import { ORE_NAMESPACE, oreResourceMap } from './ore-map.js';
import { type DidlPart, servedDidl } from './served-didl.js';
import type { StoredRecordXml } from './stored-records.js';

/** What a format needs to write one live item's metadata. */
export interface FormatInput {
  item: ArchiveItem & { version: ServedVersion };
  stored: StoredRecordXml;
  parts: readonly PayloadLocation[];
  fetchedRefs: ReadonlyArray<{ part: number; ref: string }>;
  baseUrl: string;
  urlOf(location: PayloadLocation): string;
  oreUrl: string;
  repositoryName: string;
  byValueMax: number;
  /** Whether the client may have a payload's bytes (archive-access.ts). */
  mayRead(location: PayloadLocation): boolean;
  /** `YYYY-MM-DDThh:mm:ssZ` of when the archive stored the version. */
  storedAt: string;
}

export interface ServedFormat {
  prefix: string;
  schema(baseUrl: string): string;
  namespace: string;
  /** Carries the payloads' base64 (counts towards a page's bytes). */
  carriesContent: boolean;
  write(input: FormatInput): DidlPart[];
}

const OAI_DC_NAMESPACE = 'http://www.openarchives.org/OAI/2.0/oai_dc/';

export const SERVED_FORMATS: readonly ServedFormat[] = [
  {
    prefix: 'oai_dc',
    schema: () => 'http://www.openarchives.org/OAI/2.0/oai_dc.xsd',
    namespace: OAI_DC_NAMESPACE,
    carriesContent: false,
    write: (input) => [oaiDc(input)],
  },
  {
    prefix: 'http_header',
    schema: (baseUrl) => `${baseUrl}/${HTTP_HEADER_SCHEMA_PATH}`,
    namespace: NS.http,
    carriesContent: false,
    write: (input) => [httpHeader(input.stored)],
  },
  {
    prefix: 'oai_didl',
    schema: () => 'http://standards.iso.org/ittf/PubliclyAvailableStandards/MPEG-21_schema_files/did/didl.xsd',
    namespace: NS.didl,
    carriesContent: true,
    write: (input) => [
      ...servedDidl(input.stored.didl ?? '', {
        parts: input.parts,
        fetchedRefs: input.fetchedRefs,
        urlOf: input.urlOf,
        byValueMax: input.byValueMax,
        mayRead: input.mayRead,
      }),
      '\n',
    ],
  },
  {
    prefix: 'ore',
    // RDF/XML has no XML schema of its own; ours checks the envelope only (docs/serve.md).
    schema: (baseUrl) => `${baseUrl}/${ORE_SCHEMA_PATH}`,
    namespace: ORE_NAMESPACE,
    carriesContent: false,
    write: (input) => [
      oreResourceMap({
        mapUrl: input.oreUrl,
        original: input.item.original,
        creator: input.repositoryName,
        modified: input.storedAt,
        files: input.parts.map((part, index) => ({
          url: input.urlOf(part),
          mimeType: index === 0 ? input.item.version.mimeType : null,
          size: part.size,
        })),
      }),
    ],
  },
];

/** Where `oaibag serve` serves the schema it names for `ore`, below its base URL. */
export const ORE_SCHEMA_PATH = 'oai/schemas/ore-rdfxml.xsd';

/** A schema for the `ore` format: an `rdf:RDF` element, its contents not checked. */
export const ORE_SCHEMA = `<?xml version="1.0" encoding="UTF-8"?>
<!-- The ore metadata format of oaibag serve: an OAI-ORE 1.0 resource map in RDF/XML. RDF/XML
     has no XML schema; this one lets OAI-PMH validators check the envelope. -->
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" targetNamespace="http://www.w3.org/1999/02/22-rdf-syntax-ns#" elementFormDefault="qualified">
  <xs:element name="RDF">
    <xs:complexType>
      <xs:sequence>
        <xs:any namespace="##any" processContents="skip" minOccurs="0" maxOccurs="unbounded"/>
      </xs:sequence>
      <xs:anyAttribute namespace="##any" processContents="skip"/>
    </xs:complexType>
  </xs:element>
</xs:schema>
`;

/** The original response headers: the DIDL's `http:header` element, or none when it had none. */
function httpHeader(stored: StoredRecordXml): string {
  const didl = stored.didl ?? '';
  let found: string | undefined;
  let open: { tag: Parameters<typeof standaloneElement>[1]; start: number; openEnd: number; depth: number } | undefined;
  let depth = 0;
  if (didl !== '') {
    scanXmlSpans(didl, {
      open(tag, start, end) {
        depth++;
        if (!found && !open && tag.uri === NS.http && tag.local === 'header') open = { tag, start, openEnd: end, depth };
      },
      close(_name, _start, end) {
        if (open && depth === open.depth) {
          found = standaloneElement(didl, open.tag, open.start, open.openEnd, end);
          open = undefined;
        }
        depth--;
      },
    });
  }
  return `${found ?? `<http:header xmlns:http="${NS.http}"/>`}\n`;
}

/** Dublin Core from what the catalog knows of the version. */
function oaiDc({ item }: FormatInput): string {
  const version = item.version;
  const title = lastSegment(item.original) || item.original;
  const date =
    version.lastModified !== null && !Number.isNaN(Date.parse(version.lastModified)) ? new Date(version.lastModified).toISOString() : version.datestamp;
  return (
    `<oai_dc:dc xmlns:oai_dc="${OAI_DC_NAMESPACE}" xmlns:dc="${NS.dc}" xmlns:xsi="${NS.xsi}" ` +
    `xsi:schemaLocation="${OAI_DC_NAMESPACE} http://www.openarchives.org/OAI/2.0/oai_dc.xsd">\n` +
    `<dc:title>${escapeText(title)}</dc:title>\n<dc:identifier>${escapeText(item.original)}</dc:identifier>\n` +
    (version.mimeType ? `<dc:format>${escapeText(version.mimeType)}</dc:format>\n` : '') +
    `<dc:date>${escapeText(date)}</dc:date>\n<dc:source>${escapeText(item.sourceBaseUrl)}</dc:source>\n</oai_dc:dc>\n`
  );
}

/** The last path segment of a URL identifier, percent-decoded when it can be. */
function lastSegment(identifier: string): string {
  let segment: string;
  try {
    segment = new URL(identifier).pathname.split('/').filter(Boolean).pop() ?? '';
  } catch {
    return '';
  }
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
