// Archive to archive (issue 14, docs/serve.md): a site is harvested into archive A, A is served
// by `oaibag serve`, and `oaibag harvest` takes A into archive B; then the site changes and both
// hops run again. B's restore equals the site (bytes and mtimes), B's audit shows the changes
// A's shows, B's records carry two levels of provenance, and the rights the site's repository
// gave travel through A into B.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { type ArchiveServer, audit, Catalog, harvest, type RetryPolicy, restoreSite, startArchiveServer } from '../packages/archiver/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';
import { validateArchiveResponse } from './archive-schemas.ts';

const FAST_RETRY: RetryPolicy = { retries: 2, baseDelayMs: 10, maxDelayMs: 100 };
const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;
const DAY = 86_400;
const RIGHTS = 'https://creativecommons.org/licenses/by/4.0/';
const nextSecond = () => new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));

type Tree = Map<string, { sha256: string; mtime: number }>;

function snapshot(dir: string, into: Tree = new Map(), prefix = ''): Tree {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    const rel = prefix === '' ? name : `${prefix}/${name}`;
    if (lstatSync(path).isDirectory()) snapshot(path, into, rel);
    else into.set(rel, { sha256: createHash('sha256').update(readFileSync(path)).digest('hex'), mtime: Math.floor(lstatSync(path).mtimeMs / 1000) });
  }
  return into;
}

let work: string;
let site: string;
let archiveA: string;
let archiveB: string;
let repository: Repository;
let servedA: ArchiveServer;
let siteOai: string;
const harvestsA: number[] = [];
const harvestsB: number[] = [];

function write(path: string, content: string | Buffer, mtime: number): void {
  mkdirSync(dirname(join(site, path)), { recursive: true });
  writeFileSync(join(site, path), content);
  utimesSync(join(site, path), mtime, mtime);
}

async function bothHops(): Promise<void> {
  const intoA = await harvest({ baseUrl: siteOai, archiveDir: archiveA, retry: FAST_RETRY });
  assert.equal(intoA.status, 'complete');
  assert.equal(intoA.failed, 0);
  harvestsA.push(intoA.harvestId);
  // The archive lists up to a second before its responseDate: what A took in must be older.
  await nextSecond();
  const intoB = await harvest({ baseUrl: `${servedA.baseUrl}/oai`, archiveDir: archiveB, retry: FAST_RETRY });
  assert.equal(intoB.status, 'complete');
  assert.equal(intoB.failed, 0);
  harvestsB.push(intoB.harvestId);
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-a2a-'));
  site = join(work, 'site');
  archiveA = join(work, 'archive-a');
  archiveB = join(work, 'archive-b');
  write('index.html', '<html>home</html>', YEAR_2000);
  write('papers/a b.txt', 'a paper with a space in its name', YEAR_2000 + DAY);
  write('img/logo.png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]), YEAR_2000 + 2 * DAY);
  write('big/large.bin', Buffer.alloc(300_000, 7), YEAR_2000 + 3 * DAY); // By-Reference at both hops
  write('old/to-delete.txt', 'deleted after the first harvest', YEAR_2000 + 4 * DAY);
  write('café/naïve.txt', 'non-ASCII names', YEAR_2000 + 5 * DAY);
  repository = await createRepository({
    root: site,
    index: join(work, 'index.sqlite'),
    watch: false,
    rescanSeconds: 0,
    byValueMax: 100_000,
    pageRecords: 4,
    countLimit: 2, // every list's size estimated or left out: the harvests below must not need it
    rights: { reference: RIGHTS },
  });
  siteOai = `${await repository.listen(0, '127.0.0.1')}/oai`;
  // A harvest of A needs A's catalog: the first hop creates it before A is served.
  await nextSecond();
  const first = await harvest({ baseUrl: siteOai, archiveDir: archiveA, retry: FAST_RETRY });
  assert.equal(first.added, 6);
  harvestsA.push(first.harvestId);
  const accessA: string[] = [];
  servedA = await startArchiveServer({
    archiveDir: archiveA,
    byValueMax: 100_000,
    pageRecords: 3,
    countLimit: 2,
    repositoryName: 'archive A',
    accessLog: (line) => accessA.push(line),
  });
  assert.deepEqual(accessA, [], 'the pages serve asks itself for when it starts are not in its access log');
  await nextSecond();
  // Past the count limit the whole list's size is estimated (one seek), a set's is left out.
  const whole = await (await fetch(`${servedA.baseUrl}/oai?verb=ListRecords&metadataPrefix=oai_didl`)).text();
  assert.match(whole, /<resumptionToken completeListSize="6" cursor="0">/);
  assert.equal(accessA.length, 1);
  const images = await (await fetch(`${siteOai}?verb=ListRecords&metadataPrefix=oai_didl&set=mime`)).text();
  assert.match(images, /<resumptionToken cursor="0">/);
  const intoB = await harvest({ baseUrl: `${servedA.baseUrl}/oai`, archiveDir: archiveB, retry: FAST_RETRY });
  assert.equal(intoB.status, 'complete');
  assert.equal(intoB.added, 6, 'every item of A, over three pages');
  harvestsB.push(intoB.harvestId);

  await nextSecond();
  write('index.html', '<html>home, edited</html>', YEAR_2000 + 100 * DAY); // modified
  rmSync(join(site, 'old/to-delete.txt')); // deleted
  write('added/new file.txt', 'added after the first harvest', YEAR_2000 + 50 * DAY); // added
  const now = new Date();
  utimesSync(join(site, 'img/logo.png'), now, now); // touched: same bytes, new mtime
  await repository.scan();
  await nextSecond();
  await bothHops();
});

