// `oaibag serve`'s HTTP server (docs/serve.md): OAI-PMH at /oai, the payloads under /files/,
// ORE resource maps under /ore/, the schemas it names under /oai/schemas/, Memento and the
// Linked Data view. node:http, one process, like oaibag-repository; `--auth` rules name these
// paths, and every route asks the one access decision of archive-access.ts (docs/serve.md, "Access").
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { type AuthConfig, coalescedBody, HTTP_HEADER_SCHEMA, HTTP_HEADER_SCHEMA_PATH, logRequest, MAX_FORM_BYTES, readFormBody } from '@oaibag/oai-pmh';
import type { AipStorage } from '../aip/aip-storage.js';
import { openArchiveStorage } from '../aip/archive-storage.js';
import { bagPathOfFolders } from '../aip/layout-names.js';
import { Catalog } from '../catalog/catalog.js';
import type { PayloadLocation } from '../catalog/catalog-types.js';
import { ArchiverError } from '../core/errors.js';
import { checkHttpUrl } from '../core/http-url.js';
import { readArchiveHealth } from '../health/archive-health.js';
import { formatMetrics, METRICS_CONTENT_TYPE } from '../health/prometheus-metrics.js';
import { ArchiveAccess, type Viewer } from './archive-access.js';
import { ArchiveUris } from './archive-graph.js';
import type { PayloadGate } from './archive-items.js';
import { ArchiveOai, DEFAULT_ADMIN_EMAIL, isOaiEmail, SERVE_DEFAULTS } from './archive-oai.js';
import { answerHistory, answerHome, answerSearch } from './browse-pages.js';
import { answerDiff } from './diff-page.js';
import { answerDirectory, isDirectoryPath } from './directory-routes.js';
import { type GraphLimits, GraphStore, type SparqlBounds } from './graph-store.js';
import { type LinkedGraph, LinkKeeper } from './link-keeper.js';
import type { LinkOptions } from './link-rules.js';
import { answerLinkedData, LINKED_DATA_PREFIXES } from './linked-data-routes.js';
import { answerMemento } from './memento.js';
import { ORE_PREFIX } from './ore-map.js';
import { FILES_PREFIX, openServedPayload } from './payload-files.js';
import { RemoteGraphStore, type RemoteStoreOptions } from './remote-graph-store.js';
import { answerReplay } from './replay.js';
import { ORE_SCHEMA, ORE_SCHEMA_PATH } from './served-formats.js';
import { answerSparql } from './sparql-endpoint.js';
import type { SparqlGraph } from './sparql-graph.js';
import { StoredRecords } from './stored-records.js';
import { answerPlain, answerText } from './text-answers.js';
import { WarmUpSockets } from './warm-up-sockets.js';

export interface ArchiveServerOptions {
  archiveDir: string;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: any free port. */
  port?: number;
  /** The URL clients use (behind a proxy); default `http://host:port`. */
  baseUrl?: string;
  /** Identify's repositoryName; default `oaibag archive at <base URL>`. */
  repositoryName?: string;
  /** Identify's adminEmail (OAI-PMH wants at least one); default `nobody@oaibag.invalid` (DEFAULT_ADMIN_EMAIL). Each must be schema-valid (ERR_ARCHIVE_USAGE). */
  adminEmails?: string[];
  /** Payloads up to this many bytes go By-Value in oai_didl too (default 16 MiB; 0: By-Reference only). */
  byValueMax?: number;
  /** Records per ListRecords page (default 100) and headers per ListIdentifiers page (default 1000). */
  pageRecords?: number;
  pageIdentifiers?: number;
  /** By-Value bytes a ListRecords page carries at most; a larger record goes out alone (default 64 MiB). */
  pageBytes?: number;
  /** Items a list's first page counts at most for completeListSize (default 100,000; docs/serve.md). */
  countLimit?: number;
  /** A SPARQL query is stopped after this many milliseconds (default 10 s). */
  sparqlTimeoutMs?: number;
  /** A SPARQL select query gives at most this many solutions (default 10,000). */
  sparqlRowLimit?: number;
  /** Memory, answer and query bounds of a SPARQL query (defaults: SPARQL_BOUND_DEFAULTS, docs/linked-data.md). */
  sparqlBounds?: Partial<SparqlBounds>;
  /** The most quads the embedded SPARQL store is loaded with (default 5,000,000: SPARQL_MAX_QUADS_DEFAULT); a larger graph is refused with ERR_SPARQL_TOO_LARGE. */
  sparqlMaxQuads?: number;
  /** The archive's graph in a remote SPARQL 1.1 store rather than the embedded one (docs/linked-data.md, "A server-grade store"). */
  sparqlStore?: RemoteStoreOptions;
  /** Links to other archives or SPARQL endpoints (`--link-to`; docs/linked-data.md, "Links between archives"). */
  links?: LinkOptions;
  /** Users and protected path prefixes (`--auth`, the repository's format). */
  auth?: AuthConfig;
  /** One line per request that failed on the server's side. */
  log?: (line: string) => void;
  /** The access log: one line per request, Combined Log Format plus milliseconds (@oaibag/oai-pmh's logRequest). */
  accessLog?: (line: string) => void;
}

