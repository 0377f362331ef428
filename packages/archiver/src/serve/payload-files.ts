// The archive's payload files over HTTP, for `oaibag serve` (docs/serve.md, "Payloads"):
// `/files/<bag under aips/>/<payload path>`, only for a (bag, path) the catalog lists as a
// payload, with the original Content-Type and Last-Modified and an ETag from the SHA-256. The
// bytes come from the archive's folder or, when its bags are on object storage, through the
// store (a byte range asked of the store for a range request).
import { open } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { drained, entityTag, type HeaderField, planFileResponse, type SendableFile, sendFile } from '@oaibag/oai-pmh';
import type { AipStorage } from '../aip/aip-storage.js';
import { BAG_DEPTH, bagFolders, bagPathOfFolders } from '../aip/layout-names.js';
import type { Catalog } from '../catalog/catalog.js';
import type { PayloadLocation, ServedPayload } from '../catalog/catalog-types.js';

/** Where payload URLs begin. */
export const FILES_PREFIX = '/files/';

/**
 * Archived content is the harvested sites', served on the archive's own origin (docs/serve.md,
 * "Archived content in a browser"). `sandbox` without allow-same-origin gives it an opaque origin
 * and without allow-scripts runs none of its scripts, so a harvested page can neither read the
 * archive's credentials nor call the archive as the reader; the fetch directives let it show
 * images, styles, fonts and media from the archive only, never from the live web.
 */
export const ARCHIVED_CONTENT_POLICY =
  "sandbox; default-src 'none'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; font-src 'self' data:; media-src 'self'; form-action 'none'; base-uri 'none'";

/** The headers every answer with archived bytes carries: the policy, and no type sniffing. */
export const ARCHIVED_CONTENT_HEADERS: readonly HeaderField[] = [
  { name: 'Content-Security-Policy', value: ARCHIVED_CONTENT_POLICY },
  { name: 'X-Content-Type-Options', value: 'nosniff' },
];

/**
 * A payload to be sent, with the catalog's row it was found from: its validators and headers
 * (which a caller may change before sending), how to send it, and how to let it go.
 */
