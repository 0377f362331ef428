// The archive's graph in a server-grade SPARQL 1.1 store (`serve --sparql-store URL`,
// docs/linked-data.md, "A server-grade store"), for archives past the embedded store's size.
// Queries are sent to the store's query endpoint within the bounds `/sparql` applies to the
// embedded store (time, rows, answer bytes), restricted to the archive's named graph. Writes
// keep the store in step: a follower walks the catalog every second (graph-chunks.ts, the same
// walk that loads the embedded store), sends what was committed since (`DELETE WHERE` of the
// subjects rewritten, then the triples: POSTed as N-Triples to the store's Graph Store Protocol
// endpoint when it is given, else `INSERT DATA` in bounded batches), and saves its cursor
// (store-cursor.ts) so that a restart resumes. A failed write is retried with
// backoff, logged, and shown at /metrics; queries are answered meanwhile from what the store has.
import { Catalog } from '../catalog/catalog.js';
import { lastVersionId } from '../catalog/store-cursors.js';
import { ArchiverError } from '../core/errors.js';
import { shown } from '../core/remote-text.js';
import type { ArchiveUris, GraphMove } from './archive-graph.js';
import { type GraphChunk, GraphProgress, graphChunks } from './graph-chunks.js';
import { type GraphLimits, QueryFailure, SPARQL_BOUND_DEFAULTS, type SparqlBounds, sizeText } from './graph-store.js';
import { askAnswer, readCapped, readSolutions, writeBoolean } from './remote-answers.js';
import type { SparqlGraph } from './sparql-graph.js';
import { RESULT_MEDIA_TYPES, writeSolutions } from './sparql-results.js';
import { type CursorPlace, catalogCursorPlace, cursorOf, resumedProgress } from './store-cursor.js';
import { StoreClient, type StoreCredentials, type StoreRequest } from './store-http.js';

export interface RemoteStoreOptions {
  /** The store's SPARQL 1.1 query endpoint. */
  queryUrl: string;
  /** Its update endpoint (default: the query endpoint). */
  updateUrl?: string;
  /**
   * Its SPARQL 1.1 Graph Store HTTP Protocol endpoint (Virtuoso's `/sparql-graph-crud-auth`).
   * Given, triples are POSTed there as N-Triples, which Virtuoso takes for a third of the CPU
   * of the same triples in `INSERT DATA`; the update endpoint still deletes.
   */
  dataUrl?: string;
  /** The named graph the archive's graph is written to (default `<base URL>/graph`). */
  graph?: string;
  /** The account writes (and queries, when the store asks) are sent with. */
  credentials?: StoreCredentials;
}

/** The follower looks at the catalog this often when it is in step. */
const FOLLOW_EVERY_MS = 1000;
/** After a failed write, the first wait; doubled at each failure up to the last. */
const RETRY_FIRST_MS = 1000;
const RETRY_MOST_MS = 60_000;
/** Triples (lines) and characters of one INSERT DATA: Virtuoso's SPARQL parser ran out of memory at 5,000 lines. */
const INSERT_LINES = 1000;
const INSERT_CHARACTERS = 1024 * 1024;
/**
 * Characters of one Graph Store Protocol POST (about 7,000 triples): Virtuoso spent 13 µs of
 * CPU a triple at this size, 17 at 20,000 triples and 20 at 2,000 (bench/README.md).
 */
const POST_CHARACTERS = 1024 * 1024;
/** Write requests in flight at once. */
const WRITES_IN_FLIGHT = 4;
/** The walk's pieces: one request's worth for each request in flight. */
const PIECE_CHARACTERS = WRITES_IN_FLIGHT * POST_CHARACTERS;
/** How the follower walks the catalog: pieces big enough to keep every request in flight busy. */
const PAGING = { chunkCharacters: PIECE_CHARACTERS };
/** Subjects forgotten by one request. */
const DELETE_SUBJECTS = 100;
/** Times one write is sent when the connection fails under it. */
const REQUEST_ATTEMPTS = 3;
/** A write request is abandoned after this long. */
const WRITE_TIMEOUT_MS = 120_000;
/** Characters of a store's error text kept in a message. */
const ERROR_CHARS = 300;

