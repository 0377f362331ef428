// Memento (RFC 7089) over the archive (docs/linked-data.md, "Memento"): the original resource
// (URI-R) is the archived URL; its TimeGate is /timegate/<URI-R>, its TimeMap
// /timemap/link/<URI-R>, and each version is a memento at /memento/<bag>/<record>, served
// with its Memento-Datetime (when the archive captured it) and the Link header that ties them.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { httpDate, parseHttpDate } from '@oaibag/oai-pmh';
import type { AipStorage } from '../aip/aip-storage.js';
import { bagFolders, bagPathOfFolders } from '../aip/layout-names.js';
import type { Catalog } from '../catalog/catalog.js';
import type { PayloadLocation } from '../catalog/catalog-types.js';
import { type MementoRow, mementosOf } from '../catalog/memento-rows.js';
import { itemOfRecord } from '../catalog/served-items.js';
import { openServedPayload, payloadUrlPath } from './payload-files.js';
import { answerPlain, answerText, headerSafe } from './text-answers.js';

export const MEMENTO_PREFIXES = ['/timegate/', '/timemap/link/', '/memento/'] as const;

interface MementoContext {
  archiveDir: string;
  /** The archive's object store, when its bags are there. */
  store?: AipStorage | undefined;
  catalog: Catalog;
  base: string;
  /** The access decision for a payload's bytes (archive-access.ts): a memento is one more way to them. */
  mayRead(payload: PayloadLocation): boolean;
  /** Answers the refusal (401 or 403). */
  refuse(): void;
}

/** Answers the Memento paths; false when the path is none of them. */
export async function answerMemento(context: MementoContext, req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
  const raw = req.url ?? '/';
  if (url.pathname.startsWith('/memento/')) {
    await memento(context, req, res, url.pathname);
    return true;
  }
  // The original URL is taken from the raw request target: it may hold its own `?` and `//`.
  const prefix = MEMENTO_PREFIXES.find((candidate) => raw.startsWith(candidate));
  if (!prefix) return false;
  const original = raw.slice(prefix.length);
  const versions = mementosOf(context.catalog, original);
  if (versions.length === 0) {
    answerPlain(res, 404, `the archive holds no capture of ${original}\n`);
    return true;
  }
  if (prefix === '/timemap/link/') timeMap(context, req, res, original, versions);
  else timeGate(context, req, res, original, versions);
  return true;
}

function timeGate(context: MementoContext, req: IncomingMessage, res: ServerResponse, original: string, versions: MementoRow[]): void {
  const given = req.headers['accept-datetime'];
  const header = Array.isArray(given) ? given[0] : given;
  let wanted = Number.POSITIVE_INFINITY;
  if (header !== undefined) {
    const seconds = parseHttpDate(header);
    if (seconds === undefined) {
      answerPlain(res, 400, `Accept-Datetime must be an HTTP date (like ${httpDate(0)}): ${header}\n`, { Vary: 'accept-datetime' });
      return;
    }
    wanted = seconds;
  }
  // The last capture at or before the datetime asked for; before the first, the first.
  let chosen = versions[0]!;
  for (const version of versions) if (seconds(version) <= wanted) chosen = version;
  res.writeHead(302, {
    Location: headerSafe(mementoUrl(context, chosen)),
    Vary: 'accept-datetime',
    Link: headerSafe([`<${original}>; rel="original"`, `<${timeMapUrl(context, original)}>; rel="timemap"; type="application/link-format"`].join(', ')),
    'Content-Length': 0,
  });
  res.end();
}

function timeMap(context: MementoContext, req: IncomingMessage, res: ServerResponse, original: string, versions: MementoRow[]): void {
  const first = versions[0]!;
  const last = versions[versions.length - 1]!;
  const links = [
    `<${original}>; rel="original"`,
    `<${context.base}/timegate/${original}>; rel="timegate"`,
    `<${timeMapUrl(context, original)}>; rel="self"; type="application/link-format"; from="${httpDate(seconds(first))}"; until="${httpDate(seconds(last))}"`,
    ...versions.map((version, index) => {
      const rel = versions.length === 1 ? 'first last memento' : index === 0 ? 'first memento' : index === versions.length - 1 ? 'last memento' : 'memento';
      return `<${mementoUrl(context, version)}>; rel="${rel}"; datetime="${httpDate(seconds(version))}"`;
    }),
  ];
  answerText(req, res, 'application/link-format', `${links.join(',\n')}\n`);
}

/** A memento: the version's (first) payload, with its own type and date and the Memento headers. */
async function memento(context: MementoContext, req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
  const place = /^\/memento\/([^/]+)\/([^/]+)\/(\d{1,9})$/.exec(path);
  const item = place ? itemOfRecord(context.catalog, bagPathOfFolders(place[1]!, place[2]!), Number(place[3])) : undefined;
  const part = item ? context.catalog.versionParts(item.version.id)[0] : undefined;
  if (part && !context.mayRead(part)) return context.refuse();
  const file = part ? await openServedPayload(context.archiveDir, context.catalog, payloadUrlPath(part.bagPath, part.path), context.store) : undefined;
  if (!item || !file) {
    answerPlain(res, 404, 'no such memento\n');
    return;
  }
  const version = item.version;
  const captured = Math.floor(Date.parse(version.storedAt) / 1000);
  const own = new Map([
    ['content-type', version.mimeType ?? 'application/octet-stream'],
    ...(version.lastModified !== null ? [['last-modified', version.lastModified] as [string, string]] : []),
  ]);
  file.headers = [
    ...file.headers.filter((header) => !own.has(header.name.toLowerCase())),
    { name: 'Content-Type', value: own.get('content-type')! },
    ...(own.has('last-modified') ? [{ name: 'Last-Modified', value: own.get('last-modified')! }] : []),
    { name: 'Memento-Datetime', value: httpDate(captured) },
    {
      name: 'Link',
      value: headerSafe(
        [
          `<${item.original}>; rel="original"`,
          `<${context.base}/timegate/${item.original}>; rel="timegate"`,
          `<${timeMapUrl(context, item.original)}>; rel="timemap"; type="application/link-format"`,
        ].join(', '),
      ),
    },
  ];
  const modified = version.lastModified === null ? Number.NaN : Date.parse(version.lastModified);
  if (!Number.isNaN(modified)) file.lastModifiedSeconds = Math.floor(modified / 1000);
  try {
    if (!(await file.send(req, res))) answerPlain(res, 404, 'no such memento\n');
  } finally {
    await file.close();
  }
}

function seconds(version: MementoRow): number {
  return Math.floor(Date.parse(version.storedAt) / 1000);
}

function mementoUrl(context: MementoContext, version: MementoRow): string {
  return `${context.base}/memento/${bagFolders(version.bagPath).join('/')}/${version.record}`;
}

function timeMapUrl(context: MementoContext, original: string): string {
  return `${context.base}/timemap/link/${original}`;
}
