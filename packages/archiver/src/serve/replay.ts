// Replay (docs/browse.md, "Replay"): `/replay/<timestamp>/<original URL>` shows the capture of
// a URL at or before an instant, Wayback-style. The page there is the archive's own: a banner
// (the capture's date, the previous and next captures, the history, the live URL) above a
// sandboxed frame. The frame loads `/replay/<timestamp>mp_/<URL>`, the archived bytes with their
// links rewritten to replay at the same instant (replay-rewrite.ts); `id_` gives the bytes as
// archived. Archived content never runs as the archive: it is sandboxed without
// allow-same-origin (an opaque origin: no cookies, no credentials of the archive's, no reading
// of its pages) and its policy lets it load only other replayed resources and connect nowhere.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { escapeAttribute, escapeText } from '@oaibag/didl';
import { httpDate } from '@oaibag/oai-pmh';
import type { AipStorage } from '../aip/aip-storage.js';
import { bagFolders } from '../aip/layout-names.js';
import { type Capture, capturesAround, deletionBetween, hasUrl } from '../catalog/browse-queries.js';
import type { Catalog } from '../catalog/catalog.js';
import type { PayloadLocation } from '../catalog/catalog-types.js';
import { answerPage, htmlPage } from './page-shell.js';
import { ARCHIVED_CONTENT_HEADERS, openServedPayload, payloadStream, payloadUrlPath } from './payload-files.js';
import { htmlRewriter, type ReplayTargets, rewriteCss } from './replay-rewrite.js';
import { instantOf, readableInstant, timestamp14 } from './replay-time.js';
import { answerPlain, headerSafe } from './text-answers.js';

export const REPLAY_PREFIX = '/replay/';

/** A style sheet longer than this is replayed as archived, its URLs not rewritten (default 2 MiB). */
export const REPLAY_CSS_MAX_BYTES = 2 * 1024 * 1024;

/**
 * An HTML page larger than this is replayed as archived, its links not rewritten (default 64
 * MiB): the tokenizer holds one token whole, and a hostile page can be one token.
 */
export const REPLAY_HTML_MAX_BYTES = 64 * 1024 * 1024;

/** The longest original URL replay looks up (the request line is bounded by Node as well). */
const MAX_ORIGINAL_LENGTH = 8192;

export interface ReplayContext {
  archiveDir: string;
  store?: AipStorage | undefined;
  catalog: Catalog;
  base: string;
  mayRead(payload: PayloadLocation): boolean;
  refuse(): void;
}

/** The policy of replayed content: its scripts run in an opaque origin, and reach nothing but replay. */
export function replayContentPolicy(base: string): string {
  const replay = `${base}${REPLAY_PREFIX}`;
  return [
    'sandbox allow-scripts allow-top-navigation-by-user-activation',
    "default-src 'none'",
    `script-src ${replay} 'unsafe-inline' 'unsafe-eval'`,
    `style-src ${replay} 'unsafe-inline'`,
    `img-src ${replay} data: blob:`,
    `font-src ${replay} data:`,
    `media-src ${replay} blob:`,
    `frame-src ${replay}`,
    "connect-src 'none'",
    "worker-src 'none'",
    "manifest-src 'none'",
    "form-action 'none'",
    "base-uri 'none'",
  ].join('; ');
}

/** Answers `/replay/…`; false when the path is not one. */
export async function answerReplay(context: ReplayContext, req: IncomingMessage, res: ServerResponse): Promise<boolean> {
  const raw = req.url ?? '/';
  if (!raw.startsWith(REPLAY_PREFIX)) return false;
  const place = /^\/replay\/(\d{1,14})(mp_|id_)?\/(.*)$/s.exec(raw);
  const instant = place ? instantOf(place[1]!) : undefined;
  if (!place || instant === undefined) {
    answerPlain(res, 400, 'a replay URL is /replay/<timestamp of 4 to 14 digits, UTC>/<original URL>, as in /replay/20261120140301/http://example.org/\n');
    return true;
  }
  // Some clients fold `//` in a path: `http:/example.org` is taken as `http://example.org`.
  const asked = place[3]!.replace(/^(https?:)\/+/i, '$1//');
  if (!/^https?:\/\//i.test(asked) || asked.length > MAX_ORIGINAL_LENGTH) {
    answerPlain(res, 400, `replay takes an http or https URL of at most ${MAX_ORIGINAL_LENGTH} characters after the timestamp\n`);
    return true;
  }
  const url = archivedUrl(context.catalog, asked);
  const around = url === undefined ? {} : capturesAround(context.catalog, url, instant);
  const capture = around.atOrBefore ?? around.after;
  if (url === undefined || capture === undefined) {
    answerPage(req, res, notArchivedPage(context.base, asked), { status: 404 });
    return true;
  }
  const mode = place[2];
  if (mode === undefined) await bannerPage(context, req, res, place[1]!, capture);
  else await archivedBytes(context, req, res, capture, mode, place[1]!);
  return true;
}

