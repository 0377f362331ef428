// Dereferenceable URIs (docs/linked-data.md, "URIs"): `/resource/<tail>` answers 303 to
// `/page/<tail>` (HTML, for people) or `/data/<tail>` (RDF) by the Accept header, as OAI2LOD
// and the Linked Data practice do; `/data/` gives Turtle, RDF/XML, N-Triples or JSON-LD, by
// Accept or `?output=`.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { escapeAttribute, escapeText } from '@oaibag/didl';
import { negotiate, type Offer } from './content-negotiation.js';
import type { GraphStore } from './graph-store.js';
import { RDF_FORMATS } from './sparql-endpoint.js';

export const LINKED_DATA_PREFIXES = ['/resource/', '/data/', '/page/'] as const;

const HTML = 'text/html';
const RESOURCE_OFFERS: ReadonlyArray<Offer<'page' | 'data'>> = [
  { mediaType: HTML, value: 'page' },
  { mediaType: 'application/xhtml+xml', value: 'page' },
  ...RDF_FORMATS.map((offer) => ({ mediaType: offer.mediaType, value: 'data' as const })),
];

/** Answers `/resource/…`, `/data/…` and `/page/…`; false when the path is none of them. */
export async function answerLinkedData(graph: GraphStore, req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
  const prefix = LINKED_DATA_PREFIXES.find((candidate) => url.pathname.startsWith(candidate));
  if (!prefix) return false;
  const tail = url.pathname.slice(prefix.length);
  const uri = `${graph.uris.base}/resource/${tail}`;
  graph.sync();
  if (tail === '' || graph.store.match(graph.oxigraph.namedNode(uri), null, null, null).length === 0) {
    plain(res, 404, `nothing in the archive is named ${uri}\n`);
    return true;
  }
  if (prefix === '/resource/') {
    const chosen = negotiate(req.headers.accept, RESOURCE_OFFERS);
    if (!chosen) {
      plain(res, 406, `offered: ${RESOURCE_OFFERS.map((offer) => offer.mediaType).join(', ')}\n`);
      return true;
    }
    res.writeHead(303, { Location: `${graph.uris.base}/${chosen.value}/${tail}`, Vary: 'Accept', 'Content-Length': 0 });
    res.end();
    return true;
  }
  if (prefix === '/data/') {
    const output = url.searchParams.get('output');
    const chosen = output !== null ? RDF_FORMATS.find((offer) => offer.value === output) : negotiate(req.headers.accept, RDF_FORMATS);
    if (!chosen) {
      plain(res, 406, `offered: ${RDF_FORMATS.map((offer) => `${offer.mediaType} (output=${offer.value})`).join(', ')}\n`);
      return true;
    }
    const body = String(graph.store.query(`DESCRIBE <${uri}>`, { results_format: chosen.mediaType }));
    send(req, res, `${chosen.mediaType}; charset=utf-8`, body, { Vary: 'Accept', Link: `<${uri}>; rel="describes"` });
    return true;
  }
  send(req, res, 'text/html; charset=utf-8', pageOf(graph, uri, tail));
  return true;
}

/** A plain page of what the archive says about `uri`: each statement, links followed inside the archive. */
function pageOf(graph: GraphStore, uri: string, tail: string): string {
  const rows = graph.store
    .match(graph.oxigraph.namedNode(uri), null, null, null)
    .map(
      (quad) =>
        `<tr><td>${link(graph, quad.predicate.value)}</td><td>${quad.object.termType === 'Literal' ? escapeText(quad.object.value) : link(graph, quad.object.value)}</td></tr>`,
    )
    .join('\n');
  return (
    '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>' +
    escapeText(decodeURIComponent(tail)) +
    '</title><style>body{font:15px/1.4 system-ui,sans-serif;margin:2em}td{padding:.2em .8em;vertical-align:top}a{word-break:break-all}</style></head><body>\n' +
    `<h1>${escapeText(decodeURIComponent(tail))}</h1>\n<p><a href="${escapeAttribute(`${graph.uris.base}/data/${tail}`)}">RDF</a></p>\n` +
    `<table>\n${rows}\n</table>\n</body></html>\n`
  );
}

function link(graph: GraphStore, value: string): string {
  const inside = value.startsWith(`${graph.uris.base}/resource/`)
    ? `${graph.uris.base}/page/${value.slice(graph.uris.base.length + '/resource/'.length)}`
    : value;
  return /^https?:/.test(value) ? `<a href="${escapeAttribute(inside)}">${escapeText(value)}</a>` : escapeText(value);
}

function send(req: IncomingMessage, res: ServerResponse, type: string, text: string, headers: Record<string, string> = {}): void {
  const bytes = Buffer.from(text, 'utf8');
  res.writeHead(200, { 'Content-Type': type, 'Content-Length': bytes.length, ...headers });
  res.end(req.method === 'HEAD' ? undefined : bytes);
}

function plain(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}
