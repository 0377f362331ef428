// `serve --link-to` (docs/linked-data.md, "Links between archives"): two archives of
// overlapping sites, each served on 127.0.0.1, the second linked to the first. Archive A holds
// site X as it was first; archive B holds X a little later (two more reports, one a single edit
// from a report A holds, one two edits from it) and site Y, which shares a file's bytes with X at
// another URL. The links B makes are checked EXACTLY against a truth the test computes from the
// sites it built, with a Levenshtein distance of its own over every pair: the same original URL
// (prov:alternateOf), a URL within the threshold (one edit, and not two), the same bytes
// (oaibag:sameBytesAs), nothing else. Then: the links in /data/ and /page/; a new harvest of B
// adding its link without a restart; hostile remotes (slow, huge, garbage) each one logged line
// while serve answers; a remote that turns bad keeping its links; every bound logged with its
// option; the remote store (Virtuoso) holding the links graph; and the command's options.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import {
  type ArchiveServer,
  type ArchiveServerOptions,
  harvest,
  LINK_PREDICATE_DEFAULT,
  type LinkOptions,
  linksGraphOf,
  SAME_BYTES_PREDICATE,
  startArchiveServer,
} from '../packages/archiver/src/index.ts';
import { HarvestedSite, nextSecond, SPARQL_PREFIXES as PREFIXES } from './harvested-site.ts';
import { servingAt } from './oaibag-process.ts';
import { startVirtuoso, VIRTUOSO_SKIP, type Virtuoso } from './virtuoso-server.ts';

const BIN = new URL('../packages/archiver/dist/bundle/oaibag.js', import.meta.url).pathname;
const DCTERMS_SOURCE = 'http://purl.org/dc/terms/source';
const LOGO = '<svg xmlns="http://www.w3.org/2000/svg"><circle r="4"/></svg>';

/** Site X as archive A harvested it, and what it had when B harvested it. */
const X_FIRST: Record<string, string> = {
  'index.html': '<p>x home</p>',
  'shared/logo.svg': LOGO,
  'docs/report-2020.html': '<h1>report 2020</h1>',
  'notes/a.txt': 'note a',
};
const X_LATER: Record<string, string> = { ...X_FIRST, 'docs/report-2021.html': '<h1>report 2021</h1>', 'docs/report-2121.html': '<h1>report 2121</h1>' };
/** Site Y, in B: the logo's bytes at another URL. */
const Y: Record<string, string> = { 'img/logo.svg': LOGO, 'about.html': '<p>y about</p>' };

let x: HarvestedSite;
let y: HarvestedSite;
let work: string;
let archiveB: string;
let serverA: ArchiveServer;
let serverB: ArchiveServer;
/** The similarity threshold: one edit in a report's URL reaches it, two do not. */
let threshold: string;
const loggedB: string[] = [];

/** What each archive holds: original URL → content. */
const contentA = () => Object.fromEntries(Object.entries(X_FIRST).map(([path, text]) => [`${x.repository.baseUrl}/${path}`, text]));
const contentB = () => ({
  ...Object.fromEntries(Object.entries(X_LATER).map(([path, text]) => [`${x.repository.baseUrl}/${path}`, text])),
  ...Object.fromEntries(Object.entries(Y).map(([path, text]) => [`${y.repository.baseUrl}/${path}`, text])),
});

const itemUri = (base: string, url: string) => `${base}/resource/item/${encodeURIComponent(url)}`;

/** Levenshtein distance, the textbook way (the test's own, not the linker's). */
function levenshtein(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length]!;
}

const similarity = (a: string, b: string) => 1 - levenshtein(a, b) / Math.max(a.length, b.length);

