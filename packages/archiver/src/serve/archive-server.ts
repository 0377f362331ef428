// `oaibag serve`'s HTTP server (docs/serve.md). Built so far: the payloads under /files/.
// The OAI-PMH endpoint (/oai) and the ORE resource maps come next (issue 14).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sendFile } from '@oaibag/oai-pmh';
import { Catalog } from '../catalog/catalog.js';
import { FILES_PREFIX, openServedPayload } from './payload-files.js';

export interface ArchiveServerOptions {
  archiveDir: string;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: any free port. */
  port?: number;
}

export interface ArchiveServer {
  /** `http://host:port`, without a trailing slash. */
  readonly baseUrl: string;
  close(): Promise<void>;
}

/** Starts serving the archive; the catalog must exist (ERR_ARCHIVE_CATALOG otherwise). */
export async function startArchiveServer(options: ArchiveServerOptions): Promise<ArchiveServer> {
  const catalog = Catalog.open(options.archiveDir, { create: false });
  const server = createServer((req, res) => {
    answer(options.archiveDir, catalog, req, res).catch(() => {
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
  return {
    baseUrl: `http://${host}:${address.port}`,
    close: () => closeServer(server, catalog),
  };
}

async function answer(archiveDir: string, catalog: Catalog, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = new URL(req.url ?? '/', 'http://archive').pathname;
  if (path.startsWith(FILES_PREFIX)) {
    const file = await openServedPayload(archiveDir, catalog, path);
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
  res.end(req.method === 'HEAD' ? undefined : 'not found: the archive serves its payloads under /files/<bag>/data/…\n');
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
