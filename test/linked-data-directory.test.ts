// OAI2LOD's directory over the archive (docs/linked-data.md, "Directory and /all"), the pages
// that say what they are ("Pages") and `/sparql`'s results as a page for a browser, over plain
// HTTP: /directory's counts, every member of every kind exactly once across its pages, a
// position past the end, hostile positions and page sizes refused with one coded line; /all in
// Turtle, N-Triples and RDF/XML read back by other parsers and paged by hydra:next; a version's,
// a harvest's (with the files it wrote, paged), a source's and a set's page; the JSON of
// `/sparql` unchanged for programs; and each page query of the directory a seek of an index
// (EXPLAIN QUERY PLAN). The browser's side is test/linked-data-pages.test.ts.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Parser as N3Parser, type Quad } from 'n3';
import { RdfXmlParser } from 'rdfxml-streaming-parser';
import { type ArchiveServer, Catalog, DIRECTORY_PAGE, DIRECTORY_QUERIES, startArchiveServer } from '../packages/archiver/src/index.ts';
import { hashPassword, parseAuthFile } from '../packages/oai-pmh/src/index.ts';
import { storeVersion } from './catalog-fixture.ts';
import { decodeEntities } from './html-text.ts';
import { POSTGRES_SKIP, startPostgres } from './postgres-server.ts';

const HYDRA = 'http://www.w3.org/ns/hydra/core#';
const VOID = 'http://rdfs.org/ns/void#';
const RDF_TYPE = 'http://www.w3.org/1999/02/22-rdf-syntax-ns#type';
const BROWSER = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

const ONE = 'https://one.example/oai';
const TWO = 'https://two.example/oai';
const fileUrl = (i: number) => `https://one.example/f/${i}.html`;
const MIME_TYPES = ['image/png', 'image/svg+xml', 'application/pdf', 'text/html; charset=utf-8'];
const digest = (text: string) => createHash('sha256').update(text).digest('hex');

/** What the archive holds, so the directory's counts are known. */
const EXPECTED = { source: 2, set: 10, harvest: 3, bag: 372, item: 252, version: 372, deletion: 3, event: 0 };
const SETS = [
  'source:1',
  'source:2',
  'mime',
  'mime:application',
  'mime:application:pdf',
  'mime:image',
  'mime:image:png',
  'mime:image:svg~2Bxml',
  'mime:text',
  'mime:text:html',
];

/**
 * Harvest 1: 250 files of four MIME types; harvest 2: 120 of them modified, 3 deleted; harvest
 * 3, of a second source: a file with the same URL as the first source's (served qualified) and
 * one of its own.
 */
function fill(catalog: Catalog): void {
  const one = catalog.upsertSource(ONE, { repositoryName: 'Repository One' });
  const first = catalog.startRun(one.id, 'harvest', { prefix: 'oai_didl' });
  for (let i = 0; i < 250; i++) {
    const mimeType = MIME_TYPES[i % 4]!;
    storeVersion(catalog, {
      sourceId: one.id,
      identifier: fileUrl(i),
      datestamp: '2026-01-01T00:00:00Z',
      size: 100 + i,
      sha256: digest(`${i}-a`),
      mimeType,
      harvestId: first,
    });
  }
  catalog.finishRun(first, 'complete', { records: 250, added: 250 });
  const second = catalog.startRun(one.id, 'harvest', { prefix: 'oai_didl' });
  for (let i = 0; i < 120; i++) {
    const mimeType = MIME_TYPES[i % 4]!;
    storeVersion(catalog, {
      sourceId: one.id,
      identifier: fileUrl(i),
      datestamp: '2026-02-01T00:00:00Z',
      size: 200 + i,
      sha256: digest(`${i}-b`),
      mimeType,
      harvestId: second,
    });
  }
  for (let i = 200; i < 203; i++) catalog.recordDeletion(one.id, fileUrl(i), '2026-02-01T00:00:00Z', second);
  catalog.finishRun(second, 'complete', { records: 123, modified: 120, deleted: 3 });
  const two = catalog.upsertSource(TWO, {});
  const third = catalog.startRun(two.id, 'harvest', { prefix: 'oai_didl' });
  storeVersion(catalog, {
    sourceId: two.id,
    identifier: fileUrl(0),
    datestamp: '2026-03-01T00:00:00Z',
    size: 1,
    sha256: digest('two-0'),
    mimeType: 'text/html',
    harvestId: third,
  });
  storeVersion(catalog, {
    sourceId: two.id,
    identifier: 'https://two.example/x.html',
    datestamp: '2026-03-01T00:00:00Z',
    size: 2,
    sha256: digest('two-x'),
    mimeType: 'text/html',
    harvestId: third,
  });
  catalog.finishRun(third, 'complete', { records: 2, added: 2 });
}