export interface OpenedPayload extends Omit<SendableFile, 'handle'> {
  payload: ServedPayload;
  /**
   * Answers the request with it, as sendFile does (conditional requests, one byte range).
   * Resolves to false, having sent nothing, when its bytes turn out to be gone (on object
   * storage, where that is known only when they are read): the caller answers 404.
   */
  send(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * The catalogued payload a `/files/…` URL path names, opened and checked against the
 * catalog's size; undefined when the URL names no payload (anything else of the archive, a
 * malformed or hostile path, a file gone or of another size). With `store` (the archive's bags
 * on object storage) nothing is opened yet: the object is read when sent, the range asked for
 * only. The caller closes what it got.
 */
export async function openServedPayload(archiveDir: string, catalog: Catalog, urlPath: string, store?: AipStorage): Promise<OpenedPayload | undefined> {
  const location = payloadLocationOf(urlPath);
  if (!location) return undefined;
  const payload = catalog.servedPayload(location.bagPath, location.path);
  if (!payload) return undefined;
  // Both parts came from the catalog's own rows: the file opened is one the catalog placed.
  if (store !== undefined) return storedPayload(store, payload);
  const file = join(archiveDir, ...payload.bagPath.split('/'), ...payload.path.split('/'));
  const handle = await open(file, 'r').catch(() => undefined);
  if (!handle) return undefined;
  const stat = await handle.stat();
  if (!stat.isFile() || stat.size !== payload.size) {
    await handle.close();
    return undefined;
  }
  const opened: OpenedPayload = {
    ...describe(payload, stat.mtimeMs),
    send: async (req, res) => {
      await sendFile(req, res, { handle, size: opened.size, headers: opened.headers, etag: opened.etag, lastModifiedSeconds: opened.lastModifiedSeconds });
      return true;
    },
    close: () => handle.close(),
  };
  return opened;
}

/** The size, validators and headers of a payload; `fallbackMs` is its date when the record gave no Last-Modified. */
function describe(payload: ServedPayload, fallbackMs: number): Omit<OpenedPayload, 'send' | 'close'> {
  const lastModifiedMs = payload.lastModified === null ? Number.NaN : Date.parse(payload.lastModified);
  const lastModifiedSeconds = Math.floor((Number.isNaN(lastModifiedMs) ? fallbackMs : lastModifiedMs) / 1000);
  const etag = entityTag(payload.sha256);
  const headers: HeaderField[] = [
    { name: 'Content-Type', value: payload.mimeType ?? 'application/octet-stream' },
    { name: 'Content-Length', value: String(payload.size) },
    { name: 'Last-Modified', value: new Date(lastModifiedSeconds * 1000).toUTCString() },
    { name: 'ETag', value: etag },
    { name: 'Accept-Ranges', value: 'bytes' },
    ...ARCHIVED_CONTENT_HEADERS,
  ];
  return { size: payload.size, headers, etag, lastModifiedSeconds, payload };
}

/**
 * A payload on object storage. Without the record's Last-Modified its date is 1970 (an object's
 * own date is when it was uploaded, not the file's). The body is the range planned by
 * planFileResponse, read through the store; its first chunk is awaited before the status goes
 * out, so a missing object is a 404, not a broken 200. Fewer bytes than promised cut the
 * answer off, as sendFile does for a file that shrank.
 */
function storedPayload(store: AipStorage, payload: ServedPayload): OpenedPayload {
  const opened: OpenedPayload = {
    ...describe(payload, 0),
    send: async (req, res) => {
      const plan = planFileResponse(req.method ?? 'GET', req.headers, opened);
      const start = (): void => {
        res.statusCode = plan.status;
        for (const { name, value } of plan.headers) res.setHeader(name, value);
      };
      if (plan.body === undefined || plan.body.length === 0) {
        start();
        res.end();
        await finished(res).catch(() => undefined);
        return true;
      }
      const stream = store.read(`${payload.bagPath}/${payload.path}`, { offset: plan.body.start, length: plan.body.length });
      const chunks = (stream as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
      let next: IteratorResult<Buffer>;
      try {
        next = await chunks.next();
      } catch (error) {
        stream.destroy();
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
        throw error;
      }
      start();
      res.on('error', () => {});
      let sent = 0;
      try {
        for (; !next.done; next = await chunks.next()) {
          if (res.destroyed) return true;
          sent += next.value.byteLength;
          if (sent > plan.body.length) break;
          if (!res.write(next.value)) await drained(res);
        }
      } catch (error) {
        res.destroy();
        throw error;
      } finally {
        stream.destroy();
      }
      if (sent !== plan.body.length) res.destroy();
      else res.end();
      await finished(res).catch(() => undefined);
      return true;
    },
    close: async () => {},
  };
  return opened;
}

/**
 * The bag (`aips/…`) and payload path (`data/…`) of a `/files/…` URL path, each segment
 * percent-decoded; undefined for anything that cannot name a payload: no `data/` part, empty,
 * `.` or `..` segments, or a decoded segment holding `/`, `\` or NUL.
 */
export function payloadLocationOf(urlPath: string): { bagPath: string; path: string } | undefined {
  if (!urlPath.startsWith(FILES_PREFIX)) return undefined;
  const segments: string[] = [];
  for (const raw of urlPath.slice(FILES_PREFIX.length).split('/')) {
    let segment: string;
    try {
      segment = decodeURIComponent(raw);
    } catch {
      return undefined;
    }
    if (segment === '' || segment === '.' || segment === '..' || /[/\\\0]/.test(segment)) return undefined;
    segments.push(segment);
  }
  if (segments.length < BAG_DEPTH + 2 || segments[BAG_DEPTH] !== 'data') return undefined;
  return {
    bagPath: bagPathOfFolders(segments[0]!, segments[1]!),
    path: segments.slice(BAG_DEPTH).join('/'),
  };
}

/** The `/files/…` URL path of a payload (each segment percent-encoded). */
export function payloadUrlPath(bagPath: string, path: string): string {
  return FILES_PREFIX + [...bagFolders(bagPath), ...path.split('/')].map(encodeURIComponent).join('/');
}

/**
 * A payload's bytes as a stream, from the archive's folder or its object store, for answers
 * that transform them (replay's rewriting, diffs). The file must still have the catalog's size;
 * the caller checks what it reads against `payload.size` when that matters.
 */
export async function payloadStream(archiveDir: string, payload: PayloadLocation, store?: AipStorage): Promise<Readable | undefined> {
  if (store !== undefined) return store.read(`${payload.bagPath}/${payload.path}`);
  const file = join(archiveDir, ...payload.bagPath.split('/'), ...payload.path.split('/'));
  const handle = await open(file, 'r').catch(() => undefined);
  if (!handle) return undefined;
  const stat = await handle.stat().catch(() => undefined);
  if (!stat?.isFile() || stat.size !== payload.size) {
    await handle.close();
    return undefined;
  }
  return handle.createReadStream();
}