async function select(server: ArchiveServer, query: string): Promise<Array<Record<string, string>>> {
  const response = await fetch(`${server.baseUrl}/sparql?query=${encodeURIComponent(PREFIXES + query)}`, {
    headers: { Accept: 'application/sparql-results+json' },
  });
  const text = await response.text();
  assert.equal(response.status, 200, text);
  const json = JSON.parse(text) as { results: { bindings: Array<Record<string, { value: string }>> } };
  return json.results.bindings.map((row) => Object.fromEntries(Object.entries(row).map(([name, term]) => [name, term.value])));
}

/** Every triple of B's links graph, one line each, sorted. */
async function linksIn(server: ArchiveServer): Promise<string[]> {
  const rows = await select(server, `SELECT ?s ?p ?o WHERE { GRAPH <${linksGraphOf(server.baseUrl)}> { ?s ?p ?o } }`);
  return rows.map((row) => `${row.s} ${row.p} ${row.o}`).sort();
}

/** The versions of an archive by original URL (one each here). */
async function versionsByUrl(server: ArchiveServer): Promise<Map<string, string[]>> {
  const rows = await select(server, 'SELECT ?v ?url WHERE { ?v dcterms:isVersionOf ?i . ?i dcterms:source ?url }');
  const versions = new Map<string, string[]>();
  for (const row of rows) versions.set(row.url!, [...(versions.get(row.url!) ?? []), row.v!]);
  return versions;
}

/**
 * The links B (served as `local`) must hold to A, computed from the sites: items whose URLs
 * are equal or (with `similar`) within the threshold, against every subject of A that has a
 * dcterms:source (items, and a source's set), and versions of equal non-empty bytes.
 */
async function truth(local: ArchiveServer, options: { similar: boolean; bytes: boolean }): Promise<string[]> {
  const expected = new Set<string>();
  const remoteSources = await select(serverA, `SELECT ?s ?v WHERE { ?s <${DCTERMS_SOURCE}> ?v }`);
  // A's items, and its source's set pointing at its source: nothing else has a dcterms:source.
  assert.equal(remoteSources.length, Object.keys(contentA()).length + 1);
  for (const url of Object.keys(contentB())) {
    for (const remote of remoteSources) {
      const reaches = options.similar ? similarity(url, remote.v!) >= Number(threshold) : url === remote.v;
      if (reaches) expected.add(`${itemUri(local.baseUrl, url)} ${LINK_PREDICATE_DEFAULT} ${remote.s}`);
    }
  }
  if (options.bytes) {
    const versionsA = await versionsByUrl(serverA);
    const versionsB = await versionsByUrl(local);
    for (const [urlB, textB] of Object.entries(contentB())) {
      for (const [urlA, textA] of Object.entries(contentA())) {
        if (textA !== textB || textA === '') continue;
        for (const vb of versionsB.get(urlB)!) for (const va of versionsA.get(urlA)!) expected.add(`${vb} ${SAME_BYTES_PREDICATE} ${va}`);
      }
    }
  }
  return [...expected].sort();
}

/** Waits until `check` holds (the linker refreshes in the background), at most `seconds`. */
async function eventually(check: () => Promise<boolean>, seconds: number, what: string): Promise<void> {
  const until = Date.now() + seconds * 1000;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  assert.fail(`${what} did not happen within ${seconds} s`);
}

function linkOptions(extra: Partial<LinkOptions> = {}): LinkOptions {
  return {
    endpoints: [`${serverA.baseUrl}/sparql`],
    rules: [
      { local: DCTERMS_SOURCE, remote: DCTERMS_SOURCE, threshold: 1 },
      { local: DCTERMS_SOURCE, remote: DCTERMS_SOURCE, threshold: Number(threshold) },
    ],
    ...extra,
  };
}

async function serveB(links: LinkOptions, log: string[], extra: Partial<ArchiveServerOptions> = {}): Promise<ArchiveServer> {
  return startArchiveServer({ archiveDir: archiveB, links, log: (line) => log.push(line), ...extra });
}

