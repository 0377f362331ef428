// The archive's Linked Data pages for people (docs/linked-data.md, "Pages"), rendered by
// headless Chromium (Debian's chromium, as the audit test uses): the SPARQL query page with its
// example queries, and the pages of a resource (its history: added, modified, deleted), a
// source, a set and a harvest. Every link a page gives inside the archive is followed.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { type ArchiveServer, Catalog, harvest, startArchiveServer } from '../packages/archiver/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';
import { storeVersion } from './catalog-fixture.ts';

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

const decode = (text: string) =>
  text
    .replace(/&amp;/g, '&')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"');

/** Follows every link of the page that stays inside the archive: each must answer 200. */
async function followLinks(dom: string): Promise<number> {
  const hrefs = [...new Set([...dom.matchAll(/href="([^"]+)"/g)].map((match) => decode(match[1]!)))].filter((href) => href.startsWith(server.baseUrl));
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