let work: string;
let archive: string;
let server: ArchiveServer;
let guarded: ArchiveServer;

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-ld-directory-'));
  archive = join(work, 'archive');
  mkdirSync(archive);
  const catalog = Catalog.open(archive);
  try {
    fill(catalog);
  } finally {
    catalog.close();
  }
  server = await startArchiveServer({ archiveDir: archive });
  const users = `user alice ${await hashPassword('alice-password')}\nuser bob ${await hashPassword('bob-password')}\n`;
  guarded = await startArchiveServer({ archiveDir: archive, auth: parseAuthFile(`${users}protect /files/ alice\n`, 'guarded') });
});

after(async () => {
  await server?.close();
  await guarded?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

async function html(url: string): Promise<string> {
  const response = await fetch(url, { headers: { Accept: BROWSER } });
  assert.equal(response.status, 200, `${url}: ${await response.clone().text()}`);
  assert.match(String(response.headers.get('content-type')), /^text\/html/);
  return response.text();
}

/** Every member of a kind, following each page's next link: their page links, in order, and the pages' sizes. */
async function walk(kind: string, limit?: number, base = server.baseUrl): Promise<{ members: string[]; sizes: number[] }> {
  let url: string | undefined = `${base}/directory/${kind}${limit ? `?limit=${limit}` : ''}`;
  const members: string[] = [];
  const sizes: number[] = [];
  while (url) {
    const page = await html(url);
    const found = [...page.matchAll(/<tr><td><a href="([^"]+)">/g)].map((match) => decodeEntities(match[1]!));
    for (const href of found) assert.ok(href.startsWith(`${base}/page/${kind}/`), href);
    members.push(...found);
    sizes.push(found.length);
    const next = /<a rel="next" href="([^"]+)">/.exec(page);
    url = next ? decodeEntities(next[1]!) : undefined;
    assert.ok(sizes.length < 1000, 'the pages end');
  }
  return { members, sizes };
}

/** The counts /directory gives, by kind. */
function countsOf(page: string): Record<string, number> {
  const rows = page.matchAll(/<a href="[^"]*\/directory\/(\w+)">[^<]*<\/a><\/td><td class="num">([^<]*)<\/td>/g);
  return Object.fromEntries([...rows].map((match) => [match[1], Number(match[2]!.replace(/,/g, ''))]));
}

test('/directory lists each kind the archive describes with its count, and links to its pages', async () => {
  const page = await html(`${server.baseUrl}/directory`);
  assert.match(page, /<title>Directory of the archive<\/title>/);
  assert.deepEqual(countsOf(page), EXPECTED);
  assert.match(page, /href="[^"]*\/all"/, 'links to the same as RDF');
  assert.match(page, /Counts are exact up to 10,000/);
});

test('every member of every kind exactly once across its pages, whatever the page size', async () => {
  for (const [kind, count] of Object.entries(EXPECTED)) {
    for (const limit of [undefined, 7]) {
      const { members, sizes } = await walk(kind, limit);
      assert.equal(members.length, count, `${kind}, limit ${limit}`);
      assert.equal(new Set(members).size, count, `${kind}, limit ${limit}: no member twice`);
      const size = limit ?? DIRECTORY_PAGE.default;
      assert.ok(
        sizes.slice(0, -1).every((n) => n === size),
        `${kind}: every page but the last is full (${sizes.join(', ')})`,
      );
    }
  }
  const sets = (await walk('set', 3)).members.map((href) => decodeURIComponent(href.slice(`${server.baseUrl}/page/set/`.length)));
  assert.deepEqual(sets, SETS);
  const items = new Set((await walk('item')).members);
  assert.ok(items.has(`${server.baseUrl}/page/item/${encodeURIComponent(fileUrl(249))}`));
  assert.ok(
    items.has(`${server.baseUrl}/page/item/${encodeURIComponent(`info:oaibag/source/2/${fileUrl(0)}`)}`),
    "the second source's item, qualified as /oai serves it",
  );
  // Each member's link leads to its page.
  const version = (await walk('version', 1000)).members[0]!;
  assert.equal((await fetch(version, { headers: { Accept: BROWSER } })).status, 200);
});

