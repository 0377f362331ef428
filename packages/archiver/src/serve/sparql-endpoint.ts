// `/sparql`: the SPARQL 1.1 protocol's query operation over the archive's graph, read-only
// (docs/linked-data.md, "SPARQL"). A browser (whose Accept prefers text/html to every result
// format) or `format=html` gets the results as a page with a table; programs get what they ask for.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readFormBody } from '@oaibag/oai-pmh';
import { negotiate, type Offer } from './content-negotiation.js';
import { QueryFailure, sizeText } from './graph-store.js';
import { type SparqlHtmlResult, sparqlErrorPage, sparqlPage, sparqlResultsPage } from './linked-data-pages.js';
import type { SparqlGraph } from './sparql-graph.js';
import { parseNTriples, type SolutionsJson } from './sparql-results.js';
import { answerPlain, answerText } from './text-answers.js';

/** Result formats of solution queries (select, ask), first the default; `format=` names them by key. */
const SOLUTION_FORMATS: ReadonlyArray<Offer<string>> = [
  { mediaType: 'application/sparql-results+json', value: 'json' },
  { mediaType: 'application/sparql-results+xml', value: 'xml' },
  { mediaType: 'text/csv', value: 'csv' },
  { mediaType: 'text/tab-separated-values', value: 'tsv' },
];

/** RDF formats (graph queries: construct, describe; and `/data/`), first the default. */
export const RDF_FORMATS: ReadonlyArray<Offer<string>> = [
  { mediaType: 'text/turtle', value: 'turtle' },
  { mediaType: 'application/rdf+xml', value: 'rdfxml' },
  { mediaType: 'application/n-triples', value: 'ntriples' },
  { mediaType: 'application/ld+json', value: 'jsonld' },
];

/**
 * Results as a page for people: offered after every other format, so that it is chosen only when
 * the Accept header prefers text/html to them all (a browser's does; `*\/*` or none gives JSON).
 */
const HTML_OFFER: Offer<string> = { mediaType: 'text/html', value: 'html' };

const UPDATE_KEYWORDS = /^(INSERT|DELETE|LOAD|CLEAR|CREATE|DROP|COPY|MOVE|ADD|WITH)\b/i;
const QUERY_FORM = /^(select|ask|construct|describe)\b/i;

type QueryForm = 'select' | 'ask' | 'construct' | 'describe';

/** Answers one request to `/sparql`. */
export async function answerSparql(graph: SparqlGraph, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  const request = await readSparqlRequest(req, url, graph.bounds.queryBytes);
  if ('error' in request) return answerPlain(res, request.status, request.error);
  if (request.query !== undefined && Buffer.byteLength(request.query, 'utf8') > graph.bounds.queryBytes) {
    return answerPlain(res, 413, queryTooLarge(graph.bounds.queryBytes));
  }
  if (request.update !== undefined) return answerPlain(res, 400, 'this endpoint is read-only: SPARQL updates are refused');
  if ((request.query === undefined || request.query.trim() === '') && (req.method === 'GET' || req.method === 'HEAD')) {
    // A browser asking for the endpoint itself gets the query page.
    const html = negotiate(req.headers.accept, [{ mediaType: 'text/html', value: 'page' }, ...SOLUTION_FORMATS]);
    if (html?.value === 'page') {
      return answerText(req, res, 'text/html', sparqlPage(graph.uris.base), { Vary: 'Accept' });
    }
  }
  if (request.query === undefined || request.query.trim() === '') {
    return answerPlain(res, 400, 'no query: send a SPARQL query as query= (GET or a form POST) or as an application/sparql-query body');
  }
  const form = queryForm(request.query);
  if (form === 'update') return answerPlain(res, 400, 'this endpoint is read-only: SPARQL updates are refused');
  const offers = form === 'construct' || form === 'describe' ? RDF_FORMATS : SOLUTION_FORMATS;
  const html = request.format !== undefined ? request.format === 'html' : negotiate(req.headers.accept, [...offers, HTML_OFFER]) === HTML_OFFER;
  if (html) return answerHtml(graph, req, res, request.query, form);
  const chosen = request.format !== undefined ? offers.find((offer) => offer.value === request.format) : negotiate(req.headers.accept, offers);
  if (!chosen) {
    return answerPlain(
      res,
      406,
      `none of the formats asked for is offered for ${form === undefined ? 'this query' : `a ${form} query`}: ${[...offers, HTML_OFFER].map((offer) => `${offer.mediaType} (format=${offer.value})`).join(', ')}`,
    );
  }
  let result: { text: string; truncated: boolean };
  try {
    result = await graph.query(request.query, chosen.mediaType, form === 'select');
  } catch (error) {
    if (error instanceof QueryFailure && error.kind === 'query') return answerPlain(res, 400, `the query cannot be run: ${error.message}`);
    // Past a limit of the server's (time, memory, size of the answer), or the store being loaded again.
    if (error instanceof QueryFailure) return answerPlain(res, 503, error.message);
    throw error;
  }
  answerText(req, res, chosen.mediaType, result.text, {
    Vary: 'Accept',
    // The solutions were cut to the row limit: the header says so (the formats cannot).
    ...(result.truncated ? { 'SPARQL-Results-Truncated': `the first ${graph.rowLimit} solutions` } : {}),
  });
}

