// The frame every HTML page of `oaibag serve` shares (docs/browse.md): one small navigation
// (home, search, directory, SPARQL, OAI-PMH), one inline style sheet, no script and no external
// asset, so that a page works with scripts off and without a network beyond the archive.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { escapeAttribute, escapeText } from '@oaibag/didl';

const STYLE =
  'body{font:15px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:72em;padding:0 1em;color:#222}' +
  'h1{font-size:1.35em;word-break:break-all}h2{font-size:1.1em;margin-top:1.6em}table{border-collapse:collapse;width:100%}' +
  'td,th{padding:.25em .6em;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}th{background:#f4f4f4}' +
  'a{word-break:break-all;color:#0645ad}nav{padding:.4em 0;border-bottom:1px solid #ddd;margin-bottom:1em}nav a{margin-right:1em}' +
  'nav form{display:inline}nav input[type=search]{width:18em}code,textarea,pre{font:13px/1.4 ui-monospace,monospace}' +
  'textarea{width:100%;box-sizing:border-box}.added{color:#1a7f37}.modified{color:#9a6700}.touched{color:#57606a}' +
  '.deleted{color:#cf222e}.restored{color:#0969da}.muted{color:#57606a}.pager a{margin-right:1.5em}' +
  '.num{text-align:right;font-variant-numeric:tabular-nums}';

export interface PageOptions {
  /** The archive's base URL, without a trailing slash. */
  base: string;
  title: string;
  /** The page's content, already HTML. */
  body: string;
  /** The same thing as RDF, when there is such a view: linked from the navigation. */
  data?: string;
  /** More CSS for this page alone. */
  style?: string;
}

/** A whole page: the navigation, the title as its heading, then the body. */
export function htmlPage(options: PageOptions): string {
  const { base } = options;
  const href = (path: string) => escapeAttribute(`${base}${path}`);
  const nav =
    `<nav><a href="${href('/')}">Home</a>` +
    `<form method="get" action="${href('/search')}" role="search"><input type="search" name="q" placeholder="Search by URL" aria-label="Search by URL"> <button type="submit">Search</button></form> ` +
    `<a href="${href('/directory')}">Directory</a><a href="${href('/sparql')}">SPARQL</a><a href="${href('/oai?verb=Identify')}">OAI-PMH</a>` +
    (options.data ? `<a href="${escapeAttribute(options.data)}">RDF</a>` : '') +
    '</nav>\n';
  return (
    `<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<title>${escapeText(options.title)}</title><style>${STYLE}${options.style ?? ''}</style></head><body>\n${nav}<h1>${escapeText(options.title)}</h1>\n${options.body}</body></html>\n`
  );
}

/**
 * The policy of the archive's own pages: no script at all, styles inline only, images and forms
 * of the archive's own; a page that frames replayed content names where the frame may load from.
 */
export function pagePolicy(frameSrc?: string): string {
  return [
    "default-src 'none'",
    "style-src 'unsafe-inline'",
    "img-src 'self' data:",
    "form-action 'self'",
    "base-uri 'none'",
    "frame-ancestors 'self'",
    ...(frameSrc ? [`frame-src ${frameSrc}`] : []),
  ].join('; ');
}

export interface PageAnswer {
  /** Default 200. */
  status?: number;
  headers?: Record<string, string>;
  /** Where a frame on the page may load from (replay's banner page). */
  frameSrc?: string;
}

/** Answers a page of the archive's own, with its policy; the body left out for HEAD. */
export function answerPage(req: IncomingMessage, res: ServerResponse, html: string, answer: PageAnswer = {}): void {
  const bytes = Buffer.from(html, 'utf8');
  res.writeHead(answer.status ?? 200, {
    'Content-Type': 'text/html; charset=utf-8',
    'Content-Length': bytes.length,
    'Content-Security-Policy': pagePolicy(answer.frameSrc),
    ...answer.headers,
  });
  res.end(req.method === 'HEAD' ? undefined : bytes);
}