test('a position past the end is an empty page; a hostile position or page size is one coded 400 line', async () => {
  for (const url of ['/directory/item?after=9999999', '/directory/set?after=mime:zzz:zzz', '/directory/event']) {
    const page = await html(server.baseUrl + url);
    assert.match(page, /Nothing here after this position/, url);
    assert.doesNotMatch(page, /rel="next"/, url);
  }
  const hostile = [
    '/directory/item?after=abc',
    '/directory/item?after=-1',
    '/directory/item?after=1e3',
    '/directory/item?after=99999999999999999999',
    `/directory/version?after=${encodeURIComponent('<script>alert(1)</script>')}`,
    `/directory/item?after=${'9'.repeat(5000)}`,
    '/directory/set?after=nothing:like:this',
    '/directory/set?after=source:x',
    '/directory/item?limit=0',
    `/directory/item?limit=${DIRECTORY_PAGE.max + 1}`,
    '/directory/item?limit=ten',
    '/all/item?after=abc',
    '/all/set?limit=-5',
    '/page/harvest/2?files_after=abc',
    '/page/harvest/2?deleted_after=-3',
  ];
  for (const url of hostile) {
    const response = await fetch(server.baseUrl + url);
    const body = await response.text();
    assert.equal(response.status, 400, `${url}: ${body}`);
    assert.match(String(response.headers.get('content-type')), /^text\/plain/);
    assert.match(body, /^[^\n]+ \[ERR_ARCHIVE_USAGE\]\n$/, url);
    assert.ok(body.length < 300, `${url}: the value is cut short in the line`);
    // The value is quoted in plain text, never read as anything else.
    assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
  }
  assert.equal((await fetch(`${server.baseUrl}/directory/nothing`)).status, 404);
  assert.equal((await fetch(`${server.baseUrl}/directory`, { method: 'POST' })).status, 405);
});

test('/directory and /all are for whoever may see the graph: under --auth that protects anything, users refused nothing', async () => {
  const anonymous = await fetch(`${guarded.baseUrl}/directory`);
  assert.equal(anonymous.status, 401);
  const bob = { Authorization: `Basic ${Buffer.from('bob:bob-password').toString('base64')}` };
  assert.equal((await fetch(`${guarded.baseUrl}/all/item`, { headers: bob })).status, 403);
  const alice = { Authorization: `Basic ${Buffer.from('alice:alice-password').toString('base64')}` };
  assert.equal((await fetch(`${guarded.baseUrl}/directory/item`, { headers: alice })).status, 200);
});

function parseRdfXml(text: string, baseIRI: string): Promise<Quad[]> {
  return new Promise((resolve, reject) => {
    const quads: Quad[] = [];
    const parser = new RdfXmlParser({ baseIRI });
    parser.on('data', (quad: Quad) => quads.push(quad));
    parser.on('error', reject);
    parser.on('end', () => resolve(quads));
    parser.write(text);
    parser.end();
  });
}

const canonical = (quads: Quad[]) =>
  quads.map((quad) => `${quad.subject.value} ${quad.predicate.value} ${quad.object.termType}:${quad.object.value}`).toSorted();

