// The `about` containers of a record `oaibag serve` disseminates (docs/serve.md, "Provenance and
// rights"): first our provenance (the OAI-PMH provenance schema), which nests the provenance the
// record came with, then every other `about` the record came with, byte for byte (OAI-rights
// among them).
import { escapeAttribute, escapeText, NS } from '@oaibag/didl';
import { scanXmlSpans, standaloneElement } from '../core/xml-spans.js';

export const PROVENANCE_NAMESPACE = 'http://www.openarchives.org/OAI/2.0/provenance';
const PROVENANCE_SCHEMA = 'http://www.openarchives.org/OAI/2.0/provenance.xsd';

export interface Origin {
  /** The base URL of the repository the archive harvested the record from. */
  baseUrl: string;
  identifier: string;
  /** The record's datestamp there. */
  datestamp: string;
  /** When the archive ingested it (`YYYY-MM-DDThh:mm:ssZ`). */
  harvestDate: string;
  /** The namespace of the format harvested (MPEG-21 DIDL). */
  metadataNamespace: string;
}

/**
 * The record's `about` containers as served: our provenance, then the ones it came with except
 * its provenance, which is nested in ours (one `originDescription` per hop).
 */
export function servedAbout(origin: Origin, received: readonly string[]): string {
  let nested = '';
  const others: string[] = [];
  for (const about of received) {
    const description = originDescriptionOf(about);
    if (description === undefined) others.push(about);
    else if (nested === '') nested = description;
  }
  // altered="true": what is served is never the bytes harvested (refs point to the archive's
  // copies, and the other formats are derived from the DIDL).
  const provenance =
    `<about><provenance xmlns="${PROVENANCE_NAMESPACE}" xmlns:xsi="${NS.xsi}" xsi:schemaLocation="${PROVENANCE_NAMESPACE} ${PROVENANCE_SCHEMA}">\n` +
    `<originDescription harvestDate="${escapeAttribute(origin.harvestDate)}" altered="true">\n` +
    `<baseURL>${escapeText(origin.baseUrl)}</baseURL>\n<identifier>${escapeText(origin.identifier)}</identifier>\n` +
    `<datestamp>${escapeText(origin.datestamp)}</datestamp>\n<metadataNamespace>${escapeText(origin.metadataNamespace)}</metadataNamespace>\n` +
    (nested === '' ? '' : `${nested}\n`) +
    '</originDescription>\n</provenance></about>\n';
  return provenance + others.map((about) => `${about}\n`).join('');
}

/** The `originDescription` of an `about` that holds a provenance, standalone; undefined otherwise. */
function originDescriptionOf(about: string): string | undefined {
  let depth = 0;
  let found: string | undefined;
  let isProvenance = false;
  let open: { tag: Parameters<typeof standaloneElement>[1]; start: number; openEnd: number } | undefined;
  scanXmlSpans(about, {
    open(tag, start, end) {
      depth++;
      if (depth === 2) isProvenance = tag.uri === PROVENANCE_NAMESPACE && tag.local === 'provenance';
      if (depth === 3 && isProvenance && tag.uri === PROVENANCE_NAMESPACE && tag.local === 'originDescription' && !found) open = { tag, start, openEnd: end };
    },
    close(_name, _start, end) {
      if (depth === 3 && open) {
        found = standaloneElement(about, open.tag, open.start, open.openEnd, end);
        open = undefined;
      }
      depth--;
    },
  });
  return found;
}