/** What the follower has done, for /metrics. */
export interface StoreStatus {
  /** The row ids of the last version written and the catalog's last. */
  writtenVersion: number;
  lastVersion: number;
  /** When a walk last ended in step with the catalog (ISO 8601), if one has. */
  writtenAt: string | undefined;
  /** Failed attempts since the last success (0: writing works). */
  failures: number;
  /** The last failure's one line. */
  error: string | undefined;
}

export class RemoteGraphStore implements SparqlGraph {
  readonly bounds: SparqlBounds;
  readonly graph: string;
  private readonly queries: StoreClient;
  private readonly updates: StoreClient;
  /** The Graph Store Protocol endpoint triples are POSTed to, when there is one. */
  private readonly data: StoreClient | undefined;
  private progress: GraphProgress | undefined;
  private savedCursor = '';
  private status: StoreStatus = { writtenVersion: 0, lastVersion: 0, writtenAt: undefined, failures: 0, error: undefined };
  private closed = false;
  /** Aborts the write in flight when serve stops. */
  private readonly stopping = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private wake: (() => void) | undefined;
  private following: Promise<void> | undefined;
  /** Resolved at the end of each attempt to write (tests and benchmarks wait on it). */
  private attempts: Array<() => void> = [];
  /** The graph of `serve --link-to`'s links, once written: queries see it with the archive's graph. */
  private linksGraph: string | undefined;

  get rowLimit(): number {
    return this.limits.rowLimit;
  }

  private constructor(
    private readonly catalog: Catalog,
    readonly uris: ArchiveUris,
    private readonly limits: GraphLimits,
    options: RemoteStoreOptions,
    private readonly cursors: CursorPlace,
    private readonly cursorCatalog: Catalog | undefined,
    private readonly log: (line: string) => void,
  ) {
    this.bounds = {
      memoryBytes: limits.memoryBytes ?? SPARQL_BOUND_DEFAULTS.memoryBytes,
      resultBytes: limits.resultBytes ?? SPARQL_BOUND_DEFAULTS.resultBytes,
      queryBytes: limits.queryBytes ?? SPARQL_BOUND_DEFAULTS.queryBytes,
    };
    this.graph = options.graph ?? defaultGraph(uris);
    this.queries = new StoreClient(options.queryUrl, options.credentials);
    this.updates = new StoreClient(options.updateUrl ?? options.queryUrl, options.credentials);
    this.data = options.dataUrl === undefined ? undefined : new StoreClient(options.dataUrl, options.credentials);
  }

  /**
   * Starts following the catalog into the store. The cursor is kept in the catalog when this
   * process may write it, else in the store (a graph of its own). Never waits for the store:
   * one that is down is written once it answers.
   */
  static start(
    archiveDir: string,
    catalog: Catalog,
    uris: ArchiveUris,
    limits: GraphLimits,
    options: RemoteStoreOptions,
    log: (line: string) => void,
  ): RemoteGraphStore {
    const graph = options.graph ?? defaultGraph(uris);
    const updateUrl = options.updateUrl ?? options.queryUrl;
    let cursorCatalog: Catalog | undefined;
    try {
      cursorCatalog = Catalog.open(archiveDir, { create: false });
    } catch (error) {
      if (!(error instanceof ArchiverError)) throw error;
    }
    let cursors: CursorPlace;
    if (cursorCatalog) cursors = catalogCursorPlace(cursorCatalog, updateUrl, graph);
    else {
      const client = new StoreClient(options.queryUrl, options.credentials);
      const writer = new StoreClient(updateUrl, options.credentials);
      cursors = storeCursorPlace(client, writer, `${graph}#oaibag-cursor`);
      log(`the archive is read-only: the SPARQL store's cursor is kept in the store, graph <${graph}#oaibag-cursor>`);
    }
    const store = new RemoteGraphStore(catalog, uris, limits, options, cursors, cursorCatalog, log);
    store.following = store.follow();
    return store;
  }

