// Memento (RFC 7089) over the archive (docs/linked-data.md): a page captured in three versions
// and then deleted. The TimeMap lists the three mementos (first, middle, last) with their
// datetimes; the TimeGate sends each Accept-Datetime to the capture it asks for; each memento
// gives that version's bytes with its Memento-Datetime and the Link header.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { type ArchiveServer, harvest, startArchiveServer } from '../packages/archiver/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';

const nextSecond = () => new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));
const CONTENTS = ['<p>first</p>', '<p>second</p>', '<p>third</p>'];

let work: string;
let repository: Repository;
let server: ArchiveServer;
let original: string;
/** An HTTP date after each capture (and before the next). */
const afterCapture: string[] = [];
let beforeAll: string;

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-memento-'));
  const site = join(work, 'site');
  mkdirSync(site);
  writeFileSync(join(site, 'keep.txt'), 'keeps the site alive');
  repository = await createRepository({ root: site, index: join(work, 'index.sqlite'), watch: false, rescanSeconds: 0 });
  await repository.listen(0, '127.0.0.1');
  original = `${repository.baseUrl}/page.html`;
  const archive = join(work, 'archive');
  beforeAll = new Date(Date.now() - 60_000).toUTCString();
  for (const [index, content] of CONTENTS.entries()) {
    writeFileSync(join(site, 'page.html'), content);
    const mtime = Date.UTC(2000, 0, 1 + index) / 1000;
    utimesSync(join(site, 'page.html'), mtime, mtime);
    await repository.scan();
    await nextSecond();
    const summary = await harvest({ baseUrl: `${repository.baseUrl}/oai`, archiveDir: archive });
    assert.equal(summary.failed, 0);
    await nextSecond();
    afterCapture.push(new Date().toUTCString());
    await nextSecond();
  }
  unlinkSync(join(site, 'page.html'));
  await repository.scan();
  await nextSecond();
  assert.equal((await harvest({ baseUrl: `${repository.baseUrl}/oai`, archiveDir: archive })).deleted, 1);
  server = await startArchiveServer({ archiveDir: archive });
});

after(async () => {
  await server?.close();
  await repository?.close();
  rmSync(work, { recursive: true, force: true });
});

function links(header: string | null): Array<{ url: string; rel: string; datetime?: string }> {
  return [...(header ?? '').matchAll(/<([^>]+)>((?:\s*;\s*[\w-]+="[^"]*")*)/g)].map((match) => ({
    url: match[1]!,
    rel: /rel="([^"]+)"/.exec(match[2]!)?.[1] ?? '',
    ...(/datetime="([^"]+)"/.test(match[2]!) ? { datetime: /datetime="([^"]+)"/.exec(match[2]!)![1]! } : {}),
  }));
}

test('the TimeMap lists the three captures, oldest first, with their datetimes', async () => {
  const response = await fetch(`${server.baseUrl}/timemap/link/${original}`);
  assert.equal(response.status, 200);
  assert.match(String(response.headers.get('content-type')), /^application\/link-format/);
  const entries = links(await response.text());
  assert.deepEqual(
    entries.map((entry) => entry.rel),
    ['original', 'timegate', 'self', 'first memento', 'memento', 'last memento'],
  );
  assert.equal(entries[0]!.url, original);
  const mementos = entries.slice(3);
  const times = mementos.map((entry) => Date.parse(entry.datetime!));
  assert.ok(times[0]! < times[1]! && times[1]! < times[2]!, 'in capture order');
  for (const [index, entry] of mementos.entries()) assert.equal(await (await fetch(entry.url)).text(), CONTENTS[index]);
});

test('the TimeGate sends each Accept-Datetime to the capture live then; no header gives the latest; a bad one is 400', async () => {
  const gate = `${server.baseUrl}/timegate/${original}`;
  const follow = async (acceptDatetime?: string) => {
    const response = await fetch(gate, { redirect: 'manual', headers: acceptDatetime ? { 'Accept-Datetime': acceptDatetime } : {} });
    assert.equal(response.status, 302);
    assert.equal(response.headers.get('vary'), 'accept-datetime');
    const rels = links(response.headers.get('link')).map((entry) => entry.rel);
    assert.deepEqual(rels, ['original', 'timemap']);
    return (await fetch(response.headers.get('location')!)).text();
  };
  assert.equal(await follow(beforeAll), CONTENTS[0], 'before the first capture: the first');
  for (const [index, date] of afterCapture.entries()) assert.equal(await follow(date), CONTENTS[index], date);
  assert.equal(await follow(), CONTENTS[2], 'no Accept-Datetime: the latest');
  const bad = await fetch(gate, { redirect: 'manual', headers: { 'Accept-Datetime': 'yesterday' } });
  assert.equal(bad.status, 400);
  assert.equal((await fetch(`${server.baseUrl}/timegate/http://nowhere.example/x`, { redirect: 'manual' })).status, 404);
});

test("a memento carries its Memento-Datetime, the version's own type and Last-Modified, and the Link to original, TimeGate and TimeMap", async () => {
  const entries = links(await (await fetch(`${server.baseUrl}/timemap/link/${original}`)).text());
  const second = entries.find((entry) => entry.rel === 'memento')!;
  const response = await fetch(second.url);
  assert.equal(response.status, 200);
  assert.equal(response.headers.get('memento-datetime'), second.datetime);
  assert.match(String(response.headers.get('content-type')), /^text\/html/);
  assert.equal(response.headers.get('last-modified'), new Date(Date.UTC(2000, 0, 2)).toUTCString());
  assert.deepEqual(
    links(response.headers.get('link')).map((entry) => entry.rel),
    ['original', 'timegate', 'timemap'],
  );
  assert.equal(await response.text(), CONTENTS[1]);
  assert.equal((await fetch(`${server.baseUrl}/memento/harvest-000009/batch-00001/1`)).status, 404);
});