/** The results as a page with a table (a graph query's triples as one, read from its N-Triples); a query that fails, a page that says why. */
async function answerHtml(graph: SparqlGraph, req: IncomingMessage, res: ServerResponse, query: string, form: QueryForm | undefined): Promise<void> {
  const base = graph.uris.base;
  let result: SparqlHtmlResult;
  try {
    if (form === 'construct' || form === 'describe') {
      const { text } = await graph.query(query, 'application/n-triples');
      const parsed = parseNTriples(text, graph.rowLimit);
      result = parsed
        ? { form: 'triples', triples: parsed.triples, total: parsed.total, truncated: parsed.total > parsed.triples.length }
        : { form: 'text', text };
    } else {
      const { text, truncated } = await graph.query(query, 'application/sparql-results+json', form === 'select');
      const json = JSON.parse(text) as SolutionsJson & { boolean?: boolean };
      result =
        typeof json.boolean === 'boolean'
          ? { form: 'boolean', value: json.boolean }
          : { form: 'solutions', vars: json.head?.vars ?? [], rows: json.results?.bindings ?? [], truncated };
    }
  } catch (error) {
    if (!(error instanceof QueryFailure)) throw error;
    const message = error.kind === 'query' ? `the query cannot be run: ${error.message}` : error.message;
    const page = Buffer.from(sparqlErrorPage(base, query, message), 'utf8');
    res.writeHead(error.kind === 'query' ? 400 : 503, { 'Content-Type': 'text/html; charset=utf-8', 'Content-Length': page.length, Vary: 'Accept' });
    res.end(req.method === 'HEAD' ? undefined : page);
    return;
  }
  answerText(req, res, 'text/html', sparqlResultsPage(base, query, result, graph.rowLimit), { Vary: 'Accept' });
}

type SparqlRequest = { query?: string; update?: string; format?: string } | { error: string; status: number };

function queryTooLarge(limit: number): string {
  return `the query is larger than the limit (${sizeText(limit)}, --sparql-query-size)`;
}

async function readSparqlRequest(req: IncomingMessage, url: URL, queryBytes: number): Promise<SparqlRequest> {
  const fromParams = (params: URLSearchParams) => ({
    ...(params.has('query') ? { query: params.get('query')! } : {}),
    ...(params.has('update') ? { update: params.get('update')! } : {}),
    ...(params.has('format') ? { format: params.get('format')! } : url.searchParams.has('format') ? { format: url.searchParams.get('format')! } : {}),
  });
  if (req.method === 'GET' || req.method === 'HEAD') return fromParams(url.searchParams);
  if (req.method !== 'POST') return { error: 'the SPARQL endpoint answers GET and POST', status: 405 };
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  // Room for a form's percent-encoding (three bytes each) and its other fields.
  const body = await readFormBody(req, 3 * queryBytes + 4096);
  if (body === null) return { error: queryTooLarge(queryBytes), status: 413 };
  if (type === 'application/x-www-form-urlencoded') return fromParams(new URLSearchParams(body));
  if (type === 'application/sparql-query') return { query: body, ...(url.searchParams.has('format') ? { format: url.searchParams.get('format')! } : {}) };
  if (type === 'application/sparql-update') return { update: body };
  return { error: 'a SPARQL POST is application/x-www-form-urlencoded or application/sparql-query', status: 415 };
}

/** The query's form after its prologue (BASE, PREFIX, comments); 'update' for an update. */
function queryForm(query: string): QueryForm | 'update' | undefined {
  let rest = query;
  for (;;) {
    const trimmed = rest.replace(/^(\s|#[^\n]*\n?)+/, '');
    const prologue = /^(BASE\s*<[^>]*>|PREFIX\s+[^\s:]*:\s*<[^>]*>)/i.exec(trimmed);
    if (!prologue) {
      rest = trimmed;
      break;
    }
    rest = trimmed.slice(prologue[0].length);
  }
  if (UPDATE_KEYWORDS.test(rest)) return 'update';
  return QUERY_FORM.exec(rest)?.[1]?.toLowerCase() as QueryForm | undefined;
}
