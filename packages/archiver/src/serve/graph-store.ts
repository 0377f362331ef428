// The archive's graph in a SPARQL store (the `oxigraph` package, WebAssembly) held by a worker
// thread, built from the catalog and kept in step with it: `sync` adds the rows written since
// the last call (docs/linked-data.md, "SPARQL"). A query that runs past the time limit is
// stopped by terminating the worker; a new one is loaded from the catalog again. Started only
// when `serve` first needs it, so no other command pays for the WebAssembly.
import type { Worker } from 'node:worker_threads';
import type { Catalog } from '../catalog/catalog.js';
import { ArchiverError } from '../core/errors.js';
import { startWorker } from '../core/start-worker.js';
import type { ArchiveUris } from './archive-graph.js';
import { GraphProgress, graphChunks } from './graph-chunks.js';
import type { SparqlWorkerAnswer, SparqlWorkerRequest } from './sparql-worker.js';

/** A sync reads the catalog at most this often (queries in a burst share one). */
const SYNC_EVERY_MS = 1000;

export interface GraphLimits {
  /** A query is stopped after this long. */
  timeoutMs: number;
  /** A select query gives at most this many solutions. */
  rowLimit: number;
}

/** Why a query was not answered: it ran too long, or the query itself is wrong. */
export class QueryFailure extends Error {
  constructor(
    readonly kind: 'timeout' | 'query',
    message: string,
  ) {
    super(message);
  }
}

type Pending = { resolve: (answer: SparqlWorkerAnswer & { ok: true }) => void; reject: (error: Error) => void };

export class GraphStore {
  private worker!: Worker;
  private ready!: Promise<void>;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private progress = new GraphProgress();
  private syncedAt = 0;
  private syncing: Promise<void> | undefined;

  get rowLimit(): number {
    return this.limits.rowLimit;
  }

  private constructor(
    private readonly catalog: Catalog,
    readonly uris: ArchiveUris,
    private readonly limits: GraphLimits,
  ) {}

  static async open(catalog: Catalog, uris: ArchiveUris, limits: GraphLimits): Promise<GraphStore> {
    const graph = new GraphStore(catalog, uris, limits);
    graph.start();
    await graph.ready;
    return graph;
  }

  /**
   * Runs a read-only query; the result in `mediaType` (`solutions`: a select query, cut to the
   * row limit, `truncated` saying whether it was). Rejects with a QueryFailure.
   */
  async query(query: string, mediaType: string, solutions = false): Promise<{ text: string; truncated: boolean }> {
    await this.sync();
    const id = this.nextId++;
    const answer = this.send({
      id,
      op: 'query',
      query,
      mediaType,
      baseIri: this.uris.base,
      ...(solutions ? { rowLimit: this.limits.rowLimit } : {}),
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(new QueryFailure('timeout', `the query ran past the time limit (${this.limits.timeoutMs / 1000} s) and was stopped`));
        // The worker is busy in WebAssembly: only ending the thread stops it.
        this.restart();
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
    if (this.syncing) return this.syncing;
    const now = Date.now();
    if (!force && now - this.syncedAt < SYNC_EVERY_MS) return this.ready;
    this.syncedAt = now;
    this.syncing = this.ready
      .then(() => this.syncRows())
      .finally(() => {
        this.syncing = undefined;
      });
    return this.syncing;
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
    await this.worker.terminate();
  }

  private start(): void {
    this.worker = startWorker(import.meta.url, 'serve', 'sparql-worker');
    this.worker.unref();
    const worker = this.worker;
    const started = new Promise<void>((resolve, reject) => {
      worker.on('message', (answer: SparqlWorkerAnswer) => {
        if (answer.id === 0) return resolve();
        const waiting = this.pending.get(answer.id);
        this.pending.delete(answer.id);
        if (!waiting) return;
        if (answer.ok) waiting.resolve(answer);
        else waiting.reject(new QueryFailure('query', answer.error));
      });
      worker.once('error', reject);
    });
    this.progress = new GraphProgress();
    this.ready = started.then(() => this.syncRows());
  }

  /** Stops the worker (a query ran too long) and loads a new one from the catalog. */
  private restart(): void {
    const old = this.worker;
    for (const waiting of this.pending.values()) waiting.reject(new QueryFailure('timeout', 'the SPARQL store is being reloaded after a query ran too long'));
    this.pending.clear();
    void old.terminate();
    this.syncing = undefined;
    this.start();
  }

  private send(request: SparqlWorkerRequest): Promise<SparqlWorkerAnswer & { ok: true }> {
    return new Promise((resolve, reject) => {
      this.pending.set(request.id, { resolve, reject });
      // N-Triples go as bytes whose memory moves to the worker (no copy, nothing left here).
      this.worker.postMessage(request, request.op === 'load' ? [request.ntriples.buffer as ArrayBuffer] : []);
    });
  }

  private async syncRows(): Promise<void> {
    for (const chunk of graphChunks(this.catalog, this.uris, this.progress)) {
      for (const subject of chunk.forget) await this.send({ id: this.nextId++, op: 'forget', subject });
      await this.load(chunk.ntriples);
    }
  }

  private async load(text: string): Promise<void> {
    if (text === '') return;
    try {
      const bytes = new Uint8Array(Buffer.byteLength(text, 'utf8'));
      Buffer.from(bytes.buffer).write(text, 'utf8');
      await this.send({ id: this.nextId++, op: 'load', ntriples: bytes });
    } catch (error) {
      throw new ArchiverError('ERR_ARCHIVE_CATALOG', `the SPARQL store refused the archive's graph: ${(error as Error).message}`);
    }
  }
}
