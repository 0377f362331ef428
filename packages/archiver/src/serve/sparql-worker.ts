// The worker thread that holds the archive's SPARQL store (see graph-store.ts): a query that
// runs past the time limit is stopped by terminating this thread, which WebAssembly code
// cannot be interrupted any other way. It answers one message at a time, in order.
import { parentPort } from 'node:worker_threads';
import { RESULT_MEDIA_TYPES, type SolutionsJson, writeSolutions } from './sparql-results.js';

type Oxigraph = typeof import('oxigraph');

export type SparqlWorkerRequest =
  /** N-Triples as UTF-8, its buffer transferred: the worker never holds them as a string. */
  | { id: number; op: 'load'; ntriples: Uint8Array }
  | { id: number; op: 'forget'; subject: string }
  /** Collects garbage when the process runs with --expose-gc (for measurements), and says the RSS. */
  | { id: number; op: 'collect' }
  /** The number of triples held (a count over the whole store: not sent with every answer). */
  | { id: number; op: 'size' }
  /** `rowLimit`: a select query, whose solutions are cut to that many. */
  | { id: number; op: 'query'; query: string; mediaType: string; baseIri: string; rowLimit?: number };

export type SparqlWorkerAnswer = { id: number; ok: true; result?: string; truncated?: boolean } | { id: number; ok: false; error: string };

const module = (await import('oxigraph')) as Oxigraph & { default?: Oxigraph };
const oxigraph = module.default ?? module;
const store = new oxigraph.Store();

parentPort!.on('message', (request: SparqlWorkerRequest) => {
  try {
    let result: string | undefined;
    let truncated: boolean | undefined;
    if (request.op === 'size') {
      result = String(store.size);
    } else if (request.op === 'collect') {
      (globalThis as { gc?: () => void }).gc?.();
      result = String(process.memoryUsage().rss);
    } else if (request.op === 'load') {
      // In a transaction: loading without one measured 2.5 times slower (oxigraph 0.5).
      store.load(request.ntriples, { format: 'application/n-triples' });
    } else if (request.op === 'forget') {
      for (const quad of store.match(oxigraph.namedNode(request.subject), null, null, null)) store.delete(quad);
    } else if (request.rowLimit !== undefined) {
      const json = String(store.query(request.query, { results_format: RESULT_MEDIA_TYPES.json, base_iri: request.baseIri }));
      ({ text: result, truncated } = writeSolutions(JSON.parse(json) as SolutionsJson, request.mediaType, request.rowLimit));
    } else {
      result = String(store.query(request.query, { results_format: request.mediaType, base_iri: request.baseIri }));
    }
    parentPort!.postMessage({
      id: request.id,
      ok: true,
      ...(result !== undefined ? { result } : {}),
      ...(truncated !== undefined ? { truncated } : {}),
    } satisfies SparqlWorkerAnswer);
  } catch (error) {
    const message = String((error as Error)?.message ?? error);
    parentPort!.postMessage({ id: request.id, ok: false, error: message.split('\n')[0] ?? message } satisfies SparqlWorkerAnswer);
  }
});
parentPort!.postMessage({ id: 0, ok: true } satisfies SparqlWorkerAnswer);
