import { realpath, stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { clfDate, logRequest } from '@oaibag/oai-pmh';
import { AccessControl, linkKeepsProtection } from './access/access-control.js';
import { emptyAuthConfig } from './access/auth-file.js';
import { RepositoryError } from './core/errors.js';
import { handleRequest, type RequestHandlerContext } from './http/request-handler.js';
import { siteOai } from './oai/site-items.js';
import { DEFAULTS, defaultIndexPath, type RepositoryOptions } from './repository-options.js';
import { FileIndex } from './site/file-index.js';
import { type ScanSummary, SiteIndexer } from './site/site-indexer.js';
import { baseUrlOption, exportPolicyOption } from './site/site-mapping.js';

/** A running repository: an HTTP server (not yet listening), its index and its scanner. */
export interface Repository {
  readonly server: Server;
  /** The request listener, for mounting in another node:http server. */
  readonly handler: (req: IncomingMessage, res: ServerResponse) => void;
  /** The base URL (known once given or once listening). */
  readonly baseUrl: string;
  readonly indexFile: string;
  /** Starts listening; resolves with the base URL. */
  listen(port?: number, host?: string): Promise<string>;
  /** Rescans the whole tree now (or joins the scan already running). */
  scan(): Promise<ScanSummary>;
  /** Stops listening, watching and scanning, and closes the index. */
  close(): Promise<void>;
}

/**
 * Opens (or creates) the index of `options.root` and scans the tree. When the index is new,
 * the scan completes before this resolves: the first datestamps come from file mtimes, and
 * serving a list before every old file is in would hide those files from the next
 * incremental harvest. An existing index is served at once and rescanned in the background.
 */
export async function createRepository(options: RepositoryOptions): Promise<Repository> {
  const realRoot = await resolveRoot(options.root);
  const policy = exportPolicyOption({
    ...(options.excludes ? { excludes: options.excludes } : {}),
    ...(options.runExtensions ? { runExtensions: options.runExtensions } : {}),
    reservedRootNames: ['oai'],
  });
  // Every option is checked before the index is opened: a refused option leaves nothing behind.
  const settings = {
    ...(options.repositoryName !== undefined ? { repositoryName: options.repositoryName } : {}),
    adminEmails: (options.adminEmails ?? []).map(checkEmail),
    pageRecords: positive(options.pageRecords ?? DEFAULTS.pageRecords, 'page-records'),
    pageIdentifiers: positive(options.pageIdentifiers ?? DEFAULTS.pageIdentifiers, 'page-identifiers'),
    pageBytes: positive(options.pageBytes ?? DEFAULTS.pageBytes, 'page-bytes'),
    countLimit: positive(options.countLimit ?? DEFAULTS.countLimit, 'list-count-limit'),
    byValueMax: nonNegative(options.byValueMax ?? DEFAULTS.byValueMax, 'by-value-max'),
    ...(options.rights ? { rights: options.rights } : {}),
  };
  let baseUrl = options.baseUrl === undefined ? '' : baseUrlOption(options.baseUrl);
  const authConfig = options.auth ?? emptyAuthConfig();
  const access = new AccessControl(authConfig);
  const log = options.log ?? (() => undefined);

  const indexFile = options.index ?? defaultIndexPath(realRoot);
  const index = FileIndex.open(indexFile);
  const indexer = new SiteIndexer({ real: realRoot }, index, policy, linkKeepsProtection(authConfig));

  const context: RequestHandlerContext = {
    index,
    indexer,
    oai: siteOai(index, indexer, settings),
    access,
    baseUrl: () => baseUrl,
    log,
    ...(options.rights && 'definition' in options.rights ? { rightsDefinition: options.rights.definition } : {}),
  };
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    let user: string | null = null;
    logRequest(req, res, () => user, log);
    handleRequest(req, res, context, (name) => {
      user = name;
    }).catch((error: unknown) => {
      log(`error: ${req.method} ${req.url}: ${(error as Error).message}`);
      if (!res.headersSent) {
        res.statusCode = 500;
        res.end('internal error\n');
      } else res.destroy();
    });
  };
  const server = createServer({ requestTimeout: 0 }, handler);
  server.on('clientError', (error: NodeJS.ErrnoException, socket) => refuseMalformed(error, socket, log));

  const mustFinishFirst = index.needsFirstScan();
  const firstScan = indexer.scan(options.onScanProgress);
  if (mustFinishFirst) await firstScan;
  else firstScan.catch((error: unknown) => log(`scan failed: ${(error as Error).message}`));
  if (options.watch ?? true) indexer.startWatching((error) => log(`watching the tree failed (rescans go on): ${error.message}`));
  const rescanSeconds = options.rescanSeconds ?? DEFAULTS.rescanSeconds;
  const timer =
    rescanSeconds > 0
      ? setInterval(() => {
          indexer.scan().catch((error: unknown) => log(`rescan failed: ${(error as Error).message}`));
        }, rescanSeconds * 1000).unref()
      : null;

  return {
    server,
    handler,
    get baseUrl() {
      return baseUrl;
    },
    indexFile,
    async listen(port = 8080, host = '127.0.0.1') {
      await new Promise<void>((resolve, reject) => {
        const fail = (error: NodeJS.ErrnoException) =>
          reject(new RepositoryError('ERR_REPO_LISTEN', `cannot listen on ${host}:${port}: ${error.code ?? error.message}`, { cause: error }));
        server.once('error', fail);
        server.listen(port, host, () => {
          server.off('error', fail);
          resolve();
        });
      });
      if (baseUrl === '') {
        const address = server.address() as AddressInfo;
        const hostPart = address.family === 'IPv6' ? `[${address.address}]` : address.address;
        baseUrl = `http://${hostPart}:${address.port}`;
      }
      return baseUrl;
    },
    scan: () => indexer.scan(),
    async close() {
      if (timer) clearInterval(timer);
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await indexer.close();
      index.close();
    },
  };
}

/**
 * A request node:http could not parse (a request line or headers too long, bad syntax):
 * answered 431 or 400 and logged, once per connection, like any other request.
 */
function refuseMalformed(error: NodeJS.ErrnoException, socket: Duplex, log: (line: string) => void): void {
  if (!socket.writable || refused.has(socket)) return;
  refused.add(socket);
  const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
  const reason = status === 431 ? 'Request Header Fields Too Large' : 'Bad Request';
  const remote = (socket as Socket).remoteAddress ?? '-';
  log(`${remote} - - [${clfDate(new Date())}] "- - -" ${status} 0 "-" "-" 0ms (${error.code ?? 'unparseable request'})`);
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
}

const refused = new WeakSet<Duplex>();

async function resolveRoot(root: string): Promise<string> {
  try {
    const real = await realpath(root);
    if (!(await stat(real)).isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' });
    return real;
  } catch (error) {
    throw new RepositoryError('ERR_REPO_ROOT', `--root ${root}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`, {
      cause: error,
      hint: 'give the folder of web files to export',
    });
  }
}

/** The OAI-PMH schema's pattern for adminEmail. */
function checkEmail(value: string): string {
  if (!/^\S+@(\S+\.)+\S+$/.test(value))
    throw new RepositoryError('ERR_REPO_OPTIONS', `--admin-email ${JSON.stringify(value)} is not an e-mail address (name@host.domain)`);
  return value;
}

function positive(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new RepositoryError('ERR_REPO_OPTIONS', `--${name} must be a whole number of at least 1, not ${value}`);
  return value;
}

function nonNegative(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 0) throw new RepositoryError('ERR_REPO_OPTIONS', `--${name} must be a whole number of at least 0, not ${value}`);
  return value;
}
