// The HTML pages of the archive's Linked Data (docs/linked-data.md, "Pages"): one page per
// thing, for people, self-contained (no script, no external asset). Every page is titled by
// what the thing is (a version by its URL and capture time, a source by its repository's name
// and base URL, a harvest by its number and source) and shows what the archive says about it,
// each property by a readable label, and what links to it; a resource's page also lists its
// versions and deletions in time order, a harvest's the files it added, modified, touched and
// deleted (a page at a time, from the catalog), a set's how many members it has. `/sparql`
// without a query is a small query page with example queries; with one, asked for by a
// browser, the results as a table (sparqlResultsPage).
import { escapeAttribute, escapeText } from '@oaibag/didl';
import { mimeSetSelection } from '@oaibag/oai-pmh';
import type { Catalog } from '../catalog/catalog.js';
import { type DirectoryDeletion, type DirectoryVersion, harvestDeletions, harvestVersions } from '../catalog/directory-queries.js';
import { countItems } from '../catalog/served-items.js';
import { NAMESPACES } from './archive-graph.js';
import { deletionTitle, eventTitle, harvestTitle, originalOf, predicateLabel, prefixedName, sourceTitle, utcMinute, versionTitle } from './directory-labels.js';
import { DIRECTORY_PAGE, DirectoryRequestError } from './directory-listing.js';
import { htmlPage } from './page-shell.js';
import type { SparqlGraph } from './sparql-graph.js';
import type { SparqlTerm } from './sparql-results.js';

/** What links to a thing, at most this many statements on its page (the rest is a SPARQL query away). */
const INCOMING_LIMIT = 200;

/** A set's members are counted up to this many (one range of an index); past it the page says "more than". */
export const SET_MEMBERS_COUNTED = 100_000;

const { dcterms, prov, oaibag } = NAMESPACES;

interface Binding {
  [name: string]: { value: string; type: string } | undefined;
}

async function select(graph: SparqlGraph, query: string): Promise<Binding[]> {
  const { text } = await graph.query(query, 'application/sparql-results+json', true);
  return (JSON.parse(text) as { results: { bindings: Binding[] } }).results.bindings;
}

/** What a thing's page reads besides the graph: the catalog (a harvest's files, a set's count, a harvest's counts) and the request's paging parameters. */
export interface PageContext {
  catalog: Catalog;
  params: URLSearchParams;
}

/**
 * The page of the thing `uri` (`tail`: its path after /resource/). A paging parameter that
 * cannot be one (a harvest's `files_after`, `deleted_after`) is a DirectoryRequestError.
 */
export async function thingPage(graph: SparqlGraph, uri: string, tail: string, context: PageContext): Promise<string> {
  const base = graph.uris.base;
  const kind = tail.split('/')[0] ?? '';
  const harvestId = kind === 'harvest' && /^\d{1,15}$/.test(tail.slice('harvest/'.length)) ? Number(tail.slice('harvest/'.length)) : undefined;
  // Checked before any query: a bad position is the request's fault, whatever the graph says.
  const positions = harvestId !== undefined ? harvestPositions(context.params) : undefined;
  const outgoing = await select(graph, `select ?p ?o where { <${uri}> ?p ?o } order by ?p ?o`);
  // A harvest's versions are listed from the catalog, a page at a time, rather than sorted by the store.
  const incoming = harvestId !== undefined ? [] : await select(graph, `select ?s ?p where { ?s ?p <${uri}> } order by ?p ?s limit ${INCOMING_LIMIT + 1}`);
  const title = titleOf(kind, tail, outgoing, context.catalog, harvestId);
  let body = `<p>${escapeText(kindName(kind))} · <code>${escapeText(uri)}</code></p>\n`;
  if (kind === 'item') body += await itemHistory(graph, uri);
  // The graph leaves out the version's ore:isDescribedBy: its map is at the same tail under /ore/.
  if (kind === 'version') body += `<p>OAI-ORE resource map: ${link(base, `${base}/ore/${tail.slice('version/'.length)}`)}</p>\n`;
  if (kind === 'set') body += setMembers(base, context.catalog, safeDecode(tail.slice('set/'.length)));
  if (harvestId !== undefined && positions) body += harvestFiles(base, graph, context.catalog, harvestId, positions, tail);
  body += '<h2>What the archive says about it</h2>\n<table><tr><th>property</th><th>value</th></tr>\n';
  for (const row of outgoing) body += `<tr><td>${predicate(row.p!.value)}</td><td>${term(base, row.o!)}</td></tr>\n`;
  body += '</table>\n';
  if (incoming.length > 0) {
    body += '<h2>What links to it</h2>\n<table><tr><th>from</th><th>property</th></tr>\n';
    for (const row of incoming.slice(0, INCOMING_LIMIT)) body += `<tr><td>${link(base, row.s!.value)}</td><td>${predicate(row.p!.value)}</td></tr>\n`;
    body += '</table>\n';
    if (incoming.length > INCOMING_LIMIT)
      body += `<p>The first ${INCOMING_LIMIT} are shown: <a href="${escapeAttribute(`${base}/sparql`)}">ask SPARQL</a> for the rest.</p>\n`;
  }
  return htmlPage({ base, title, body, data: `${base}/data/${tail}` });
}

