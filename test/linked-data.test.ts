// The archive as Linked Data (docs/linked-data.md), first step: the SPARQL endpoint over the
// archive's graph (protocol forms, result formats, answers the catalog knows, updates refused,
// the store in step after a further harvest without a restart), the 303 and 406 rules of
// /resource, and /data in four RDF formats, each read back by a parser other than the one
// that wrote it (n3 for Turtle and N-Triples, rdfxml-streaming-parser, jsonld).
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, test } from 'node:test';
import jsonld from 'jsonld';
import { Parser as N3Parser } from 'n3';
import { RdfXmlParser } from 'rdfxml-streaming-parser';
import { type ArchiveServer, exportRdf, startArchiveServer, verifyArchive } from '../packages/archiver/src/index.ts';
import type { Repository } from '../packages/repository/src/index.ts';
import { HarvestedSite, nextSecond, SPARQL_PREFIXES as PREFIXES, YEAR_2000 } from './harvested-site.ts';
import { checkWellFormed } from './xml-schema.ts';

/** The store reads the catalog at most once a second: a little more than that. */
const storeCatchesUp = () => new Promise((resolve) => setTimeout(resolve, 1100));

let fixture: HarvestedSite;
let archive: string;
let repository: Repository;
let server: ArchiveServer;
let secondHarvestStart: string;

async function sparql(query: string, accept = 'application/sparql-results+json', method: 'GET' | 'POST' = 'GET'): Promise<Response> {
  if (method === 'GET') return fetch(`${server.baseUrl}/sparql?query=${encodeURIComponent(PREFIXES + query)}`, { headers: { Accept: accept } });
  return fetch(`${server.baseUrl}/sparql`, { method: 'POST', headers: { Accept: accept, 'Content-Type': 'application/sparql-query' }, body: PREFIXES + query });
}

async function count(query: string): Promise<number> {
  const response = await sparql(query);
  assert.equal(response.status, 200, await response.clone().text());
  const json = (await response.json()) as { results: { bindings: Array<Record<string, { value: string }>> } };
  return Number(json.results.bindings[0]!.n!.value);
}

before(async () => {
  fixture = await HarvestedSite.start('oaibag-linked-data-', { 'index.html': '<p>home</p>', 'a.txt': 'a', 'img/logo.png': 'png', 'gone.txt': 'soon deleted' });
  ({ archive, repository } = fixture);
  await nextSecond();
  secondHarvestStart = new Date().toISOString();
  fixture.write('index.html', '<p>home, edited</p>', YEAR_2000 + 86_400);
  fixture.remove('gone.txt');
  const second = await fixture.harvestAgain();
  assert.deepEqual([second.modified, second.deleted], [1, 1]);
  server = await startArchiveServer({ archiveDir: archive });
});

after(async () => {
  await server?.close();
  await fixture?.close();
});

test('SPARQL answers what the catalog knows: items, the versions of a URL, deletions since a date', async () => {
  assert.equal(await count('SELECT (COUNT(?i) AS ?n) WHERE { ?i a oai:Item }'), 4);
  const home = `${repository.baseUrl}/index.html`;
  assert.equal(await count(`SELECT (COUNT(?v) AS ?n) WHERE { ?i dcterms:source <${home}> . ?v dcterms:isVersionOf ?i }`), 2);
  assert.equal(
    await count(
      `SELECT (COUNT(?d) AS ?n) WHERE { ?i prov:qualifiedInvalidation ?d . ?d prov:atTime ?t FILTER (?t >= "${secondHarvestStart}"^^<http://www.w3.org/2001/XMLSchema#dateTime>) }`,
    ),
    1,
  );
  assert.equal(await count(`SELECT (COUNT(?v) AS ?n) WHERE { ?v oaibag:change "modified" }`), 1);
  assert.equal(await count('SELECT (COUNT(?h) AS ?n) WHERE { ?h a prov:Activity ; oaibag:status "complete" }'), 2);
  assert.equal(
    await count(
      'SELECT (COUNT(?s) AS ?n) WHERE { ?s a oai:Set ; oai:setSpec "mime:text:plain" ; dcterms:format <https://www.iana.org/assignments/media-types/text/plain> }',
    ),
    1,
  );
});