before(async () => {
  x = await HarvestedSite.start('oaibag-link-x-', X_FIRST);
  y = await HarvestedSite.start('oaibag-link-y-', Y);
  work = mkdtempSync(join(tmpdir(), 'oaibag-link-b-'));
  archiveB = join(work, 'archive');
  for (const [path, text] of Object.entries(X_LATER)) if (!(path in X_FIRST)) x.write(path, text);
  await x.repository.scan();
  await nextSecond();
  await harvest({ baseUrl: x.endpoint, archiveDir: archiveB });
  await harvest({ baseUrl: y.endpoint, archiveDir: archiveB });
  const report = `${x.repository.baseUrl}/docs/report-2020.html`;
  // Between one edit (1 - 1/L) and two (1 - 2/L) in a report's URL of L characters.
  threshold = (1 - 1.5 / report.length).toFixed(6);
  serverA = await startArchiveServer({ archiveDir: x.archive });
  serverB = await serveB(linkOptions(), loggedB);
  await serverB.links!.refreshNow();
});

after(async () => {
  await serverB?.close();
  await serverA?.close();
  await x?.close();
  await y?.close();
  rmSync(work, { recursive: true, force: true });
});

test('B links exactly what the sites share with A: equal and near URLs (prov:alternateOf), equal bytes (oaibag:sameBytesAs), nothing else', async () => {
  const expected = await truth(serverB, { similar: true, bytes: true });
  assert.deepEqual(await linksIn(serverB), expected);
  const a = serverA.baseUrl;
  const b = serverB.baseUrl;
  const url = (site: HarvestedSite, path: string) => `${site.repository.baseUrl}/${path}`;
  // The truth is not empty where it matters: each kind of link is there.
  for (const path of Object.keys(X_FIRST)) {
    assert.ok(expected.includes(`${itemUri(b, url(x, path))} ${LINK_PREDICATE_DEFAULT} ${itemUri(a, url(x, path))}`), path);
  }
  assert.ok(expected.includes(`${itemUri(b, url(x, 'docs/report-2021.html'))} ${LINK_PREDICATE_DEFAULT} ${itemUri(a, url(x, 'docs/report-2020.html'))}`));
  const versionsA = await versionsByUrl(serverA);
  const versionsB = await versionsByUrl(serverB);
  const logoLink = `${versionsB.get(url(y, 'img/logo.svg'))![0]} ${SAME_BYTES_PREDICATE} ${versionsA.get(url(x, 'shared/logo.svg'))![0]}`;
  assert.ok(expected.includes(logoLink), 'the same bytes at another URL of another site');
  assert.equal(expected.length, 4 + 1 + 4 + 1, 'four same URLs, one near URL, four unchanged files, one logo elsewhere');
  assert.equal(serverB.links!.state().links, expected.length);
  assert.ok(
    loggedB.some((line) => line.startsWith(`links: ${expected.length} in ${linksGraphOf(b)}`)),
    loggedB.join('\n'),
  );
});

test('the threshold: a URL one edit from a report of A is linked, one two edits away is not, and a threshold of 1 links equal URLs only', async () => {
  const b = serverB.baseUrl;
  const report = (year: string) => `${x.repository.baseUrl}/docs/report-${year}.html`;
  const from = async (year: string) => (await select(serverB, `SELECT ?o WHERE { <${itemUri(b, report(year))}> prov:alternateOf ?o }`)).map((row) => row.o);
  assert.deepEqual(await from('2021'), [itemUri(serverA.baseUrl, report('2020'))]);
  assert.ok(similarity(report('2121'), report('2020')) < Number(threshold), 'just under the threshold');
  assert.ok(similarity(report('2121'), report('2020')) > Number(threshold) - 0.05, 'and only just');
  assert.deepEqual(await from('2121'), []);
  const exactOnly: string[] = [];
  const server = await serveB({ endpoints: [`${serverA.baseUrl}/sparql`] }, exactOnly);
  try {
    await server.links!.refreshNow();
    assert.deepEqual(await linksIn(server), await truth(server, { similar: false, bytes: true }));
    assert.equal((await linksIn(server)).filter((line) => line.includes('report-2021')).length, 0);
  } finally {
    await server.close();
  }
});

