// An OAI-ORE 1.0 resource map of one archived version, in RDF/XML (docs/serve.md, "ore"): the
// map (`ore:ResourceMap`, with its creator and modification time) describes an
// `ore:Aggregation` of the version's payload files, each with its MIME type and length.
import { escapeAttribute, escapeText } from '@oaibag/didl';

export const ORE_NAMESPACE = 'http://www.openarchives.org/ore/terms/';
export const RDF_NAMESPACE = 'http://www.w3.org/1999/02/22-rdf-syntax-ns#';
const DCTERMS = 'http://purl.org/dc/terms/';
const XSD = 'http://www.w3.org/2001/XMLSchema#';

/** Where ORE maps are served: `/ore/<bag under aips/>/<record>`. */
export const ORE_PREFIX = '/ore/';

export interface OreVersion {
  /** The map's own URL (`<base>/ore/<bag>/<record>`). */
  mapUrl: string;
  /** The resource's original identifier (its URL, for a web site). */
  original: string;
  /** Who made the map: the archive's repositoryName. */
  creator: string;
  /** When the archive stored the version (`YYYY-MM-DDThh:mm:ssZ`). */
  modified: string;
  /** The version's payload files. */
  files: ReadonlyArray<{ url: string; mimeType: string | null; size: number }>;
}

/** The resource map as one `rdf:RDF` element. */
export function oreResourceMap(version: OreVersion): string {
  const aggregation = `${version.mapUrl}#aggregation`;
  let xml =
    `<rdf:RDF xmlns:rdf="${RDF_NAMESPACE}" xmlns:ore="${ORE_NAMESPACE}" xmlns:dcterms="${DCTERMS}">\n` +
    `<ore:ResourceMap rdf:about="${escapeAttribute(version.mapUrl)}">\n` +
    `<ore:describes rdf:resource="${escapeAttribute(aggregation)}"/>\n` +
    `<dcterms:creator>${escapeText(version.creator)}</dcterms:creator>\n` +
    `<dcterms:modified rdf:datatype="${XSD}dateTime">${escapeText(version.modified)}</dcterms:modified>\n` +
    '</ore:ResourceMap>\n' +
    `<ore:Aggregation rdf:about="${escapeAttribute(aggregation)}">\n` +
    `<ore:isDescribedBy rdf:resource="${escapeAttribute(version.mapUrl)}"/>\n`;
  if (/^https?:\/\//i.test(version.original)) xml += `<ore:similarTo rdf:resource="${escapeAttribute(version.original)}"/>\n`;
  xml += `<dcterms:identifier>${escapeText(version.original)}</dcterms:identifier>\n`;
  for (const file of version.files) xml += `<ore:aggregates rdf:resource="${escapeAttribute(file.url)}"/>\n`;
  xml += '</ore:Aggregation>\n';
  for (const file of version.files) {
    xml +=
      `<rdf:Description rdf:about="${escapeAttribute(file.url)}">\n` +
      (file.mimeType ? `<dcterms:format>${escapeText(file.mimeType)}</dcterms:format>\n` : '') +
      `<dcterms:extent rdf:datatype="${XSD}integer">${file.size}</dcterms:extent>\n` +
      '</rdf:Description>\n';
  }
  return `${xml}</rdf:RDF>\n`;
}
