// `oaibag audit --serve-url` (docs/audit.md, "Links to the archive"): the HTML report links each
// identifier to `oaibag serve`'s history page and each modified row to its diff, drawn by the
// page's script as <a> elements (checked in Chromium's DOM); hostile identifiers yield no markup
// and no link but http(s) ones under the base; JSON and CSV gain a `diff` field and nothing
// else; without the option nothing changes. End to end: a site harvested twice, the archive
// served, and the diff URL the audit printed answers with the changed line.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { ArchiverError, auditLinks, auditServeUrl, Catalog, formatAudit, openAudit, startArchiveServer } from '../packages/archiver/src/index.ts';
import { storeVersion } from './catalog-fixture.ts';
import { HarvestedSite, YEAR_2000 } from './harvested-site.ts';
import { oaibagAsync } from './oaibag-process.ts';

const CHROMIUM = '/usr/bin/chromium';
const NO_CHROMIUM = existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is missing (install Debian's chromium package, as .ci/run does): the audit's links are not checked in a browser`;

const SERVE = 'http://archive.example.org/sub';
const SCRIPTED = `https://example.org/x"><script>document.title='pwned'</script>`;
const JAVASCRIPT = `javascript:document.title='pwned'`;
const DOTS = 'https://example.org/a/%2e%2e/b';
const QUERY = 'https://example.org/page?q=1&r=2';
const sha = (char: string) => char.repeat(64);

let work: string;
let catalog: Catalog;
let harvestTwo: number;

before(() => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-audit-links-'));
  catalog = Catalog.open(work);
  const source = catalog.upsertSource('https://example.org/oai', {});
  const put = (harvestId: number, identifier: string, datestamp: string, digest: string) =>
    storeVersion(catalog, { sourceId: source.id, identifier, datestamp, size: 10, sha256: sha(digest), mimeType: 'text/plain', harvestId });
  const one = catalog.startRun(source.id, 'harvest', { prefix: 'oai_didl' });
  for (const [n, identifier] of ['https://example.org/alpha', SCRIPTED, JAVASCRIPT, DOTS, 'https://example.org/gone', 'https://example.org/same'].entries()) {
    put(one, identifier, '2024-01-01T00:00:00Z', 'abcdef'[n]!);
  }
  catalog.finishRun(one, 'complete');
  harvestTwo = catalog.startRun(source.id, 'harvest', { prefix: 'oai_didl' });
  put(harvestTwo, 'https://example.org/alpha', '2024-02-01T00:00:00Z', '1');
  put(harvestTwo, SCRIPTED, '2024-02-01T00:00:00Z', '2');
  put(harvestTwo, JAVASCRIPT, '2024-02-01T00:00:00Z', '3');
  put(harvestTwo, DOTS, '2024-02-01T00:00:00Z', '4');
  catalog.recordDeletion(source.id, 'https://example.org/gone', '2024-02-01T00:00:00Z', harvestTwo);
  put(harvestTwo, 'https://example.org/same', '2024-02-01T00:00:00Z', 'f'); // touched
  put(harvestTwo, QUERY, '2024-02-01T00:00:00Z', '5'); // added
  catalog.finishRun(harvestTwo, 'complete');
});