/**
 * The URL as the catalog has it: as given, else as a browser writes it, else with its
 * percent-encoding undone (a source may name an IRI as it is, which a browser sends encoded),
 * else a folder's index page.
 */
function archivedUrl(catalog: Catalog, asked: string): string | undefined {
  const candidates = [asked];
  try {
    candidates.push(new URL(asked).href);
  } catch {}
  try {
    candidates.push(decodeURI(asked));
  } catch {}
  for (const candidate of [...candidates]) if (candidate.endsWith('/')) candidates.push(`${candidate}index.html`);
  return candidates.find((candidate) => hasUrl(catalog, candidate));
}

async function bannerPage(context: ReplayContext, req: IncomingMessage, res: ServerResponse, asked: string, capture: Capture): Promise<void> {
  const ts = timestamp14(capture.storedAt);
  const base = context.base;
  if (ts !== asked) {
    res.writeHead(302, { Location: headerSafe(`${base}${REPLAY_PREFIX}${ts}/${capture.url}`), 'Content-Length': 0, ...mementoHeaders(context, capture) });
    res.end();
    return;
  }
  const near = capturesAround(context.catalog, capture.url, capture.storedAt);
  const deleted = deletionBetween(context.catalog, capture.url, capture.storedAt, near.after?.storedAt ?? '9999');
  const replay = (other: Capture) => `${base}${REPLAY_PREFIX}${timestamp14(other.storedAt)}/${other.url}`;
  const frame = `${base}${REPLAY_PREFIX}${ts}mp_/${capture.url}`;
  const banner =
    `<header class="replay"><strong>Archived ${escapeText(readableInstant(capture.storedAt))}</strong> · ` +
    `<a href="${escapeAttribute(capture.url)}" rel="nofollow noreferrer">${escapeText(capture.url)}</a> (live)` +
    `<br>${near.before ? `<a href="${escapeAttribute(replay(near.before))}" rel="prev">← ${escapeText(readableInstant(near.before.storedAt))}</a>` : '<span class="muted">first capture</span>'}` +
    ` · <a href="${escapeAttribute(`${base}/history/${capture.url}`)}">history</a>` +
    ` · <a href="${escapeAttribute(`${base}${REPLAY_PREFIX}${ts}id_/${capture.url}`)}">as archived</a>` +
    ` · ${near.after ? `<a href="${escapeAttribute(replay(near.after))}" rel="next">${escapeText(readableInstant(near.after.storedAt))} →</a>` : '<span class="muted">last capture</span>'}` +
    (deleted ? ` · <span class="deleted">deleted ${escapeText(readableInstant(deleted))}</span>` : '') +
    '</header>\n' +
    `<iframe title="${escapeAttribute(`the archived page ${capture.url}`)}" src="${escapeAttribute(frame)}" sandbox="allow-scripts allow-top-navigation-by-user-activation"></iframe>\n`;
  const html = htmlPage({
    base,
    title: `${capture.url} · ${readableInstant(capture.storedAt)}`,
    body: banner,
    style:
      'body{max-width:none;margin:0;padding:0}nav{padding:.3em 1em;margin:0}header.replay{padding:.4em 1em;background:#fff8c5;border-bottom:1px solid #d4a72c}' +
      'iframe{display:block;border:0;width:100%;height:calc(100vh - 6.5em)}h1{display:none}',
  });
  answerPage(req, res, html, { headers: mementoHeaders(context, capture), frameSrc: `${base}${REPLAY_PREFIX}` });
}