export interface ArchiveServer {
  /** `http://host:port` (or the base URL given), without a trailing slash. */
  readonly baseUrl: string;
  /** The remote SPARQL store's follower, with `sparqlStore`. */
  readonly sparqlStore?: RemoteGraphStore;
  /** The linker, with `links`. */
  readonly links?: LinkKeeper;
  close(): Promise<void>;
}

export const SPARQL_DEFAULTS = { timeoutMs: 10_000, rowLimit: 10_000 } as const;

/** Starts serving the archive; the catalog must exist (ERR_ARCHIVE_CATALOG otherwise). */
export async function startArchiveServer(options: ArchiveServerOptions): Promise<ArchiveServer> {
  for (const email of options.adminEmails ?? []) {
    if (!isOaiEmail(email)) {
      throw new ArchiverError('ERR_ARCHIVE_USAGE', `adminEmail ${JSON.stringify(email)} is not one the OAI-PMH schema accepts`, {
        hint: 'give --admin-email as name@host.domain, without spaces',
      });
    }
  }
  checkPageBounds(options);
  if (options.baseUrl !== undefined) checkHttpUrl(options.baseUrl, 'the base URL', { pathOnly: true });
  const opened = await openArchiveStorage(options.archiveDir, { reading: true });
  const store = opened.objectStore === undefined ? undefined : opened.storage;
  let catalog: Catalog;
  try {
    catalog = Catalog.openForReading(options.archiveDir);
  } catch (error) {
    opened.close();
    throw error;
  }
  const oai = new ArchiveOai(
    { archiveDir: options.archiveDir, catalog, records: new StoredRecords(options.archiveDir, store), store },
    {
      ...(options.repositoryName !== undefined ? { repositoryName: options.repositoryName } : {}),
      adminEmails: options.adminEmails?.length ? options.adminEmails : [DEFAULT_ADMIN_EMAIL],
      byValueMax: options.byValueMax ?? SERVE_DEFAULTS.byValueMax,
      ...(options.pageRecords !== undefined ? { pageRecords: options.pageRecords } : {}),
      ...(options.pageIdentifiers !== undefined ? { pageIdentifiers: options.pageIdentifiers } : {}),
      ...(options.pageBytes !== undefined ? { pageBytes: options.pageBytes } : {}),
      ...(options.countLimit !== undefined ? { countLimit: options.countLimit } : {}),
    },
  );
  const context: ServerContext = {
    archiveDir: options.archiveDir,
    store,
    catalog,
    oai,
    baseUrl: options.baseUrl?.replace(/\/+$/, '') ?? '',
    access: new ArchiveAccess(options.auth),
    graphLimits: {
      timeoutMs: options.sparqlTimeoutMs ?? SPARQL_DEFAULTS.timeoutMs,
      rowLimit: options.sparqlRowLimit ?? SPARQL_DEFAULTS.rowLimit,
      ...options.sparqlBounds,
      ...(options.sparqlMaxQuads !== undefined ? { maxQuads: options.sparqlMaxQuads } : {}),
    },
    log: options.log ?? (() => {}),
    users: new WeakMap(),
    warmUps: new WarmUpSockets(),
  };
  const accessLog = options.accessLog;
  const server = createServer((req, res) => {
    const warmUp = context.warmUps.isWarmUp(req);
    if (accessLog && !warmUp) logRequest(req, res, () => context.users.get(req) ?? null, accessLog);
    answer(context, req, res).catch((error: unknown) => {
      if (!res.headersSent) {
        // Before the first byte: say so (a damaged bag, the catalog); after it, cut the answer
        // off (a file could not be read, the client left), never a clean short one.
        answerPlain(res, 500, `the archive could not answer: ${(error as Error).message}\n`);
      } else {
        res.destroy();
      }
      if (!isClientGone(error) && !warmUp) context.log(`error: ${req.method} ${req.url}: ${(error as Error).message}`);
    });
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
    });
  } catch (error) {
    catalog.close();
    opened.close();
    throw error;
  }
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  if (context.baseUrl === '') context.baseUrl = `http://${host}:${address.port}`;
  // Before serve says it listens: a harvester's first page then costs what the others do.
  await oai.warmUp(context.baseUrl, (query, gate, timeoutMs) => context.warmUps.get(server, `/oai?${query}`, gate, timeoutMs));
  if (options.sparqlStore) {
    // Started now, not at the first query: it keeps the store in step with every harvest.
    context.remote = RemoteGraphStore.start(
      options.archiveDir,
      catalog,
      new ArchiveUris(context.baseUrl),
      context.graphLimits,
      options.sparqlStore,
      context.log,
    );
    context.graph = Promise.resolve(context.remote);
  }
  if (options.links?.endpoints.length) {
    const links = { catalog, remote: context.remote, links: options.links, log: context.log };
    context.links = LinkKeeper.start({ ...links, graph: () => graphOf(context) as Promise<LinkedGraph> });
  }
  return {
    baseUrl: context.baseUrl,
    ...(context.remote ? { sparqlStore: context.remote } : {}),
    ...(context.links ? { links: context.links } : {}),
    close: async () => {
      // The linker and the follower first: they read the catalog closed with the server.
      await context.links?.close();
      await context.remote?.close();
      await closeServer(server, catalog);
      opened.close();
      await (await context.graph?.catch(() => undefined))?.close();
    },
  };
}

