// The archive's payload files over HTTP, for `oaibag serve` (docs/serve.md, "Payloads"):
// `/files/<bag under aips/>/<payload path>`, only for a (bag, path) the catalog lists as a
// payload, with the original Content-Type and Last-Modified and an ETag from the SHA-256.
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { entityTag, type HeaderField, type SendableFile } from '@oaibag/oai-pmh';
import { BAG_DEPTH, bagFolders, bagPathOfFolders } from '../aip/layout-names.js';
import type { Catalog } from '../catalog/catalog.js';
import type { ServedPayload } from '../catalog/catalog-types.js';

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

/** A payload file opened to be sent, with the catalog's row it was opened from. */
export interface OpenedPayload extends SendableFile {
  payload: ServedPayload;
}

/**
 * The catalogued payload a `/files/…` URL path names, opened and checked against the
 * catalog's size; undefined when the URL names no payload (anything else of the archive, a
 * malformed or hostile path, a file gone or of another size). The caller closes the handle.
 */
export async function openServedPayload(archiveDir: string, catalog: Catalog, urlPath: string): Promise<OpenedPayload | undefined> {
  const location = payloadLocationOf(urlPath);
  if (!location) return undefined;
  const payload = catalog.servedPayload(location.bagPath, location.path);
  if (!payload) return undefined;
  // Both parts came from the catalog's own rows: the file opened is one the catalog placed.
  const file = join(archiveDir, ...payload.bagPath.split('/'), ...payload.path.split('/'));
  const handle = await open(file, 'r').catch(() => undefined);
  if (!handle) return undefined;
  const stat = await handle.stat();
  if (!stat.isFile() || stat.size !== payload.size) {
    await handle.close();
    return undefined;
  }
  const lastModifiedMs = payload.lastModified === null ? Number.NaN : Date.parse(payload.lastModified);
  const lastModifiedSeconds = Math.floor((Number.isNaN(lastModifiedMs) ? stat.mtimeMs : lastModifiedMs) / 1000);
  const etag = entityTag(payload.sha256);
  const headers: HeaderField[] = [
    { name: 'Content-Type', value: payload.mimeType ?? 'application/octet-stream' },
    { name: 'Content-Length', value: String(payload.size) },
    { name: 'Last-Modified', value: new Date(lastModifiedSeconds * 1000).toUTCString() },
    { name: 'ETag', value: etag },
    { name: 'Accept-Ranges', value: 'bytes' },
    ...ARCHIVED_CONTENT_HEADERS,
  ];
  return { handle, size: payload.size, headers, etag, lastModifiedSeconds, payload };
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
