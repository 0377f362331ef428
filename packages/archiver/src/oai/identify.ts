import { NS, type XmlTag } from '@oaibag/didl';
import { RIGHTS_NAMESPACE } from '@oaibag/oai-pmh';
import { ArchiverError } from '../core/errors.js';
import { shown } from '../core/remote-text.js';
import { scanXmlSpans, standaloneElement } from '../core/xml-spans.js';

const OAI_NAMESPACE = NS.oai;

import type { OaiClient } from './oai-client.js';
import { elementBlocks, textElements } from './text-elements.js';

/** What a source's Identify response said, as recorded (the catalog keeps them, see Catalog.upsertSource). */
export interface IdentifyFacts {
  repositoryName?: string;
  /** `YYYY-MM-DD` or `YYYY-MM-DDThh:mm:ssZ`. */
  granularity?: string;
  earliestDatestamp?: string;
  /** `no`, `transient` or `persistent`. */
  deletedRecord?: string;
  /** Content encodings offered (`gzip`, `deflate`). */
  compression?: readonly string[];
  /** The OAI-rights `rightsManifest` of Identify's descriptions, as received (standalone XML). */
  rightsManifest?: string;
}

const MAX_SMALL_RESPONSE = 1 << 20;

/** What the prefix asked for must be: a DIDL format (a harvest), or any format offered (a listing of identifiers). */
export type FormatExpected = 'didl' | 'any';

/**
 * Identify and ListMetadataFormats: is this an OAI-PMH repository, what are its facts
 * (granularity, earliestDatestamp, deletedRecord, compression), and does it offer the
 * prefix we harvest, as MPEG-21 DIDL (`expected` 'didl', the default): a prefix it does not
 * offer, or offers in another namespace (`oai_dc`), is ERR_HARVEST_FORMAT before anything is
 * stored. These answers are small, read whole (at most 1 MiB, a larger one is
 * ERR_HARVEST_NOT_OAI naming the limit), and read in time linear in their size whatever
 * their shape (text-elements.ts, the XML tokenizer): milliseconds, so nothing as long as a
 * parse keeps a SIGTERM waiting.
 */
export async function identifyRepository(client: OaiClient, prefix: string, expected: FormatExpected = 'didl'): Promise<IdentifyFacts> {
  // One after the other, not at once: a source that is down then gives one retry line per
  // retry (two requests at once printed each retry twice), for one more round trip.
  const identify = await smallResponse(client, { verb: 'Identify' });
  if (!/<OAI-PMH[\s>]/.test(identify) || !/<Identify[\s>]/.test(identify)) {
    throw new ArchiverError('ERR_HARVEST_NOT_OAI', `${client.endpoint.href} did not answer Identify as an OAI-PMH repository`, {
      hint: 'give the OAI-PMH base URL, e.g. https://example.org/oai',
    });
  }
  const facts: IdentifyFacts = {
    ...optional('repositoryName', element(identify, 'repositoryName')),
    ...optional('granularity', element(identify, 'granularity')),
    ...optional('earliestDatestamp', element(identify, 'earliestDatestamp')),
    ...optional('deletedRecord', element(identify, 'deletedRecord')),
    compression: textElements(identify, 'compression'),
    ...optional('rightsManifest', rightsManifestOf(identify)),
  };
  const formats = await smallResponse(client, { verb: 'ListMetadataFormats' });
  const prefixes = textElements(formats, 'metadataPrefix');
  if (!prefixes.includes(prefix)) {
    // DSpace and DARE-style repositories offer DIDL under the prefix `didl`: say so.
    const didl = didlPrefixes(formats).filter((candidate) => candidate !== prefix);
    throw new ArchiverError(
      'ERR_HARVEST_FORMAT',
      `${client.endpoint.href} does not offer the metadata format ${shown(prefix, 80)} (it offers ${shown(prefixes.join(', ')) || 'none'})`,
      {
        ...(didl.length > 0 ? { hint: `it offers MPEG-21 DIDL as ${didl.join(', ')}: harvest with --prefix ${didl[0]}` } : {}),
      },
    );
  }
  if (expected === 'didl') refuseOtherNamespace(client, formats, prefix);
  return facts;
}

/**
 * ERR_HARVEST_FORMAT for an offered prefix whose metadataNamespace is not MPEG-21 DIDL's (the
 * one namespace the didl package reads): harvested, each of its records would fail.
 */
function refuseOtherNamespace(client: OaiClient, formats: string, prefix: string): void {
  const block = elementBlocks(formats, 'metadataFormat').find((candidate) => textElements(candidate, 'metadataPrefix').includes(prefix));
  const namespace = block === undefined ? undefined : element(block, 'metadataNamespace');
  if (namespace === NS.didl) return;
  const didl = didlPrefixes(formats);
  throw new ArchiverError(
    'ERR_HARVEST_FORMAT',
    `${client.endpoint.href} offers ${shown(prefix, 80)} in the namespace ${namespace === undefined ? '(none given)' : shown(namespace, 200)}, not MPEG-21 DIDL (${NS.didl})`,
    { hint: didl.length > 0 ? `harvest with --prefix ${didl[0]}` : 'oaibag harvests DIDL records only (docs/didl-profile.md)' },
  );
}

/** The rightsManifest an Identify answer carries in a `<description>`, standalone; undefined for none (or malformed XML). */
function rightsManifestOf(identify: string): string | undefined {
  if (!identify.includes(RIGHTS_NAMESPACE)) return undefined;
  let found: string | undefined;
  let pending: { tag: XmlTag; start: number; end: number; depth: number } | undefined;
  let depth = 0;
  let inDescription = 0;
  try {
    scanXmlSpans(identify, {
      open(tag, start, end) {
        depth++;
        if (tag.uri === OAI_NAMESPACE && tag.local === 'description') inDescription = depth;
        else if (!found && inDescription === depth - 1 && tag.uri === RIGHTS_NAMESPACE && tag.local === 'rightsManifest') {
          pending = { tag, start, end, depth };
        }
      },
      close(_name, _start, end) {
        if (pending && depth === pending.depth) {
          found = standaloneElement(identify, pending.tag, pending.start, pending.end, end);
          pending = undefined;
        }
        if (depth === inDescription) inDescription = 0;
        depth--;
      },
    });
  } catch {
    return undefined;
  }
  return found;
}
/** A date for the repository: day granularity repositories get `YYYY-MM-DD`. */
export function dateAtGranularity(datestamp: string, granularity: string | null | undefined): string {
  return granularity === 'YYYY-MM-DD' ? datestamp.slice(0, 10) : datestamp;
}

function smallResponse(client: OaiClient, args: Record<string, string>): Promise<string> {
  return client.oaiText(args, MAX_SMALL_RESPONSE);
}

/** The prefixes whose metadataNamespace is MPEG-21 DIDL's. */
function didlPrefixes(formats: string): string[] {
  return elementBlocks(formats, 'metadataFormat')
    .filter((block) => textElements(block, 'metadataNamespace').includes(NS.didl))
    .flatMap((block) => textElements(block, 'metadataPrefix'));
}

function element(xml: string, name: string): string | undefined {
  return textElements(xml, name)[0];
}

function optional<K extends string>(key: K, value: string | undefined): Partial<Record<K, string>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, string>);
}