test('the links are part of the graph: in SPARQL without GRAPH, in /data/ and on /page/ of the item', async () => {
  const b = serverB.baseUrl;
  const item = itemUri(b, `${x.repository.baseUrl}/docs/report-2021.html`);
  const target = itemUri(serverA.baseUrl, `${x.repository.baseUrl}/docs/report-2020.html`);
  const tail = item.slice(`${b}/resource/`.length);
  const data = await fetch(`${b}/data/${tail}`, { headers: { Accept: 'application/n-triples' } });
  assert.equal(data.status, 200);
  assert.ok((await data.text()).includes(`<${item}> <${LINK_PREDICATE_DEFAULT}> <${target}> .`));
  const page = await fetch(`${b}/page/${tail}`, { headers: { Accept: 'text/html' } });
  assert.equal(page.status, 200);
  assert.ok((await page.text()).includes(target));
  const count = await select(serverB, `SELECT (COUNT(*) AS ?n) WHERE { ?s oaibag:sameBytesAs ?o }`);
  assert.equal(Number(count[0]!.n), (await truth(serverB, { similar: true, bytes: true })).filter((line) => line.includes(SAME_BYTES_PREDICATE)).length);
});

test('a new harvest into B adds its link without a restart (the catalog moved), and the graph is again exactly the truth', async () => {
  const copy = 'img/report-copy.html';
  Y[copy] = X_FIRST['docs/report-2020.html']!;
  y.write(copy, Y[copy]!);
  await y.repository.scan();
  await nextSecond();
  await harvest({ baseUrl: y.endpoint, archiveDir: archiveB });
  const versionsA = await versionsByUrl(serverA);
  await eventually(
    async () => {
      const versionsB = await versionsByUrl(serverB);
      const added = versionsB.get(`${y.repository.baseUrl}/${copy}`)?.[0];
      const wanted = `${added} ${SAME_BYTES_PREDICATE} ${versionsA.get(`${x.repository.baseUrl}/docs/report-2020.html`)![0]}`;
      return added !== undefined && (await linksIn(serverB)).includes(wanted);
    },
    30,
    'the link of the new version',
  );
  assert.deepEqual(await linksIn(serverB), await truth(serverB, { similar: true, bytes: true }));
});