/** What the page is titled: what the thing is, in words, rather than its URI or digest. */
function titleOf(kind: string, tail: string, outgoing: Binding[], catalog: Catalog, harvestId: number | undefined): string {
  const said = (predicateIri: string) => value(outgoing, predicateIri);
  const parts = tail.split('/');
  switch (kind) {
    case 'version': {
      const item = said(`${dcterms}isVersionOf`);
      const at = said(`${prov}generatedAtTime`);
      const marker = '/resource/item/';
      if (item && at && item.includes(marker)) return versionTitle(originalOf(safeDecode(item.slice(item.indexOf(marker) + marker.length))), at);
      break;
    }
    case 'deletion': {
      const at = said(`${prov}atTime`);
      if (parts[1] !== undefined && at) return deletionTitle(originalOf(safeDecode(parts[1])), at);
      break;
    }
    case 'source': {
      const baseUrl = said(`${dcterms}identifier`);
      if (baseUrl) return sourceTitle(baseUrl, said(`${dcterms}title`) ?? null);
      break;
    }
    case 'harvest': {
      const run = harvestId === undefined ? undefined : catalog.harvest(harvestId);
      if (run) {
        const source = catalog.sourceById(run.sourceId);
        return harvestTitle(run, source && { baseUrl: source.baseUrl, name: source.repositoryName });
      }
      break;
    }
    case 'event': {
      const type = said(`${dcterms}type`);
      const outcome = said(`${oaibag}outcome`);
      const at = said(`${prov}startedAtTime`);
      if (type && outcome && at) return eventTitle(type, outcome, at);
      break;
    }
    case 'set': {
      const name = said(`${dcterms}title`);
      if (name && tail.startsWith('set/source%3A')) return `Everything archived from ${name}`;
      break;
    }
    case 'bag': {
      const path = said(`${dcterms}identifier`);
      if (path) return `Bag ${path}`;
      break;
    }
  }
  return said(`${dcterms}title`) ?? said(`${dcterms}identifier`) ?? safeDecode(tail);
}

/** How many resources a set has, as /oai lists them (counted up to SET_MEMBERS_COUNTED). */
function setMembers(base: string, catalog: Catalog, spec: string): string {
  const source = /^source:(\d{1,15})$/.exec(spec);
  const mime = source ? undefined : mimeSetSelection(spec);
  if (!source && !mime) return '';
  const counted = countItems(catalog, {
    until: Number.MAX_SAFE_INTEGER,
    ...(source ? { sourceId: Number(source[1]) } : { mime: mime! }),
    limit: SET_MEMBERS_COUNTED + 1,
  });
  const count = counted > SET_MEMBERS_COUNTED ? `more than ${SET_MEMBERS_COUNTED.toLocaleString('en-US')}` : counted.toLocaleString('en-US');
  const list = `${base}/oai?verb=ListIdentifiers&metadataPrefix=oai_dc&set=${encodeURIComponent(spec)}`;
  return `<p>Members: <strong>${escapeText(count)}</strong> archived resource${counted === 1 ? '' : 's'} (<a href="${escapeAttribute(list)}">listed by OAI-PMH</a>).</p>\n`;
}

interface HarvestPositions {
  files: number;
  deleted: number;
}

function harvestPositions(params: URLSearchParams): HarvestPositions {
  const position = (name: string): number => {
    const given = params.get(name);
    if (given === null || given === '') return 0;
    if (!/^\d{1,16}$/.test(given) || !Number.isSafeInteger(Number(given))) {
      throw new DirectoryRequestError(`${name} must be a whole number (the position a page's next link gives), not ${JSON.stringify(given.slice(0, 64))}`);
    }
    return Number(given);
  };
  return { files: position('files_after'), deleted: position('deleted_after') };
}

