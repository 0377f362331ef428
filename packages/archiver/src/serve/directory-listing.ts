// What `/directory` and `/all` list (docs/linked-data.md, "Directory and /all"): the kinds of
// things the archive's graph describes, how many of each (bounded), and a page of the members
// of one kind after a position, read from the catalog (catalog/directory-queries.ts), never from
// the SPARQL store, so that they answer at any size of archive. One model for both: the HTML
// pages (directory-pages.ts) and the RDF (directory-rdf.ts) write the same listing.
import { isValidSetSpec, MIME_SET_ROOT, mimeSetSelection, mimeSetSpec, setNameFor } from '@oaibag/oai-pmh';
import type { Catalog } from '../catalog/catalog.js';
import {
  type BoundedCount,
  countRows,
  type DirectoryTable,
  directoryBags,
  directoryDeletions,
  directoryEvents,
  directoryHarvests,
  directoryItems,
  directorySources,
  directoryVersions,
  mimeEssencesAfter,
} from '../catalog/directory-queries.js';
import { type ArchiveUris, NAMESPACES } from './archive-graph.js';
import { deletionTitle, eventTitle, harvestTitle, originalOf, sourceTitle, utcMinute, versionTitle } from './directory-labels.js';

/** Members on a page: `limit=` takes 1 to `max` (a larger one is a 400). */
export const DIRECTORY_PAGE = { default: 100, max: 1000 } as const;

/** Rows of a kind counted exactly, at most; past it the count is estimated from the largest row id. */
export const DIRECTORY_COUNT_BOUND = 10_000;

/** MIME types walked to count the sets, at most; past it the count says "more than". */
export const DIRECTORY_MIME_TYPES_COUNTED = 1000;

/** What the counts mean, said under them. */
export const COUNTED_NOTE =
  `Counts are exact up to ${DIRECTORY_COUNT_BOUND.toLocaleString('en-US')}. Past that, "about N" is the largest row id of the catalog's table ` +
  `(one lookup, where counting would read every row; rows are never deleted, so it is a bound from above), ` +
  `and the sets are counted over ${DIRECTORY_MIME_TYPES_COUNTED.toLocaleString('en-US')} MIME types at most ("more than N").`;

export type DirectoryKind = 'source' | 'set' | 'harvest' | 'bag' | 'item' | 'version' | 'deletion' | 'event';

export interface KindInfo {
  kind: DirectoryKind;
  /** A heading: `Source repositories`. */
  title: string;
  /** One line on what they are. */
  about: string;
  /** The RDF class of its members (for versions and deletions the class the graph leaves implied). */
  classIri: string;
  /** The catalog table whose rows it lists, by row id (sets have none: sources and MIME types make them). */
  table?: DirectoryTable;
}

const { prov, oai, oaibag } = NAMESPACES;

/** The kinds, in the order the directory lists them (archive-graph.ts mints a URI for each). */
export const DIRECTORY_KINDS: readonly KindInfo[] = [
  { kind: 'source', title: 'Source repositories', about: 'the OAI-PMH repositories the archive harvests', classIri: `${prov}Agent`, table: 'sources' },
  { kind: 'set', title: 'Sets', about: "each source's set and the MIME-type sets, as /oai lists them", classIri: `${oai}Set` },
  { kind: 'harvest', title: 'Harvests and imports', about: 'each run that brought records into the archive', classIri: `${prov}Activity`, table: 'harvests' },
  { kind: 'bag', title: 'Bags (AIPs)', about: 'the batch bags the versions are kept in', classIri: `${oaibag}Bag`, table: 'bags' },
  { kind: 'item', title: 'Archived resources', about: 'one per identifier of a source (an OAI-PMH item of /oai)', classIri: `${oai}Item`, table: 'resources' },
  { kind: 'version', title: 'Versions', about: 'each capture of a resource', classIri: `${prov}Entity`, table: 'versions' },
  { kind: 'deletion', title: 'Deletions', about: 'each time a source said a resource was deleted', classIri: `${prov}Invalidation`, table: 'deletions' },
  { kind: 'event', title: 'Preservation events', about: 'the fixity checks of oaibag verify', classIri: `${prov}Activity`, table: 'events' },
];

export function kindInfo(kind: string): KindInfo | undefined {
  return DIRECTORY_KINDS.find((info) => info.kind === kind);
}

/** One thing of a kind, as a page lists it. */
export interface DirectoryMember {
  /** Its URI (`B/resource/…`). */
  uri: string;
  /** Its tail after `/resource/`: its page is `B/page/<tail>`. */
  tail: string;
  /** What people call it. */
  label: string;
  /** A few words more (its change, status, size), or ''. */
  detail: string;
}