after(() => {
  catalog?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

const output = (format: 'json' | 'csv' | 'html' | 'text', serveUrl?: string) =>
  [...formatAudit(openAudit(catalog, { harvest: harvestTwo }), format, serveUrl === undefined ? {} : { serveUrl })].join('');

const diffUrl = (identifier: string, from: string, to: string) => `${SERVE}/diff?url=${encodeURIComponent(identifier)}&from=${sha(from)}&to=${sha(to)}`;

/** What each identifier should link to: [history, diff]. */
const EXPECTED: Record<string, [string | null, string | null]> = {
  [DOTS]: [`${SERVE}/history?url=${encodeURIComponent(DOTS)}`, diffUrl(DOTS, 'd', '4')], // a browser would resolve the `..`
  'https://example.org/alpha': [`${SERVE}/history/https://example.org/alpha`, diffUrl('https://example.org/alpha', 'a', '1')],
  'https://example.org/gone': [`${SERVE}/history/https://example.org/gone`, null],
  [QUERY]: [`${SERVE}/history/${QUERY}`, null],
  'https://example.org/same': [`${SERVE}/history/https://example.org/same`, null],
  [SCRIPTED]: [`${SERVE}/history?url=${encodeURIComponent(SCRIPTED)}`, diffUrl(SCRIPTED, 'b', '2')], // a browser would escape `"<>'`
  [JAVASCRIPT]: [null, diffUrl(JAVASCRIPT, 'c', '3')],
};

test('the links: history in the path when a browser sends it unchanged, else as ?url=; none for other schemes; diff only for modified', () => {
  const links = auditLinks(`${SERVE}/`);
  assert.equal(links.serveUrl, SERVE, 'the trailing slash is dropped');
  for (const [identifier, [history]] of Object.entries(EXPECTED)) assert.equal(links.history(identifier), history, identifier);
  assert.equal(links.history('https://example.org/a#part'), `${SERVE}/history?url=https%3A%2F%2Fexample.org%2Fa%23part`, 'a fragment is never sent');
  assert.equal(links.history('https://example.org/a b'), `${SERVE}/history?url=https%3A%2F%2Fexample.org%2Fa%20b`);
  assert.equal(links.history('oai:example.org:1'), null);
  assert.equal(links.history('https://example.org/\ud800'), null, 'a lone surrogate gets no link');
  assert.equal(auditLinks('HTTP://Archive.Example.org:80').history('https://example.org/a'), 'HTTP://Archive.Example.org:80/history/https://example.org/a');
  for (const bad of [
    'archive.example.org',
    'ftp://archive.example.org',
    'http://archive.example.org/?q',
    'http://archive.example.org/#x',
    'http://u:p@host/',
  ]) {
    assert.throws(
      () => auditServeUrl(bad, '--serve-url'),
      (error: unknown) => error instanceof ArchiverError && error.code === 'ERR_ARCHIVE_USAGE' && error.message.startsWith('--serve-url: '),
    );
    assert.throws(() => formatAudit(openAudit(catalog, { harvest: harvestTwo }), 'json', { serveUrl: bad }), ArchiverError);
  }
});

test('JSON and CSV gain a diff field with --serve-url and nothing else; text and every form without it are unchanged', () => {
  const plain = JSON.parse(output('json')) as { rows: Record<string, unknown>[] };
  const linked = JSON.parse(output('json', `${SERVE}/`)) as { rows: Record<string, unknown>[] };
  assert.ok(plain.rows.every((row) => !('diff' in row)));
  assert.deepEqual(
    Object.fromEntries(linked.rows.map((row) => [row.identifier, row.diff])),
    Object.fromEntries(Object.entries(EXPECTED).map(([id, [, diff]]) => [id, diff])),
  );
  assert.deepEqual(
    linked.rows.map(({ diff: _diff, ...row }) => row),
    plain.rows,
  );
  const csvPlain = output('csv').split('\r\n');
  const csvLinked = output('csv', SERVE).split('\r\n');
  assert.ok(csvLinked[0]!.endsWith(',diff') && !csvPlain[0]!.includes('diff'));
  assert.equal(csvLinked.length, csvPlain.length);
  // Each linked line is the plain line, a comma, and the diff URL (no URL holds a comma or a quote: it is encoded).
  for (const [n, line] of csvLinked.entries()) {
    if (n === 0 || line === '') continue;
    assert.ok(line.startsWith(`${csvPlain[n]},`), line);
  }
  assert.ok(
    csvLinked.includes(
      `https://example.org/alpha,modified,false,2024-01-01T00:00:00Z,10,${sha('a')},text/plain,2024-02-01T00:00:00Z,10,${sha('1')},text/plain,${harvestTwo},${EXPECTED['https://example.org/alpha']![1]}`,
    ),
  );
  assert.equal(output('text', SERVE), output('text'));
  const html = output('html');
  assert.doesNotMatch(html, /archive\.example\.org|class="links"|linkCell/, 'no trace of links without the option');
});

/** The page as Chromium has it once its script ran (`--dump-dom` serialises the live DOM). */
function renderedDom(page: string): string {
  const profile = mkdtempSync(join(work, 'profile-'));
  const result = spawnSync(
    CHROMIUM,
    ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', `--user-data-dir=${profile}`, '--dump-dom', pathToFileURL(page).href],
    { encoding: 'utf8', timeout: 120_000, maxBuffer: 64 * 1024 * 1024 },
  );
  assert.equal(result.status, 0, `chromium failed: ${result.error?.message ?? ''} ${result.stderr}`);
  assert.match(result.stdout, /<html lang="en" data-ready="1">/, 'the page script ran to its end');
  return result.stdout;
}

const fromHtml = (html: string) =>
  html
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');

test('in Chromium: identifiers link to their history, modified rows to their diff; hostile identifiers stay text', { skip: NO_CHROMIUM }, () => {
  const page = join(work, 'linked.html');
  writeFileSync(page, output('html', `${SERVE}/`));
  const dom = renderedDom(page);
  const body = /<table id="rows">[\s\S]*?<tbody>([\s\S]*?)<\/tbody>/.exec(dom)![1]!;
  const rows = [...body.matchAll(/<tr data-change="(\w+)" data-mime="[01]">([\s\S]*?)<\/tr>/g)].map((match) => {
    const [idCell, changeCell] = [...match[2]!.matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((cell) => cell[1]!);
    const history = /^<a href="([^"]*)">([\s\S]*)<\/a>$/.exec(idCell!);
    const diff = /<a href="([^"]*)" class="diff">diff<\/a>/.exec(changeCell!);
    const identifier = fromHtml((history?.[2] ?? idCell!).replace(/<[^>]+>/g, ''));
    return [identifier, [history ? fromHtml(history[1]!) : null, diff ? fromHtml(diff[1]!) : null]] as const;
  });
  assert.equal(rows.length, Object.keys(EXPECTED).length);
  assert.deepEqual(Object.fromEntries(rows), EXPECTED);
  // Every link of the table is under the base URL; no javascript: anywhere; nothing ran.
  const hrefs = [...body.matchAll(/href="([^"]*)"/g)].map((match) => fromHtml(match[1]!));
  assert.ok(hrefs.length >= 9);
  assert.ok(
    hrefs.every((href) => href.startsWith(`${SERVE}/history`) || href.startsWith(`${SERVE}/diff?`)),
    hrefs.join('\n'),
  );
  assert.doesNotMatch(dom, /href="\s*javascript:/i);
  assert.match(dom, /<title>oaibag audit: https:\/\/example\.org\/oai<\/title>/, 'no identifier ran as script');
  assert.equal([...body.matchAll(/<script/g)].length, 0, 'no identifier became an element');
  assert.match(dom, /<p class="links">[^<]*<a href="http:\/\/archive\.example\.org\/sub">/);
  assert.match(dom, /<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">/);
  // The script itself keeps only http(s) hrefs: a page whose data was altered to carry others links nothing.
  const tampered = join(work, 'tampered.html');
  const alpha = JSON.stringify(EXPECTED['https://example.org/alpha']![0]);
  const query = JSON.stringify(EXPECTED[QUERY]![0]).replaceAll('&', '\\u0026'); // as the page's data block writes it
  const altered = output('html', SERVE).replace(alpha, `"javascript:document.title='pwned'"`).replace(query, '" JAVASCRIPT:x//http://"');
  assert.ok(!altered.includes(alpha) && !altered.includes(query));
  writeFileSync(tampered, altered);
  const tamperedDom = renderedDom(tampered);
  assert.match(tamperedDom, /<td class="id">https:\/\/example\.org\/alpha<\/td>/);
  assert.match(tamperedDom, /<td class="id">https:\/\/example\.org\/page\?q=1&amp;r=2<\/td>/);
  assert.doesNotMatch(tamperedDom, /href="\s*javascript:/i);
  assert.match(tamperedDom, /<title>oaibag audit: /);
  // Without the option: the same rows, and not one link.
  const plainPage = join(work, 'plain.html');
  writeFileSync(plainPage, output('html'));
  const plain = /<tbody>([\s\S]*?)<\/tbody>/.exec(renderedDom(plainPage).split('<table id="rows">')[1]!)![1]!;
  assert.equal([...plain.matchAll(/<tr /g)].length, rows.length);
  assert.doesNotMatch(plain, /<a /);
});

test('end to end: audit --serve-url of a site harvested twice; the diff URL it gives answers with the changed line', async () => {
  const site = await HarvestedSite.start('oaibag-audit-links-site-', { 'notes.txt': 'one\ntwo\nthree\n', 'keep.txt': 'same\n' });
  const server = await startArchiveServer({ archiveDir: site.archive });
  try {
    site.write('notes.txt', 'one\nTWO\nthree\n', YEAR_2000 + 86_400);
    await site.harvestAgain();
    const bad = await oaibagAsync(
      'audit',
      '--archive',
      site.archive,
      '--format',
      'json',
      '--serve-url',
      'javascript:alert(1)',
      '--out',
      join(site.work, 'bad.json'),
    );
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /^oaibag: --serve-url: "javascript:alert\(1\)" has the scheme javascript, not http or https \[ERR_ARCHIVE_USAGE\]/);
    assert.equal(bad.stderr.trim().split('\n').length, 1, 'one line');
    assert.equal(existsSync(join(site.work, 'bad.json')), false, 'nothing written');

    const audit = await oaibagAsync('audit', '--archive', site.archive, '--format', 'json', '--serve-url', `${server.baseUrl}/`);
    assert.equal(audit.status, 0, audit.stderr);
    const rows = (JSON.parse(audit.stdout) as { rows: { identifier: string; change: string; diff: string | null }[] }).rows;
    assert.deepEqual(
      rows.map((row) => [row.identifier.replace(/^.*\//, ''), row.change]),
      [['notes.txt', 'modified']],
    );
    const diff = rows[0]!.diff!;
    assert.ok(diff.startsWith(`${server.baseUrl}/diff?url=`), diff);
    const answer = await fetch(diff);
    assert.equal(answer.status, 200);
    const html = await answer.text();
    assert.match(html, /<tr class="del"><td class="n">2<\/td><td class="s">−<\/td><td class="t">two<\/td><\/tr>/);
    assert.match(html, /<tr class="ins"><td class="n">2<\/td><td class="s">\+<\/td><td class="t">TWO<\/td><\/tr>/);

    const page = join(site.work, 'audit.html');
    const written = await oaibagAsync('audit', '--archive', site.archive, '--format', 'html', '--serve-url', server.baseUrl, '--out', page);
    assert.equal(written.status, 0, written.stderr);
    const history = `${server.baseUrl}/history/${rows[0]!.identifier}`;
    assert.ok(readFileSync(page, 'utf8').includes(JSON.stringify(history)), 'the page carries the history link');
    const historyPage = await fetch(history);
    assert.equal(historyPage.status, 200);
    assert.match(await historyPage.text(), /notes\.txt/);
  } finally {
    await server.close();
    await site.close();
  }
});
