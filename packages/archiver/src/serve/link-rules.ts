// What `serve --link-to` links and within which bounds (docs/linked-data.md, "Links between
// archives"): the other archives or SPARQL endpoints, the pairs of fields compared with their
// similarity thresholds (OAI2LOD's linking rules), the predicates written, and the bounds of
// every part a remote controls. Parsed from the options here, so that a bad rule is one usage
// line before anything is served.
import { ArchiverError } from '../core/errors.js';
import { checkHttpUrl } from '../core/http-url.js';
import { shown } from '../core/remote-text.js';
import { NAMESPACES } from './archive-graph.js';

/**
 * The codes of the linker's lines (a line on standard error, never a stop of serve):
 * - `ERR_LINK_REMOTE`: a remote did not give its values (unreachable, an HTTP error, an answer that
 *   is not SPARQL JSON results, past `--link-timeout` or `--link-answer-size`): the links to it
 *   made last are kept, and it is asked again at the next refresh.
 * - `ERR_LINK_LOCAL`: the archive's own graph could not be read for linking (its store refused or
 *   failed a query): every link made last is kept.
 * - `ERR_LINK_LIMIT`: a bound was reached (`--link-max-rows`, `--link-max-comparisons`,
 *   `--link-max-links`): the links are made from what was within it, and the line names the option.
 */
export type LinkErrorCode = 'ERR_LINK_REMOTE' | 'ERR_LINK_LOCAL' | 'ERR_LINK_LIMIT';

/** One pair of fields compared: this archive's `local` predicate against the remote's `remote`, linked at `threshold` or above. */
export interface LinkRule {
  local: string;
  remote: string;
  /** Normalized Levenshtein similarity, 1 - distance / longer length, in (0, 1]; 1 is equality. */
  threshold: number;
}

export interface LinkBounds {
  /** Each request to a remote (or a page of the archive's own graph) is abandoned after this long. */
  timeoutMs: number;
  /** The most bytes of one answer. */
  answerBytes: number;
  /** Rows asked for in one request. */
  pageRows: number;
  /** The most rows read from each side for each rule (and for the digests). */
  maxRows: number;
  /** Values are cut to this many characters before they are compared by similarity. */
  valueLength: number;
  /** A word shared by more than this many remote values is not a block (too common to tell values apart). */
  blockSize: number;
  /** Candidate pairs looked at for the similarity rules, for each remote at each refresh. */
  maxComparisons: number;
  /** Links made to each remote. */
  maxLinks: number;
}

export const LINK_BOUND_DEFAULTS: Readonly<LinkBounds> = {
  timeoutMs: 30_000,
  answerBytes: 16 * 1024 * 1024,
  pageRows: 1000,
  maxRows: 100_000,
  valueLength: 256,
  blockSize: 1000,
  maxComparisons: 20_000_000,
  maxLinks: 100_000,
};

/** The links are recomputed this often (and when the archive's catalog changes). */
export const LINK_REFRESH_DEFAULT_MS = 3600_000;

/** The predicate of items linked by a field rule (prov:alternateOf: see docs/linked-data.md for why not owl:sameAs). */
export const LINK_PREDICATE_DEFAULT = `${NAMESPACES.prov}alternateOf`;
/** The predicate of things whose bytes are identical (the same SHA-256). */
export const SAME_BYTES_PREDICATE = `${NAMESPACES.oaibag}sameBytesAs`;
/** The rule without `--link-on`: an item's original URL equal to the remote's. */
export const DEFAULT_LINK_RULES: readonly LinkRule[] = [{ local: `${NAMESPACES.dcterms}source`, remote: `${NAMESPACES.dcterms}source`, threshold: 1 }];

export interface LinkOptions {
  /** The SPARQL endpoints linked to (`--link-to` resolved, `--link-endpoint`). */
  endpoints: string[];
  /** Default DEFAULT_LINK_RULES. */
  rules?: LinkRule[];
  /** Link versions and files of identical bytes (default true). */
  bytes?: boolean;
  /** The predicate of a field rule's links (default LINK_PREDICATE_DEFAULT). */
  predicate?: string;
  /** Default LINK_REFRESH_DEFAULT_MS. */
  refreshMs?: number;
  bounds?: Partial<LinkBounds>;
}