  async query(query: string, mediaType: string, solutions = false): Promise<{ text: string; truncated: boolean }> {
    refuseOutsideTheGraph(query);
    const ask = !solutions && Object.values(RESULT_MEDIA_TYPES).includes(mediaType as never);
    const accept = solutions || ask ? RESULT_MEDIA_TYPES.json : mediaType;
    const signal = AbortSignal.timeout(this.limits.timeoutMs);
    try {
      const params = new URLSearchParams({ query, 'default-graph-uri': this.graph, 'named-graph-uri': this.graph });
      if (this.linksGraph !== undefined) {
        // The default graph is the merge of the two (SPARQL 1.1 Protocol).
        params.append('default-graph-uri', this.linksGraph);
        params.append('named-graph-uri', this.linksGraph);
      }
      const body = params.toString();
      const response = await this.queries.send({
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: accept },
        body,
        signal,
      });
      if (!response.ok) throw await this.refusal(response, 'query');
      if (solutions) {
        const read = await readSolutions(response.body, this.limits.rowLimit, this.bounds.resultBytes);
        if (!read) throw new QueryFailure('result', this.resultMessage());
        const written = writeSolutions(read.solutions, mediaType, this.limits.rowLimit);
        return { text: written.text, truncated: read.truncated || written.truncated };
      }
      const text = await readCapped(response.body, this.bounds.resultBytes);
      if (text === undefined) throw new QueryFailure('result', this.resultMessage());
      if (ask) return { text: writeBoolean(askAnswer(text), mediaType), truncated: false };
      const type = (response.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
      if (type !== mediaType) throw new QueryFailure('unavailable', `the SPARQL store answered ${shown(type, 80)} where ${mediaType} was asked for`);
      return { text, truncated: false };
    } catch (error) {
      if (error instanceof QueryFailure) throw error;
      if (signal.aborted) {
        throw new QueryFailure('timeout', `the query ran past the time limit (${this.limits.timeoutMs / 1000} s) and was stopped`);
      }
      throw new QueryFailure('unavailable', `the SPARQL store at ${this.queries.url} is not answering (${causeOf(error)})`);
    }
  }

  async describes(uri: string): Promise<boolean> {
    return JSON.parse((await this.query(`ask { <${uri}> ?p ?o }`, RESULT_MEDIA_TYPES.json)).text).boolean === true;
  }

  /**
   * Replaces the named graph `graph` with `ntriples` (the links of `serve --link-to`): written
   * into `<graph>-next` (Graph Store Protocol POSTs or INSERT DATA, as the archive's graph), then
   * moved over it by one SPARQL 1.1 `MOVE`, so that queries see the old links or the new ones.
   */
  async replaceLinks(graph: string, ntriples: string): Promise<void> {
    if (ntriples === '') await this.update(`DROP SILENT GRAPH <${graph}>`);
    else {
      const next = `${graph}-next`;
      await this.update(`DROP SILENT GRAPH <${next}>`);
      const data = this.data;
      const requests = data
        ? Array.from(lineBatches(ntriples, Number.POSITIVE_INFINITY, POST_CHARACTERS), (text) => () => this.post(data, text, next))
        : Array.from(lineBatches(ntriples, INSERT_LINES, INSERT_CHARACTERS), (text) => () => this.insert(text, next));
      for (const request of requests) await request();
      await this.update(`MOVE SILENT GRAPH <${next}> TO <${graph}>`);
    }
    this.linksGraph = graph;
  }

  /** What the follower has done. */
  state(): StoreStatus {
    return { ...this.status, lastVersion: lastVersionId(this.catalog) };
  }

  /** Resolves once the follower has ended its next attempt to write (whatever its outcome). */
  nextAttempt(): Promise<void> {
    return new Promise((resolve) => {
      this.attempts.push(resolve);
      this.wake?.();
    });
  }

