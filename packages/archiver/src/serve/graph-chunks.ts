// The archive's graph in pieces of N-Triples, from the catalog rows written after a given
// point: what the SPARQL store loads to keep in step (graph-store.ts) and what `oaibag
// export-rdf` streams. Each piece is small (a few thousand versions), so memory stays bounded.
import type { Catalog } from '../catalog/catalog.js';
import {
  bagsAfter,
  deletionsAfter,
  eventsAfter,
  type GraphItem,
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
  TripleWriter,
} from './archive-graph.js';

/** Versions read per catalog query. */
const VERSION_BATCH = 2_000;

/** Where a walk of the catalog stands: what was written already. */
export class GraphProgress {
  marks: GraphMarks = NO_MARKS;
  readonly items = new Map<number, GraphItem>();
  readonly sourceUrls = new Map<number, string>();
  readonly describedSets = new Set<string>();
  /** The first harvest still running at the last walk: its end and status are written again. */
  openHarvest = 1;
}

/** A piece of the graph: triples to add, after forgetting what the store held about `forget`. */
export interface GraphChunk {
  ntriples: string;
  forget: string[];
}

/** The triples of the rows written since `progress`, which it moves on as the pieces are taken. */
export function* graphChunks(catalog: Catalog, uris: ArchiveUris, progress: GraphProgress): Generator<GraphChunk> {
  const marks = { ...progress.marks };
  const out = new TripleWriter();
  for (const source of sourcesAfter(catalog, marks.source)) {
    describeSource(out, uris, source);
    progress.sourceUrls.set(source.id, source.baseUrl);
    marks.source = source.id;
  }
  for (const item of itemsAfter(catalog, marks.resource)) {
    describeItem(out, uris, item, progress.sourceUrls.get(item.sourceId), progress.describedSets);
    progress.items.set(item.id, item);
    marks.resource = item.id;
  }
  for (const bag of bagsAfter(catalog, marks.bag)) {
    describeBag(out, uris, bag.bagPath, bag.harvestId);
    marks.bag = bag.id;
  }
  yield { ntriples: out.text(), forget: [] };
  for (;;) {
    const versions = versionsAfter(catalog, marks.version, VERSION_BATCH);
    if (versions.length === 0) break;
    const batch = new TripleWriter();
    for (const version of versions) {
      const item = progress.items.get(version.resourceId);
      if (item) describeVersion(batch, uris, version, item);
      marks.version = version.id;
    }
    yield { ntriples: batch.text(), forget: [] };
  }
  const tail = new TripleWriter();
  for (const deletion of deletionsAfter(catalog, marks.deletion)) {
    const item = progress.items.get(deletion.resourceId);
    if (item) describeDeletion(tail, uris, deletion, item);
    marks.deletion = deletion.id;
  }
  // A harvest's end and status change until it ends: those still open are written again.
  const forget: string[] = [];
  let firstOpen: number | undefined;
  for (const harvest of harvestsFrom(catalog, Math.min(progress.openHarvest, marks.harvest + 1))) {
    forget.push(uris.harvest(harvest.id));
    describeHarvest(tail, uris, harvest);
    if (harvest.status === 'running' && firstOpen === undefined) firstOpen = harvest.id;
    marks.harvest = Math.max(marks.harvest, harvest.id);
  }
  for (const event of eventsAfter(catalog, marks.event)) {
    describeEvent(tail, uris, event);
    marks.event = event.id;
  }
  yield { ntriples: tail.text(), forget };
  progress.openHarvest = firstOpen ?? marks.harvest + 1;
  progress.marks = marks;
}
