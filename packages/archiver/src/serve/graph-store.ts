// The archive's graph in a SPARQL store (the `oxigraph` package, WebAssembly) held by a worker
// thread, built from the catalog and kept in step with it: `sync` adds the rows written since
// the last call (docs/linked-data.md, "SPARQL"). A query that runs past the time or memory
// limit is stopped by terminating the worker; a new one is loaded from the catalog again. So is
// a worker that a query left holding memory: WebAssembly memory never shrinks, and only a new
// thread gives it back. Started only when `serve` first needs it, so no other command pays for
// the WebAssembly. It holds at most `--sparql-max-quads` quads (the 32-bit WebAssembly store
// aborts near 15 million): an archive whose graph is larger, estimated before loading or found
// while keeping in step, is refused with ERR_SPARQL_TOO_LARGE and the store let go, and so is a
// worker that traps or dies while loading: never a reload in a loop.
import type { Worker } from 'node:worker_threads';
import type { Catalog } from '../catalog/catalog.js';
import { graphRowCounts } from '../catalog/graph-rows.js';
import { ArchiverError } from '../core/errors.js';
import { startWorker } from '../core/start-worker.js';
import { type ArchiveUris, TRIPLES_PER_ROW } from './archive-graph.js';
import { GraphProgress, graphChunks } from './graph-chunks.js';
import type { SparqlWorkerAnswer, SparqlWorkerRequest } from './sparql-worker.js';

/** A sync reads the catalog at most this often (queries in a burst share one). */
const SYNC_EVERY_MS = 1000;
/** How often the memory of the process is looked at while a query runs. */
const WATCH_EVERY_MS = 10;
/** A failed query that left the worker this much larger than its graph: the worker is renewed. */
const KEEP_AFTER_FAILURE = 16 * 1024 * 1024;
const MIB = 1024 * 1024;

export interface SparqlBounds {
  /** A query is stopped once the process has grown by this many bytes since it started. */
  memoryBytes: number;
  /** The most bytes (UTF-8) of an answer. */
  resultBytes: number;
  /** The most bytes (UTF-8) of a query's text. */
  queryBytes: number;
}

export const SPARQL_BOUND_DEFAULTS: Readonly<SparqlBounds> = { memoryBytes: 1024 * MIB, resultBytes: 64 * MIB, queryBytes: 64 * 1024 };

/**
 * The most quads the embedded store takes (`serve --sparql-max-quads`): well under the ~15
 * million where its 32-bit WebAssembly memory runs out (issue 27); about 2 GB of RSS.
 */
export const SPARQL_MAX_QUADS_DEFAULT = 5_000_000;

export interface GraphLimits extends Partial<SparqlBounds> {
  /** A query is stopped after this long. */
  timeoutMs: number;
  /** A select query gives at most this many solutions. */
  rowLimit: number;
  /** The most quads the store is loaded with (default SPARQL_MAX_QUADS_DEFAULT). */
  maxQuads?: number;
}

/** A size as the options write it (`256M`), for messages. */
export function sizeText(bytes: number): string {
  for (const [unit, size] of [
    ['G', 1024 * MIB],
    ['M', MIB],
    ['K', 1024],
  ] as const) {
    if (bytes >= size && bytes % size === 0) return `${bytes / size}${unit}`;
  }
  return `${bytes} bytes`;
}

/**
 * Why a query was not answered: it ran too long (`timeout`), needed too much memory (`memory`),
 * gave too large an answer (`result`), met the store while it was being loaded again after one
 * of those (`reloading`), found a remote store not answering (`unavailable`), the query itself
 * is wrong (`query`), or the store does not hold the graph (`refused`: its message ends with
 * the code, as the command's lines do).
 */
export class QueryFailure extends Error {
  constructor(
    readonly kind: 'timeout' | 'memory' | 'result' | 'reloading' | 'unavailable' | 'query' | 'refused',
    message: string,
  ) {
    super(message);
  }
}

/**
 * The quads the graph of an archive will have, about: each kind of row by the most triples it
 * gives, counted by the catalog's largest ids (one seek each). Versions of several files give
 * more: the load counts the quads it adds as well.
 */
export function estimateGraphQuads(catalog: Catalog): number {
  const rows = graphRowCounts(catalog);
  return (Object.keys(TRIPLES_PER_ROW) as Array<keyof typeof TRIPLES_PER_ROW>).reduce((sum, kind) => sum + rows[kind] * TRIPLES_PER_ROW[kind], 0);
}