test('/all is the directory as RDF: Turtle, N-Triples and RDF/XML say the same, and hydra:next pages through every member once', async () => {
  const root = await fetch(`${server.baseUrl}/all`);
  assert.match(String(root.headers.get('content-type')), /^text\/turtle/);
  const rootQuads = new N3Parser({ format: 'text/turtle' }).parse(await root.text());
  const subsets = rootQuads.filter((quad) => quad.predicate.value === `${VOID}subset`).map((quad) => quad.object.value);
  assert.deepEqual(
    subsets,
    Object.keys(EXPECTED).map((kind) => `${server.baseUrl}/all/${kind}`),
  );
  const entities = rootQuads.find((quad) => quad.subject.value === `${server.baseUrl}/all/item` && quad.predicate.value === `${VOID}entities`);
  assert.equal(entities?.object.value, '252');

  const url = `${server.baseUrl}/all/version?limit=50`;
  const turtle = new N3Parser({ format: 'text/turtle' }).parse(await (await fetch(url)).text());
  const nTriples = await fetch(url, { headers: { Accept: 'application/n-triples' } });
  assert.match(String(nTriples.headers.get('content-type')), /^application\/n-triples/);
  const fromNTriples = new N3Parser({ format: 'application/n-triples' }).parse(await nTriples.text());
  const rdfXml = await fetch(`${url}&output=rdfxml`);
  assert.match(String(rdfXml.headers.get('content-type')), /^application\/rdf\+xml/);
  const fromRdfXml = await parseRdfXml(await rdfXml.text(), url);
  assert.deepEqual(canonical(fromNTriples), canonical(turtle));
  assert.deepEqual(canonical(fromRdfXml), canonical(turtle));
  assert.equal((await fetch(url, { headers: { Accept: 'image/png' } })).status, 406);

  // hydra:next from the first page to the last: each version once, each typed and labelled.
  const members: string[] = [];
  let page: string | undefined = url;
  while (page) {
    const quads: Quad[] = new N3Parser({ format: 'text/turtle' }).parse(await (await fetch(page)).text());
    const found = quads.filter((quad) => quad.predicate.value === `${HYDRA}member`).map((quad) => quad.object.value);
    for (const member of found) {
      assert.ok(
        quads.some((quad) => quad.subject.value === member && quad.predicate.value === RDF_TYPE && quad.object.value === 'http://www.w3.org/ns/prov#Entity'),
      );
      assert.ok(
        quads.some(
          (quad) => quad.subject.value === member && quad.predicate.value === 'http://www.w3.org/2000/01/rdf-schema#label' && / as of /.test(quad.object.value),
        ),
      );
    }
    members.push(...found);
    page = quads.find((quad) => quad.subject.value === page && quad.predicate.value === `${HYDRA}next`)?.object.value;
  }
  assert.equal(members.length, EXPECTED.version);
  assert.equal(new Set(members).size, EXPECTED.version);
  assert.ok(members.every((member) => member.startsWith(`${server.baseUrl}/resource/version/`)));
});

test("pages say what they are: a version by its URL and capture time, a harvest with its outcome and files, a source by name and base URL, a set's count", async () => {
  const version = await html(`${server.baseUrl}/page/version/harvest-000001/batch-00001/1`);
  assert.match(version, /<title>https:\/\/one\.example\/f\/0\.html as of \d{4}-\d\d-\d\d \d\d:\d\d UTC<\/title>/);
  assert.match(
    version,
    /title="http:\/\/purl\.org\/dc\/terms\/isVersionOf">version of<\/a> <span class="muted">\(dcterms:isVersionOf\)<\/span>/,
    'a readable label, the IRI its link',
  );

  const deletion = await html(`${server.baseUrl}/page/deletion/${encodeURIComponent(fileUrl(200))}/${encodeURIComponent('2026-02-01T00:00:00Z')}`);
  assert.match(deletion, /<title>https:\/\/one\.example\/f\/200\.html, deleted as of [^<]+ UTC<\/title>/);

  assert.match(await html(`${server.baseUrl}/page/source/1`), /<title>Repository One \(https:\/\/one\.example\/oai\)<\/title>/);
  assert.match(await html(`${server.baseUrl}/page/source/2`), /<title>https:\/\/two\.example\/oai<\/title>/);

  assert.match(await html(`${server.baseUrl}/page/set/${encodeURIComponent('mime:image:png')}`), /Members: <strong>63<\/strong> archived resources/);
  assert.match(await html(`${server.baseUrl}/page/set/source%3A2`), /Members: <strong>2<\/strong> archived resources/);

  const harvest = await html(`${server.baseUrl}/page/harvest/2`);
  assert.match(harvest, /<title>Harvest 2 of Repository One \(https:\/\/one\.example\/oai\), [^<]+ UTC<\/title>/);
  assert.match(harvest, /<strong class="added">complete<\/strong>/);
  assert.match(
    harvest,
    /<td class="num">123<\/td><td class="num">0<\/td><td class="num">120<\/td><td class="num">0<\/td><td class="num">3<\/td>/,
    'its counts',
  );
  // The files it wrote, a page at a time, then the ones it deleted.
  const written: string[] = [];
  let url: string | undefined = `${server.baseUrl}/page/harvest/2`;
  let deleted: string[] = [];
  while (url) {
    const page = await html(url);
    const files = /<h2 id="files">[\s\S]*?<h2 id="deleted">/.exec(page)![0];
    const rows = [...files.matchAll(/<tr><td class="(\w+)">\w+<\/td><td><a href="([^"]+)">([^<]+)<\/a>/g)];
    for (const row of rows) assert.equal(row[1], 'modified');
    written.push(...rows.map((row) => decodeEntities(row[3]!)));
    deleted = [.../<h2 id="deleted">[\s\S]*?(?:<h2>|$)/.exec(page)![0].matchAll(/<tr><td><a href="([^"]+)">([^<]+)<\/a>/g)].map((row) =>
      decodeEntities(row[2]!),
    );
    const next = /<a rel="next" href="([^"]+)">/.exec(files);
    url = next ? decodeEntities(next[1]!) : undefined;
  }
  assert.equal(written.length, 120);
  assert.deepEqual(written.toSorted(), Array.from({ length: 120 }, (_, i) => fileUrl(i)).toSorted());
  assert.deepEqual(deleted, [fileUrl(200), fileUrl(201), fileUrl(202)]);
});

