// The worker thread that holds the archive's SPARQL store (see graph-store.ts): a query that
// runs past the time or memory limit is stopped by terminating this thread, which WebAssembly
// code cannot be interrupted any other way. It answers one message at a time, in order, and
// says with each answer how much WebAssembly memory it holds: that memory grows and never
// shrinks, so the store ends this thread (and loads a fresh one) when a query left it large.
import { appendFileSync, readFileSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';
import { defaultGraph, initSync, namedNode, quad, Store } from 'oxigraph/web.js';
import type { GraphMove } from './archive-graph.js';
import { firstSolutions, RESULT_MEDIA_TYPES, writeSolutions } from './sparql-results.js';

export type SparqlWorkerRequest =
  /** N-Triples as UTF-8, its buffer transferred: the worker never holds them as a string. */
  | { id: number; op: 'load'; ntriples: Uint8Array }
  /** Removes every quad of `subject`; the result is how many. */
  | { id: number; op: 'forget'; subject: string }
  /** Applies the moves in order (archive-graph.ts, GraphMove); the result is the change in the number of quads. */
  | { id: number; op: 'move'; moves: GraphMove[] }
  /** Collects garbage when the process runs with --expose-gc (for measurements), and says the RSS. */
  | { id: number; op: 'collect' }
  /** The number of triples held (a count over the whole store: not sent with every answer). */
  | { id: number; op: 'size' }
  /** Replaces the named graph `graph` (serve --link-to's links) with these N-Triples, in one step; the result is the change in the number of quads. */
  | { id: number; op: 'links'; graph: string; ntriples: Uint8Array }
  /**
   * `rowLimit`: a select query, whose solutions are cut to that many. `resultLimit`: the most
   * bytes of UTF-8 the answer may have. `union`: the default graph is the union of the archive's
   * graph and the named graphs (the links of serve --link-to).
   */
  | { id: number; op: 'query'; query: string; mediaType: string; baseIri: string; rowLimit?: number; resultLimit: number; union?: boolean };

/**
 * `held`: bytes of WebAssembly memory after the request. A failure's `kind`: `query` (the query
 * is wrong, or failed as it ran), `result` (the answer is over `resultLimit`), `trap` (the
 * WebAssembly code aborted: `unreachable` when it ran out of memory; the instance may not be
 * used again).
 */
export type SparqlWorkerAnswer =
  | { id: number; ok: true; held: number; result?: string; truncated?: boolean }
  | { id: number; ok: false; held: number; kind: 'query' | 'result' | 'trap'; error: string };

// The web build's glue takes the module from us, which gives its memory (the Node build's keeps
// it to itself); both builds are the same code.
const wasm = initSync({ module: readFileSync(new URL('web_bg.wasm', import.meta.resolve('oxigraph/web.js'))) });
const store = new Store();

/**
 * For tests only (test/sparql-cap.test.ts), neither an option nor part of the documented
 * interface: `OAIBAG_TEST_SPARQL_WORKER=<fault>:<file>` appends a line to `<file>` as each
 * worker starts (how many times the store was loaded), and fault `trap` makes every load trap
 * as the WebAssembly code does when its memory cannot grow (a RuntimeError `unreachable`, as the worker sees it),
 * `die` makes the worker die while loading (an uncaught error); `none` only counts.
 */
const testFault = ((setting: string | undefined) => {
  const match = setting === undefined ? null : /^(none|trap|die):(.+)$/.exec(setting);
  if (match === null) return undefined;
  appendFileSync(match[2]!, 'started\n');
  return match[1] as 'none' | 'trap' | 'die';
})(process.env.OAIBAG_TEST_SPARQL_WORKER);

/** A string of more than `limit` bytes of UTF-8 (without encoding a long one to count). */
function tooLong(text: string, limit: number): boolean {
  return text.length > limit || (text.length * 3 > limit && Buffer.byteLength(text, 'utf8') > limit);
}

function answer(request: SparqlWorkerRequest): SparqlWorkerAnswer {
  let result: string | undefined;
  let truncated: boolean | undefined;
  if (request.op === 'size') {
    result = String(store.size);
  } else if (request.op === 'collect') {
    (globalThis as { gc?: () => void }).gc?.();
    result = String(process.memoryUsage().rss);
  } else if (request.op === 'load') {
    if (testFault === 'trap') throw Object.assign(new Error('unreachable'), { name: 'RuntimeError' });
    // In a transaction: loading without one measured 2.5 times slower (oxigraph 0.5).
    store.load(request.ntriples, { format: 'application/n-triples' });
  } else if (request.op === 'move') {
    let change = 0;
    for (const move of request.moves) {
      const subject = namedNode(move.subject);
      const predicate = namedNode(move.predicate);
      for (const held of store.match(subject, predicate, null, null)) {
        if (held.object.termType === 'NamedNode' && held.object.value.startsWith(move.objectPrefix)) {
          store.delete(held);
          change -= 1;
        }
      }
      const added = move.object === null ? undefined : quad(subject, predicate, namedNode(move.object), defaultGraph());
      if (added !== undefined && !store.has(added)) {
        store.add(added);
        change += 1;
      }
    }
    result = String(change);
  } else if (request.op === 'links') {
    // One message: no query runs between the removal and the load.
    const graph = namedNode(request.graph);
    const before = store.match(null, null, null, graph);
    for (const held of before) store.delete(held);
    if (request.ntriples.byteLength > 0) store.load(request.ntriples, { format: 'application/n-triples', to_graph_name: graph });
    result = String(store.match(null, null, null, graph).length - before.length);
  } else if (request.op === 'forget') {
    const quads = store.match(namedNode(request.subject), null, null, null);
    for (const quad of quads) store.delete(quad);
    result = String(quads.length);
  } else {
    const tooLarge = { id: request.id, ok: false, held: 0, kind: 'result', error: 'the result is too large' } as const;
    const union = request.union ? { use_default_graph_as_union: true } : {};
    if (request.rowLimit !== undefined) {
      const json = String(store.query(request.query, { results_format: RESULT_MEDIA_TYPES.json, base_iri: request.baseIri, ...union }));
      const first = firstSolutions(json, request.rowLimit);
      ({ text: result, truncated } = writeSolutions(first.solutions, request.mediaType, request.rowLimit));
      truncated ||= first.truncated;
    } else {
      result = String(store.query(request.query, { results_format: request.mediaType, base_iri: request.baseIri, ...union }));
    }
    if (tooLong(result, request.resultLimit)) return tooLarge;
  }
  return { id: request.id, ok: true, held: 0, ...(result !== undefined ? { result } : {}), ...(truncated !== undefined ? { truncated } : {}) };
}

parentPort!.on('message', (request: SparqlWorkerRequest) => {
  if (request.op === 'load' && testFault === 'die') {
    setImmediate(() => {
      throw new Error('the worker died (OAIBAG_TEST_SPARQL_WORKER)');
    });
    return;
  }
  let reply: SparqlWorkerAnswer;
  try {
    reply = answer(request);
  } catch (error) {
    const message = String((error as Error)?.message ?? error);
    // A RangeError is a string past V8's length limit (the answer, or a value in it, is too large)
    // or the stack overflowing inside the WebAssembly code, which leaves it as a trap does.
    const trap = (error as Error)?.name === 'RuntimeError' || (error instanceof RangeError && /call stack/i.test(message));
    const kind = trap ? 'trap' : error instanceof RangeError ? 'result' : 'query';
    reply = { id: request.id, ok: false, held: 0, kind, error: message.split('\n')[0] ?? message };
  }
  reply.held = wasm.memory.buffer.byteLength;
  parentPort!.postMessage(reply);
});
parentPort!.postMessage({ id: 0, ok: true, held: wasm.memory.buffer.byteLength } satisfies SparqlWorkerAnswer);
