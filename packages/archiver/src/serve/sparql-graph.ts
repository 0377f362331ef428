// What `/sparql` and the Linked Data routes ask of the archive's graph, wherever it is held:
// the embedded store (graph-store.ts) or a remote SPARQL 1.1 store (remote-graph-store.ts).
import type { ArchiveUris } from './archive-graph.js';
import type { SparqlBounds } from './graph-store.js';

export interface SparqlGraph {
  readonly uris: ArchiveUris;
  readonly bounds: SparqlBounds;
  /** A select query gives at most this many solutions. */
  readonly rowLimit: number;
  /**
   * Runs a read-only query; the result in `mediaType` (`solutions`: a select query, cut to the
   * row limit, `truncated` saying whether it was). Rejects with a QueryFailure.
   */
  query(query: string, mediaType: string, solutions?: boolean): Promise<{ text: string; truncated: boolean }>;
  /** Whether the graph says anything about `uri`. */
  describes(uri: string): Promise<boolean>;
  close(): Promise<void>;
}
