// The archive as RDF (docs/linked-data.md): catalog rows written as N-Triples lines, the form
// the store loads fastest. URIs are minted from stable names only (bags, records, identifiers,
// harvest ids), never from catalog row ids.
import { MIME_SET_ROOT, mimeEssence, mimeSetSpec, mimeTypeForSetSpec, setNameFor, setSpecAncestors } from '@oaibag/oai-pmh';
import { bagFolders, findBagPathIn } from '../aip/layout-names.js';
import type { GraphDeletion, GraphEvent, GraphHarvest, GraphItem, GraphSource, GraphVersion } from '../catalog/graph-rows.js';
import { payloadUrlPath } from './payload-files.js';

export const NAMESPACES = {
  rdf: 'http://www.w3.org/1999/02/22-rdf-syntax-ns#',
  rdfs: 'http://www.w3.org/2000/01/rdf-schema#',
  xsd: 'http://www.w3.org/2001/XMLSchema#',
  dcterms: 'http://purl.org/dc/terms/',
  prov: 'http://www.w3.org/ns/prov#',
  ore: 'http://www.openarchives.org/ore/terms/',
  oai: 'http://www.mediaspaces.info/vocab/oai-pmh.rdf#',
  oaibag: 'urn:oaibag:terms:',
} as const;

const { rdf, xsd, dcterms, prov, ore, oai, oaibag } = NAMESPACES;
const IANA_MEDIA_TYPES = 'https://www.iana.org/assignments/media-types/';

/** The URIs of the things of an archive served at `base`. */
export class ArchiveUris {
  constructor(readonly base: string) {}
  source(id: number): string {
    return `${this.base}/resource/source/${id}`;
  }
  item(served: string): string {
    return `${this.base}/resource/item/${encodeURIComponent(served)}`;
  }
  version(bagPath: string, record: number): string {
    return `${this.base}/resource/version/${bagTail(bagPath)}/${record}`;
  }
  harvest(id: number): string {
    return `${this.base}/resource/harvest/${id}`;
  }
  bag(bagPath: string): string {
    return `${this.base}/resource/bag/${bagTail(bagPath)}`;
  }
  set(spec: string): string {
    return `${this.base}/resource/set/${encodeURIComponent(spec)}`;
  }
  /** Events live only in the catalog (reindex does not rebuild them): their row id names them. */
  event(id: number): string {
    return `${this.base}/resource/event/${id}`;
  }
  deletion(served: string, datestamp: string): string {
    return `${this.base}/resource/deletion/${encodeURIComponent(served)}/${encodeURIComponent(datestamp)}`;
  }
  file(bagPath: string, path: string): string {
    return this.base + payloadUrlPath(bagPath, path);
  }
  oreMap(bagPath: string, record: number): string {
    return `${this.base}/ore/${bagTail(bagPath)}/${record}`;
  }
}

function bagTail(bagPath: string): string {
  return bagFolders(bagPath).map(encodeURIComponent).join('/');
}

/**
 * Collects N-Triples lines. They are appended to one string rather than kept as an array joined
 * at the end: the walk of a 30,000-resource catalog measured 9.7 µs of CPU a triple with the
 * array and 6.4 with the string (less garbage, no second copy), its text encoded once.
 */
export class TripleWriter {
  private text = '';
  private count = 0;

  iri(subject: string, predicate: string, object: string): void {
    this.text += `${iri(subject)} ${iri(predicate)} ${iri(object)} .\n`;
    this.count++;
  }

  literal(subject: string, predicate: string, value: string, datatype?: string): void {
    this.text += `${iri(subject)} ${iri(predicate)} ${literal(value)}${datatype ? `^^${iri(datatype)}` : ''} .\n`;
    this.count++;
  }

  /** The triples written since the last `take`. */
  get triples(): number {
    return this.count;
  }

  /** The characters of those triples' lines (a bound of a chunk's size). */
  get characters(): number {
    return this.text.length;
  }

  /** The triples written since the last `take`, as N-Triples text; the writer starts empty again. */
  take(): string {
    const text = this.text;
    this.text = '';
    this.count = 0;
    return text;
  }
}

/**
 * The most triples a row of each kind gives (a version of one payload file; an item without
 * the MIME sets it is the first of): what the size of the graph is estimated from before it is
 * loaded (graph-store.ts). A version of several files gives three more for each.
 */
export const TRIPLES_PER_ROW = { source: 8, resource: 6, version: 10, deletion: 4, harvest: 5, bag: 3, event: 6 } as const;

/** MIME sets remembered as written: past this many, a set is written again when met (the store keeps a triple once). */
const DESCRIBED_SETS_KEPT = 10_000;

