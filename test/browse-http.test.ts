// The browse pages over plain HTTP (docs/browse.md): search pages every match exactly once in
// both kinds and with a MIME set, refuses hostile input with a 400 page; history pages; replay's
// redirects, policies, Memento headers and rewriting (base href, srcset, CSS, a charset other
// than UTF-8, a URL with a query); diff's fallbacks; the `--auth` rule of a payload guarding
// replay and diff; and every page query seeks an index (EXPLAIN QUERY PLAN).
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { type ArchiveServer, BROWSE_BOUNDS, BROWSE_QUERIES, Catalog, harvest, startArchiveServer } from '../packages/archiver/src/index.ts';
import { hashPassword, parseAuthFile } from '../packages/oai-pmh/src/index.ts';
import { storeVersion } from './catalog-fixture.ts';
import { HarvestedSite, YEAR_2000 } from './harvested-site.ts';
import { solidPng } from './png-pixels.ts';
import { POSTGRES_SKIP, startPostgres } from './postgres-server.ts';

const MANY = 130;
let site: HarvestedSite;
let server: ArchiveServer;
let guarded: ArchiveServer;
let first: string;
let second: string;

const original = (path: string) => `${site.repository.baseUrl}/${path}`;
const get = (path: string, init?: RequestInit) => fetch(`${server.baseUrl}${path}`, { redirect: 'manual', ...init });

before(async () => {
  const files: Record<string, string | Uint8Array> = {
    'page.html':
      '<!DOCTYPE html><html><head><base href="sub/"><style>body { background: url(bg.png) }</style></head><body>' +
      '<img id="a" srcset="one.png 1x, /two.png 2x" src="one.png"><a href="../other.html?x=1&amp;y=2">other</a>' +
      '<a href="#top">top</a><a href="mailto:a@example.org">mail</a><p style="background:url(\'/p.png\')">styled</p></body></html>',
    'sub/one.png': solidPng(2, 2, [1, 2, 3]),
    'latin.html': Buffer.concat([
      Buffer.from('<!DOCTYPE html><html><head><meta charset="windows-1252"></head><body>caf'),
      Buffer.from([0xe9]),
      Buffer.from('</body></html>'),
    ]),
    'style.css': '@import "more.css"; h1 { background: url( "img/h.png" ) }',
    'data.bin': Buffer.from([0, 1, 2, 3]),
    'notes.txt': 'a\nb\nc\n',
    'private/secret.txt': 'secret one\n',
  };
  for (let i = 0; i < MANY; i++) files[`many/item-${String(i).padStart(3, '0')}.txt`] = `item ${i}`;
  for (let i = 0; i < 3; i++) files[`many/pic-${i}.png`] = solidPng(1, 1, [i, i, i]);
  site = await HarvestedSite.start('oaibag-browse-http-', files);
  const later = YEAR_2000 + 86_400;
  site.write('notes.txt', 'a\nB\nc\n', later);
  site.write('data.bin', Buffer.from([9, 9]), later);
  site.write('private/secret.txt', 'secret two\n', later);
  site.remove('many/item-000.txt');
  await site.harvestAgain();
  server = await startArchiveServer({ archiveDir: site.archive });
  const users = `user alice ${await hashPassword('alice-password')}\n`;
  guarded = await startArchiveServer({ archiveDir: site.archive, auth: parseAuthFile(`${users}protect /files/ alice\n`, 'guarded') });
  const timemap = await (await get(`/timemap/link/${original('notes.txt')}`)).text();
  [first, second] = [...timemap.matchAll(/datetime="([^"]+)"/g)].map((match) => new Date(match[1]!).toISOString().slice(0, 19).replace(/[-:T]/g, '')) as [
    string,
    string,
  ];
});

after(async () => {
  await server?.close();
  await guarded?.close();
  await site?.close();
});

