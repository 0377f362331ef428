// The archive's Linked Data pages for people (docs/linked-data.md, "Pages"), rendered by
// headless Chromium (Debian's chromium, as the audit test uses): the SPARQL query page with its
// example queries, a query submitted through its form and answered as a table (driven by
// playwright-core, with a screenshot), the directory, and the pages of a resource (its history:
// added, modified, deleted), a source, a set and a harvest. Every link a page gives inside the
// archive is followed.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { chromium } from 'playwright-core';
import { type ArchiveServer, Catalog, harvest, startArchiveServer } from '../packages/archiver/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';
import { storeVersion } from './catalog-fixture.ts';
import { decodeEntities } from './html-text.ts';

const CHROMIUM = '/usr/bin/chromium';
const SKIP = existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is missing (install Debian's chromium package, as .ci/run does): the pages are not checked in a browser`;
const nextSecond = () => new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));

let work: string;
let repository: Repository;
let server: ArchiveServer;

before(async () => {
  if (SKIP) return;
  work = mkdtempSync(join(tmpdir(), 'oaibag-ld-pages-'));
  const site = join(work, 'site');
  mkdirSync(site);
  writeFileSync(join(site, 'keep.txt'), 'keeps the site alive');
  writeFileSync(join(site, 'page.html'), '<p>one</p>');
  utimesSync(join(site, 'page.html'), 946684800, 946684800);
  repository = await createRepository({ root: site, index: join(work, 'index.sqlite'), watch: false, rescanSeconds: 0 });
  await repository.listen(0, '127.0.0.1');
  const archive = join(work, 'archive');
  await nextSecond();
  await harvest({ baseUrl: `${repository.baseUrl}/oai`, archiveDir: archive });
  writeFileSync(join(site, 'page.html'), '<p>two</p>');
  await repository.scan();
  await nextSecond();
  await harvest({ baseUrl: `${repository.baseUrl}/oai`, archiveDir: archive });
  unlinkSync(join(site, 'page.html'));
  await repository.scan();
  await nextSecond();
  await harvest({ baseUrl: `${repository.baseUrl}/oai`, archiveDir: archive });
  server = await startArchiveServer({ archiveDir: archive });
});