  /** The follower's state in the Prometheus text format (appended to serve's /metrics). */
  metrics(): string {
    const state = this.state();
    const label = `{store="${this.updates.url.replace(/["\\\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`))}"}`;
    const lines = [
      ['oaibag_sparql_store_up', 'Whether the last attempt to write the SPARQL store succeeded (1) or failed (0).', state.failures === 0 ? 1 : 0],
      ['oaibag_sparql_store_failed_attempts', 'Attempts to write the SPARQL store that failed since the last that succeeded.', state.failures],
      ['oaibag_sparql_store_written_version', 'The catalog row id of the last version written to the SPARQL store.', state.writtenVersion],
      [
        'oaibag_sparql_store_versions_behind',
        'Versions the catalog holds that the SPARQL store does not yet.',
        Math.max(0, state.lastVersion - state.writtenVersion),
      ],
      ...(state.writtenAt
        ? [
            [
              'oaibag_sparql_store_in_step_timestamp_seconds',
              'When the SPARQL store was last in step with the catalog (Unix time).',
              Date.parse(state.writtenAt) / 1000,
            ] as const,
          ]
        : []),
    ] as const;
    return lines.map(([name, help, value]) => `# HELP ${name} ${help}\n# TYPE ${name} gauge\n${name}${label} ${value}\n`).join('');
  }

  async close(): Promise<void> {
    if (this.closed) return this.following;
    this.closed = true;
    this.stopping.abort();
    clearTimeout(this.timer);
    this.wake?.();
    await this.following;
    this.cursorCatalog?.close();
  }

  private async follow(): Promise<void> {
    let wait = FOLLOW_EVERY_MS;
    while (!this.closed) {
      try {
        await this.catchUp();
        if (this.status.failures > 0) this.log(`the SPARQL store ${this.updates.url} is written again (after ${this.status.failures} failed attempts)`);
        this.status.failures = 0;
        this.status.error = undefined;
        wait = FOLLOW_EVERY_MS;
      } catch (error) {
        // Resumed from the saved cursor next time: what this walk had taken is taken again.
        this.progress = undefined;
        if (this.closed) break;
        this.status.failures++;
        this.status.error = causeOf(error);
        wait = Math.min(RETRY_MOST_MS, RETRY_FIRST_MS * 2 ** (this.status.failures - 1));
        this.log(
          `the SPARQL store ${this.updates.url} could not be written (${this.status.error}); attempt ${this.status.failures}, retrying in ${wait / 1000} s`,
        );
      }
      for (const resolve of this.attempts.splice(0)) resolve();
      if (this.closed) break;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        this.timer = setTimeout(resolve, this.attempts.length > 0 ? 0 : wait);
        this.timer.unref();
      });
      this.wake = undefined;
    }
    for (const resolve of this.attempts.splice(0)) resolve();
  }

  /** Writes what the catalog committed since the cursor. */
  private async catchUp(): Promise<void> {
    this.progress ??= await this.resume();
    const progress = this.progress;
    for (const chunk of graphChunks(this.catalog, this.uris, progress)) {
      if (this.closed) return;
      await this.write(chunk);
      await this.saveCursor(progress);
    }
    await this.saveCursor(progress);
    this.status.writtenVersion = progress.marks.version;
    this.status.writtenAt = new Date().toISOString();
  }

  /** The walk's progress from the saved cursor; with none that fits, the graph is cleared and written from the start. */
  private async resume(): Promise<GraphProgress> {
    const text = await this.cursors.read();
    const progress = resumedProgress(this.catalog, this.uris.base, text, PAGING);
    if (progress) {
      this.savedCursor = text ?? '';
      this.status.writtenVersion = progress.marks.version;
      return progress;
    }
    if (text !== undefined) this.log(`the cursor in ${this.cursors.where} does not fit this archive or base URL: the SPARQL store's graph is written again`);
    await this.update(`CLEAR SILENT GRAPH <${this.graph}>`);
    this.savedCursor = '';
    this.status.writtenVersion = 0;
    return new GraphProgress(PAGING);
  }

  private async saveCursor(progress: GraphProgress): Promise<void> {
    const text = JSON.stringify(cursorOf(this.catalog, this.uris.base, progress));
    if (text === this.savedCursor) return;
    await this.cursors.write(text);
    this.savedCursor = text;
  }

  private async write(chunk: GraphChunk): Promise<void> {
    for (let i = 0; i < chunk.forget.length; i += DELETE_SUBJECTS) {
      const subjects = chunk.forget.slice(i, i + DELETE_SUBJECTS);
      await this.update(subjects.map((subject) => `DELETE WHERE { GRAPH <${this.graph}> { <${subject}> ?p ?o } }`).join(' ;\n'));
    }
    // The chunk's triples in any order (they add to a set), a few requests at once: each waits
    // for the store's commit, and one at a time measured a quarter of the rate of four.
    const data = this.data;
    const requests = data
      ? Array.from(lineBatches(chunk.ntriples, Number.POSITIVE_INFINITY, POST_CHARACTERS), (text) => () => this.post(data, text))
      : Array.from(lineBatches(chunk.ntriples, INSERT_LINES, INSERT_CHARACTERS), (text) => () => this.insert(text));
    const sender = async () => {
      for (let request = requests.shift(); request; request = requests.shift()) await request();
    };
    await Promise.all(Array.from({ length: WRITES_IN_FLIGHT }, sender));
    // Items moved to another MIME set: after the inserts, in order (a request's operations run in order).
    for (let i = 0; i < chunk.moves.length; i += DELETE_SUBJECTS) {
      await this.update(
        chunk.moves
          .slice(i, i + DELETE_SUBJECTS)
          .map((move) => moveUpdate(this.graph, move))
          .join(' ;\n'),
      );
    }
  }

  private insert(lines: string, graph = this.graph): Promise<void> {
    return this.update(`INSERT DATA { GRAPH <${graph}> {\n${lines}} }`);
  }

  /** Adds `ntriples` to the graph by the Graph Store Protocol (a POST merges into the graph). */
  private post(data: StoreClient, ntriples: string, graph = this.graph): Promise<void> {
    const headers = { 'Content-Type': 'application/n-triples', Accept: '*/*' };
    return this.send(data, { method: 'POST', headers, body: ntriples }, `?graph=${encodeURIComponent(graph)}`);
  }

  private update(text: string): Promise<void> {
    return this.send(this.updates, { method: 'POST', headers: { 'Content-Type': 'application/sparql-update; charset=utf-8', Accept: '*/*' }, body: text });
  }

  private async send(client: StoreClient, request: StoreRequest, search = ''): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      let response: Response;
      try {
        response = await client.send({ ...request, signal: AbortSignal.any([AbortSignal.timeout(WRITE_TIMEOUT_MS), this.stopping.signal]) }, search);
      } catch (error) {
        // A connection the store closed under a request (seen with Virtuoso under load) is sent
        // again at once; the walk's own retry, from the cursor, is for a store that is down.
        if (attempt < REQUEST_ATTEMPTS && !this.closed && (error as Error).name !== 'TimeoutError') continue;
        throw error;
      }
      if (!response.ok) throw await this.refusal(response, 'update');
      await response.body?.cancel();
      return;
    }
  }

  /** The failure a store's error answer stands for: its first line, cut short. */
  private async refusal(response: Response, what: 'query' | 'update'): Promise<Error> {
    const text = ((await readCapped(response.body, 64 * 1024).catch(() => '')) ?? '').trim();
    const line = shown(text.split('\n').find((part) => part.trim() !== '') ?? '', ERROR_CHARS);
    const said = `HTTP ${response.status}${line ? `: ${line}` : ''}`;
    if (what === 'update') return new Error(`the store refused an update: ${said}`);
    // A query the store finds wrong is the client's; the rest (its account, its own limits, its errors) the store's.
    if (response.status === 400) return new QueryFailure('query', line || `the SPARQL store refused it (HTTP ${response.status})`);
    return new QueryFailure('unavailable', `the SPARQL store could not answer (${said})`);
  }

  private resultMessage(): string {
    return `the result is larger than the limit (${sizeText(this.bounds.resultBytes)}, --sparql-result-size)`;
  }
}