/**
 * A harvest's outcome and counts (its catalog row), then the files it wrote and the deletions it
 * recorded, DIRECTORY_PAGE.default of each a page, in the order it wrote them: each list is a
 * range of versions_by_harvest or deletions_by_harvest after the position its next link gives.
 */
function harvestFiles(base: string, graph: SparqlGraph, catalog: Catalog, harvestId: number, positions: HarvestPositions, tail: string): string {
  const run = catalog.harvest(harvestId);
  if (!run) return '';
  const limit = DIRECTORY_PAGE.default;
  const c = run.counts;
  const number = (n: number) => n.toLocaleString('en-US');
  let html =
    `<h2>Outcome</h2>\n<p><strong class="${escapeAttribute(run.status === 'complete' ? 'added' : run.status === 'running' ? 'touched' : 'deleted')}">${escapeText(run.status)}</strong>` +
    ` · started ${escapeText(utcMinute(run.startedAt))}${run.endedAt ? ` · ended ${escapeText(utcMinute(run.endedAt))}` : ''}` +
    (run.reason ? ` · ${escapeText(run.reason)}` : '') +
    '</p>\n<table><tr><th class="num">records</th><th class="num">added</th><th class="num">modified</th><th class="num">touched</th>' +
    '<th class="num">deleted</th><th class="num">failed</th><th class="num">bytes</th><th class="num">requests</th></tr>\n' +
    `<tr>${[c.records, c.added, c.modified, c.touched, c.deleted, c.failed, c.bytes, c.requests].map((n) => `<td class="num">${number(n)}</td>`).join('')}</tr>\n</table>\n`;
  const here = (params: Record<string, number>) => {
    const query = new URLSearchParams();
    for (const [name, position] of Object.entries(params)) if (position > 0) query.set(name, String(position));
    const text = query.toString();
    return `${base}/page/${tail}${text ? `?${text}` : ''}`;
  };
  const versions = harvestVersions(catalog, harvestId, positions.files, limit + 1);
  html += `<h2 id="files">Files it added, modified, touched or restored</h2>\n`;
  if (versions.length === 0) html += `<p>${positions.files > 0 ? 'No more.' : 'None.'}</p>\n`;
  else {
    html += '<table><tr><th>change</th><th>file</th><th class="num">bytes</th><th>archived at</th></tr>\n';
    for (const version of versions.slice(0, limit)) html += versionRow(graph, version);
    html += '</table>\n';
  }
  html += pager(
    positions.files > 0 ? `${here({ deleted_after: positions.deleted })}#files` : undefined,
    versions.length > limit ? `${here({ files_after: versions[limit - 1]!.id, deleted_after: positions.deleted })}#files` : undefined,
  );
  const deletions = harvestDeletions(catalog, harvestId, positions.deleted, limit + 1);
  html += `<h2 id="deleted">Files it deleted</h2>\n`;
  if (deletions.length === 0) html += `<p>${positions.deleted > 0 ? 'No more.' : 'None.'}</p>\n`;
  else {
    html += '<table><tr><th>file</th><th>datestamp</th><th>recorded at</th></tr>\n';
    for (const deletion of deletions.slice(0, limit)) html += deletionRow(graph, deletion);
    html += '</table>\n';
  }
  html += pager(
    positions.deleted > 0 ? `${here({ files_after: positions.files })}#deleted` : undefined,
    deletions.length > limit ? `${here({ files_after: positions.files, deleted_after: deletions[limit - 1]!.id })}#deleted` : undefined,
  );
  return html;
}

function versionRow(graph: SparqlGraph, version: DirectoryVersion): string {
  const uri = graph.uris.version(version.bagPath, version.record);
  const name = originalOf(version.served);
  return (
    `<tr><td class="${escapeAttribute(version.change)}">${escapeText(version.change)}</td><td>${link(graph.uris.base, uri, name)}</td>` +
    `<td class="num">${version.size.toLocaleString('en-US')}</td><td>${escapeText(utcMinute(version.storedAt))}</td></tr>\n`
  );
}

function deletionRow(graph: SparqlGraph, deletion: DirectoryDeletion): string {
  const uri = graph.uris.deletion(deletion.served, deletion.datestamp);
  return (
    `<tr><td>${link(graph.uris.base, uri, originalOf(deletion.served))}</td><td>${escapeText(deletion.datestamp)}</td>` +
    `<td>${escapeText(utcMinute(deletion.recordedAt))}</td></tr>\n`
  );
}