export interface DirectoryPage {
  kind: KindInfo;
  members: DirectoryMember[];
  /** The position of the next page (`after=`), when there is one. */
  next?: string;
}

/** A request's bad paging parameter: a 400 with this one line. */
export class DirectoryRequestError extends Error {
  readonly code = 'ERR_ARCHIVE_USAGE';
}

/** A kind's count, bounded: exact, about (at most) that many, or more than that many. */
export interface KindCount {
  count: number;
  /** `exact`; `at-most`: estimated from the largest row id; `more-than`: counted no further. */
  precision: 'exact' | 'at-most' | 'more-than';
}

/** How many of a kind there are, bounded (DIRECTORY_COUNT_BOUND rows counted, DIRECTORY_MIME_TYPES_COUNTED types walked). */
export function countKind(catalog: Catalog, info: KindInfo): KindCount {
  if (info.table) return fromBounded(countRows(catalog, info.table, DIRECTORY_COUNT_BOUND));
  const sources = countRows(catalog, 'sources', DIRECTORY_COUNT_BOUND);
  const essences = mimeEssencesAfter(catalog, '', DIRECTORY_MIME_TYPES_COUNTED + 1);
  const walked = essences.slice(0, DIRECTORY_MIME_TYPES_COUNTED);
  const specs = new Set<string>();
  for (const essence of walked) {
    const leaf = mimeSetSpec(essence);
    if (leaf === null) continue;
    specs.add(MIME_SET_ROOT);
    specs.add(majorOf(leaf));
    specs.add(leaf);
  }
  const count = sources.count + specs.size;
  if (!sources.exact) return { count, precision: 'at-most' };
  return { count, precision: essences.length > DIRECTORY_MIME_TYPES_COUNTED ? 'more-than' : 'exact' };
}

function fromBounded(bounded: BoundedCount): KindCount {
  return { count: bounded.count, precision: bounded.exact ? 'exact' : 'at-most' };
}

/** `12`, `about 1,000,978`, `more than 1,200`. */
export function countText(count: KindCount): string {
  const number = count.count.toLocaleString('en-US');
  return count.precision === 'exact' ? number : count.precision === 'at-most' ? `about ${number}` : `more than ${number}`;
}

/** The page size of `limit=` (default DIRECTORY_PAGE.default); a DirectoryRequestError for anything but 1 to DIRECTORY_PAGE.max. */
export function pageLimit(value: string | null): number {
  if (value === null || value === '') return DIRECTORY_PAGE.default;
  if (!/^\d{1,7}$/.test(value) || Number(value) < 1 || Number(value) > DIRECTORY_PAGE.max) {
    throw new DirectoryRequestError(`limit must be a whole number from 1 to ${DIRECTORY_PAGE.max}, not ${shown(value)}`);
  }
  return Number(value);
}

/** A set's position: after a source's set (its id), the MIME root, a major type or a MIME type. */
type SetPosition = { phase: 'source'; id: number } | { phase: 'mime'; essence: string; major: string | undefined; leaf: string | undefined; root: boolean };

/**
 * The members of `kind` after the position `after` (null: from the first), at most `limit`;
 * `next` is set when more follow. A position that cannot be one is a DirectoryRequestError.
 */
export function listKind(catalog: Catalog, uris: ArchiveUris, info: KindInfo, after: string | null, limit: number): DirectoryPage {
  const position = after === null || after === '' ? undefined : after;
  if (info.kind === 'set') return setsPage(catalog, uris, info, position, limit);
  const from = position === undefined ? 0 : rowPosition(position);
  // One more than the page: whether a next page exists, without a count.
  const rows = membersAfter(catalog, uris, info.kind, from, limit + 1);
  const members = rows.slice(0, limit).map((row) => row.member);
  return { kind: info, members, ...(rows.length > limit ? { next: String(rows[limit - 1]!.id) } : {}) };
}

function rowPosition(value: string): number {
  if (!/^\d{1,16}$/.test(value) || !Number.isSafeInteger(Number(value))) {
    throw new DirectoryRequestError(`after must be a whole number (the position a page's next link gives), not ${shown(value)}`);
  }
  return Number(value);
}