/** The archived bytes: rewritten for the frame (`mp_`), or as archived (`id_`). */
async function archivedBytes(context: ReplayContext, req: IncomingMessage, res: ServerResponse, capture: Capture, mode: string, asked: string): Promise<void> {
  const part = context.catalog.versionParts(capture.versionId)[0];
  if (part && !context.mayRead(part)) return context.refuse();
  const essence = (capture.mimeType ?? '').split(';')[0]!.trim().toLowerCase();
  const html = essence === 'text/html' || essence === 'application/xhtml+xml';
  const rewrite = mode === 'mp_' && ((html && capture.size <= REPLAY_HTML_MAX_BYTES) || (essence === 'text/css' && capture.size <= REPLAY_CSS_MAX_BYTES));
  const ts = timestamp14(capture.storedAt);
  const at = asked.length === 14 ? asked : ts;
  const targets: ReplayTargets = {
    embed: (url) => `${context.base}${REPLAY_PREFIX}${at}mp_/${url}`,
    page: (url) => `${context.base}${REPLAY_PREFIX}${at}/${url}`,
  };
  const policy = mode === 'mp_' ? replayContentPolicy(context.base) : ARCHIVED_CONTENT_HEADERS[0]!.value;
  const headers = { ...mementoHeaders(context, capture), 'Content-Security-Policy': policy };
  if (part && rewrite) {
    const stream = await payloadStream(context.archiveDir, part, context.store);
    if (stream) {
      res.writeHead(200, { ...headers, 'Content-Type': `${essence}; charset=utf-8`, 'Cache-Control': 'no-cache' });
      if (req.method === 'HEAD') {
        stream.destroy();
        res.end();
        return;
      }
      if (essence === 'text/css') {
        const css = await readText(stream, capture.mimeType, REPLAY_CSS_MAX_BYTES);
        res.end(rewriteCss(css, capture.url, targets));
        return;
      }
      await pipeline(stream, decodeText(capture.mimeType), htmlRewriter(capture.url, targets), res);
      return;
    }
  }
  const file = part ? await openServedPayload(context.archiveDir, context.catalog, payloadUrlPath(part.bagPath, part.path), context.store) : undefined;
  if (!file) {
    answerPlain(res, 404, 'the bytes of this capture are not in the archive\n');
    return;
  }
  const replaced = new Set(['content-type', 'content-security-policy', 'last-modified', ...Object.keys(headers).map((name) => name.toLowerCase())]);
  file.headers = [
    ...file.headers.filter((header) => !replaced.has(header.name.toLowerCase())),
    { name: 'Content-Type', value: capture.mimeType ?? 'application/octet-stream' },
    ...Object.entries(headers).map(([name, value]) => ({ name, value })),
    ...(capture.lastModified !== null ? [{ name: 'Last-Modified', value: capture.lastModified }] : []),
  ];
  try {
    if (!(await file.send(req, res))) answerPlain(res, 404, 'the bytes of this capture are not in the archive\n');
  } finally {
    await file.close();
  }
}

/** Memento-Datetime and the Link header that ties a replayed capture to its original, TimeGate and TimeMap. */
function mementoHeaders(context: ReplayContext, capture: Capture): Record<string, string> {
  const base = context.base;
  return {
    'Memento-Datetime': httpDate(Math.floor(Date.parse(capture.storedAt) / 1000)),
    Link: headerSafe(
      [
        `<${capture.url}>; rel="original"`,
        `<${base}/timegate/${capture.url}>; rel="timegate"`,
        `<${base}/timemap/link/${capture.url}>; rel="timemap"; type="application/link-format"`,
        `<${base}/memento/${bagFolders(capture.bagPath).join('/')}/${capture.record}>; rel="memento"; datetime="${httpDate(Math.floor(Date.parse(capture.storedAt) / 1000))}"`,
      ].join(', '),
    ),
  };
}

function notArchivedPage(base: string, url: string): string {
  return htmlPage({
    base,
    title: 'Not in the archive',
    body:
      `<p>The archive holds no capture of <code>${escapeText(url)}</code>.</p>\n` +
      `<p><a href="${escapeAttribute(`${base}/search?q=${encodeURIComponent(url)}&match=prefix`)}">Search for URLs that begin with it</a>.</p>\n`,
  });
}

/** The charset an archived text declares in its Content-Type; UTF-8 when none or unknown. */
function charsetOf(mimeType: string | null): string {
  const declared = /;\s*charset\s*=\s*"?([\w.:-]+)/i.exec(mimeType ?? '')?.[1];
  if (declared !== undefined) {
    try {
      new TextDecoder(declared);
      return declared;
    } catch {}
  }
  return 'utf-8';
}

/**
 * Bytes to text by the archived type's charset, chunk by chunk. Without one in the type, an
 * HTML page's own `<meta charset>` (or http-equiv) in its first 1,024 bytes decides, as in a
 * browser's prescan; then UTF-8.
 */
function decodeText(mimeType: string | null): (source: AsyncIterable<Buffer>) => AsyncGenerator<string> {
  return async function* decode(source) {
    let decoder: InstanceType<typeof TextDecoder> | undefined;
    for await (const chunk of source) {
      decoder ??= new TextDecoder(/;\s*charset\s*=/i.test(mimeType ?? '') ? charsetOf(mimeType) : charsetOf(metaCharset(chunk)));
      const text = decoder.decode(chunk, { stream: true });
      if (text !== '') yield text;
    }
    const rest = decoder?.decode() ?? '';
    if (rest !== '') yield rest;
  };
}

/** `;charset=…` of the charset an HTML page's first bytes declare in a meta tag, or null. */
function metaCharset(head: Buffer): string | null {
  const declared = /<meta[^>]{0,512}?charset\s*=\s*["']?([\w.:-]{1,40})/i.exec(head.subarray(0, 1024).toString('latin1'))?.[1];
  return declared === undefined ? null : `;charset=${declared}`;
}

/** A whole archived text, of at most `maxBytes` (more is cut off). */
export async function readText(stream: Readable, mimeType: string | null, maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    length += chunk.length;
    if (length >= maxBytes) break;
  }
  stream.destroy();
  return new TextDecoder(charsetOf(mimeType)).decode(Buffer.concat(chunks).subarray(0, maxBytes));
}
