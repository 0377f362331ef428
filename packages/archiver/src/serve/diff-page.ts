// What changed inside a file (docs/browse.md, "Diff"): `/diff/<timestamp>/<timestamp>/<URL>`
// compares the captures of a URL at or before two instants. Text (HTML, CSS, JavaScript, plain
// text, XML, JSON) gets a line diff by jsdiff, with unchanged stretches folded; anything else,
// or a text too large or too different to diff within the bounds, gets its size and digest
// side by side. The bounds keep one request's memory and CPU small whatever the archive holds.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { escapeAttribute, escapeText } from '@oaibag/didl';
import { type ChangeObject, diffLines } from 'diff';
import type { AipStorage } from '../aip/aip-storage.js';
import { type Capture, captureByDigest, capturesAround } from '../catalog/browse-queries.js';
import type { Catalog } from '../catalog/catalog.js';
import type { PayloadLocation } from '../catalog/catalog-types.js';
import { answerPage, htmlPage } from './page-shell.js';
import { payloadStream } from './payload-files.js';
import { REPLAY_PREFIX, readText } from './replay.js';
import { instantOf, readableInstant, timestamp14 } from './replay-time.js';
import { answerPlain } from './text-answers.js';

export const DIFF_BOUNDS = {
  /** Each side is read up to this many bytes; a larger file is compared by size and digest. */
  maxBytes: 2 * 1024 * 1024,
  /** jsdiff gives up past this many edits (a rewrite, not a change). */
  maxEditLength: 20_000,
  /** …or past this many milliseconds. */
  timeoutMs: 2_000,
  /** Unchanged lines shown around each change. */
  context: 3,
} as const;

const TEXT_TYPES = new Set([
  'application/javascript',
  'application/json',
  'application/xml',
  'application/xhtml+xml',
  'application/ecmascript',
  'image/svg+xml',
]);

/** Whether a MIME type is text a line diff makes sense of. */
export function isDiffable(mimeType: string | null): boolean {
  const essence = (mimeType ?? '').split(';')[0]!.trim().toLowerCase();
  return essence.startsWith('text/') || TEXT_TYPES.has(essence) || essence.endsWith('+xml') || essence.endsWith('+json');
}

interface DiffContext {
  archiveDir: string;
  store?: AipStorage | undefined;
  catalog: Catalog;
  base: string;
  mayRead(payload: PayloadLocation): boolean;
  refuse(): void;
}

/**
 * Answers `/diff/<from>/<to>/<URL>` (captures at or before two instants) and
 * `/diff?url=<URL>&from=<sha256>&to=<sha256>` (two versions by their digests, as an audit names
 * them); false when the path is neither.
 */
export async function answerDiff(context: DiffContext, req: IncomingMessage, res: ServerResponse, asked: URL): Promise<boolean> {
  const raw = req.url ?? '';
  let url: string;
  let left: Capture | undefined;
  let right: Capture | undefined;
  if (asked.pathname === '/diff') {
    url = asked.searchParams.get('url') ?? '';
    const from = asked.searchParams.get('from') ?? '';
    const to = asked.searchParams.get('to') ?? '';
    if (!/^https?:\/\//i.test(url) || url.length > 8192 || !/^[0-9a-f]{64}$/.test(from) || !/^[0-9a-f]{64}$/.test(to)) {
      answerPlain(res, 400, 'a diff by digests is /diff?url=<original URL>&from=<SHA-256>&to=<SHA-256>, digests as 64 lower-case hex digits\n');
      return true;
    }
    left = captureByDigest(context.catalog, url, from);
    right = captureByDigest(context.catalog, url, to);
  } else if (raw.startsWith('/diff/')) {
    const place = /^\/diff\/(\d{4,14})\/(\d{4,14})\/(https?:\/\/.*)$/is.exec(raw);
    const from = place ? instantOf(place[1]!) : undefined;
    const to = place ? instantOf(place[2]!) : undefined;
    if (!place || from === undefined || to === undefined) {
      answerPlain(res, 400, 'a diff URL is /diff/<timestamp>/<timestamp>/<original URL>, timestamps of 4 to 14 digits, UTC\n');
      return true;
    }
    url = place[3]!;
    left = captureAt(context.catalog, url, from);
    right = captureAt(context.catalog, url, to);
  } else return false;
  const base = context.base;
  if (!left || !right) {
    answerPage(
      req,
      res,
      htmlPage({ base, title: 'Not in the archive', body: `<p>The archive holds no capture of <code>${escapeText(url)}</code> at those dates.</p>\n` }),
      {
        status: 404,
      },
    );
    return true;
  }
  const parts = [context.catalog.versionParts(left.versionId)[0], context.catalog.versionParts(right.versionId)[0]];
  if (parts.some((part) => part !== undefined && !context.mayRead(part))) {
    context.refuse();
    return true;
  }
  let body = sideBySide(base, left, right);
  if (left.sha256 === right.sha256) body += '<p>The two captures have the same bytes.</p>\n';
  else if (!isDiffable(left.mimeType) || !isDiffable(right.mimeType)) body += '<p>Not text: compared by size and digest only.</p>\n';
  else if (left.size > DIFF_BOUNDS.maxBytes || right.size > DIFF_BOUNDS.maxBytes) {
    body += `<p>Larger than ${DIFF_BOUNDS.maxBytes.toLocaleString('en-US')} bytes: compared by size and digest only.</p>\n`;
  } else {
    const [a, b] = await Promise.all([text(context, parts[0], left), text(context, parts[1], right)]);
    const changes =
      a === undefined || b === undefined ? undefined : diffLines(a, b, { maxEditLength: DIFF_BOUNDS.maxEditLength, timeout: DIFF_BOUNDS.timeoutMs });
    body += changes === undefined ? '<p>Too different to diff within the bounds: compared by size and digest only.</p>\n' : lineTable(changes);
  }
  answerPage(req, res, htmlPage({ base, title: `${url}: what changed`, body, style: DIFF_STYLE }));
  return true;
}