/** A page of nothing would never end a list: each page bound given is a whole number of at least 1 (ERR_ARCHIVE_USAGE). */
function checkPageBounds(options: ArchiveServerOptions): void {
  for (const name of ['pageRecords', 'pageIdentifiers', 'pageBytes', 'countLimit'] as const) {
    const value = options[name];
    if (value !== undefined && !(Number.isSafeInteger(value) && value >= 1)) {
      throw new ArchiverError('ERR_ARCHIVE_USAGE', `${name} must be a whole number of at least 1, not ${value}`);
    }
  }
}

interface ServerContext {
  archiveDir: string;
  /** The archive's object store, when its bags are there (payloads, records and By-Value bytes are read through it). */
  store: AipStorage | undefined;
  catalog: Catalog;
  oai: ArchiveOai;
  baseUrl: string;
  /** The SPARQL store, built on the first Linked Data request (docs/linked-data.md), or the remote one. */
  graph?: Promise<SparqlGraph>;
  remote?: RemoteGraphStore;
  links?: LinkKeeper;
  graphLimits: GraphLimits;
  access: ArchiveAccess;
  log: (line: string) => void;
  /** The user each request authenticated as, for the access log. */
  users: WeakMap<IncomingMessage, string>;
  /** The requests serve sends itself when it starts, each with the payload budget it may read. */
  warmUps: WarmUpSockets<PayloadGate>;
}

