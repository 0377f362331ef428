// The archive's graph in an in-memory SPARQL store (the `oxigraph` package, WebAssembly), built
// from the catalog and kept in step with it: `sync` adds the rows written since the last call
// (docs/linked-data.md, "SPARQL"). Loaded only when `serve` first needs it, so no other
// command pays for the WebAssembly.
import type { Store } from 'oxigraph';
import type { Catalog } from '../catalog/catalog.js';
import {
  bagsAfter,
  deletionsAfter,
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
  describeHarvest,
  describeItem,
  describeSource,
  describeVersion,
  TripleWriter,
} from './archive-graph.js';

type Oxigraph = typeof import('oxigraph');

/** Versions read per catalog query while syncing. */
const VERSION_BATCH = 10_000;
/** A sync reads the catalog at most this often (queries in a burst share one). */
const SYNC_EVERY_MS = 1000;

export class GraphStore {
  private marks: GraphMarks = NO_MARKS;
  private readonly items = new Map<number, GraphItem>();
  private readonly sourceUrls = new Map<number, string>();
  /** The first harvest still running at the last sync: its end and status are written again. */
  private openHarvest = 1;
  private syncedAt = 0;

  private constructor(
    readonly oxigraph: Oxigraph,
    readonly store: Store,
    private readonly catalog: Catalog,
    readonly uris: ArchiveUris,
  ) {}

  static async open(catalog: Catalog, uris: ArchiveUris): Promise<GraphStore> {
    const module = (await import('oxigraph')) as Oxigraph & { default?: Oxigraph };
    const oxigraph = module.default ?? module;
    const graph = new GraphStore(oxigraph, new oxigraph.Store(), catalog, uris);
    graph.sync(true);
    return graph;
  }

  /** Number of triples held. */
  get size(): number {
    return this.store.size;
  }

  /** Adds what the catalog recorded since the last sync (at most once a second unless `force`). */
  sync(force = false): void {
    const now = Date.now();
    if (!force && now - this.syncedAt < SYNC_EVERY_MS) return;
    this.syncedAt = now;
    const out = new TripleWriter();
    const marks = { ...this.marks };
    for (const source of sourcesAfter(this.catalog, marks.source)) {
      describeSource(out, this.uris, source);
      this.sourceUrls.set(source.id, source.baseUrl);
      marks.source = source.id;
    }
    for (const item of itemsAfter(this.catalog, marks.resource)) {
      describeItem(out, this.uris, item, this.sourceUrls.get(item.sourceId));
      this.items.set(item.id, item);
      marks.resource = item.id;
    }
    for (const bag of bagsAfter(this.catalog, marks.bag)) {
      describeBag(out, this.uris, bag.bagPath, bag.harvestId);
      marks.bag = bag.id;
    }
    this.load(out);
    for (;;) {
      const versions = versionsAfter(this.catalog, marks.version, VERSION_BATCH);
      if (versions.length === 0) break;
      const batch = new TripleWriter();
      for (const version of versions) {
        const item = this.items.get(version.resourceId);
        if (item) describeVersion(batch, this.uris, version, item);
        marks.version = version.id;
      }
      this.load(batch);
    }
    const tail = new TripleWriter();
    for (const deletion of deletionsAfter(this.catalog, marks.deletion)) {
      const item = this.items.get(deletion.resourceId);
      if (item) describeDeletion(tail, this.uris, deletion, item);
      marks.deletion = deletion.id;
    }
    // A harvest's end and status change until it ends: those still open are written again.
    let firstOpen: number | undefined;
    for (const harvest of harvestsFrom(this.catalog, Math.min(this.openHarvest, marks.harvest + 1))) {
      const uri = this.uris.harvest(harvest.id);
      for (const quad of this.store.match(this.oxigraph.namedNode(uri), null, null, null)) this.store.delete(quad);
      describeHarvest(tail, this.uris, harvest);
      if (harvest.status === 'running' && firstOpen === undefined) firstOpen = harvest.id;
      marks.harvest = Math.max(marks.harvest, harvest.id);
    }
    this.openHarvest = firstOpen ?? marks.harvest + 1;
    this.load(tail);
    this.marks = marks;
  }

  private load(out: TripleWriter): void {
    const text = out.text();
    if (text !== '') this.store.load(text, { format: 'application/n-triples', no_transaction: true });
  }
}
