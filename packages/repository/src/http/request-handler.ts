import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  coalescedBody,
  entityTag,
  fileHeaders,
  HTTP_HEADER_SCHEMA,
  HTTP_HEADER_SCHEMA_PATH,
  lastModifiedSeconds,
  MAX_FORM_BYTES,
  pathForUrlPath,
  type ResponseBody,
  readFormBody,
  sendFile,
} from '@oaibag/oai-pmh';
import { type AccessControl, challengeHeader, type Viewer } from '../access/access-control.js';
import { RIGHTS_PATH } from '../oai/rights-option.js';
import type { FileIndex } from '../site/file-index.js';
import { openIndexedFile } from '../site/open-indexed-file.js';
import type { SiteIndexer } from '../site/site-indexer.js';
import { encodeResponse, negotiateContentEncoding } from './content-encoding.js';

export interface RequestHandlerContext {
  index: FileIndex;
  indexer: SiteIndexer;
  /** The OAI-PMH answer to a request's name/value pairs, for this viewer, at this base URL. */
  oai: (pairs: Array<[string, string]>, viewer: Viewer, baseUrl: string) => Promise<ResponseBody>;
  access: AccessControl;
  baseUrl: () => string;
  log: (line: string) => void;
  /** The rights expression `--rights FILE` gave, served at RIGHTS_PATH. */
  rightsDefinition?: string;
}

/**
 * Routes one request: `<base>/oai` is the OAI-PMH endpoint, `<base>/oai/schemas/…` our
 * schema, everything else below the base path a site file. Paths are taken from the raw
 * request target (not a URL parser, which would resolve `..` before we can refuse it).
 */
export async function handleRequest(
  req: IncomingMessage,
  res: ServerResponse,
  context: RequestHandlerContext,
  setUser: (user: string | null) => void,
): Promise<void> {
  const viewer = await context.access.authenticate(req.headers.authorization);
  if (!viewer) {
    res.setHeader('WWW-Authenticate', challengeHeader);
    return plain(res, 401, 'the credentials sent are not valid\n');
  }
  setUser(viewer.user);

  const target = req.url ?? '/';
  const queryAt = target.indexOf('?');
  const rawPath = stripOrigin(queryAt === -1 ? target : target.slice(0, queryAt));
  const basePath = new URL(context.baseUrl()).pathname.replace(/\/+$/, '');
  if (rawPath !== basePath && !rawPath.startsWith(`${basePath}/`)) return plain(res, 404, 'not found\n');
  const rest = rawPath.slice(basePath.length + 1);

  if (rest === 'oai') return oai(req, res, context, viewer, queryAt === -1 ? '' : target.slice(queryAt + 1));
  if (rest === HTTP_HEADER_SCHEMA_PATH) return xmlDocument(req, res, HTTP_HEADER_SCHEMA);
  if (rest === RIGHTS_PATH && context.rightsDefinition !== undefined) return xmlDocument(req, res, context.rightsDefinition);
  return file(req, res, context, viewer, rest === '' || rest.endsWith('/') ? `${rest}index.html` : rest);
}

async function oai(req: IncomingMessage, res: ServerResponse, context: RequestHandlerContext, viewer: Viewer, query: string) {
  let form: string;
  if (req.method === 'GET' || req.method === 'HEAD') form = query;
  else if (req.method === 'POST') {
    const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/x-www-form-urlencoded') {
      return plain(res, 415, 'an OAI-PMH POST must be application/x-www-form-urlencoded\n');
    }
    const declared = Number(req.headers['content-length'] ?? 0);
    const body = declared > MAX_FORM_BYTES ? null : await readFormBody(req);
    if (body === null) {
      res.setHeader('Connection', 'close'); // the rest of the body is not read
      return plain(res, 413, `an OAI-PMH POST body may have at most ${MAX_FORM_BYTES} bytes\n`);
    }
    form = body;
  } else {
    res.setHeader('Allow', 'GET, HEAD, POST');
    return plain(res, 405, 'the OAI-PMH endpoint answers GET and POST\n');
  }
  const pairs = [...new URLSearchParams(form)];
  const body = await context.oai(pairs, viewer, context.baseUrl());

  res.statusCode = 200;
  res.setHeader('Content-Type', 'text/xml; charset=utf-8');
  // Each viewer sees its own lists: a shared cache must not hand one's answer to another.
  if (context.access.protectsAnything) res.setHeader('Vary', 'Authorization');
  const out = encodeResponse(res, negotiateContentEncoding(req.headers['accept-encoding']));
  if (req.method === 'HEAD') {
    out.end();
    return;
  }
  try {
    await pipeline(Readable.from(coalescedBody(body), { objectMode: false }), out);
  } catch (error) {
    // The client left, or a file changed while it was being sent (the body is cut off so
    // the harvester sees a broken page and asks again, never a record with a wrong digest).
    res.destroy();
    if (!isClientGone(error)) context.log(`error: ${req.method} ${req.url}: ${(error as Error).message}`);
  }
}

function isClientGone(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'ERR_STREAM_PREMATURE_CLOSE' || code === 'ECONNRESET' || code === 'EPIPE' || code === 'ERR_STREAM_DESTROYED';
}

async function file(req: IncomingMessage, res: ServerResponse, context: RequestHandlerContext, viewer: Viewer, encoded: string) {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.setHeader('Allow', 'GET, HEAD');
    return plain(res, 405, 'files answer GET and HEAD\n');
  }
  const relPath = pathForUrlPath(encoded);
  if (relPath === null) return plain(res, 400, 'the path is not one this server can map to a file\n');
  if (!viewer.canSee(relPath)) {
    // The anonymous get a challenge so that browsers and wget ask for credentials.
    if (viewer.user === null) res.setHeader('WWW-Authenticate', challengeHeader);
    return plain(res, viewer.user === null ? 401 : 403, 'this file is protected\n');
  }
  let indexed = context.index.byPath(relPath);
  if (!indexed || indexed.deleted) indexed = (await context.indexer.refresh(relPath)) ?? undefined;
  const opened = indexed && !indexed.deleted ? await openIndexedFile(context.indexer, indexed) : null;
  if (!opened) return plain(res, 404, 'not found\n');
  try {
    if (context.access.protectsAnything && !context.access.anonymous.canSee(relPath)) res.setHeader('Cache-Control', 'private');
    await sendFile(req, res, {
      handle: opened.handle,
      size: opened.file.size,
      headers: fileHeaders(opened.file),
      etag: entityTag(opened.file.sha256),
      lastModifiedSeconds: lastModifiedSeconds(opened.file.mtimeNs),
    });
  } finally {
    await opened.handle.close();
  }
}

async function xmlDocument(req: IncomingMessage, res: ServerResponse, text: string) {
  if (req.method !== 'GET' && req.method !== 'HEAD') return plain(res, 405, 'GET only\n');
  const xsd = Buffer.from(text, 'utf8');
  res.writeHead(200, { 'Content-Type': 'application/xml', 'Content-Length': xsd.length });
  res.end(req.method === 'HEAD' ? undefined : xsd);
}

function plain(res: ServerResponse, status: number, text: string): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

/** `http://host:port/path` (absolute-form, sent to proxies) → `/path`. */
function stripOrigin(path: string): string {
  const match = /^https?:\/\/[^/]*/i.exec(path);
  return match ? path.slice(match[0].length) || '/' : path;
}