function pager(first: string | undefined, next: string | undefined): string {
  if (first === undefined && next === undefined) return '';
  return (
    '<p class="pager">' +
    (first !== undefined ? `<a href="${escapeAttribute(first)}">first page</a>` : '') +
    (next !== undefined ? `<a rel="next" href="${escapeAttribute(next)}">next page</a>` : '') +
    '</p>\n'
  );
}

/** A resource's versions and deletions in time order, with their changes. */
async function itemHistory(graph: SparqlGraph, uri: string): Promise<string> {
  const base = graph.uris.base;
  const rows = await select(
    graph,
    `prefix dcterms: <http://purl.org/dc/terms/> prefix prov: <http://www.w3.org/ns/prov#> prefix oaibag: <urn:oaibag:terms:>
     select ?event ?at ?change ?size ?date where {
       { ?event dcterms:isVersionOf <${uri}> ; prov:generatedAtTime ?at ; oaibag:change ?change ; dcterms:date ?date . optional { ?event dcterms:extent ?size } }
       union { <${uri}> prov:qualifiedInvalidation ?event . ?event prov:atTime ?at ; dcterms:date ?date . bind ("deleted" as ?change) }
     } order by ?at`,
  );
  const original = value(await select(graph, `select ?p ?o where { <${uri}> ?p ?o }`), 'http://purl.org/dc/terms/source');
  let html = '<h2>History</h2>\n';
  if (original) {
    html +=
      `<p>Original: ${link(base, original)} · <a href="${escapeAttribute(`${base}/timemap/link/${original}`)}">TimeMap</a>` +
      ` · <a href="${escapeAttribute(`${base}/timegate/${original}`)}">as of today</a></p>\n`;
  }
  html += '<table><tr><th>archived at</th><th>change</th><th>datestamp</th><th>bytes</th><th></th></tr>\n';
  for (const row of rows) {
    const change = row.change!.value;
    html +=
      `<tr><td>${escapeText(row.at!.value)}</td><td class="${escapeAttribute(change)}">${escapeText(change)}</td>` +
      `<td>${escapeText(row.date!.value)}</td><td>${escapeText(row.size?.value ?? '')}</td><td>${link(base, row.event!.value, change === 'deleted' ? 'deletion' : 'version')}</td></tr>\n`;
  }
  return `${html}</table>\n`;
}

/** Example queries shown on the query page (docs/linked-data.md gives the same). */
export const EXAMPLE_QUERIES: ReadonlyArray<{ title: string; query: string }> = [
  {
    title: 'Every PDF that changed in the last harvest',
    query: `prefix dcterms: <http://purl.org/dc/terms/>
prefix prov: <http://www.w3.org/ns/prov#>
prefix oaibag: <urn:oaibag:terms:>
select ?item ?version ?change where {
  ?harvest a prov:Activity ; prov:startedAtTime ?started .
  filter not exists { ?later a prov:Activity ; prov:startedAtTime ?t filter (?t > ?started) }
  ?version prov:wasGeneratedBy ?harvest ; oaibag:change ?change ; dcterms:isVersionOf ?item ;
           dcterms:format <https://www.iana.org/assignments/media-types/application/pdf> .
  filter (?change != "touched")
}`,
  },
  {
    title: 'Resources deleted since a date',
    query: `prefix prov: <http://www.w3.org/ns/prov#>
prefix dcterms: <http://purl.org/dc/terms/>
select ?item ?original ?at where {
  ?item prov:qualifiedInvalidation ?deletion .
  optional { ?item dcterms:source ?original }
  ?deletion prov:atTime ?at .
  filter (?at >= "2026-01-01T00:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime>)
} order by ?at`,
  },
  {
    title: 'Versions whose bytes were already held',
    query: `prefix dcterms: <http://purl.org/dc/terms/>
prefix prov: <http://www.w3.org/ns/prov#>
select ?version ?earlier where {
  ?version dcterms:identifier ?digest ; prov:generatedAtTime ?t ; dcterms:isVersionOf ?item .
  ?earlier dcterms:identifier ?digest ; prov:generatedAtTime ?t0 ; dcterms:isVersionOf ?other .
  filter (?t0 < ?t)
} limit 100`,
  },
  {
    title: 'How many resources each MIME type has',
    query: `prefix oai: <http://www.mediaspaces.info/vocab/oai-pmh.rdf#>
prefix dcterms: <http://purl.org/dc/terms/>
select ?set (count(?item) as ?resources) where {
  ?item a oai:Item ; dcterms:isPartOf ?set . ?set oai:setSpec ?spec filter (strstarts(?spec, "mime:"))
} group by ?set order by desc(?resources)`,
  },
];