const WAY_OUT = 'serve it from a SPARQL server with --sparql-store URL (docs/linked-data.md, "Large archives")';
const quadsText = (n: number) => n.toLocaleString('en-US');

/** ERR_SPARQL_TOO_LARGE: the graph (`quads`, about or `at least`) is larger than the embedded store takes; the way out named. */
export function graphTooLarge(quads: number, maxQuads: number, about: 'about' | 'at least' = 'about'): ArchiverError {
  return new ArchiverError(
    'ERR_SPARQL_TOO_LARGE',
    `the archive's graph has ${about} ${quadsText(quads)} quads, more than the embedded SPARQL store takes (${quadsText(maxQuads)}, --sparql-max-quads): ${WAY_OUT}`,
  );
}

type Pending = { op: SparqlWorkerRequest['op']; resolve: (answer: SparqlWorkerAnswer & { ok: true }) => void; reject: (error: Error) => void };

/** One worker and what it was sent: it answers in the order sent, so the first is the one it runs. */
interface Thread {
  /** Set once the one before has ended. */
  worker?: Worker;
  pending: Map<number, Pending>;
  /** WebAssembly memory held after the last load: the graph's own. */
  graphBytes: number;
  /** The query running and the process's RSS when it started. */
  running?: { id: number; rss: number } | undefined;
  watch?: NodeJS.Timeout | undefined;
  /** Set when a query left the worker large: it is renewed once it has answered all it was sent. */
  renew?: boolean;
  /** Resolves the promise queries wait on meanwhile. */
  idle?: (renewed: Promise<void>) => void;
  started?: boolean;
}

export class GraphStore {
  private thread!: Thread;
  private ready!: Promise<void>;
  private nextId = 1;
  private progress = new GraphProgress();
  private syncedAt = 0;
  private syncing: Promise<void> | undefined;
  /** While the worker is being replaced: queries wait for the fresh one. */
  private renewing: Promise<void> | undefined;
  private closed = false;
  /** Quads the worker holds (what was loaded, less what was forgotten). */
  private held = 0;
  private refusal: ArchiverError | undefined;
  /** The links of `serve --link-to` (link-keeper.ts): a named graph, loaded again into every new worker. */
  private links: { graph: string; ntriples: string } | undefined;
  readonly bounds: SparqlBounds;
  readonly maxQuads: number;

  get rowLimit(): number {
    return this.limits.rowLimit;
  }

  private constructor(
    private readonly catalog: Catalog,
    readonly uris: ArchiveUris,
    private readonly limits: GraphLimits,
  ) {
    this.bounds = {
      memoryBytes: limits.memoryBytes ?? SPARQL_BOUND_DEFAULTS.memoryBytes,
      resultBytes: limits.resultBytes ?? SPARQL_BOUND_DEFAULTS.resultBytes,
      queryBytes: limits.queryBytes ?? SPARQL_BOUND_DEFAULTS.queryBytes,
    };
    this.maxQuads = limits.maxQuads ?? SPARQL_MAX_QUADS_DEFAULT;
  }

  /** The store, loaded; or, when the graph is too large for it, one that answers every query with that refusal. */
  static async open(catalog: Catalog, uris: ArchiveUris, limits: GraphLimits): Promise<GraphStore> {
    const graph = new GraphStore(catalog, uris, limits);
    const estimate = estimateGraphQuads(catalog);
    if (estimate > graph.maxQuads) {
      graph.refusal = graphTooLarge(estimate, graph.maxQuads);
      graph.ready = Promise.resolve();
      return graph;
    }
    graph.start();
    await graph.ready;
    return graph;
  }

  /** Why the store does not hold the archive's graph (ERR_SPARQL_TOO_LARGE, or a store that failed while loading); undefined while it does. */
  get refused(): ArchiverError | undefined {
    return this.refusal;
  }