test('the protocol: GET and POST forms, JSON, XML, CSV and TSV results, ASK, format=', async () => {
  const query = 'SELECT ?i WHERE { ?i a oai:Item } ORDER BY ?i';
  const json = (await (await sparql(query, 'application/sparql-results+json', 'POST')).json()) as { results: { bindings: unknown[] } };
  assert.equal(json.results.bindings.length, 4);
  const form = await fetch(`${server.baseUrl}/sparql`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/sparql-results+xml' },
    body: new URLSearchParams({ query: PREFIXES + query }).toString(),
  });
  assert.match(String(form.headers.get('content-type')), /^application\/sparql-results\+xml/);
  const xml = await form.text();
  assert.ok(checkWellFormed(xml, 'results').ok);
  assert.equal([...xml.matchAll(/<result>/g)].length, 4);
  const csv = await (await sparql(query, 'text/csv')).text();
  assert.equal(csv.trim().split(/\r?\n/).length, 5, 'a header and four rows');
  const tsv = await (await sparql(query, 'text/tab-separated-values')).text();
  assert.match(tsv, /^\?i\n</);
  const ask = (await (await sparql('ASK { ?v oaibag:change "modified" }')).json()) as { boolean: boolean };
  assert.equal(ask.boolean, true);
  const byParameter = await fetch(`${server.baseUrl}/sparql?format=csv&query=${encodeURIComponent(PREFIXES + query)}`);
  assert.match(String(byParameter.headers.get('content-type')), /^text\/csv/);
});

test('CONSTRUCT and DESCRIBE answer in the RDF formats, read back by other parsers', async () => {
  const construct = 'CONSTRUCT { ?h ?p ?o } WHERE { ?h a prov:Activity ; ?p ?o }';
  const turtle = await sparql(construct, 'text/turtle');
  assert.match(String(turtle.headers.get('content-type')), /^text\/turtle/);
  const fromTurtle = new N3Parser({ format: 'text/turtle' }).parse(await turtle.text());
  assert.ok(fromTurtle.length >= 10);
  const json = await sparql(construct, 'application/ld+json');
  const fromJson = (await jsonld.toRDF(JSON.parse(await json.text()), {})) as unknown as unknown[];
  assert.equal(fromJson.length, fromTurtle.length);
  const describe = await sparql(`DESCRIBE <${server.baseUrl}/resource/source/1>`, 'application/n-triples');
  assert.ok(new N3Parser({ format: 'application/n-triples' }).parse(await describe.text()).length >= 3);
});

test('read-only: an update is refused however it is sent; a bad query and an unknown format are clear errors', async () => {
  const attempts = [
    fetch(`${server.baseUrl}/sparql`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'update=INSERT%20DATA%20%7B%3Ca%3E%20%3Cb%3E%20%3Cc%3E%7D',
    }),
    fetch(`${server.baseUrl}/sparql`, { method: 'POST', headers: { 'Content-Type': 'application/sparql-update' }, body: 'CLEAR ALL' }),
    sparql('DELETE WHERE { ?s ?p ?o }'),
  ];
  for (const attempt of await Promise.all(attempts)) {
    assert.equal(attempt.status, 400);
    assert.match(await attempt.text(), /read-only/);
  }
  assert.ok((await count('SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }')) > 50, 'nothing was removed');
  const bad = await sparql('SELECT WHERE nonsense');
  assert.equal(bad.status, 400);
  assert.match(await bad.text(), /^the query cannot be run: /);
  const unknown = await sparql('SELECT ?i WHERE { ?i a oai:Item }', 'image/png');
  assert.equal(unknown.status, 406);
  assert.match(await unknown.text(), /application\/sparql-results\+json/);
});