/** `/sparql` for people: a form, the result formats, and the example queries to start from, each run as a table. */
export function sparqlPage(base: string): string {
  const examples = EXAMPLE_QUERIES.map(
    ({ title, query }) =>
      `<h2>${escapeText(title)}</h2>\n<pre><code>${escapeText(query)}</code></pre>\n<p><a href="${escapeAttribute(`${base}/sparql?format=html&query=${encodeURIComponent(query)}`)}">run it</a></p>\n`,
  ).join('');
  const body =
    queryForm(base, EXAMPLE_QUERIES[0]!.query, true) +
    '<p>Read-only SPARQL 1.1 over the archive: its sources, resources, versions, deletions, harvests and sets (docs/linked-data.md).</p>\n' +
    examples;
  return htmlPage({ base, title: 'SPARQL over the archive', body });
}

/** The query form: the query, and (on the query page) the format of the results, an HTML table first. */
function queryForm(base: string, query: string, formats: boolean): string {
  const choice = formats
    ? '<label>results as <select name="format"><option value="html" selected>a table (HTML)</option><option value="json">SPARQL JSON</option>' +
      '<option value="xml">SPARQL XML</option><option value="csv">CSV</option><option value="tsv">TSV</option><option value="turtle">Turtle (CONSTRUCT, DESCRIBE)</option>' +
      '<option value="rdfxml">RDF/XML</option><option value="ntriples">N-Triples</option><option value="jsonld">JSON-LD</option></select></label> '
    : '<input type="hidden" name="format" value="html">';
  return (
    `<form method="get" action="${escapeAttribute(`${base}/sparql`)}">\n` +
    `<textarea name="query" rows="12" aria-label="SPARQL query">${escapeText(query)}</textarea>\n` +
    `<p>${choice}<button type="submit">Run</button></p>\n</form>\n`
  );
}

/** What a query gave, for its page: solutions, a boolean, or triples (parsed from N-Triples, or the text when it could not be). */
export type SparqlHtmlResult =
  | { form: 'solutions'; vars: string[]; rows: Array<Record<string, SparqlTerm>>; truncated: boolean }
  | { form: 'boolean'; value: boolean }
  | { form: 'triples'; triples: Array<[SparqlTerm, SparqlTerm, SparqlTerm]>; truncated: boolean; total: number }
  | { form: 'text'; text: string };

/** The formats a result page links to, by the query's form: `format=` key and name. */
const SOLUTION_LINKS = [
  ['json', 'JSON'],
  ['xml', 'XML'],
  ['csv', 'CSV'],
  ['tsv', 'TSV'],
] as const;
const GRAPH_LINKS = [
  ['turtle', 'Turtle'],
  ['ntriples', 'N-Triples'],
  ['rdfxml', 'RDF/XML'],
  ['jsonld', 'JSON-LD'],
] as const;

/** A link to the same query in another format, as long as a URL of it stays short; a POST button past that. */
const LINKED_QUERY_MAX = 6000;

/**
 * A query's results for a browser: the query (in the form, to change and run again), the
 * results as a table (IRIs of the archive linked to their pages, literals as text), and links
 * to the same results in the formats for programs. `rowLimit`: the endpoint's row limit.
 */
export function sparqlResultsPage(base: string, query: string, result: SparqlHtmlResult, rowLimit: number): string {
  const graphForm = result.form === 'triples' || result.form === 'text';
  const formats = (graphForm ? GRAPH_LINKS : SOLUTION_LINKS).map(([format, name]) => formatLink(base, query, format, name)).join(' ');
  let body = `${queryForm(base, query, false)}<p class="pager">The same results as ${formats}</p>\n`;
  if (result.form === 'boolean') body += `<p>The answer: <strong>${result.value ? 'yes (true)' : 'no (false)'}</strong></p>\n`;
  else if (result.form === 'text') body += `<pre><code>${escapeText(result.text)}</code></pre>\n`;
  else if (result.form === 'solutions') {
    body += `<p>${result.rows.length.toLocaleString('en-US')} solution${result.rows.length === 1 ? '' : 's'}${truncatedNote(result.truncated, rowLimit)}</p>\n`;
    body += `<table><tr>${result.vars.map((name) => `<th>?${escapeText(name)}</th>`).join('')}</tr>\n`;
    for (const row of result.rows) body += `<tr>${result.vars.map((name) => `<td>${row[name] ? cell(base, row[name]!) : ''}</td>`).join('')}</tr>\n`;
    body += '</table>\n';
  } else {
    const shown = result.triples.length;
    body += `<p>${result.total.toLocaleString('en-US')} triple${result.total === 1 ? '' : 's'}${shown < result.total ? `, the first ${shown.toLocaleString('en-US')} shown (the formats above give them all)` : ''}</p>\n`;
    body += '<table><tr><th>subject</th><th>predicate</th><th>object</th></tr>\n';
    for (const [s, p, o] of result.triples) body += `<tr><td>${cell(base, s)}</td><td>${predicate(p.value)}</td><td>${cell(base, o)}</td></tr>\n`;
    body += '</table>\n';
  }
  return htmlPage({ base, title: 'SPARQL results', body });
}