async function answer(context: ServerContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://archive');
  const path = url.pathname;
  // No answer is ever to be read as another type than it says (archived bytes least of all).
  res.setHeader('X-Content-Type-Options', 'nosniff');
  // Every route asks context.access (archive-access.ts): first for the path itself, then, where
  // it gives a payload's bytes or the Linked Data graph, for those.
  const viewer = await context.access.viewerOf(req.headers.authorization);
  if (viewer?.user) context.users.set(req, viewer.user);
  if (!viewer || !context.access.allows(viewer, { urlPath: path })) return context.access.refuse(res, viewer);
  if (context.access.protectsAnything) res.setHeader('Vary', 'Authorization');
  if (path === '/oai') return oaiEndpoint(context, viewer, req, res, url);
  // The archive's health for Prometheus: it names every source and its failures, so it is for
  // those who may see the whole archive (as SPARQL is).
  if (path === '/metrics') {
    if (!context.access.allows(viewer, { graph: true })) return context.access.refuse(res, viewer);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      return answerPlain(res, 405, 'only GET and HEAD are answered here\n');
    }
    const metrics = formatMetrics(await readArchiveHealth(context.catalog, context.archiveDir)) + (context.remote?.metrics() ?? '');
    return answerText(req, res, METRICS_CONTENT_TYPE, metrics);
  }
  // OAI2LOD's directory (/directory, /all): the same decision as the graph, answered from the catalog.
  if (isDirectoryPath(path)) {
    if (!context.access.allows(viewer, { graph: true })) return context.access.refuse(res, viewer);
    return answerDirectory({ catalog: context.catalog, base: context.baseUrl }, req, res, url);
  }
  const linkedData = LINKED_DATA_PREFIXES.some((prefix) => path.startsWith(prefix));
  if ((path === '/sparql' || linkedData) && !context.access.allows(viewer, { graph: true })) return context.access.refuse(res, viewer);
  if (path === '/sparql') return answerSparql(await graphOf(context), req, res, url);
  if (linkedData) {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      return answerPlain(res, 405, 'only GET and HEAD are answered here\n');
    }
    await answerLinkedData(await graphOf(context), req, res, url, context.catalog);
    return;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.setHeader('Allow', 'GET, HEAD');
    return answerPlain(res, 405, 'only GET and HEAD are answered here\n');
  }
  const mayRead = (payload: PayloadLocation) => context.access.allows(viewer, { payload });
  const refuse = () => context.access.refuse(res, viewer);
  // The pages people browse by (docs/browse.md), from the catalog.
  if (path === '/') return answerHome(context.catalog, context.baseUrl, req, res);
  if (path === '/search') return answerSearch(context.catalog, context.baseUrl, req, res, url);
  if (answerHistory(context.catalog, context.baseUrl, req, res, url)) return;
  const reading = { archiveDir: context.archiveDir, store: context.store, catalog: context.catalog, base: context.baseUrl, mayRead, refuse };
  if (await answerReplay(reading, req, res)) return;
  if (await answerDiff(reading, req, res, url)) return;
  if (
    await answerMemento(
      { archiveDir: context.archiveDir, store: context.store, catalog: context.catalog, base: context.baseUrl, mayRead, refuse },
      req,
      res,
      url,
    )
  )
    return;
  if (path === `/${HTTP_HEADER_SCHEMA_PATH}`) return answerText(req, res, 'application/xml', HTTP_HEADER_SCHEMA);
  if (path === `/${ORE_SCHEMA_PATH}`) return answerText(req, res, 'application/xml', ORE_SCHEMA);
  if (path.startsWith(FILES_PREFIX)) {
    const file = await openServedPayload(context.archiveDir, context.catalog, path, context.store);
    if (file && !mayRead(file.payload)) {
      await file.close();
      return refuse();
    }
    if (file) {
      try {
        if (await file.send(req, res)) return;
      } finally {
        await file.close();
      }
    }
  }
  if (path.startsWith(ORE_PREFIX)) {
    const place = /^\/ore\/([^/]+)\/([^/]+)\/(\d{1,9})$/.exec(path);
    const map = place ? await context.oai.oreMap(bagPathOfFolders(place[1]!, place[2]!), Number(place[3]), context.baseUrl) : undefined;
    if (map) return answerText(req, res, 'application/rdf+xml', map);
  }
  answerPlain(res, 404, 'not found: the home page is /; it answers OAI-PMH at /oai, serves its payloads under /files/ and replays them under /replay/\n');
}

function graphOf(context: ServerContext): Promise<SparqlGraph> {
  context.graph ??= GraphStore.open(context.catalog, new ArchiveUris(context.baseUrl), context.graphLimits);
  return context.graph;
}

async function oaiEndpoint(context: ServerContext, viewer: Viewer, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  let form: string;
  if (req.method === 'GET' || req.method === 'HEAD') form = url.search.slice(1);
  else if (req.method === 'POST') {
    const body = await readFormBody(req);
    if (body === null) {
      res.setHeader('Connection', 'close');
      return answerPlain(res, 413, `an OAI-PMH POST body may have at most ${MAX_FORM_BYTES} bytes\n`);
    }
    form = body;
  } else {
    res.setHeader('Allow', 'GET, HEAD, POST');
    return answerPlain(res, 405, 'the OAI-PMH endpoint answers GET and POST\n');
  }
  // A payload the viewer may not read keeps only its By-Reference ref in oai_didl (no base64);
  // serve's own warm-up requests also stop reading payloads past their budget.
  const budget = context.warmUps.grantOf(req);
  const mayRead = (payload: PayloadLocation) => context.access.allows(viewer, { payload }) && (budget?.(payload) ?? true);
  const body = await context.oai.respond([...new URLSearchParams(form)], context.baseUrl, mayRead);
  res.writeHead(200, { 'Content-Type': 'text/xml; charset=utf-8' });
  if (req.method === 'HEAD') {
    res.end();
    return;
  }
  await pipeline(Readable.from(coalescedBody(body), { objectMode: false }), res);
}

function isClientGone(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'ERR_STREAM_PREMATURE_CLOSE' || code === 'ECONNRESET' || code === 'EPIPE' || code === 'ERR_STREAM_DESTROYED';
}

function closeServer(server: Server, catalog: Catalog): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => {
      catalog.close();
      resolve();
    });
    server.closeIdleConnections();
  });
}