/** A GET without an Accept header at all (fetch always sends one). */
function getWithoutAccept(url: string): Promise<{ status: number; type: string; body: string }> {
  return new Promise((resolve, reject) => {
    get(url, (response) => {
      let body = '';
      response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, type: String(response.headers['content-type']), body }));
    }).on('error', reject);
  });
}

test('/sparql: programs get JSON as before; a browser, or format=html, gets the results as a table', async () => {
  const query = 'SELECT ?item WHERE { ?item a <http://www.mediaspaces.info/vocab/oai-pmh.rdf#Item> } ORDER BY ?item LIMIT 3';
  const url = `${server.baseUrl}/sparql?query=${encodeURIComponent(query)}`;
  const asked = await fetch(url, { headers: { Accept: 'application/sparql-results+json' } });
  assert.match(String(asked.headers.get('content-type')), /^application\/sparql-results\+json/);
  const json = await asked.text();
  const none = await getWithoutAccept(url);
  assert.equal(none.status, 200);
  assert.match(none.type, /^application\/sparql-results\+json/);
  assert.equal(none.body, json, 'no Accept header: the same JSON');
  const any = await fetch(url, { headers: { Accept: '*/*' } });
  assert.equal(await any.text(), json, 'Accept */*: the same JSON');
  const jsonOverBrowser = await fetch(`${url}&format=json`, { headers: { Accept: BROWSER } });
  assert.equal(await jsonOverBrowser.text(), json, 'format=json wins over a browser Accept');
  const item = (JSON.parse(json) as { results: { bindings: Array<{ item: { value: string } }> } }).results.bindings[0]!.item.value;

  for (const response of [await fetch(url, { headers: { Accept: BROWSER } }), await fetch(`${url}&format=html`)]) {
    assert.equal(response.status, 200);
    assert.match(String(response.headers.get('content-type')), /^text\/html/);
    assert.equal(response.headers.get('vary'), 'Accept');
    const page = await response.text();
    assert.match(page, /<th>\?item<\/th>/);
    assert.ok(page.includes(`<a href="${item.replace('/resource/', '/page/').replace(/&/g, '&amp;')}">`), 'an IRI of the archive links to its page');
    assert.match(page, /format=json&amp;query=[^"]+">JSON<\/a>/);
    assert.match(page, /format=csv&amp;query=[^"]+">CSV<\/a>/);
  }
  const literal = await fetch(
    `${server.baseUrl}/sparql?format=html&query=${encodeURIComponent('SELECT ?x WHERE { BIND("<script>alert(1)</script>" AS ?x) }')}`,
  );
  const literalPage = await literal.text();
  assert.ok(literalPage.includes('<td>&lt;script&gt;alert(1)&lt;/script&gt;</td>'), 'a literal is text');
  assert.doesNotMatch(literalPage.replace(/<textarea[\s\S]*?<\/textarea>/, ''), /<script>/);

  const describe = await fetch(`${server.baseUrl}/sparql?query=${encodeURIComponent(`DESCRIBE <${server.baseUrl}/resource/source/1>`)}`, {
    headers: { Accept: BROWSER },
  });
  const triples = await describe.text();
  assert.match(triples, /<th>subject<\/th><th>predicate<\/th><th>object<\/th>/);
  assert.match(triples, /<td>Repository One<\/td>/);
  assert.match(triples, />Turtle<\/a>/);
  const turtle = await fetch(`${server.baseUrl}/sparql?query=${encodeURIComponent(`DESCRIBE <${server.baseUrl}/resource/source/1>`)}`, {
    headers: { Accept: 'text/turtle' },
  });
  assert.match(String(turtle.headers.get('content-type')), /^text\/turtle/);

  const ask = await fetch(`${server.baseUrl}/sparql?format=html&query=${encodeURIComponent('ASK { ?s ?p ?o }')}`);
  assert.match(await ask.text(), /<strong>yes \(true\)<\/strong>/);
  const bad = await fetch(`${server.baseUrl}/sparql?query=${encodeURIComponent('SELECT WHERE nonsense')}`, { headers: { Accept: BROWSER } });
  assert.equal(bad.status, 400);
  assert.match(await bad.text(), /the query cannot be run: /);
  const badJson = await fetch(`${server.baseUrl}/sparql?query=${encodeURIComponent('SELECT WHERE nonsense')}`);
  assert.match(await badJson.text(), /^the query cannot be run: /, 'a program still gets the plain line');
});

test('EXPLAIN QUERY PLAN: every page query of the directory and of a harvest page seeks a key, whatever the position', () => {
  const catalog = Catalog.openForReading(archive);
  try {
    const parameters: Record<string, unknown[]> = { harvestVersions: [2, 5, 100], harvestDeletions: [2, 5, 100], mimeTypes: ['image/png', 100] };
    for (const [name, sql] of Object.entries(DIRECTORY_QUERIES)) {
      const plan = (catalog.statement(`EXPLAIN QUERY PLAN ${sql}`).all(...(parameters[name] ?? [5, 100])) as Array<{ detail: string }>).map(
        (row) => row.detail,
      );
      for (const step of plan) {
        // A recursive query's own queue is scanned, never a table.
        if (/^SCAN (types|CONSTANT ROW)$/.test(step)) continue;
        assert.doesNotMatch(step, /^SCAN |TEMP B-TREE/, `${name}: ${plan.join(' | ')}`);
      }
      assert.match(plan[0]!, /^(SEARCH|CO-ROUTINE)/, `${name}: ${plan.join(' | ')}`);
    }
    const explain = (sql: string, ...params: unknown[]) =>
      (catalog.statement(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>).map((row) => row.detail).join(' | ');
    assert.match(explain(DIRECTORY_QUERIES.harvestVersions, 2, 5, 100), /USING INDEX versions_by_harvest \(harvest_id=\? AND rowid>\?\)/);
    assert.match(explain(DIRECTORY_QUERIES.harvestDeletions, 2, 5, 100), /USING INDEX deletions_by_harvest \(harvest_id=\? AND rowid>\?\)/);
    assert.match(explain(DIRECTORY_QUERIES.mimeTypes, '', 100), /USING INDEX resources_served_by_mime \(mime_essence>\?\)/);
  } finally {
    catalog.close();
  }
});

test('on a PostgreSQL catalog the directory lists the same, page by page', { skip: POSTGRES_SKIP }, async () => {
  const postgres = await startPostgres();
  try {
    const dir = join(work, 'on-postgres');
    mkdirSync(dir);
    // The archive folder names its catalog as `--catalog` leaves it named (archive/archive-locations.ts).
    writeFileSync(join(dir, 'locations.json'), JSON.stringify({ catalog: await postgres.createDatabase('directory') }));
    const catalog = Catalog.open(dir);
    try {
      fill(catalog);
    } finally {
      catalog.close();
    }
    const onPostgres = await startArchiveServer({ archiveDir: dir });
    try {
      assert.deepEqual(countsOf(await html(`${onPostgres.baseUrl}/directory`)), EXPECTED);
      const tails = (members: string[], base: string) => members.map((href) => href.slice(base.length));
      for (const kind of Object.keys(EXPECTED)) {
        const there = await walk(kind, 7, onPostgres.baseUrl);
        const here = await walk(kind, 7);
        assert.deepEqual(tails(there.members, onPostgres.baseUrl), tails(here.members, server.baseUrl), kind);
      }
      const files = await html(`${onPostgres.baseUrl}/page/harvest/2`);
      assert.equal([...files.matchAll(/<td class="modified">/g)].length, DIRECTORY_PAGE.default);
    } finally {
      await onPostgres.close();
    }
  } finally {
    await postgres.stop();
  }
});
