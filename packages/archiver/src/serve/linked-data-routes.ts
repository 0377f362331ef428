// Dereferenceable URIs (docs/linked-data.md, "URIs"): `/resource/<tail>` answers 303 to
// `/page/<tail>` (HTML, for people) or `/data/<tail>` (RDF) by the Accept header, as OAI2LOD
// and the Linked Data practice do; `/data/` gives Turtle, RDF/XML, N-Triples or JSON-LD, by
// Accept or `?output=`.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Catalog } from '../catalog/catalog.js';
import { negotiate, type Offer } from './content-negotiation.js';
import { DirectoryRequestError } from './directory-listing.js';
import { QueryFailure } from './graph-store.js';
import { thingPage } from './linked-data-pages.js';
import { RDF_FORMATS } from './sparql-endpoint.js';
import type { SparqlGraph } from './sparql-graph.js';
import { answerPlain, answerText } from './text-answers.js';

export const LINKED_DATA_PREFIXES = ['/resource/', '/data/', '/page/'] as const;

const HTML = 'text/html';
const RESOURCE_OFFERS: ReadonlyArray<Offer<'page' | 'data'>> = [
  { mediaType: HTML, value: 'page' },
  { mediaType: 'application/xhtml+xml', value: 'page' },
  ...RDF_FORMATS.map((offer) => ({ mediaType: offer.mediaType, value: 'data' as const })),
];

/**
 * Answers `/resource/…`, `/data/…` and `/page/…`; false when the path is none of them. A store
 * that cannot answer (past a limit, being loaded again, or refusing a graph too large) is a 503
 * with its one line, as at `/sparql`; a page's paging parameter that cannot be one, a 400.
 * `catalog`: what a page reads besides the graph (a harvest's files, a set's count).
 */
export async function answerLinkedData(graph: SparqlGraph, req: IncomingMessage, res: ServerResponse, url: URL, catalog: Catalog): Promise<boolean> {
  try {
    return await answerThing(graph, req, res, url, catalog);
  } catch (error) {
    if (res.headersSent) throw error;
    if (error instanceof DirectoryRequestError) {
      answerPlain(res, 400, `${error.message} [${error.code}]`);
      return true;
    }
    if (!(error instanceof QueryFailure)) throw error;
    answerPlain(res, 503, error.message);
    return true;
  }
}

async function answerThing(graph: SparqlGraph, req: IncomingMessage, res: ServerResponse, url: URL, catalog: Catalog): Promise<boolean> {
  const prefix = LINKED_DATA_PREFIXES.find((candidate) => url.pathname.startsWith(candidate));
  if (!prefix) return false;
  const tail = url.pathname.slice(prefix.length);
  const uri = `${graph.uris.base}/resource/${tail}`;
  if (tail === '' || !(await graph.describes(uri))) {
    answerPlain(res, 404, `nothing in the archive is named ${uri}\n`);
    return true;
  }
  if (prefix === '/resource/') {
    const chosen = negotiate(req.headers.accept, RESOURCE_OFFERS);
    if (!chosen) {
      answerPlain(res, 406, `offered: ${RESOURCE_OFFERS.map((offer) => offer.mediaType).join(', ')}\n`);
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
      answerPlain(res, 406, `offered: ${RDF_FORMATS.map((offer) => `${offer.mediaType} (output=${offer.value})`).join(', ')}\n`);
      return true;
    }
    const { text } = await graph.query(`describe <${uri}>`, chosen.mediaType);
    answerText(req, res, chosen.mediaType, text, { Vary: 'Accept', Link: `<${uri}>; rel="describes"` });
    return true;
  }
  answerText(req, res, 'text/html', await thingPage(graph, uri, tail, { catalog, params: url.searchParams }));
  return true;
}
