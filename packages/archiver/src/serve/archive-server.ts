// `oaibag serve`'s HTTP server (docs/serve.md). Built so far: the OAI-PMH endpoint (/oai, with
// oai_dc) and the payloads under /files/. oai_didl, http_header, ore and provenance come next.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MAX_FORM_BYTES, readFormBody, sendFile } from '@oaibag/oai-pmh';
import { Catalog } from '../catalog/catalog.js';
import { ArchiveOai } from './archive-oai.js';
import { FILES_PREFIX, openServedPayload } from './payload-files.js';

export interface ArchiveServerOptions {
  archiveDir: string;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: any free port. */
  port?: number;
  /** The URL clients use (behind a proxy); default `http://host:port`. */
  baseUrl?: string;
  /** Identify's repositoryName; default `oaibag archive`. */
  repositoryName?: string;
  /** Identify's adminEmail (OAI-PMH wants at least one); default `nobody@localhost`. */
  adminEmails?: string[];
  /** Records per ListRecords page (default 100) and headers per ListIdentifiers page (default 1000). */
  pageRecords?: number;
  pageIdentifiers?: number;
}

export interface ArchiveServer {
  /** `http://host:port`, without a trailing slash. */
  readonly baseUrl: string;
  close(): Promise<void>;
}

/** Starts serving the archive; the catalog must exist (ERR_ARCHIVE_CATALOG otherwise). */
export async function startArchiveServer(options: ArchiveServerOptions): Promise<ArchiveServer> {
  const catalog = Catalog.open(options.archiveDir, { create: false });
  const oai = new ArchiveOai(catalog, {
    repositoryName: options.repositoryName ?? 'oaibag archive',
    adminEmails: options.adminEmails ?? ['nobody@localhost'],
    ...(options.pageRecords !== undefined ? { pageRecords: options.pageRecords } : {}),
    ...(options.pageIdentifiers !== undefined ? { pageIdentifiers: options.pageIdentifiers } : {}),
  });
  let baseUrl = options.baseUrl?.replace(/\/+$/, '') ?? '';
  const server = createServer((req, res) => {
    answer({ archiveDir: options.archiveDir, catalog, oai, baseUrl }, req, res).catch(() => {
      // The file could not be read half-way: the response is cut off, never a clean short one.
      res.destroy();
    });
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
    });
  } catch (error) {
    catalog.close();
    throw error;
  }
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  if (baseUrl === '') baseUrl = `http://${host}:${address.port}`;
  return {
    baseUrl,
    close: () => closeServer(server, catalog),
  };
}

interface ServerContext {
  archiveDir: string;
  catalog: Catalog;
  oai: ArchiveOai;
  baseUrl: string;
}

async function answer(context: ServerContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://archive');
  const path = url.pathname;
  if (path === '/oai') {
    if (req.method !== 'GET' && req.method !== 'POST') {
      res.writeHead(405, { Allow: 'GET, POST' }).end();
      return;
    }
    const form = req.method === 'POST' ? await readFormBody(req) : url.search.slice(1);
    if (form === null) {
      res.writeHead(413, { 'Content-Type': 'text/plain; charset=utf-8' }).end(`an OAI-PMH request has at most ${MAX_FORM_BYTES} bytes\n`);
      return;
    }
    const body = context.oai.respond([...new URLSearchParams(form)], context.baseUrl);
    res.writeHead(200, { 'Content-Type': 'text/xml; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
    return;
  }
  if (path.startsWith(FILES_PREFIX)) {
    const file = await openServedPayload(context.archiveDir, context.catalog, path);
    if (file) {
      try {
        await sendFile(req, res, file);
      } finally {
        await file.handle.close();
      }
      return;
    }
  }
  res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' });
  res.end(req.method === 'HEAD' ? undefined : 'not found: the archive answers OAI-PMH at /oai and serves its payloads under /files/<bag>/data/…\n');
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