after(async () => {
  await server?.close();
  await repository?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

/** The page as Chromium renders it (`--dump-dom`); asynchronous, since the server runs in this process. */
async function rendered(url: string): Promise<string> {
  const profile = mkdtempSync(join(work, 'profile-'));
  const child = spawn(CHROMIUM, ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', `--user-data-dir=${profile}`, '--dump-dom', url], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  clearTimeout(timer);
  assert.equal(code, 0, `chromium failed: ${stderr}`);
  return stdout;
}

/** Follows every link of the page that stays inside the archive: each must answer 200. */
async function followLinks(dom: string): Promise<number> {
  const hrefs = [...new Set([...dom.matchAll(/href="([^"]+)"/g)].map((match) => decodeEntities(match[1]!)))].filter((href) => href.startsWith(server.baseUrl));
  for (const href of hrefs) {
    // As a browser asks: HTML first, anything else after.
    const response = await fetch(href, { headers: { Accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' } });
    assert.equal(response.status, 200, href);
    await response.arrayBuffer();
  }
  return hrefs.length;
}

test('the SPARQL query page: a form and the example queries, each of which runs', { skip: SKIP }, async () => {
  const dom = await rendered(`${server.baseUrl}/sparql`);
  assert.match(dom, /<title>SPARQL over the archive<\/title>/);
  assert.match(dom, /<form method="get" action="[^"]+\/sparql">/);
  assert.equal([...dom.matchAll(/>run it<\/a>/g)].length, 4);
  assert.equal([...dom.matchAll(/href="[^"]*\/sparql\?format=html&amp;query=[^"]*">run it<\/a>/g)].length, 4, 'each runs as a table');
  assert.ok((await followLinks(dom)) >= 5);
});

test("a resource's page shows its history in time order, and its links lead to pages that render", { skip: SKIP }, async () => {
  const item = `${server.baseUrl}/page/item/${encodeURIComponent(`${repository.baseUrl}/page.html`)}`;
  const dom = await rendered(item);
  const history = /<h2>History<\/h2>[\s\S]*?<table>([\s\S]*?)<\/table>/.exec(dom)?.[1] ?? '';
  assert.deepEqual(
    [...history.matchAll(/<td class="(\w+)">/g)].map((match) => match[1]),
    ['added', 'modified', 'deleted'],
  );
  assert.match(dom, /TimeMap<\/a>/);
  assert.ok((await followLinks(dom)) >= 5);
  for (const tail of ['source/1', `set/${encodeURIComponent('mime:text:html')}`, 'harvest/1']) {
    const page = await rendered(`${server.baseUrl}/page/${tail}`);
    assert.match(page, /<h2>What the archive says about it<\/h2>/, tail);
    await followLinks(page);
  }
  const set = await rendered(`${server.baseUrl}/page/set/${encodeURIComponent('mime:text:html')}`);
  assert.match(set, /<h2>What links to it<\/h2>/, 'a set lists its members');
});

test('a hostile identifier from a source is shown as text on its page, never run or made an element', { skip: SKIP }, async () => {
  const hostile = `https://example.org/<img src=x onerror="document.title='pwned'">`;
  const dir = mkdtempSync(join(work, 'hostile-'));
  const catalog = Catalog.open(dir);
  try {
    const source = catalog.upsertSource('https://example.org/oai', { repositoryName: '<script>document.title="pwned"</script>' });
    const harvestId = catalog.startRun(source.id, 'harvest', { prefix: 'oai_didl' });
    storeVersion(catalog, {
      sourceId: source.id,
      identifier: hostile,
      datestamp: '2026-01-01T00:00:00Z',
      size: 1,
      sha256: 'a'.repeat(64),
      mimeType: 'text/html',
      harvestId,
    });
    catalog.finishRun(harvestId, 'complete');
  } finally {
    catalog.close();
  }
  const hostileServer = await startArchiveServer({ archiveDir: dir });
  try {
    for (const tail of [`item/${encodeURIComponent(hostile)}`, 'source/1']) {
      const dom = await rendered(`${hostileServer.baseUrl}/page/${tail}`);
      assert.doesNotMatch(dom, /<title>pwned<\/title>/, tail);
      assert.doesNotMatch(dom.replace(/<head>[\s\S]*?<\/head>/, ''), /<img|<script/, `${tail}: nothing became an element`);
    }
    const item = await rendered(`${hostileServer.baseUrl}/page/item/${encodeURIComponent(hostile)}`);
    assert.ok(item.includes('&lt;img src=x onerror="document.title=\'pwned\'"&gt;') || item.includes('&lt;img src=x onerror=&quot;'), 'shown as text');
  } finally {
    await hostileServer.close();
  }
});

test("a query submitted through the query page's form is answered as a table in the browser, a known resource's IRI linked to its page", {
  skip: SKIP,
}, async () => {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  try {
    const page = await browser.newPage();
    await page.goto(`${server.baseUrl}/sparql`);
    assert.equal(await page.inputValue('select[name=format]'), 'html', 'the form asks for a table by default');
    await page.fill(
      'textarea[name=query]',
      'PREFIX oai: <http://www.mediaspaces.info/vocab/oai-pmh.rdf#>\nSELECT ?item WHERE { ?item a oai:Item } ORDER BY ?item',
    );
    await Promise.all([page.waitForURL(/\/sparql\?/), page.click(`form[action="${server.baseUrl}/sparql"] button[type=submit]`)]);
    assert.equal(await page.title(), 'SPARQL results');
    const known = `${server.baseUrl}/resource/item/${encodeURIComponent(`${repository.baseUrl}/page.html`)}`;
    const links = await page.$$eval('table a', (anchors) => anchors.map((a) => ({ href: a.getAttribute('href'), text: a.textContent })));
    assert.deepEqual(
      links.filter((link) => link.text === known),
      [{ href: known.replace('/resource/', '/page/'), text: known }],
      JSON.stringify(links),
    );
    assert.equal(await page.locator('table tr').count(), 3, 'a header and the two resources');
    const shot = await page.screenshot({ fullPage: true });
    assert.ok(shot.length > 2000, `a screenshot of ${shot.length} bytes`);
    assert.deepEqual([...shot.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'a PNG');
    writeFileSync(join(work, 'sparql-results.png'), shot);
    // The same results for programs, from the page's own link.
    const json = await fetch(await page.getAttribute('a:text-is("JSON")', 'href').then((href) => href!));
    assert.match(String(json.headers.get('content-type')), /^application\/sparql-results\+json/);
    assert.equal(((await json.json()) as { results: { bindings: unknown[] } }).results.bindings.length, 2);
    // The known resource's page from the table: titled by what it is.
    await Promise.all([page.waitForURL(/\/page\/item\//), page.click(`table a:text-is("${known}")`)]);
    assert.equal(await page.title(), `${repository.baseUrl}/page.html`);
  } finally {
    await browser.close();
  }
});

test("the directory in the browser: each kind's count, and a harvest's page with the files it added, modified and deleted", { skip: SKIP }, async () => {
  const directory = await rendered(`${server.baseUrl}/directory`);
  assert.match(directory, /<title>Directory of the archive<\/title>/);
  assert.match(directory, /Versions<\/a><\/td><td class="num">3<\/td>/);
  assert.match(directory, /Deletions<\/a><\/td><td class="num">1<\/td>/);
  const versions = await rendered(`${server.baseUrl}/directory/version`);
  assert.match(versions, new RegExp(`>${repository.baseUrl.replace(/[.]/g, '\\.')}/page\\.html as of \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC</a>`));
  await followLinks(versions);
  const second = await rendered(`${server.baseUrl}/page/harvest/2`);
  assert.match(second, /<h2 id="files">[\s\S]*<td class="modified">modified<\/td>[\s\S]*<h2 id="deleted">/);
  const third = await rendered(`${server.baseUrl}/page/harvest/3`);
  assert.match(third, /<h2 id="deleted">[\s\S]*page\.html<\/a>/);
  await followLinks(third);
});
