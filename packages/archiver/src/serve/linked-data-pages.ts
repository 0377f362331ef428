// The HTML pages of the archive's Linked Data (docs/linked-data.md, "Pages"): one page per
// thing, for people, self-contained (no script, no external asset). Every page shows what the
// archive says about the thing and what links to it; a resource's page also lists its versions
// and deletions in time order, with their changes. `/sparql` without a query is a small query
// page with example queries.
import { escapeAttribute, escapeText } from '@oaibag/didl';
import type { SparqlGraph } from './sparql-graph.js';

/** What links to a thing, at most this many statements on its page (the rest is a SPARQL query away). */
const INCOMING_LIMIT = 200;

const STYLE =
  'body{font:15px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:72em;padding:0 1em;color:#222}' +
  'h1{font-size:1.35em;word-break:break-all}h2{font-size:1.1em;margin-top:1.6em}table{border-collapse:collapse;width:100%}' +
  'td,th{padding:.25em .6em;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}th{background:#f4f4f4}' +
  'a{word-break:break-all;color:#0645ad}nav a{margin-right:1em}code,textarea{font:13px/1.4 ui-monospace,monospace}' +
  'textarea{width:100%;box-sizing:border-box}.added{color:#1a7f37}.modified{color:#9a6700}.touched{color:#57606a}.deleted{color:#cf222e}.restored{color:#0969da}';

interface Binding {
  [name: string]: { value: string; type: string } | undefined;
}

async function select(graph: SparqlGraph, query: string): Promise<Binding[]> {
  const { text } = await graph.query(query, 'application/sparql-results+json', true);
  return (JSON.parse(text) as { results: { bindings: Binding[] } }).results.bindings;
}

/** The page of the thing `uri` (`tail`: its path after /resource/). */
export async function thingPage(graph: SparqlGraph, uri: string, tail: string): Promise<string> {
  const base = graph.uris.base;
  const outgoing = await select(graph, `select ?p ?o where { <${uri}> ?p ?o } order by ?p ?o`);
  const incoming = await select(graph, `select ?s ?p where { ?s ?p <${uri}> } order by ?p ?s limit ${INCOMING_LIMIT + 1}`);
  const title = value(outgoing, 'http://purl.org/dc/terms/title') ?? value(outgoing, 'http://purl.org/dc/terms/identifier') ?? safeDecode(tail);
  const kind = tail.split('/')[0] ?? '';
  let body = `<p>${escapeText(kindName(kind))} · <code>${escapeText(uri)}</code></p>\n`;
  if (kind === 'item') body += await itemHistory(graph, uri);
  // The graph leaves out the version's ore:isDescribedBy: its map is at the same tail under /ore/.
  if (kind === 'version') body += `<p>OAI-ORE resource map: ${link(base, `${base}/ore/${tail.slice('version/'.length)}`)}</p>\n`;
  body += '<h2>What the archive says about it</h2>\n<table><tr><th>property</th><th>value</th></tr>\n';
  for (const row of outgoing) body += `<tr><td>${link(base, row.p!.value)}</td><td>${term(base, row.o!)}</td></tr>\n`;
  body += '</table>\n';
  if (incoming.length > 0) {
    body += '<h2>What links to it</h2>\n<table><tr><th>from</th><th>property</th></tr>\n';
    for (const row of incoming.slice(0, INCOMING_LIMIT)) body += `<tr><td>${link(base, row.s!.value)}</td><td>${link(base, row.p!.value)}</td></tr>\n`;
    body += '</table>\n';
    if (incoming.length > INCOMING_LIMIT)
      body += `<p>The first ${INCOMING_LIMIT} are shown: <a href="${escapeAttribute(`${base}/sparql`)}">ask SPARQL</a> for the rest.</p>\n`;
  }
  return page(base, title, body, `${base}/data/${tail}`);
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

/** `/sparql` for people: a form, the result formats, and the example queries to start from. */
export function sparqlPage(base: string): string {
  const examples = EXAMPLE_QUERIES.map(
    ({ title, query }) =>
      `<h2>${escapeText(title)}</h2>\n<pre><code>${escapeText(query)}</code></pre>\n<p><a href="${escapeAttribute(`${base}/sparql?format=json&query=${encodeURIComponent(query)}`)}">run it</a></p>\n`,
  ).join('');
  const body =
    `<form method="get" action="${escapeAttribute(`${base}/sparql`)}">\n` +
    `<textarea name="query" rows="12">${escapeText(EXAMPLE_QUERIES[0]!.query)}</textarea>\n` +
    '<p><label>results as <select name="format"><option value="json">SPARQL JSON</option><option value="xml">SPARQL XML</option>' +
    '<option value="csv">CSV</option><option value="tsv">TSV</option><option value="turtle">Turtle (CONSTRUCT, DESCRIBE)</option>' +
    '<option value="rdfxml">RDF/XML</option><option value="ntriples">N-Triples</option><option value="jsonld">JSON-LD</option></select></label> ' +
    '<button type="submit">Run</button></p>\n</form>\n' +
    '<p>Read-only SPARQL 1.1 over the archive: its sources, resources, versions, deletions, harvests and sets (docs/linked-data.md).</p>\n' +
    examples;
  return page(base, 'SPARQL over the archive', body);
}

function page(base: string, title: string, body: string, data?: string): string {
  const nav =
    `<nav><a href="${escapeAttribute(`${base}/sparql`)}">SPARQL</a><a href="${escapeAttribute(`${base}/oai?verb=Identify`)}">OAI-PMH</a>` +
    (data ? `<a href="${escapeAttribute(data)}">RDF</a>` : '') +
    '</nav>\n';
  return (
    `<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<title>${escapeText(title)}</title><style>${STYLE}</style></head><body>\n${nav}<h1>${escapeText(title)}</h1>\n${body}</body></html>\n`
  );
}

function value(rows: Binding[], predicate: string): string | undefined {
  return rows.find((row) => row.p?.value === predicate)?.o?.value;
}

function term(base: string, object: { value: string; type: string }): string {
  return object.type === 'literal' || object.type === 'typed-literal' ? escapeText(object.value) : link(base, object.value);
}

/** A link; inside the archive, to the thing's page. */
function link(base: string, target: string, text = target): string {
  if (!/^https?:/.test(target)) return escapeText(target);
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