  /**
   * Runs a read-only query; the result in `mediaType` (`solutions`: a select query, cut to the
   * row limit, `truncated` saying whether it was). Rejects with a QueryFailure.
   */
  async query(query: string, mediaType: string, solutions = false): Promise<{ text: string; truncated: boolean }> {
    while (this.renewing) await this.renewing;
    await this.sync();
    while (this.renewing) await this.renewing;
    if (this.refusal) throw refusedFailure(this.refusal);
    const thread = this.thread;
    const id = this.nextId++;
    const answer = this.send({
      id,
      op: 'query',
      query,
      mediaType,
      baseIri: this.uris.base,
      resultLimit: this.bounds.resultBytes,
      ...(solutions ? { rowLimit: this.limits.rowLimit } : {}),
      // With links, the default graph is the archive's graph and the links together.
      ...(this.links ? { union: true } : {}),
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>(() => {
      timer = setTimeout(() => {
        // The worker is busy in WebAssembly: only ending the thread stops it.
        const seconds = this.limits.timeoutMs / 1000;
        this.restart(thread, id, new QueryFailure('timeout', `the query ran past the time limit (${seconds} s) and was stopped`));
      }, this.limits.timeoutMs);
    });
    try {
      const result = await Promise.race([answer, timeout]);
      return { text: result.result ?? '', truncated: result.truncated === true };
    } finally {
      clearTimeout(timer);
    }
  }

  /** Whether the graph says anything about `uri`. */
  async describes(uri: string): Promise<boolean> {
    return JSON.parse((await this.query(`ask { <${uri}> ?p ?o }`, 'application/sparql-results+json')).text).boolean === true;
  }

  /** Adds what the catalog recorded since the last sync (at most once a second unless `force`). */
  sync(force = false): Promise<void> {
    if (this.refusal) return Promise.resolve();
    if (this.syncing) return this.syncing;
    const now = Date.now();
    if (!force && now - this.syncedAt < SYNC_EVERY_MS) return this.ready;
    this.syncedAt = now;
    const thread = this.thread;
    this.syncing = this.ready
      .then(() => this.syncRows(thread))
      .finally(() => {
        if (this.thread === thread) this.syncing = undefined;
      });
    return this.syncing;
  }

  /**
   * Replaces the named graph `graph` with `ntriples` (the links of `serve --link-to`), in one
   * step of the worker; from then on the default graph of queries is the union of the archive's
   * graph and it. Kept, and loaded again into a worker that replaces this one.
   */
  async replaceLinks(graph: string, ntriples: string): Promise<void> {
    this.links = { graph, ntriples };
    if (this.refusal) return;
    while (this.renewing) await this.renewing;
    await this.ready;
    await this.sendLinks();
  }

  private async sendLinks(): Promise<void> {
    const links = this.links;
    if (!links || this.refusal) return;
    const ntriples = new Uint8Array(Buffer.byteLength(links.ntriples, 'utf8'));
    Buffer.from(ntriples.buffer).write(links.ntriples, 'utf8');
    this.held += Number((await this.send({ id: this.nextId++, op: 'links', graph: links.graph, ntriples })).result);
  }

  /** The number of triples held. */
  async size(): Promise<number> {
    await this.ready;
    return Number((await this.send({ id: this.nextId++, op: 'size' })).result);
  }

  /** The process's RSS after the worker collected its garbage (with --expose-gc; for benchmarks). */
  async collectGarbage(): Promise<number> {
    await this.ready;
    return Number((await this.send({ id: this.nextId++, op: 'collect' })).result);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (!this.thread) return;
    clearInterval(this.thread.watch);
    await this.thread.worker?.terminate();
  }

  /** Starts a worker (once `after`, the end of the one before, so that two never hold memory at once). */
  private start(after: Promise<unknown> = Promise.resolve()): void {
    const thread: Thread = { pending: new Map(), graphBytes: 0 };
    this.thread = thread;
    this.progress = new GraphProgress();
    this.held = 0;
    this.syncing = undefined;
    this.ready = after
      .then(() => this.spawn(thread))
      .then(() => this.syncRows(thread))
      .then(() => this.sendLinks());
  }

  private spawn(thread: Thread): Promise<void> {
    if (this.closed) return Promise.reject(new QueryFailure('reloading', 'the SPARQL store is closed'));
    // The worker's JavaScript heap holds the answers as strings (and a select query's solutions
    // parsed): bounded too, so that V8 ends the thread rather than the process.
    const heapMb = Math.max(128, Math.ceil(this.bounds.memoryBytes / MIB));
    const worker = startWorker(import.meta.url, 'serve', 'sparql-worker', { resourceLimits: { maxOldGenerationSizeMb: heapMb } });
    worker.unref();
    thread.worker = worker;
    return new Promise<void>((resolve, reject) => {
      worker.on('message', (answer: SparqlWorkerAnswer) => {
        if (answer.id === 0) {
          thread.started = true;
          return resolve();
        }
        this.answered(thread, answer);
      });
      worker.once('error', (error: Error & { code?: string }) => {
        reject(error);
        // One that never started is not started again (its failure is the store's, not a query's).
        if (this.thread !== thread || !thread.started) return;
        const first = thread.pending.keys().next();
        // Dead while loading: loading it again would end the same way.
        const loading = first.done ? undefined : thread.pending.get(first.value)?.op;
        if (loading === 'load' || loading === 'forget' || loading === 'move') {
          const outOfMemory = error.code === 'ERR_WORKER_OUT_OF_MEMORY';
          return this.refuse(thread, loadFailure(outOfMemory ? 'unreachable' : error.message.split('\n')[0]!, this.held, this.maxQuads));
        }
        // Past its heap limit (resourceLimits), V8 ends the thread: the query running asked too much.
        const failure =
          error.code === 'ERR_WORKER_OUT_OF_MEMORY'
            ? new QueryFailure('memory', this.memoryMessage())
            : new QueryFailure('reloading', `the SPARQL store stopped (${error.message.split('\n')[0]}) and is being loaded again`);
        this.restart(thread, first.done ? undefined : first.value, failure);
      });
    });
  }

  private memoryMessage(): string {
    return `the query needed more memory than the limit (${sizeText(this.bounds.memoryBytes)}, --sparql-memory) and was stopped`;
  }

  private answered(thread: Thread, answer: SparqlWorkerAnswer): void {
    const waiting = thread.pending.get(answer.id);
    thread.pending.delete(answer.id);
    if (!waiting) return;
    if (waiting.op === 'load' || waiting.op === 'forget' || waiting.op === 'move') {
      thread.graphBytes = answer.held;
      // A trap while loading (out of memory, or a fault): the instance is not to be used again.
      if (!answer.ok) {
        this.refuse(thread, loadFailure(answer.kind === 'trap' ? answer.error : `refused: ${answer.error}`, this.held, this.maxQuads));
        waiting.reject(refusedFailure(this.refusal!));
        return;
      }
    }
    if (waiting.op === 'query') {
      // WebAssembly memory never shrinks: a worker left large by a query is replaced, after any
      // failed query that grew it, and after a successful one that grew it by a quarter of the bound.
      const grown = answer.held - thread.graphBytes;
      if ((!answer.ok && (answer.kind === 'trap' || grown > KEEP_AFTER_FAILURE)) || grown > this.bounds.memoryBytes / 4) thread.renew = true;
    }
    this.watchNext(thread);
    if (answer.ok) waiting.resolve(answer);
    else if (answer.kind === 'result') waiting.reject(new QueryFailure('result', this.resultMessage()));
    // Rust aborts with `unreachable` when the WebAssembly memory cannot grow (past 4 GiB).
    else if (answer.kind === 'trap' && answer.error === 'unreachable') waiting.reject(new QueryFailure('memory', this.memoryMessage()));
    else waiting.reject(new QueryFailure('query', answer.error));
    if (thread.renew && this.thread === thread) {
      if (thread.pending.size === 0) this.renew(thread);
      else
        this.renewing ??= new Promise((resolve) => {
          thread.idle = resolve;
        });
    }
  }

  private resultMessage(): string {
    return `the result is larger than the limit (${sizeText(this.bounds.resultBytes)}, --sparql-result-size)`;
  }

  /** Starts watching the memory of the query the worker runs next, if it runs one. */
  private watchNext(thread: Thread): void {
    const first = thread.pending.entries().next();
    if (first.done || first.value[1].op !== 'query') {
      thread.running = undefined;
      clearInterval(thread.watch);
      thread.watch = undefined;
      return;
    }
    const id = first.value[0];
    if (thread.running?.id === id) return;
    thread.running = { id, rss: process.memoryUsage.rss() };
    thread.watch ??= setInterval(() => {
      const running = thread.running;
      if (running && process.memoryUsage.rss() - running.rss > this.bounds.memoryBytes) {
        this.restart(thread, running.id, new QueryFailure('memory', this.memoryMessage()));
      }
    }, WATCH_EVERY_MS).unref();
  }

  /** Replaces a worker that has answered everything it was sent; queries wait for the new one. */
  private renew(thread: Thread): void {
    clearInterval(thread.watch);
    this.start(thread.worker?.terminate() ?? Promise.resolve());
    const renewing = this.ready.catch(() => {});
    this.renewing = renewing;
    thread.idle?.(renewing);
    void renewing.then(() => {
      if (this.renewing === renewing) this.renewing = undefined;
    });
  }

  /**
   * Stops a worker (its query `culprit` ran too long or grew too large, or it died) and loads a
   * new one from the catalog; the requests it held fail, the culprit with `failure`.
   */
  private restart(thread: Thread, culprit: number | undefined, failure: QueryFailure): void {
    if (this.thread !== thread) return;
    for (const [id, waiting] of thread.pending) {
      waiting.reject(id === culprit ? failure : new QueryFailure('reloading', 'the SPARQL store is being loaded again after a query went past a limit'));
    }
    thread.pending.clear();
    this.renew(thread);
  }

  private send(request: SparqlWorkerRequest): Promise<SparqlWorkerAnswer & { ok: true }> {
    const thread = this.thread;
    return new Promise((resolve, reject) => {
      thread.pending.set(request.id, { op: request.op, resolve, reject });
      // N-Triples go as bytes whose memory moves to the worker (no copy, nothing left here).
      thread.worker!.postMessage(request, request.op === 'load' || request.op === 'links' ? [request.ntriples.buffer as ArrayBuffer] : []);
      if (thread.pending.size === 1) this.watchNext(thread);
    });
  }

  /**
   * Loads the rows written since the last walk, piece by piece, as long as the store stays
   * within `maxQuads`; past it (a harvest grew the graph while it was served) the store is let
   * go and refuses queries. A refusal is not thrown: queries answer with it.
   */
  private async syncRows(thread: Thread): Promise<void> {
    try {
      for (const chunk of graphChunks(this.catalog, this.uris, this.progress)) {
        // A worker replaced meanwhile is loaded by its own walk of the catalog.
        if (this.thread !== thread || this.refusal) return;
        for (const subject of chunk.forget) this.held -= Number((await this.send({ id: this.nextId++, op: 'forget', subject })).result);
        if (this.held + chunk.triples > this.maxQuads) {
          return this.refuse(thread, graphTooLarge(Math.max(this.held + chunk.triples, estimateGraphQuads(this.catalog)), this.maxQuads, 'at least'));
        }
        await this.load(chunk.ntriples);
        this.held += chunk.triples;
        if (chunk.moves.length > 0) this.held += Number((await this.send({ id: this.nextId++, op: 'move', moves: chunk.moves })).result);
      }
    } catch (error) {
      if (this.refusal) return;
      throw error;
    }
  }

  private async load(text: string): Promise<void> {
    if (text === '') return;
    const bytes = new Uint8Array(Buffer.byteLength(text, 'utf8'));
    Buffer.from(bytes.buffer).write(text, 'utf8');
    await this.send({ id: this.nextId++, op: 'load', ntriples: bytes });
  }

  /** The store does not hold the graph: the worker ends (its memory back to the system) and every request waiting fails with `refusal`. */
  private refuse(thread: Thread, refusal: ArchiverError): void {
    this.refusal ??= refusal;
    const failure = refusedFailure(this.refusal);
    for (const waiting of thread.pending.values()) waiting.reject(failure);
    thread.pending.clear();
    clearInterval(thread.watch);
    thread.watch = undefined;
    void thread.worker?.terminate();
  }
}

function refusedFailure(refusal: ArchiverError): QueryFailure {
  return new QueryFailure('refused', `${refusal.message} [${refusal.code}]`);
}

/** What a worker that failed while loading (`error`: the trap's message, `unreachable` when out of memory) is reported as. */
function loadFailure(error: string, held: number, maxQuads: number): ArchiverError {
  if (error === 'unreachable') {
    return new ArchiverError(
      'ERR_SPARQL_TOO_LARGE',
      `the embedded SPARQL store ran out of memory loading the archive's graph at ${quadsText(held)} quads (--sparql-max-quads is ${quadsText(maxQuads)}): ${WAY_OUT}`,
    );
  }
  return new ArchiverError('ERR_ARCHIVE_INTERNAL', `the embedded SPARQL store failed while loading the archive's graph: ${error}`);
}