after(async () => {
  await servedA?.close();
  await repository?.close();
  rmSync(work, { recursive: true, force: true });
});

test("B's restore equals the site, bytes and mtimes (and A's does too)", async () => {
  const expected = snapshot(site);
  for (const [name, archive] of [
    ['A', archiveA],
    ['B', archiveB],
  ] as const) {
    const to = join(work, `restore-${name}`);
    const summary = await restoreSite({ archiveDir: archive, to });
    assert.equal(summary.problems, 0, `${name}: ${JSON.stringify(summary)}`);
    assert.deepEqual(snapshot(to), expected, `restore of ${name}`);
  }
});

test("B's audit of the second hop shows the changes A's audit shows", () => {
  const changes = (archive: string, harvestId: number) => {
    const catalog = Catalog.open(archive, { create: false });
    try {
      return audit(catalog, { harvest: harvestId })
        .rows.map((row) => `${row.change} ${row.identifier}`)
        .sort();
    } finally {
      catalog.close();
    }
  };
  const inA = changes(archiveA, harvestsA[1]!);
  assert.deepEqual(inA, [
    `added ${repository.baseUrl}/added/new%20file.txt`,
    `deleted ${repository.baseUrl}/old/to-delete.txt`,
    `modified ${repository.baseUrl}/index.html`,
    `touched ${repository.baseUrl}/img/logo.png`,
  ]);
  assert.deepEqual(changes(archiveB, harvestsB[1]!), inA);
});

test("the rights the site's repository gives are in A's bags and in what B harvested from A", () => {
  const recordsOf = (archive: string) =>
    readdirSync(join(archive, 'aips'), { recursive: true })
      .map(String)
      .filter((path) => path.endsWith('records.xml.gz'))
      .map((path) => gunzipSync(readFileSync(join(archive, 'aips', path))).toString('utf8'));
  const inA = recordsOf(archiveA);
  assert.ok(inA.length >= 2);
  for (const records of inA) {
    assert.match(records, /<rightsManifest xmlns="http:\/\/www.openarchives.org\/OAI\/2.0\/rights\/"[^>]*>/, "the source's manifest heads each bag");
    assert.ok(records.includes(`<rightsReference ref="${RIGHTS}"/>`), 'each record keeps its rights');
  }
  const catalog = Catalog.open(archiveA, { create: false });
  try {
    assert.ok(catalog.source(siteOai)?.rightsManifest?.includes(`<rightsReference ref="${RIGHTS}"/>`), 'the catalog keeps the manifest with the source');
  } finally {
    catalog.close();
  }
  for (const records of recordsOf(archiveB)) {
    assert.ok(records.includes(`<rightsReference ref="${RIGHTS}"/>`), "B's records keep the rights A gave back");
  }
});

test("B's records carry two levels of provenance; every answer of B validates", async () => {
  const servedB = await startArchiveServer({ archiveDir: archiveB, repositoryName: 'archive B' });
  try {
    const identifier = `${repository.baseUrl}/index.html`;
    const response = await fetch(`${servedB.baseUrl}/oai?verb=GetRecord&metadataPrefix=oai_didl&identifier=${encodeURIComponent(identifier)}`);
    const xml = await response.text();
    const check = validateArchiveResponse(xml);
    assert.ok(check.ok, check.output);
    const origins = [...xml.matchAll(/<originDescription[^>]*>\s*<baseURL>([^<]+)<\/baseURL>/g)].map((match) => match[1]);
    assert.deepEqual(origins, [`${servedA.baseUrl}/oai`, siteOai], 'B harvested A, which harvested the site');
    assert.equal([...xml.matchAll(/<rightsReference ref="([^"]+)"\/>/g)].length, 1, 'the rights, once, after the provenance');
    assert.ok(xml.includes('<html>home, edited</html>') || xml.includes(Buffer.from('<html>home, edited</html>').toString('base64')));
  } finally {
    await servedB.close();
  }
});