export function describeSource(out: TripleWriter, uris: ArchiveUris, source: GraphSource): void {
  const uri = uris.source(source.id);
  const set = uris.set(`source:${source.id}`);
  out.iri(uri, `${rdf}type`, `${prov}Agent`);
  out.literal(uri, `${dcterms}identifier`, source.baseUrl);
  if (source.name) out.literal(uri, `${dcterms}title`, source.name);
  if (isWebUrl(source.baseUrl)) out.iri(uri, `${oai}origin`, `${source.baseUrl}?verb=Identify`);
  out.iri(set, `${rdf}type`, `${oai}Set`);
  out.literal(set, `${oai}setSpec`, `source:${source.id}`);
  out.literal(set, `${dcterms}title`, `${source.name ?? 'repository'} (${source.baseUrl})`);
  out.iri(set, `${dcterms}source`, uri);
}

/**
 * An archived resource. `describedSets` holds the MIME sets already written (each is written
 * once, with the sets above it; a source sends any MIME types it likes, so at most
 * DESCRIBED_SETS_KEPT are remembered).
 */
export function describeItem(out: TripleWriter, uris: ArchiveUris, item: GraphItem, describedSets: Set<string>): void {
  const uri = uris.item(item.served);
  out.iri(uri, `${rdf}type`, `${oai}Item`);
  out.literal(uri, `${dcterms}identifier`, item.served);
  out.iri(uri, `${dcterms}isPartOf`, uris.set(`source:${item.sourceId}`));
  if (isWebUrl(item.identifier)) out.iri(uri, `${dcterms}source`, item.identifier);
  if (isWebUrl(item.sourceBaseUrl)) {
    const query = `?verb=GetRecord&metadataPrefix=oai_didl&identifier=${encodeURIComponent(item.identifier)}`;
    out.iri(uri, `${oai}origin`, item.sourceBaseUrl + query);
  }
  const leaf = item.mimeType === null ? null : mimeSetSpec(item.mimeType);
  if (leaf !== null) {
    out.iri(uri, `${dcterms}isPartOf`, uris.set(leaf));
    if (!describedSets.has(leaf)) describeMimeSets(out, uris, leaf, describedSets);
  }
}

/** A MIME set and the sets above it not written yet, each linked to the one above and to its IANA URI. */
function describeMimeSets(out: TripleWriter, uris: ArchiveUris, leaf: string, describedSets: Set<string>): void {
  const chain = setSpecAncestors(leaf);
  chain.forEach((spec, index) => {
    if (describedSets.has(spec)) return;
    if (describedSets.size >= DESCRIBED_SETS_KEPT) describedSets.clear();
    describedSets.add(spec);
    const set = uris.set(spec);
    out.iri(set, `${rdf}type`, `${oai}Set`);
    out.literal(set, `${oai}setSpec`, spec);
    out.literal(set, `${dcterms}title`, setNameFor(spec));
    if (index > 0) out.iri(set, `${dcterms}isPartOf`, uris.set(chain[index - 1]!));
  });
  const mimeType = mimeTypeForSetSpec(leaf);
  if (mimeType) out.iri(uris.set(leaf), `${dcterms}format`, `${IANA_MEDIA_TYPES}${mimeType}`);
}

/**
 * A version. Only what no other statement says: every triple costs memory in the store
 * (docs/linked-data.md, "Large archives"). Not written, as implied: `a prov:Entity` (the domain of
 * prov:generatedAtTime), the item's `dcterms:hasVersion` (the inverse of `dcterms:isVersionOf`)
 * and `ore:isDescribedBy` (the resource map's URI is the version's with `/ore/` for
 * `/resource/version/`).
 */
export function describeVersion(out: TripleWriter, uris: ArchiveUris, version: GraphVersion): void {
  const uri = uris.version(version.bagPath, version.record);
  out.iri(uri, `${dcterms}isVersionOf`, uris.item(version.served));
  out.literal(uri, `${dcterms}date`, version.datestamp, dateType(version.datestamp));
  out.literal(uri, `${prov}generatedAtTime`, version.storedAt, `${xsd}dateTime`);
  if (version.lastModified !== null) {
    const ms = Date.parse(version.lastModified);
    if (!Number.isNaN(ms)) out.literal(uri, `${dcterms}modified`, new Date(ms).toISOString(), `${xsd}dateTime`);
  }
  out.literal(uri, `${dcterms}extent`, String(version.size), `${xsd}integer`);
  out.iri(uri, `${dcterms}identifier`, `urn:sha256:${version.sha256}`);
  out.literal(uri, `${oaibag}change`, version.change);
  if (version.harvestId !== null) out.iri(uri, `${prov}wasGeneratedBy`, uris.harvest(version.harvestId));
  const format = version.mimeType === null ? null : mimeEssence(version.mimeType);
  if (format) out.iri(uri, `${dcterms}format`, `${IANA_MEDIA_TYPES}${format.type}/${format.subtype}`);
  for (const file of version.files) {
    const fileUri = uris.file(file.bagPath, file.path);
    out.iri(uri, `${ore}aggregates`, fileUri);
    // A version of one file has that file's size and digest: said once, of the version.
    if (version.files.length === 1) continue;
    out.literal(fileUri, `${dcterms}extent`, String(file.size), `${xsd}integer`);
    out.iri(fileUri, `${dcterms}identifier`, `urn:sha256:${file.sha256}`);
  }
}