/** Follows a search's "more" links to the end: every history link, in order. */
async function searchAll(query: string, on: ArchiveServer = server): Promise<string[]> {
  const found: string[] = [];
  let next: string | undefined = `/search?${query}`;
  for (let pages = 0; next !== undefined; pages++) {
    assert.ok(pages < 50, 'the search ends');
    const response = await fetch(`${on.baseUrl}${next}`, { redirect: 'manual' });
    assert.equal(response.status, 200, next);
    const html = await response.text();
    found.push(...[...html.matchAll(/<td><a href="[^"]*\/history\/([^"]+)">/g)].map((match) => match[1]!.replaceAll('&amp;', '&')));
    const more = /<a href="[^"]*(\/search\?[^"]+)" rel="next">/.exec(html)?.[1];
    next = more?.replaceAll('&amp;', '&');
  }
  return found;
}

test('search pages every match exactly once: contains, prefix, a MIME set, and the two together', async () => {
  const items = Array.from({ length: MANY }, (_, i) => original(`many/item-${String(i).padStart(3, '0')}.txt`));
  const contains = await searchAll('q=item-');
  assert.equal(contains.length, MANY, 'more than two pages of 50');
  assert.deepEqual([...contains].sort(), items);
  const prefix = await searchAll(`q=${encodeURIComponent(original('many/item-'))}&match=prefix`);
  assert.deepEqual(prefix, items, 'prefix results come in URL order');
  assert.deepEqual(await searchAll('q=ITEM-12'), items.slice(120, 130), 'contains folds ASCII case');
  assert.deepEqual(await searchAll(`q=${encodeURIComponent(original('many/ITEM-'))}&match=prefix`), [], 'prefix is exact');
  const images = await searchAll('set=mime%3Aimage');
  assert.equal(images.filter((url) => url.includes('/many/pic-')).length, 3);
  assert.ok(images.every((url) => url.endsWith('.png')));
  assert.deepEqual(
    (await searchAll('q=many%2F&set=mime%3Aimage')).sort(),
    [0, 1, 2].map((i) => original(`many/pic-${i}.png`)),
  );
  assert.deepEqual(await searchAll('q=_tem'), [], 'a LIKE wildcard in the text matches only itself');
  const deleted = await (await get('/search?q=item-000')).text();
  assert.match(deleted, /class="deleted">deleted/);
});

test('search refuses hostile input with a 400 page that says why', async () => {
  for (const [query, why] of [
    ['q=ab', /at least three characters/],
    [`q=${'x'.repeat(BROWSE_BOUNDS.searchText + 1)}`, /at most 2048 characters/],
    ['q=abc&set=dc%3Atitle', /is not a MIME set/],
  ] as const) {
    const response = await get(`/search?${query}`);
    assert.equal(response.status, 400, query.slice(0, 40));
    assert.equal(response.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.match(await response.text(), why);
  }
  // A cursor of nonsense starts over rather than failing; a cursor past the end ends.
  assert.equal((await get('/search?q=item-&after=%7B%7B')).status, 200);
  assert.doesNotMatch(await (await get('/search?q=item-&after=999999999')).text(), /rel="next"/);
  assert.equal((await get('/search?q=%22%29%20OR%201%3D1%20--')).status, 200, 'FTS syntax in the text is a phrase, not a query');
  const page = await get('/search?q=%3Cscript%3Ealert(1)%3C%2Fscript%3E');
  const html = await page.text();
  assert.doesNotMatch(html, /<script>alert/);
  assert.match(page.headers.get('content-security-policy') ?? '', /default-src 'none'/);
});

test('history lists versions and deletions with replay, diff and memento links; an unknown URL is a 404 page', async () => {
  const html = await (await get(`/history/${original('notes.txt')}`)).text();
  assert.match(html, /<title>[^<]*notes\.txt<\/title>/);
  assert.equal([...html.matchAll(/class="(added|modified)"/g)].length, 2);
  assert.ok(html.includes(`/diff/${first}/${second}/${original('notes.txt')}`), 'a diff with the previous version');
  assert.ok(html.includes(`/replay/${first}/${original('notes.txt')}`));
  assert.match(html, /\/memento\/[^"]+\/\d+">memento/);
  const binary = await (await get(`/history/${original('data.bin')}`)).text();
  assert.match(binary, />compare</, 'bytes that are not text are compared, not diffed');
  const gone = await (await get(`/history/${original('many/item-000.txt')}`)).text();
  assert.match(gone, /class="deleted">deleted/);
  const unknown = await get('/history/http://nowhere.example/x');
  assert.equal(unknown.status, 404);
  assert.match(await unknown.text(), /holds nothing of/);
});

test('replay: the exact capture is served under its banner; another instant redirects to it; bad requests are 400 pages', async () => {
  const banner = await get(`/replay/${second}/${original('notes.txt')}`);
  assert.equal(banner.status, 200);
  assert.ok(banner.headers.get('memento-datetime'));
  assert.match(banner.headers.get('link') ?? '', /rel="original".*rel="timegate".*rel="timemap".*rel="memento"/);
  assert.match(banner.headers.get('content-security-policy') ?? '', /frame-src http:\/\/127\.0\.0\.1:\d+\/replay\//);
  const html = await banner.text();
  assert.ok(html.includes(`src="${server.baseUrl}/replay/${second}mp_/${original('notes.txt')}"`));
  assert.match(html, /sandbox="allow-scripts allow-top-navigation-by-user-activation"/);
  assert.match(html, /rel="prev"/);
  assert.match(html, /last capture/);
  // Later than every capture, earlier than every one, and a partial timestamp: each to its capture.
  for (const asked of ['2999', '1990', second.slice(0, 8)]) {
    const moved = await get(`/replay/${asked}/${original('notes.txt')}`);
    assert.equal(moved.status, 302, asked);
    assert.match(moved.headers.get('location') ?? '', new RegExp(`/replay/(${first}|${second})/`));
  }
  assert.equal((await get(`/replay/1990/${original('notes.txt')}`)).headers.get('location'), `${server.baseUrl}/replay/${first}/${original('notes.txt')}`);
  for (const bad of [
    '/replay/2026133/http://x/',
    '/replay/abc/http://x/',
    `/replay/${first}/ftp://x/`,
    `/replay/${first}/http://${'x'.repeat(9000)}`,
    '/replay/20261301000000/http://x/',
  ]) {
    assert.equal((await get(bad)).status, 400, bad.slice(0, 60));
  }
  const missing = await get(`/replay/${first}/http://nowhere.example/`);
  assert.equal(missing.status, 404);
  assert.match(await missing.text(), /holds no capture of/);
});

test('a URL beyond ASCII, as a source may name it: replay finds it and its redirect and Memento headers go out percent-encoded', async () => {
  // oaibag-repository percent-encodes its URLs; another source may send an IRI as it is.
  const dir = mkdtempSync(join(tmpdir(), 'oaibag-browse-iri-'));
  const iri = 'http://example.org/naïve café.html';
  const catalog = Catalog.open(dir);
  try {
    const source = catalog.upsertSource('http://example.org/oai', {});
    const run = catalog.startRun(source.id, 'harvest', { prefix: 'oai_didl' });
    storeVersion(catalog, {
      sourceId: source.id,
      identifier: iri,
      datestamp: '2026-01-01T00:00:00Z',
      size: 3,
      sha256: 'a'.repeat(64),
      mimeType: 'text/html',
      harvestId: run,
    });
    catalog.finishRun(run, 'complete');
  } finally {
    catalog.close();
  }
  const onIri = await startArchiveServer({ archiveDir: dir });
  try {
    // fetch sends the path percent-encoded, as a browser does.
    const moved = await fetch(`${onIri.baseUrl}/replay/2999/${iri}`, { redirect: 'manual' });
    assert.equal(moved.status, 302);
    const location = moved.headers.get('location')!;
    assert.doesNotMatch(location + moved.headers.get('link')!, /[^\x21-\x7e ]/);
    assert.equal(decodeURIComponent(location.slice(location.indexOf('/http') + 1)), iri);
    const banner = await fetch(new URL(location));
    assert.equal(banner.status, 200);
    assert.ok((await banner.text()).includes(iri), 'the banner names it as the source did');
  } finally {
    await onIri.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('replay: mp_ rewrites links, base href, srcset, CSS and charsets; id_ gives the bytes as archived under the strict policy', async () => {
  const page = await get(`/replay/${first}mp_/${original('page.html')}`);
  assert.equal(page.status, 200);
  const policy = page.headers.get('content-security-policy') ?? '';
  assert.match(policy, /^sandbox allow-scripts allow-top-navigation-by-user-activation;/);
  assert.match(policy, /connect-src 'none'/);
  assert.doesNotMatch(policy, /allow-same-origin/);
  assert.ok(page.headers.get('memento-datetime'));
  const html = await page.text();
  const embed = (path: string) => `${server.baseUrl}/replay/${first}mp_/${original(path)}`;
  assert.ok(html.includes(`src="${embed('sub/one.png')}"`), 'resolved against <base href>');
  assert.ok(html.includes(`srcset="${embed('sub/one.png')} 1x, ${embed('two.png')} 2x"`));
  assert.ok(html.includes(`url(${embed('sub/bg.png')})`), '<style> url()');
  assert.ok(html.includes(`url('${embed('p.png')}')`), 'style attribute url()');
  assert.ok(html.includes(`href="${server.baseUrl}/replay/${first}/${original('other.html?x=1&amp;y=2')}"`), 'a link goes to the banner page, its query kept');
  assert.match(html, /href="#top"/);
  assert.match(html, /href="mailto:a@example.org"/);
  assert.match(html, /target="_top"/);
  assert.doesNotMatch(html, /<base href/);
  const latin = await get(`/replay/${first}mp_/${original('latin.html')}`);
  assert.equal(latin.headers.get('content-type'), 'text/html; charset=utf-8');
  assert.match(await latin.text(), /café/, 'decoded by its <meta charset> (the type gave none), sent as UTF-8');
  const css = await (await get(`/replay/${first}mp_/${original('style.css')}`)).text();
  assert.equal(css, `@import "${embed('more.css')}"; h1 { background: url("${embed('img/h.png')}") }`);
  const raw = await get(`/replay/${first}id_/${original('page.html')}`);
  assert.match(raw.headers.get('content-security-policy') ?? '', /^sandbox; default-src 'none'/);
  assert.match(await raw.text(), /<base href="sub\/">/);
  const head = await get(`/replay/${first}mp_/${original('page.html')}`, { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal(await head.text(), '');
});

test('diff: a changed line, identical bytes, and bytes that are not text', async () => {
  const changed = await (await get(`/diff/${first}/${second}/${original('notes.txt')}`)).text();
  assert.match(changed, /<tr class="del"><td class="n">2<\/td><td class="s">−<\/td><td class="t">b<\/td><\/tr>/);
  assert.match(changed, /<tr class="ins"><td class="n">2<\/td><td class="s">\+<\/td><td class="t">B<\/td><\/tr>/);
  assert.match(await (await get(`/diff/${first}/${first}/${original('notes.txt')}`)).text(), /the same bytes/);
  assert.match(await (await get(`/diff/${first}/${second}/${original('data.bin')}`)).text(), /Not text: compared by size and digest only/);
  assert.equal((await get(`/diff/${first}/${second}/http://nowhere.example/`)).status, 404);
  assert.equal((await get(`/diff/x/${second}/${original('notes.txt')}`)).status, 400);
  // By digests, as an audit names the two versions.
  const digests = [...(await (await get(`/history/${original('notes.txt')}`)).text()).matchAll(/title="([0-9a-f]{64})"/g)].map((match) => match[1]!);
  assert.equal(digests.length, 2);
  const byDigest = await get(`/diff?${new URLSearchParams({ url: original('notes.txt'), from: digests[0]!, to: digests[1]! })}`);
  assert.equal(byDigest.status, 200);
  assert.match(await byDigest.text(), /<tr class="ins"><td class="n">2<\/td><td class="s">\+<\/td><td class="t">B<\/td><\/tr>/);
  assert.equal((await get(`/diff?url=${encodeURIComponent(original('notes.txt'))}&from=nothex&to=${digests[1]}`)).status, 400);
  assert.equal((await get(`/diff?${new URLSearchParams({ url: original('notes.txt'), from: '0'.repeat(64), to: digests[1]! })}`)).status, 404);
});

test('--auth: a payload’s rule guards its replay and its diff as it guards /files/', async () => {
  const asked = (path: string, user?: string) =>
    fetch(`${guarded.baseUrl}${path}`, {
      redirect: 'manual',
      headers: user ? { Authorization: `Basic ${Buffer.from(`${user}:${user}-password`).toString('base64')}` } : {},
    });
  for (const path of [
    `/replay/${first}mp_/${original('private/secret.txt')}`,
    `/replay/${first}id_/${original('notes.txt')}`,
    `/diff/${first}/${second}/${original('private/secret.txt')}`,
  ]) {
    assert.equal((await asked(path)).status, 401, path);
    const allowed = await asked(path, 'alice');
    assert.equal(allowed.status, 200, path);
  }
  // The banner and the history are metadata, open as OAI-PMH headers are.
  assert.equal((await asked(`/replay/${first}/${original('private/secret.txt')}`)).status, 200);
  assert.equal((await asked(`/history/${original('private/secret.txt')}`)).status, 200);
});

test('EXPLAIN QUERY PLAN: every browse query seeks an index; none scans a table or sorts one', () => {
  const catalog = Catalog.openForReading(site.archive);
  try {
    const parameters: Record<keyof typeof BROWSE_QUERIES, unknown[]> = {
      recentVersions: [5000, 20],
      recentDeletions: [20],
      history: ['u', 'u', '', '', '', '', 0, 200],
      hasUrl: ['u'],
      capturesBefore: ['u', 'z'],
      captureAfter: ['u', 'a'],
      captureByDigest: ['u', 'f'],
      deletionBetween: ['u', 'a', 'z'],
      prefix: ['a', 'b', 'a', -1, 51],
      prefixOpen: ['a', 'a', -1, 51],
      containsScan: [0, 2000],
      contains: ['"item"', 0, 51],
      containsPostgres: [],
    };
    for (const [name, sql] of Object.entries(BROWSE_QUERIES)) {
      if (name === 'containsPostgres') continue;
      const plan = (catalog.statement(`EXPLAIN QUERY PLAN ${sql}`).all(...parameters[name as keyof typeof BROWSE_QUERIES]) as Array<{ detail: string }>).map(
        (row) => row.detail,
      );
      for (const step of plan) {
        // The windows of the newest rows walk a primary key backwards; a history's few rows are sorted.
        if (/^SCAN (versions|deletions|v|d)$/.test(step) && name.startsWith('recent')) continue;
        if (/^(SCAN [vd]|SCAN h|USE TEMP B-TREE FOR ORDER BY|COMPOUND QUERY|LEFT-MOST SUBQUERY|UNION ALL|CO-ROUTINE h|MERGE)/.test(step) && name === 'history')
          continue;
        // The index's page (at most its LIMIT of rows) is put back in id order after the join.
        if (/^SCAN t$|VIRTUAL TABLE INDEX|^USE TEMP B-TREE FOR ORDER BY$/.test(step) && name === 'contains') continue;
        // One URL's captures or deletions are sorted after the seek on its identifier: they are few.
        if (step === 'USE TEMP B-TREE FOR ORDER BY' && /^(captures?(Before|After|ByDigest)|deletionBetween)$/.test(name)) continue;
        if (/^SCAN r$/.test(step) && name === 'containsScan') continue;
        assert.doesNotMatch(step, /^SCAN |TEMP B-TREE/, `${name}: ${plan.join(' | ')}`);
      }
    }
    const explain = (sql: string, ...params: unknown[]) =>
      (catalog.statement(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>).map((row) => row.detail).join(' | ');
    assert.match(explain(BROWSE_QUERIES.prefix, 'a', 'b', 'a', -1, 51), /USING INDEX resources_by_identifier \(identifier>\? AND identifier<\?\)/);
    assert.match(explain(BROWSE_QUERIES.hasUrl, 'u'), /USING COVERING INDEX resources_by_identifier \(identifier=\?\)/);
    assert.match(explain(BROWSE_QUERIES.capturesBefore, 'u', 'z'), /resources_by_identifier \(identifier=\?\)/);
    assert.match(explain(BROWSE_QUERIES.history, 'u', 'u', '', '', '', '', 0, 200), /resources_by_identifier \(identifier=\?\)/);
    assert.match(explain(BROWSE_QUERIES.containsScan, 0, 2000), /SEARCH r USING INTEGER PRIMARY KEY \(rowid>\?\)/);
    assert.match(explain(BROWSE_QUERIES.contains, '"item"', 0, 51), /VIRTUAL TABLE INDEX/);
  } finally {
    catalog.close();
  }
});

test('on a PostgreSQL catalog search, history and replay answer as on SQLite', { skip: POSTGRES_SKIP }, async () => {
  const postgres = await startPostgres();
  try {
    const dir = join(site.work, 'on-postgres');
    mkdirSync(dir);
    writeFileSync(join(dir, 'locations.json'), JSON.stringify({ catalog: await postgres.createDatabase('browse') }));
    await harvest({ baseUrl: site.endpoint, archiveDir: dir });
    const onPostgres = await startArchiveServer({ archiveDir: dir });
    try {
      for (const query of [
        'q=item-',
        'q=ITEM-12',
        `q=${encodeURIComponent(original('many/item-'))}&match=prefix`,
        'q=many%2F&set=mime%3Aimage',
        'q=_tem',
        'q=%25%25%25',
      ]) {
        const here = await searchAll(query);
        const there = await searchAll(query, onPostgres);
        assert.deepEqual([...there].sort(), [...here].sort(), query);
      }
      const history = await fetch(`${onPostgres.baseUrl}/history/${original('notes.txt')}`);
      assert.equal(history.status, 200);
      const replay = await fetch(`${onPostgres.baseUrl}/replay/2999/${original('page.html')}`, { redirect: 'manual' });
      assert.equal(replay.status, 302);
      const page = await fetch(
        new URL(
          replay.headers
            .get('location')!
            .replace('/replay/', '/replay/')
            .replace(/\/replay\/(\d{14})\//, '/replay/$1mp_/'),
        ),
      );
      assert.equal(page.status, 200);
      assert.match(await page.text(), /srcset=/);
    } finally {
      await onPostgres.close();
    }
  } finally {
    await postgres.stop();
  }
});