const DIFF_STYLE =
  'table.diff td{font:13px/1.35 ui-monospace,monospace;white-space:pre-wrap;word-break:break-all;border:0;padding:0 .5em}' +
  'table.diff td.n{color:#57606a;text-align:right;width:4em;user-select:none}tr.del td.t{background:#ffebe9}tr.ins td.t{background:#dafbe1}' +
  'tr.del td.s,tr.ins td.s{font-weight:bold}tr.fold td{color:#57606a;background:#f6f8fa}';

function captureAt(catalog: Catalog, url: string, instant: string): Capture | undefined {
  const around = capturesAround(catalog, url, instant);
  return around.atOrBefore ?? around.after;
}

async function text(context: DiffContext, part: PayloadLocation | undefined, capture: Capture): Promise<string | undefined> {
  if (!part) return undefined;
  const stream = await payloadStream(context.archiveDir, part, context.store);
  return stream ? readText(stream, capture.mimeType, DIFF_BOUNDS.maxBytes) : undefined;
}

function sideBySide(base: string, left: Capture, right: Capture): string {
  const cell = (capture: Capture) =>
    `<a href="${escapeAttribute(`${base}${REPLAY_PREFIX}${timestamp14(capture.storedAt)}/${capture.url}`)}">${escapeText(readableInstant(capture.storedAt))}</a>`;
  return (
    `<p><a href="${escapeAttribute(`${base}/history/${left.url}`)}">history</a></p>\n` +
    '<table><tr><th></th><th>before</th><th>after</th></tr>\n' +
    `<tr><th>archived</th><td>${cell(left)}</td><td>${cell(right)}</td></tr>\n` +
    `<tr><th>type</th><td>${escapeText(left.mimeType ?? '')}</td><td>${escapeText(right.mimeType ?? '')}</td></tr>\n` +
    `<tr><th>bytes</th><td>${left.size.toLocaleString('en-US')}</td><td>${right.size.toLocaleString('en-US')}</td></tr>\n` +
    `<tr><th>SHA-256</th><td><code>${escapeText(left.sha256)}</code></td><td><code>${escapeText(right.sha256)}</code></td></tr>\n</table>\n`
  );
}

/** The changes as numbered lines: removed, added, and unchanged ones near a change. */
function lineTable(changes: ChangeObject<string>[]): string {
  let html = '<table class="diff">\n';
  let oldLine = 1;
  let newLine = 1;
  let removed = 0;
  let added = 0;
  changes.forEach((change, index) => {
    const lines = change.value.replace(/\n$/, '').split('\n');
    if (change.removed || change.added) {
      const kind = change.removed ? 'del' : 'ins';
      for (const line of lines) {
        const number = change.removed ? oldLine++ : newLine++;
        html += `<tr class="${kind}"><td class="n">${number}</td><td class="s">${change.removed ? '−' : '+'}</td><td class="t">${escapeText(line)}</td></tr>\n`;
      }
      if (change.removed) removed += lines.length;
      else added += lines.length;
      return;
    }
    // Unchanged: the lines next to a change, the rest folded.
    const keepHead = index > 0 ? DIFF_BOUNDS.context : 0;
    const keepTail = index < changes.length - 1 ? DIFF_BOUNDS.context : 0;
    lines.forEach((line, at) => {
      const shown = at < keepHead || at >= lines.length - keepTail;
      if (shown) html += `<tr><td class="n">${newLine}</td><td class="s"></td><td class="t">${escapeText(line)}</td></tr>\n`;
      else if (at === keepHead)
        html += `<tr class="fold"><td class="n">…</td><td class="s"></td><td class="t">${lines.length - keepHead - keepTail} unchanged lines</td></tr>\n`;
      oldLine += 1;
      newLine += 1;
    });
  });
  return `<p><span class="deleted">−${removed}</span> <span class="added">+${added}</span> lines</p>\n${html}</table>\n`;
}