function defaultGraph(uris: ArchiveUris): string {
  return `${uris.base}/graph`;
}

/** The SPARQL Update of one move (archive-graph.ts, GraphMove): the item out of its MIME sets, then into the new one. */
function moveUpdate(graph: string, move: GraphMove): string {
  const { subject, predicate } = move;
  const out = `DELETE { GRAPH <${graph}> { <${subject}> <${predicate}> ?set } } WHERE { GRAPH <${graph}> { <${subject}> <${predicate}> ?set FILTER (STRSTARTS(STR(?set), ${JSON.stringify(move.objectPrefix)})) } }`;
  return move.object === null ? out : `${out} ;\nINSERT DATA { GRAPH <${graph}> { <${subject}> <${predicate}> <${move.object}> } }`;
}

/**
 * `ntriples` cut at line ends into texts of at most `most` lines and `characters` characters
 * (or one line, when a line is longer), each ending with a line end.
 */
function* lineBatches(ntriples: string, most: number, characters: number): Generator<string> {
  let start = 0;
  while (start < ntriples.length) {
    let end = start;
    for (let lines = 0; lines < most && end < ntriples.length; lines++) {
      let next = ntriples.indexOf('\n', end);
      next = next < 0 ? ntriples.length : next + 1;
      if (next - start > characters && end > start) break;
      end = next;
    }
    const text = ntriples.slice(start, end);
    if (text.trim() !== '') yield text.endsWith('\n') ? text : `${text}\n`;
    start = end;
  }
}