/** The prefixes a predicate may be written with (`dcterms:title`); any other is given as an IRI. */
export const LINK_PREFIXES: Readonly<Record<string, string>> = {
  ...NAMESPACES,
  dc: 'http://purl.org/dc/elements/1.1/',
  owl: 'http://www.w3.org/2002/07/owl#',
  skos: 'http://www.w3.org/2004/02/skos/core#',
  foaf: 'http://xmlns.com/foaf/0.1/',
  schema: 'https://schema.org/',
};

/** An IRI that can stand between < and > in SPARQL and N-Triples. */
const IRI = /^[A-Za-z][A-Za-z0-9+.-]*:[^\s<>"{}|\\^`]+$/;

/** A predicate as `--link-on` and `--link-predicate` write it: `prefix:name`, `<IRI>` or an absolute IRI. Throws ERR_ARCHIVE_USAGE. */
export function predicateIri(text: string, option: string): string {
  const bracketed = /^<(.*)>$/.exec(text)?.[1];
  const prefixed = /^([A-Za-z][A-Za-z0-9_-]*):([A-Za-z_][A-Za-z0-9_.-]*)$/.exec(text);
  const namespace = prefixed ? LINK_PREFIXES[prefixed[1]!] : undefined;
  const iri = bracketed ?? (namespace !== undefined ? namespace + prefixed![2] : text);
  if (!IRI.test(iri) || (bracketed === undefined && prefixed && namespace === undefined)) {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `${option}: ${JSON.stringify(shown(text, 100))} is not a predicate`, {
      hint: `write prefix:name (prefixes ${Object.keys(LINK_PREFIXES).join(', ')}) or a whole IRI, as http://purl.org/dc/terms/title or <urn:x:title>`,
    });
  }
  return iri;
}

/**
 * One `--link-on LOCAL=REMOTE[@THRESHOLD]`: `dcterms:source=dcterms:source@1`,
 * `dcterms:title=rdfs:label@0.9`. Without `@`, the threshold is 1 (equal). Throws ERR_ARCHIVE_USAGE.
 */
export function parseLinkRule(text: string): LinkRule {
  const match = /^([^=@\s]+)=([^=@\s]+)(?:@([^=@\s]+))?$/.exec(text.trim());
  if (!match) {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `--link-on: ${JSON.stringify(shown(text, 100))} is not LOCAL=REMOTE[@THRESHOLD]`, {
      hint: 'write two predicates and a similarity from 0 to 1, e.g. --link-on dcterms:title=rdfs:label@0.9',
    });
  }
  const threshold = match[3] === undefined ? 1 : Number(match[3]);
  if (!/^(0(\.\d+)?|1(\.0*)?|\.\d+)$/.test(match[3] ?? '1') || !(threshold > 0 && threshold <= 1)) {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `--link-on: the threshold ${JSON.stringify(shown(match[3]!, 40))} is not a number above 0 and at most 1`, {
      hint: 'the similarity is 1 - (edits / length of the longer value): 1 links equal values only, 0.9 one edit in ten characters',
    });
  }
  return { local: predicateIri(match[1]!, '--link-on'), remote: predicateIri(match[2]!, '--link-on'), threshold };
}

/**
 * The SPARQL endpoint of one `--link-to URL`: a URL whose path ends in `/sparql` is the
 * endpoint itself; any other is an oaibag archive's base URL, whose endpoint is `URL/sparql`.
 * Throws ERR_ARCHIVE_USAGE for a URL that is not http(s).
 */
export function linkEndpoint(url: string, option = '--link-to'): string {
  checkHttpUrl(url, option, { pathOnly: option === '--link-to' });
  if (option !== '--link-to') return url;
  const trimmed = url.replace(/\/+$/, '');
  return /\/sparql$/i.test(new URL(trimmed).pathname) ? trimmed : `${trimmed}/sparql`;
}
