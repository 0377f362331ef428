// Reading the values `serve --link-to` compares, page by page (docs/linked-data.md, "Links
// between archives"): from a remote SPARQL endpoint over HTTP, each request bounded in time and
// in the bytes of its answer, and from the archive's own graph through the store that serves
// `/sparql`. Each side is read in pages of `pageRows` (LIMIT and OFFSET over a total order, so
// that pages do not overlap) up to `maxRows` rows; a remote that cuts its pages shorter (an
// oaibag archive's `--sparql-rows`, saying so with `SPARQL-Results-Truncated`) is read on from
// where its page ended.
import { shown } from '../core/remote-text.js';
import { QueryFailure, sizeText } from './graph-store.js';
import type { LinkBounds, LinkErrorCode } from './link-rules.js';
import { readCapped } from './remote-answers.js';
import type { SparqlGraph } from './sparql-graph.js';
import { RESULT_MEDIA_TYPES } from './sparql-results.js';

/** A subject IRI longer than this is skipped (a link to it would be a link nobody follows). */
export const MOST_IRI_CHARS = 4096;
/** An IRI that may stand between < and > in N-Triples as it is. */
const PLAIN_IRI = /^[A-Za-z][A-Za-z0-9+.-]*:[^\u0000-\u0020<>"{}|\\^`]*$/;

/** A line of the linker that says what failed; serve goes on. */
export class LinkFailure extends Error {
  constructor(
    readonly code: LinkErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** One value of one subject. */
export interface LinkRow {
  subject: string;
  value: string;
}

/** What a read gave: rows taken, and whether there were more than `maxRows`. */
export interface ReadSummary {
  rows: number;
  exceeded: boolean;
  /** Rows skipped: a subject that is not a usable IRI, a value that is a blank node. */
  skipped: number;
}

/** Asks one page: the rows, and whether the side cut the page short of what was asked (so that more may follow). */
type PageSource = (query: string) => Promise<{ bindings: unknown[]; truncated: boolean }>;

/** The select of one page: `where` is the pattern binding ?s and ?v. */
export function pageQuery(where: string, limit: number, offset: number): string {
  return `select ?s ?v where { ${where} } order by ?s ?v limit ${limit} offset ${offset}`;
}

/** Reads the rows of `where` page by page, handing each page to `take`, up to `bounds.maxRows` rows. */
async function readPages(
  source: PageSource,
  where: string,
  bounds: LinkBounds,
  pageRows: number,
  take: (rows: LinkRow[]) => Promise<void> | void,
  signal: AbortSignal,
): Promise<ReadSummary> {
  const summary: ReadSummary = { rows: 0, exceeded: false, skipped: 0 };
  let read = 0;
  for (;;) {
    signal.throwIfAborted();
    const room = bounds.maxRows - read;
    // One more than the rows still wanted: it tells whether the side holds more than maxRows.
    const asked = Math.min(pageRows, room + 1);
    const page = await source(pageQuery(where, asked, read));
    // A side that gives more than it was asked for is taken at its word for what was asked only.
    const got = page.bindings.length > asked ? page.bindings.slice(0, asked) : page.bindings;
    const within = got.length > room ? got.slice(0, room) : got;
    read += within.length;
    const rows: LinkRow[] = [];
    for (const binding of within) {
      const row = rowOf(binding);
      if (row === undefined) summary.skipped++;
      else rows.push(row);
    }
    summary.rows += rows.length;
    await take(rows);
    if (got.length > room) {
      summary.exceeded = true;
      return summary;
    }
    if (got.length === 0 || (got.length < asked && !page.truncated)) return summary;
  }
}

/** A binding of ?s (an IRI fit for N-Triples) and ?v (an IRI or a literal), or undefined. */
function rowOf(binding: unknown): LinkRow | undefined {
  if (typeof binding !== 'object' || binding === null) return undefined;
  const { s, v } = binding as { s?: { type?: unknown; value?: unknown }; v?: { type?: unknown; value?: unknown } };
  if (s?.type !== 'uri' || typeof s.value !== 'string' || s.value.length > MOST_IRI_CHARS || !PLAIN_IRI.test(s.value)) return undefined;
  if (typeof v?.value !== 'string' || (v.type !== 'uri' && v.type !== 'literal' && v.type !== 'typed-literal')) return undefined;
  return { subject: s.value, value: v.value };
}

/** Reads from a remote SPARQL 1.1 endpoint (POST of the query form, SPARQL JSON results). */
export function readRemote(
  endpoint: string,
  where: string,
  bounds: LinkBounds,
  take: (rows: LinkRow[]) => Promise<void> | void,
  signal: AbortSignal,
): Promise<ReadSummary> {
  const source: PageSource = async (query) => {
    const timeout = AbortSignal.timeout(bounds.timeoutMs);
    let text: string | undefined;
    let truncated = false;
    try {
      const response = await fetch(endpoint, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: RESULT_MEDIA_TYPES.json },
        body: new URLSearchParams({ query }).toString(),
        signal: AbortSignal.any([timeout, signal]),
      });
      if (!response.ok) {
        const said = ((await readCapped(response.body, 4096).catch(() => '')) ?? '').trim().split('\n')[0] ?? '';
        throw new LinkFailure('ERR_LINK_REMOTE', `answered HTTP ${response.status}${said ? `: ${shown(said, 120)}` : ''}`);
      }
      truncated = response.headers.has('sparql-results-truncated');
      text = await readCapped(response.body, bounds.answerBytes);
    } catch (error) {
      if (error instanceof LinkFailure || signal.aborted) throw error;
      if (timeout.aborted) throw new LinkFailure('ERR_LINK_REMOTE', `did not answer within ${bounds.timeoutMs / 1000} s (--link-timeout)`);
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new LinkFailure('ERR_LINK_REMOTE', `could not be read (${shown(String(cause?.code ?? cause?.message ?? (error as Error).message), 120)})`);
    }
    if (text === undefined) throw new LinkFailure('ERR_LINK_REMOTE', `gave an answer larger than ${sizeText(bounds.answerBytes)} (--link-answer-size)`);
    return { bindings: bindingsOf(text), truncated };
  };
  return readPages(source, where, bounds, bounds.pageRows, take, signal);
}

/** Reads from the archive's own graph (the store of `/sparql`), its pages within the store's row limit. */
export function readLocal(
  graph: SparqlGraph,
  where: string,
  bounds: LinkBounds,
  take: (rows: LinkRow[]) => Promise<void> | void,
  signal: AbortSignal,
): Promise<ReadSummary> {
  const source: PageSource = async (query) => {
    try {
      const { text, truncated } = await graph.query(query, RESULT_MEDIA_TYPES.json, true);
      return { bindings: bindingsOf(text), truncated };
    } catch (error) {
      if (error instanceof QueryFailure) throw new LinkFailure('ERR_LINK_LOCAL', `the archive's graph could not be read: ${error.message}`);
      throw error;
    }
  };
  return readPages(source, where, bounds, Math.min(bounds.pageRows, graph.rowLimit), take, signal);
}

/** The `results.bindings` of SPARQL JSON results, or a failure saying the answer is not that. */
function bindingsOf(text: string): unknown[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // What it said instead is not repeated: a remote writes no part of serve's lines but its status line.
    throw new LinkFailure('ERR_LINK_REMOTE', `did not answer with SPARQL JSON results (${Buffer.byteLength(text, 'utf8')} bytes that are not JSON)`);
  }
  const bindings = (parsed as { results?: { bindings?: unknown } } | null)?.results?.bindings;
  if (!Array.isArray(bindings)) throw new LinkFailure('ERR_LINK_REMOTE', 'did not answer with SPARQL JSON results (no results.bindings)');
  return bindings;
}