/**
 * Federated queries (SERVICE: the store would fetch other URLs) and Virtuoso's pragmas (DEFINE:
 * its Sponger fetches the web) reach past the archive's graph: refused before they are sent.
 * Looked for outside strings, IRIs and comments.
 */
function refuseOutsideTheGraph(query: string): void {
  const bare = query
    .replace(/"""[\s\S]*?"""|'''[\s\S]*?'''|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'/g, '""')
    .replace(/<[^<>"{}|^`\\\s]*>/g, '<>')
    .replace(/#[^\n]*/g, '');
  if (/\bSERVICE\b/i.test(bare) || /^\s*DEFINE\b/i.test(bare)) {
    throw new QueryFailure('query', 'federated queries (SERVICE) and store pragmas (DEFINE) are not sent to the SPARQL store');
  }
}

function causeOf(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  const text = cause?.code ?? cause?.message ?? (error as Error).message ?? String(error);
  return shown(String(text).split('\n')[0] ?? '', ERROR_CHARS);
}

/** The cursor kept in the store itself, in a graph of its own (`graph`), for a read-only archive. */
function storeCursorPlace(queries: StoreClient, updates: StoreClient, graph: string): CursorPlace {
  const property = 'urn:oaibag:terms:cursor';
  return {
    where: `the graph <${graph}>`,
    read: async () => {
      const response = await queries.send({
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: RESULT_MEDIA_TYPES.json },
        body: new URLSearchParams({ query: `select ?cursor where { graph <${graph}> { <${graph}> <${property}> ?cursor } }` }).toString(),
        signal: AbortSignal.timeout(WRITE_TIMEOUT_MS),
      });
      if (!response.ok) throw new Error(`the store refused to give the cursor: HTTP ${response.status}`);
      const read = await readSolutions(response.body, 1, 1024 * 1024);
      return read?.solutions.results.bindings[0]?.cursor?.value;
    },
    write: async (text) => {
      const literal = `"${text.replace(/[\\"\n\r]/g, (char) => (char === '\n' ? '\\n' : char === '\r' ? '\\r' : `\\${char}`))}"`;
      const update = `DELETE WHERE { GRAPH <${graph}> { <${graph}> <${property}> ?cursor } } ;\nINSERT DATA { GRAPH <${graph}> { <${graph}> <${property}> ${literal} } }`;
      const response = await updates.send({
        method: 'POST',
        headers: { 'Content-Type': 'application/sparql-update; charset=utf-8', Accept: '*/*' },
        body: update,
        signal: AbortSignal.timeout(WRITE_TIMEOUT_MS),
      });
      if (!response.ok) throw new Error(`the store refused the cursor: HTTP ${response.status}`);
      await response.body?.cancel();
    },
  };
}