/** A remote on 127.0.0.1 that answers slowly, hugely or with garbage, by its path. */
async function hostileRemote(): Promise<{ server: Server; base: string; slowOpen: () => boolean; slowAsked: Promise<void> }> {
  let open = 0;
  let asked: () => void = () => {};
  const slowAsked = new Promise<void>((resolve) => {
    asked = resolve;
  });
  const server = createServer((request, response) => {
    if (request.url!.startsWith('/slow/')) {
      // Headers at once, then nothing for longer than the linker waits.
      open++;
      response.on('close', () => open--);
      asked();
      response.writeHead(200, { 'Content-Type': 'application/sparql-results+json' });
      response.write('{"head":{"vars":["s","v"]},"results":{"bindings":[');
      setTimeout(() => response.end(']}}'), 5000).unref();
    } else if (request.url!.startsWith('/huge/')) {
      response.writeHead(200, { 'Content-Type': 'application/sparql-results+json' });
      response.write('{"head":{"vars":["s","v"]},"results":{"bindings":[');
      const row = `${JSON.stringify({ s: { type: 'uri', value: 'http://h/x' }, v: { type: 'literal', value: 'v'.repeat(1000) } })},`;
      const more = () => {
        while (response.write(row.repeat(64))) if (response.destroyed) return;
        response.once('drain', more);
      };
      response.on('close', () => response.removeAllListeners('drain'));
      more();
    } else {
      response.writeHead(200, { 'Content-Type': 'application/sparql-results+json' });
      response.end('<html>this is not what was asked for\u0000\n[ERR_FORGED]</html>');
    }
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  return { server, base: `http://127.0.0.1:${port}`, slowOpen: () => open > 0, slowAsked };
}

test('hostile remotes (slow, huge, garbage) are each one logged line; serve keeps answering and the links to A are made', async () => {
  const hostile = await hostileRemote();
  const logged: string[] = [];
  const endpoints = [`${serverA.baseUrl}/sparql`, `${hostile.base}/slow/sparql`, `${hostile.base}/huge/sparql`, `${hostile.base}/garbage/sparql`];
  const server = await serveB(linkOptions({ endpoints, bounds: { timeoutMs: 3000, answerBytes: 64 * 1024 } }), logged);
  try {
    // While the linker waits on the slow one, serve answers OAI-PMH and SPARQL.
    const started = Date.now();
    await hostile.slowAsked;
    const identify = await fetch(`${server.baseUrl}/oai?verb=Identify`);
    assert.equal(identify.status, 200);
    assert.equal((await select(server, 'SELECT (COUNT(*) AS ?n) WHERE { ?i a oai:Item }'))[0]!.n, String(Object.keys(contentB()).length));
    assert.ok(hostile.slowOpen(), 'answered while the linker was still waiting for the slow remote');
    await eventually(async () => server.links!.state().refreshes >= 1, 20, 'the first refresh');
    assert.ok(Date.now() - started < 20_000);
    const line = (path: string) => logged.filter((text) => text.startsWith(`links to ${hostile.base}/${path}/sparql: the remote `));
    assert.equal(line('slow').length, 1, logged.join('\n'));
    assert.match(line('slow')[0]!, /did not answer within 3 s \(--link-timeout\); no links to it yet, asked again at the next refresh \[ERR_LINK_REMOTE\]$/);
    assert.equal(line('huge').length, 1);
    assert.match(line('huge')[0]!, /larger than 64K \(--link-answer-size\).*\[ERR_LINK_REMOTE\]$/);
    assert.equal(line('garbage').length, 1);
    assert.match(line('garbage')[0]!, /did not answer with SPARQL JSON results .*\[ERR_LINK_REMOTE\]$/);
    // Nothing the remote sent forges a line or a code.
    assert.ok(logged.every((text) => !text.includes('\n') && !text.includes('\u0000') && !text.includes('[ERR_FORGED]')));
    assert.deepEqual(await linksIn(server), await truth(server, { similar: true, bytes: true }));
  } finally {
    await server.close();
    hostile.server.closeAllConnections();
    hostile.server.close();
  }
});

test('a remote that turns bad keeps its links (one line at each periodic refresh), and is read again once it answers', async () => {
  let mode: 'pass' | 'garbage' = 'pass';
  const relay = createServer(async (request, response) => {
    const body: Buffer[] = [];
    for await (const part of request) body.push(part as Buffer);
    if (mode === 'garbage') {
      response.writeHead(502);
      response.end('bad gateway');
      return;
    }
    const answer = await fetch(`${serverA.baseUrl}/sparql`, {
      method: 'POST',
      headers: { 'Content-Type': String(request.headers['content-type']), Accept: String(request.headers.accept) },
      body: Buffer.concat(body),
    });
    response.writeHead(answer.status, { 'Content-Type': answer.headers.get('content-type') ?? 'text/plain' });
    response.end(Buffer.from(await answer.arrayBuffer()));
  });
  relay.listen(0, '127.0.0.1');
  await once(relay, 'listening');
  const endpoint = `http://127.0.0.1:${(relay.address() as { port: number }).port}/sparql`;
  const logged: string[] = [];
  const server = await serveB(linkOptions({ endpoints: [endpoint], refreshMs: 1000 }), logged);
  try {
    await eventually(async () => server.links!.state().refreshes >= 1, 20, 'the first refresh');
    const before = await linksIn(server);
    assert.deepEqual(before, await truth(server, { similar: true, bytes: true }));
    mode = 'garbage';
    await eventually(async () => logged.some((line) => line.includes('answered HTTP 502')), 15, 'a periodic refresh meeting the failure');
    await server.links!.nextRefresh();
    const failure = logged.find((line) => line.includes('answered HTTP 502'))!;
    assert.match(
      failure,
      new RegExp(
        `^links to ${endpoint}: the remote answered HTTP 502: bad gateway; the links made from what it gave at \\S+ are kept, asked again at the next refresh \\[ERR_LINK_REMOTE\\]$`,
      ),
    );
    assert.deepEqual(await linksIn(server), before);
    assert.equal(server.links!.state().remotes[0]!.error, 'answered HTTP 502: bad gateway');
    mode = 'pass';
    await eventually(async () => server.links!.state().remotes[0]!.error === undefined, 15, 'the remote read again');
    assert.deepEqual(await linksIn(server), before);
  } finally {
    await server.close();
    relay.closeAllConnections();
    relay.close();
  }
});

test('every bound is logged with its option, and what is linked within the bounds is true', async () => {
  const endpoint = `${serverA.baseUrl}/sparql`;
  const logged: string[] = [];
  const server = await serveB(linkOptions({ bounds: { maxRows: 3, pageRows: 2, maxComparisons: 1 } }), logged);
  try {
    await server.links!.refreshNow();
    const limits = logged.filter((line) => line.endsWith('[ERR_LINK_LIMIT]'));
    assert.ok(
      limits.some((line) => line.startsWith(`links to ${endpoint}: it has more than 3 rows of <${DCTERMS_SOURCE}> (--link-max-rows 3)`)),
      limits.join('\n'),
    );
    assert.ok(limits.some((line) => line.startsWith('links: the archive has more than 3 rows of digests (urn:sha256:) (--link-max-rows 3)')));
    assert.ok(limits.some((line) => line.startsWith(`links: the archive has more than 3 rows of <${DCTERMS_SOURCE}> (--link-max-rows 3)`)));
    assert.ok(limits.some((line) => line.includes('(--link-max-comparisons 1)')));
    const all = await truth(server, { similar: true, bytes: true });
    for (const link of await linksIn(server)) assert.ok(all.includes(link), link);
  } finally {
    await server.close();
  }
  const capped: string[] = [];
  const few = await serveB(linkOptions({ bounds: { maxLinks: 2 } }), capped);
  try {
    await few.links!.refreshNow();
    const links = await linksIn(few);
    assert.equal(links.length, 2);
    const all = await truth(few, { similar: true, bytes: true });
    for (const link of links) assert.ok(all.includes(link), link);
    assert.equal(capped.filter((line) => line === `links to ${endpoint}: more than 2 (--link-max-links 2): the rest are not made [ERR_LINK_LIMIT]`).length, 1);
    // Logged once, not again at every refresh while it stays the same.
    await few.links!.refreshNow();
    assert.equal(capped.filter((line) => line.includes('--link-max-links')).length, 1);
  } finally {
    await few.close();
  }
});

test('with --sparql-store, the links graph is written into the remote store (Virtuoso) and /sparql sees it', { skip: VIRTUOSO_SKIP }, async () => {
  const virtuoso: Virtuoso = await startVirtuoso();
  const logged: string[] = [];
  const store = { queryUrl: virtuoso.queryUrl, updateUrl: virtuoso.updateUrl, credentials: { user: virtuoso.user, password: virtuoso.password } };
  const server = await serveB(linkOptions(), logged, { sparqlStore: store });
  try {
    await eventually(
      async () => {
        await server.sparqlStore!.nextAttempt();
        const state = server.sparqlStore!.state();
        return state.failures === 0 && state.writtenVersion === state.lastVersion;
      },
      120,
      'the store in step with the catalog',
    );
    const expected = () => truth(server, { similar: true, bytes: true });
    await eventually(
      async () => JSON.stringify(await linksIn(server)) === JSON.stringify(await expected()),
      120,
      `the links in the store (${logged.join('; ')})`,
    );
    const direct = await fetch(virtuoso.queryUrl, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/sparql-results+json' },
      body: new URLSearchParams({ query: `select (count(*) as ?n) where { graph <${linksGraphOf(server.baseUrl)}> { ?s ?p ?o } }` }).toString(),
    });
    const json = (await direct.json()) as { results: { bindings: Array<{ n: { value: string } }> } };
    assert.equal(Number(json.results.bindings[0]!.n.value), (await expected()).length);
    const item = itemUri(server.baseUrl, `${x.repository.baseUrl}/docs/report-2021.html`);
    const described = await fetch(`${server.baseUrl}/data/${item.slice(`${server.baseUrl}/resource/`.length)}`, {
      headers: { Accept: 'application/n-triples' },
    });
    assert.ok((await described.text()).includes(`<${LINK_PREDICATE_DEFAULT}>`));
    // Replaced, not added to: a second refresh leaves the same triples.
    await server.links!.refreshNow();
    assert.deepEqual(await linksIn(server), await expected());
  } finally {
    await server.close();
    await virtuoso.remove();
  }
});

test('the command: --link-on and --link-to refused with one coded line (exit 2); a served archive links as the options say', async () => {
  const refusals: Array<[string[], RegExp]> = [
    [['--link-to', serverA.baseUrl, '--link-on', 'dcterms:source'], /--link-on: "dcterms:source" is not LOCAL=REMOTE\[@THRESHOLD\] \[ERR_ARCHIVE_USAGE\]/],
    [
      ['--link-to', serverA.baseUrl, '--link-on', 'dcterms:source=dcterms:source@1.5'],
      /the threshold "1\.5" is not a number above 0 and at most 1 \[ERR_ARCHIVE_USAGE\]/,
    ],
    [['--link-to', serverA.baseUrl, '--link-on', 'nope:source=dcterms:source'], /"nope:source" is not a predicate \[ERR_ARCHIVE_USAGE\]/],
    [['--link-to', 'archive.example.org'], /--link-to.*is not an http\(s\) URL \[ERR_ARCHIVE_USAGE\]/],
    [['--link-max-rows', '5'], /--link-max-rows needs --link-to or --link-endpoint \[ERR_ARCHIVE_USAGE\]/],
    [['--no-link-bytes'], /--no-link-bytes needs --link-to or --link-endpoint \[ERR_ARCHIVE_USAGE\]/],
  ];
  for (const [args, expected] of refusals) {
    const refused = spawnSync(process.execPath, [BIN, 'serve', '--archive', archiveB, '--port', '0', ...args], { encoding: 'utf8' });
    assert.equal(refused.status, 2, `${args.join(' ')}: ${refused.stderr}`);
    assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr);
    assert.match(refused.stderr, expected);
  }
  const rule = `dcterms:source=<${DCTERMS_SOURCE}>@${threshold}`;
  const child = spawn(
    process.execPath,
    [
      BIN,
      'serve',
      '--archive',
      archiveB,
      '--port',
      '0',
      '--no-access-log',
      '--link-to',
      serverA.baseUrl,
      '--link-on',
      'dcterms:source=dcterms:source',
      '--link-on',
      rule,
      '--no-link-bytes',
    ],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  const { base, stderr } = await servingAt(child);
  try {
    const served = { baseUrl: base } as ArchiveServer;
    const expected = await truth(served, { similar: true, bytes: false });
    await eventually(async () => JSON.stringify(await linksIn(served)) === JSON.stringify(expected), 30, `the links of the command (${stderr()})`);
    assert.match(stderr(), new RegExp(`oaibag serve: links: ${expected.length} in ${linksGraphOf(base).replace(/[.]/g, '\\.')}`));
  } finally {
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    assert.equal((await exited)[0], 0);
  }
});