/** A query that could not be answered, for a browser: the line that says why, and the query to change. */
export function sparqlErrorPage(base: string, query: string, message: string): string {
  return htmlPage({ base, title: 'SPARQL: no results', body: `<p><strong>${escapeText(message)}</strong></p>\n${queryForm(base, query, false)}` });
}

function truncatedNote(truncated: boolean, rowLimit: number): string {
  return truncated ? `: the first ${rowLimit.toLocaleString('en-US')}, the endpoint's limit (--sparql-rows)` : '';
}

function formatLink(base: string, query: string, format: string, name: string): string {
  const href = `${base}/sparql?format=${format}&query=${encodeURIComponent(query)}`;
  if (href.length <= LINKED_QUERY_MAX) return `<a href="${escapeAttribute(href)}">${escapeText(name)}</a>`;
  return (
    `<form method="post" action="${escapeAttribute(`${base}/sparql`)}" style="display:inline">` +
    `<input type="hidden" name="query" value="${escapeAttribute(query)}"><input type="hidden" name="format" value="${format}">` +
    `<button type="submit">${escapeText(name)}</button></form>`
  );
}

/** A term in a results table: an IRI as a link (inside the archive, to its page), a literal as text with its datatype or language. */
function cell(base: string, t: SparqlTerm): string {
  if (t.type === 'uri') return link(base, t.value, prefixedName(t.value) ?? t.value);
  if (t.type === 'bnode') return `_:${escapeText(t.value)}`;
  const language = t['xml:lang'];
  const datatype = t.datatype && t.datatype !== 'http://www.w3.org/2001/XMLSchema#string' ? (prefixedName(t.datatype) ?? t.datatype) : undefined;
  const suffix = language ? `@${language}` : datatype ? `^^${datatype}` : '';
  return escapeText(t.value) + (suffix ? ` <span class="muted">${escapeText(suffix)}</span>` : '');
}

/** A predicate by its readable label, the IRI its link and tooltip, its prefixed name after it. */
function predicate(iri: string): string {
  const { label, name } = predicateLabel(iri);
  const anchor = /^https?:/.test(iri)
    ? `<a href="${escapeAttribute(iri)}" title="${escapeAttribute(iri)}">${escapeText(label)}</a>`
    : `<span title="${escapeAttribute(iri)}">${escapeText(label)}</span>`;
  return label === name ? anchor : `${anchor} <span class="muted">(${escapeText(name)})</span>`;
}

function value(rows: Binding[], predicateIri: string): string | undefined {
  return rows.find((row) => row.p?.value === predicateIri)?.o?.value;
}

function term(base: string, object: { value: string; type: string }): string {
  if (object.type === 'literal' || object.type === 'typed-literal') return escapeText(object.value);
  return link(base, object.value, prefixedName(object.value) ?? object.value);
}

/** A link; inside the archive, to the thing's page. */
function link(base: string, target: string, text = target): string {
  if (!/^https?:/.test(target)) return escapeText(text);
  const href = target.startsWith(`${base}/resource/`) ? `${base}/page/${target.slice(base.length + '/resource/'.length)}` : target;
  return `<a href="${escapeAttribute(href)}">${escapeText(text)}</a>`;
}

function kindName(kind: string): string {
  const names: Record<string, string> = {
    source: 'A source repository',
    item: 'An archived resource',
    version: 'A version',
    harvest: 'A harvest',
    bag: 'A bag (AIP)',
    set: 'A set',
    deletion: 'A deletion',
    event: 'A preservation event',
  };
  return names[kind] ?? 'A thing of the archive';
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