/** A deletion: its type, prov:Invalidation, is the range of prov:qualifiedInvalidation (not written). */
export function describeDeletion(out: TripleWriter, uris: ArchiveUris, deletion: GraphDeletion): void {
  const uri = uris.deletion(deletion.served, deletion.datestamp);
  out.iri(uris.item(deletion.served), `${prov}qualifiedInvalidation`, uri);
  out.literal(uri, `${prov}atTime`, deletion.recordedAt, `${xsd}dateTime`);
  out.literal(uri, `${dcterms}date`, deletion.datestamp, dateType(deletion.datestamp));
  if (deletion.harvestId !== null) out.iri(uri, `${prov}activity`, uris.harvest(deletion.harvestId));
}

export function describeHarvest(out: TripleWriter, uris: ArchiveUris, harvest: GraphHarvest): void {
  const uri = uris.harvest(harvest.id);
  out.iri(uri, `${rdf}type`, `${prov}Activity`);
  out.iri(uri, `${prov}used`, uris.source(harvest.sourceId));
  out.literal(uri, `${prov}startedAtTime`, harvest.startedAt, `${xsd}dateTime`);
  if (harvest.endedAt !== null) out.literal(uri, `${prov}endedAtTime`, harvest.endedAt, `${xsd}dateTime`);
  out.literal(uri, `${oaibag}status`, harvest.status);
}

/**
 * An item's MIME set replaced in a store that holds the graph: every `(subject, predicate, o)`
 * whose object `o` starts with `objectPrefix` removed, then `(subject, predicate, object)` added
 * when `object` is not null. IRIs as the N-Triples write them, without the brackets.
 */
export interface GraphMove {
  subject: string;
  predicate: string;
  objectPrefix: string;
  object: string | null;
}

/**
 * When `version`'s MIME set is not its previous version's, the move that puts its item in the
 * new set (and out of any other MIME set), the new set described in `out` if it was not yet;
 * undefined otherwise. An item is written once, with the MIME type of its version current then
 * (describeItem): a later version of another type must move it, or the store keeps the old set
 * (docs/linked-data.md, "Kept in step"). A first version needs none: its item was written with it.
 */
export function mimeSetMove(out: TripleWriter, uris: ArchiveUris, version: GraphVersion, describedSets: Set<string>): GraphMove | undefined {
  if (version.previousMimeType === null) return undefined;
  const leaf = version.mimeType === null ? null : mimeSetSpec(version.mimeType);
  const before = version.previousMimeType === '' ? null : mimeSetSpec(version.previousMimeType);
  if (leaf === before) return undefined;
  if (leaf !== null && !describedSets.has(leaf)) describeMimeSets(out, uris, leaf, describedSets);
  return {
    subject: escapedIri(uris.item(version.served)),
    predicate: escapedIri(`${dcterms}isPartOf`),
    objectPrefix: escapedIri(uris.set(`${MIME_SET_ROOT}:`)),
    object: leaf === null ? null : escapedIri(uris.set(leaf)),
  };
}

/** A preservation event of the catalog: a PROV activity with its type, outcome and the bag it checked. */
export function describeEvent(out: TripleWriter, uris: ArchiveUris, event: GraphEvent): void {
  const uri = uris.event(event.id);
  out.iri(uri, `${rdf}type`, `${prov}Activity`);
  out.literal(uri, `${dcterms}type`, event.type);
  out.literal(uri, `${oaibag}outcome`, event.outcome);
  out.literal(uri, `${prov}startedAtTime`, event.at, `${xsd}dateTime`);
  if (event.detail !== null) {
    out.literal(uri, `${dcterms}description`, event.detail);
    const bag = findBagPathIn(event.detail);
    if (bag) out.iri(uri, `${prov}used`, uris.bag(bag));
  }
}

export function describeBag(out: TripleWriter, uris: ArchiveUris, bagPath: string, harvestId: number | null): void {
  const uri = uris.bag(bagPath);
  out.iri(uri, `${rdf}type`, `${oaibag}Bag`);
  out.literal(uri, `${dcterms}identifier`, bagPath);
  if (harvestId !== null) out.iri(uri, `${prov}wasGeneratedBy`, uris.harvest(harvestId));
}

/** An http(s) URL that can stand as an IRI as it is. */
function isWebUrl(value: string): boolean {
  return /^https?:\/\/[^\s<>"{}|\\^`]+$/i.test(value);
}

function dateType(value: string): string | undefined {
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/.test(value)) return `${xsd}dateTime`;
  if (/^\d{4}-\d{2}-\d{2}$/.test(value)) return `${xsd}date`;
  return undefined;
}

function iri(value: string): string {
  return `<${escapedIri(value)}>`;
}

function escapedIri(value: string): string {
  // Our URIs are percent-encoded where it matters; anything an IRI may not hold is escaped too.
  return value.replace(/[\u0000-\u0020<>"{}|\\^`]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}

function literal(value: string): string {
  return `"${value.replace(/[\\"\n\r]/g, (char) => (char === '\n' ? '\\n' : char === '\r' ? '\\r' : `\\${char}`))}"`;
}