test('/resource answers 303 to /page for people and to /data for RDF clients; 406 and 404 otherwise', async () => {
  const item = `resource/item/${encodeURIComponent(`${repository.baseUrl}/a.txt`)}`;
  const page = await fetch(`${server.baseUrl}/${item}`, { redirect: 'manual', headers: { Accept: 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.8' } });
  assert.equal(page.status, 303);
  assert.equal(page.headers.get('location'), `${server.baseUrl}/${item.replace('resource/', 'page/')}`);
  assert.equal(page.headers.get('vary'), 'Accept');
  const data = await fetch(`${server.baseUrl}/${item}`, { redirect: 'manual', headers: { Accept: 'text/turtle' } });
  assert.equal(data.status, 303);
  assert.equal(data.headers.get('location'), `${server.baseUrl}/${item.replace('resource/', 'data/')}`);
  const html = await fetch(data.headers.get('location')!.replace('/data/', '/page/'));
  assert.match(await html.text(), /<table>/);
  assert.equal((await fetch(`${server.baseUrl}/${item}`, { redirect: 'manual', headers: { Accept: 'image/png' } })).status, 406);
  assert.equal((await fetch(`${server.baseUrl}/resource/item/nothing`, { redirect: 'manual' })).status, 404);
  assert.equal((await fetch(`${server.baseUrl}/data/harvest/1?output=pdf`)).status, 406);
});

test('/data in Turtle, N-Triples, RDF/XML and JSON-LD, each read back by another parser, say the same', async () => {
  // The modified version (its record's place in its bag depends on the list's order).
  const found = (await (await sparql('SELECT ?v WHERE { ?v oaibag:change "modified" }')).json()) as { results: { bindings: Array<{ v: { value: string } }> } };
  const subject = found.results.bindings[0]!.v.value;
  const tail = subject.slice(`${server.baseUrl}/resource/`.length);
  assert.match(tail, /^version\/harvest-000002\/batch-00001\/\d+$/);
  const statements = async (output: string): Promise<Set<string>> => {
    const response = await fetch(`${server.baseUrl}/data/${tail}?output=${output}`);
    assert.equal(response.status, 200, output);
    const text = await response.text();
    const found = new Set<string>();
    const add = (s: string, p: string, o: string) => found.add(`${s} ${p} ${o}`);
    if (output === 'turtle' || output === 'ntriples') {
      for (const quad of new N3Parser({ format: output === 'turtle' ? 'text/turtle' : 'application/n-triples' }).parse(text))
        add(quad.subject.value, quad.predicate.value, quad.object.value);
    } else if (output === 'rdfxml') {
      await new Promise<void>((resolve, reject) => {
        const parser = new RdfXmlParser();
        parser.on('data', (quad: { subject: { value: string }; predicate: { value: string }; object: { value: string } }) =>
          add(quad.subject.value, quad.predicate.value, quad.object.value),
        );
        parser.on('error', reject);
        parser.on('end', resolve);
        parser.write(text);
        parser.end();
      });
    } else {
      const quads = (await jsonld.toRDF(JSON.parse(text), {})) as unknown as Array<{
        subject: { value: string };
        predicate: { value: string };
        object: { value: string };
      }>;
      for (const quad of quads) add(quad.subject.value, quad.predicate.value, quad.object.value);
    }
    return found;
  };
  const turtle = await statements('turtle');
  assert.ok(
    [...turtle].some((line) => line.startsWith(`${subject} http://purl.org/dc/terms/isVersionOf `)),
    [...turtle].join('\n'),
  );
  assert.ok(turtle.size >= 10);
  for (const output of ['ntriples', 'rdfxml', 'jsonld']) assert.deepEqual(await statements(output), turtle, output);
});

test('limits: a query past the time limit is stopped (503) and the next one is answered; solutions beyond the row limit are cut, and the header says so', async () => {
  const limited = await startArchiveServer({ archiveDir: archive, sparqlTimeoutMs: 300, sparqlRowLimit: 2 });
  try {
    const ask = (query: string, accept = 'application/sparql-results+json') =>
      fetch(`${limited.baseUrl}/sparql?query=${encodeURIComponent(PREFIXES + query)}`, { headers: { Accept: accept } });
    const started = Date.now();
    const slow = await ask('SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }');
    assert.equal(slow.status, 503);
    assert.match(await slow.text(), /ran past the time limit \(0.3 s\) and was stopped/);
    assert.ok(Date.now() - started < 5000, 'stopped near the limit, not at the end of the query');
    const after = await ask('SELECT ?i WHERE { ?i a oai:Item } ORDER BY ?i', 'text/csv');
    assert.equal(after.status, 200, 'the store was loaded again');
    assert.equal(after.headers.get('sparql-results-truncated'), 'the first 2 solutions');
    assert.equal((await after.text()).trim().split(/\r?\n/).length, 3, 'a header and two rows');
    const small = await ask('SELECT ?h WHERE { ?h a prov:Activity ; oaibag:status "nothing" }');
    assert.equal(small.headers.get('sparql-results-truncated'), null);
  } finally {
    await limited.close();
  }
});

test('export-rdf streams the same graph as N-Quads, read back by another parser, in one page or in many', async () => {
  const exported = async (paging?: { pageRows: number; chunkCharacters: number }) => {
    const chunks: string[] = [];
    const out = new Writable({
      write(chunk: Buffer, _encoding, done) {
        chunks.push(chunk.toString('utf8'));
        done();
      },
    });
    const lines = await exportRdf({ archiveDir: archive, baseUrl: server.baseUrl, out, ...(paging ? { paging } : {}) });
    const quads = new N3Parser({ format: 'application/n-quads' }).parse(chunks.join(''));
    assert.equal(quads.length, lines);
    return { quads, pieces: chunks.length };
  };
  const whole = await exported();
  const distinct = new Set(whole.quads.map((quad) => `${quad.subject.value} ${quad.predicate.value} ${quad.object.termType}:${quad.object.value}`));
  assert.equal(distinct.size, await count('SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }'), 'the triples /sparql holds');
  assert.equal(distinct.size, whole.quads.length, 'each once');
  // Two rows a query and pieces of a few triples: more items, versions and bags than one page each.
  const paged = await exported({ pageRows: 2, chunkCharacters: 400 });
  assert.ok(paged.pieces > 10, `${paged.pieces} pieces`);
  const line = (quad: (typeof whole.quads)[number]) => `${quad.subject.value} ${quad.predicate.value} ${quad.object.termType}:${quad.object.value}`;
  assert.deepEqual(paged.quads.map(line).toSorted(), whole.quads.map(line).toSorted());
});

test("verify's fixity checks are events of the graph, each naming the bag it checked", async () => {
  const report = await verifyArchive({ archiveDir: archive });
  assert.equal(report.problems.length, 0);
  await storeCatchesUp();
  assert.equal(
    await count(
      `SELECT (COUNT(?e) AS ?n) WHERE { ?e a prov:Activity ; dcterms:type "fixity check" ; oaibag:outcome "success" ; prov:used ?bag . ?bag a oaibag:Bag }`,
    ),
    2,
    'one per bag',
  );
});

test('the store keeps in step with the catalog: a further harvest is visible without a restart', async () => {
  const before = await count('SELECT (COUNT(?i) AS ?n) WHERE { ?i a oai:Item }');
  fixture.write('added.txt', 'added later');
  const third = await fixture.harvestAgain();
  assert.equal(third.added, 1);
  await storeCatchesUp();
  assert.equal(await count('SELECT (COUNT(?i) AS ?n) WHERE { ?i a oai:Item }'), before + 1);
  assert.equal(await count('SELECT (COUNT(?h) AS ?n) WHERE { ?h a prov:Activity ; oaibag:status "complete" }'), 3);
});