function membersAfter(catalog: Catalog, uris: ArchiveUris, kind: DirectoryKind, after: number, limit: number): Array<{ id: number; member: DirectoryMember }> {
  const member = (id: number, uri: string, label: string, detail = '') => ({ id, member: { uri, tail: tailOf(uris, uri), label, detail } });
  switch (kind) {
    case 'source':
      return directorySources(catalog, after, limit).map((s) => member(s.id, uris.source(s.id), sourceTitle(s.baseUrl, s.name)));
    case 'harvest':
      return directoryHarvests(catalog, after, limit).map((h) =>
        member(
          h.id,
          uris.harvest(h.id),
          harvestTitle(h, { baseUrl: h.sourceBaseUrl, name: h.sourceName }),
          `${h.status}${h.endedAt ? `, ended ${utcMinute(h.endedAt)}` : ''}`,
        ),
      );
    case 'bag':
      return directoryBags(catalog, after, limit).map((b) =>
        member(
          b.id,
          uris.bag(b.bagPath),
          b.bagPath,
          `${b.records} record${b.records === 1 ? '' : 's'}${b.harvestId !== null ? `, harvest ${b.harvestId}` : ''}`,
        ),
      );
    case 'item':
      return directoryItems(catalog, after, limit).map((i) => member(i.id, uris.item(i.served), i.served, i.deleted ? 'deleted' : ''));
    case 'version':
      return directoryVersions(catalog, after, limit).map((v) =>
        member(v.id, uris.version(v.bagPath, v.record), versionTitle(originalOf(v.served), v.storedAt), `${v.change}, ${v.size.toLocaleString('en-US')} bytes`),
      );
    case 'deletion':
      return directoryDeletions(catalog, after, limit).map((d) =>
        member(d.id, uris.deletion(d.served, d.datestamp), deletionTitle(originalOf(d.served), d.recordedAt), `datestamp ${d.datestamp}`),
      );
    case 'event':
      return directoryEvents(catalog, after, limit).map((e) => member(e.id, uris.event(e.id), eventTitle(e.type, e.outcome, e.at)));
    default:
      return [];
  }
}

/**
 * Sets in the order `/directory/set` lists them: each source's set by source id, then the MIME
 * root, and for each MIME type of the items (in essence order) its major type's set when it is
 * new, then its own. The position is the last set's spec.
 */
function setsPage(catalog: Catalog, uris: ArchiveUris, info: KindInfo, after: string | undefined, limit: number): DirectoryPage {
  const specs: Array<{ spec: string; title: string }> = [];
  let position = after === undefined ? ({ phase: 'source', id: 0 } as SetPosition) : setPosition(after);
  if (position.phase === 'source') {
    for (const source of directorySources(catalog, position.id, limit + 1)) {
      specs.push({ spec: `source:${source.id}`, title: `${source.name ?? 'repository'} (${source.baseUrl})` });
    }
    position = { phase: 'mime', essence: '', major: undefined, leaf: undefined, root: true };
  }
  let { essence, major, leaf, root } = position;
  while (specs.length <= limit) {
    const wanted = limit + 1 - specs.length;
    const essences = mimeEssencesAfter(catalog, essence, wanted);
    for (const next of essences) {
      essence = next;
      const spec = mimeSetSpec(next);
      if (spec === null) continue;
      if (root) {
        specs.push({ spec: MIME_SET_ROOT, title: setNameFor(MIME_SET_ROOT) });
        root = false;
      }
      if (majorOf(spec) !== major) {
        major = majorOf(spec);
        specs.push({ spec: major, title: setNameFor(major) });
      }
      if (spec !== leaf) {
        leaf = spec;
        specs.push({ spec, title: setNameFor(spec) });
      }
    }
    if (essences.length < wanted) break;
  }
  const members = specs.slice(0, limit).map(({ spec, title }) => {
    const uri = uris.set(spec);
    return { uri, tail: tailOf(uris, uri), label: title, detail: spec };
  });
  return { kind: info, members, ...(specs.length > limit ? { next: specs[limit - 1]!.spec } : {}) };
}

function setPosition(value: string): SetPosition {
  const source = /^source:(\d{1,16})$/.exec(value);
  if (source && Number.isSafeInteger(Number(source[1]))) return { phase: 'source', id: Number(source[1]) };
  const selection = isValidSetSpec(value) ? mimeSetSelection(value) : null;
  if (selection === null) throw new DirectoryRequestError(`after must be a set's spec (the position a page's next link gives), not ${shown(value)}`);
  if (selection.type === undefined) return { phase: 'mime', essence: '', major: undefined, leaf: undefined, root: false };
  if (selection.subtype === undefined) return { phase: 'mime', essence: `${selection.type}/`, major: value, leaf: undefined, root: false };
  return { phase: 'mime', essence: `${selection.type}/${selection.subtype}`, major: majorOf(value), leaf: value, root: false };
}

/** `mime:image` of `mime:image:png`. */
function majorOf(leaf: string): string {
  return leaf.split(':').slice(0, 2).join(':');
}

function tailOf(uris: ArchiveUris, uri: string): string {
  return uri.slice(`${uris.base}/resource/`.length);
}

/** A value from the request in an error line: quoted, and cut short. */
function shown(value: string): string {
  return JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value);
}
