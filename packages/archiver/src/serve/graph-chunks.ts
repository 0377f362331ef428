// The archive's graph in pieces of N-Triples, from the catalog rows written after a given
// point: what the SPARQL store loads to keep in step (graph-store.ts) and what `oaibag
// export-rdf` streams. The rows are read a page at a time (a keyset seek on each table's id),
// a version and a deletion come with their item's name from the catalog, and a piece is handed
// out once it holds CHUNK_CHARACTERS: memory stays flat whatever the size of the archive.
import type { Catalog } from '../catalog/catalog.js';
import {
  bagsAfter,
  deletionsAfter,
  eventsAfter,
  type GraphMarks,
  harvestsFrom,
  itemsAfter,
  NO_MARKS,
  sourcesAfter,
  versionsAfter,
} from '../catalog/graph-rows.js';
import {
  type ArchiveUris,
  describeBag,
  describeDeletion,
  describeEvent,
  describeHarvest,
  describeItem,
  describeSource,
  describeVersion,
  type GraphMove,
  mimeSetMove,
  TripleWriter,
} from './archive-graph.js';

/** Rows read per catalog query. */
const PAGE_ROWS = 2_000;
/**
 * A piece is handed out once its text has this many characters (about 7,000 triples). Pieces
 * of 4 Mi characters cost export-rdf 30 % more memory and more CPU (its garbage collection),
 * 256 Ki no less than these (bench/README.md, issue 27).
 */
const CHUNK_CHARACTERS = 1024 * 1024;

/** How a walk reads the catalog: `pageRows` rows a query, pieces of `chunkCharacters` (tests set them low). */
export interface GraphPaging {
  pageRows: number;
  chunkCharacters: number;
}

/** Where a walk of the catalog stands: what was written already. */
export class GraphProgress {
  marks: GraphMarks = NO_MARKS;
  /** The MIME sets written (a few dozen; bounded in describeItem). */
  readonly describedSets = new Set<string>();
  /** The first harvest still running at the last walk: its end and status are written again. */
  openHarvest = 1;
  readonly paging: GraphPaging;

  constructor(paging: Partial<GraphPaging> = {}) {
    this.paging = { pageRows: paging.pageRows ?? PAGE_ROWS, chunkCharacters: paging.chunkCharacters ?? CHUNK_CHARACTERS };
  }
}

/**
 * A piece of the graph: triples to add, after forgetting what the store held about `forget`;
 * then, in order, items moved to another MIME set (`moves`: a store keeping in step applies
 * them; a walk written out whole, as export-rdf's, has each item with its current set already).
 */
export interface GraphChunk {
  ntriples: string;
  forget: string[];
  /** The triples of `ntriples` (its lines). */
  triples: number;
  moves: GraphMove[];
}

/**
 * The triples of the rows written since `progress`, which it moves on as each piece is taken
 * (a walk left before its end resumes after the last piece taken).
 */
export function* graphChunks(catalog: Catalog, uris: ArchiveUris, progress: GraphProgress): Generator<GraphChunk> {
  const { pageRows, chunkCharacters } = progress.paging;
  const marks = { ...progress.marks };
  const out = new TripleWriter();
  let forget: string[] = [];
  let moves: GraphMove[] = [];
  /** The piece written so far once it is large enough (or whatever there is, at the end). */
  function* cut(end = false): Generator<GraphChunk> {
    if (!end && out.characters < chunkCharacters) return;
    if (out.triples > 0 || forget.length > 0 || moves.length > 0) {
      const triples = out.triples;
      const chunk = { ntriples: out.take(), forget, triples, moves };
      forget = [];
      moves = [];
      yield chunk;
    }
    progress.marks = { ...marks };
  }

  for (let page = sourcesAfter(catalog, marks.source, pageRows); page.length > 0; page = sourcesAfter(catalog, marks.source, pageRows)) {
    for (const source of page) {
      describeSource(out, uris, source);
      marks.source = source.id;
      yield* cut();
    }
  }
  for (let page = itemsAfter(catalog, marks.resource, pageRows); page.length > 0; page = itemsAfter(catalog, marks.resource, pageRows)) {
    for (const item of page) {
      describeItem(out, uris, item, progress.describedSets);
      marks.resource = item.id;
      yield* cut();
    }
  }
  for (let page = bagsAfter(catalog, marks.bag, pageRows); page.length > 0; page = bagsAfter(catalog, marks.bag, pageRows)) {
    for (const bag of page) {
      describeBag(out, uris, bag.bagPath, bag.harvestId);
      marks.bag = bag.id;
      yield* cut();
    }
  }
  for (let page = versionsAfter(catalog, marks.version, pageRows); page.length > 0; page = versionsAfter(catalog, marks.version, pageRows)) {
    for (const version of page) {
      describeVersion(out, uris, version);
      const move = mimeSetMove(out, uris, version, progress.describedSets);
      if (move) moves.push(move);
      marks.version = version.id;
      yield* cut();
    }
  }
  for (let page = deletionsAfter(catalog, marks.deletion, pageRows); page.length > 0; page = deletionsAfter(catalog, marks.deletion, pageRows)) {
    for (const deletion of page) {
      describeDeletion(out, uris, deletion);
      marks.deletion = deletion.id;
      yield* cut();
    }
  }
  // A harvest's end and status change until it ends: those still open are written again, in
  // the piece that forgets what was said of them.
  let firstOpen: number | undefined;
  let from = Math.min(progress.openHarvest, marks.harvest + 1);
  for (let page = harvestsFrom(catalog, from, pageRows); page.length > 0; page = harvestsFrom(catalog, from, pageRows)) {
    for (const harvest of page) {
      forget.push(uris.harvest(harvest.id));
      describeHarvest(out, uris, harvest);
      if (harvest.status === 'running' && firstOpen === undefined) firstOpen = harvest.id;
      marks.harvest = Math.max(marks.harvest, harvest.id);
      from = harvest.id + 1;
      yield* cut();
    }
  }
  for (let page = eventsAfter(catalog, marks.event, pageRows); page.length > 0; page = eventsAfter(catalog, marks.event, pageRows)) {
    for (const event of page) {
      describeEvent(out, uris, event);
      marks.event = event.id;
      yield* cut();
    }
  }
  yield* cut(true);
  progress.openHarvest = firstOpen ?? marks.harvest + 1;
}
