// What `oaibag serve` disseminates besides oai_dc (docs/serve.md): oai_didl with each datastream
// By-Reference to the archive's copy (and By-Value up to --by-value-max), http_header, ORE
// resource maps (as a format and at /ore/), provenance on every record, the MIME sets, `--auth`,
// and a payload found damaged while it is sent: the answer is cut off, never a wrong record.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { type ArchiveServer, harvest, startArchiveServer } from '../packages/archiver/src/index.ts';
import { hashPassword, parseAuthFile } from '../packages/oai-pmh/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';
import { validateArchiveResponse } from './archive-schemas.ts';

const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;
const SMALL = 'a small text, carried By-Value by the site\n';
const BIG = Buffer.alloc(200_000, 0x41); // By-Reference at the site (its limit is 100,000)

let work: string;
let archive: string;
let repository: Repository;
let server: ArchiveServer;

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

async function text(url: string, init?: RequestInit): Promise<string> {
  const response = await fetch(url, init);
  assert.equal(response.status, 200, url);
  return response.text();
}

function valid(xml: string): string {
  const check = validateArchiveResponse(xml);
  assert.ok(check.ok, check.output);
  return xml;
}

const getRecord = (base: string, prefix: string, path: string) =>
  text(`${base}/oai?verb=GetRecord&metadataPrefix=${prefix}&identifier=${encodeURIComponent(`${repository.baseUrl}/${path}`)}`);

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-serve-formats-'));
  const site = join(work, 'site');
  const files: Array<[string, string | Buffer]> = [
    ['small.txt', SMALL],
    ['big.bin', BIG],
    ['page.html', '<p>a page</p>'],
  ];
  mkdirSync(site);
  for (const [path, content] of files) writeFileSync(join(site, path), content);
  for (const [path] of files) utimesSync(join(site, path), YEAR_2000, YEAR_2000);
  repository = await createRepository({ root: site, index: join(work, 'index.sqlite'), watch: false, rescanSeconds: 0, byValueMax: 100_000 });
  await repository.listen(0, '127.0.0.1');
  archive = join(work, 'archive');
  const summary = await harvest({ baseUrl: `${repository.baseUrl}/oai`, archiveDir: archive });
  assert.equal(summary.added, 3);
  await new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));
  server = await startArchiveServer({ archiveDir: archive });
});

after(async () => {
  await server?.close();
  await repository?.close();
  rmSync(work, { recursive: true, force: true });
});

test("oai_didl: the record as received, its datastream By-Reference to the archive's copy and By-Value again", async () => {
  const xml = valid(await getRecord(server.baseUrl, 'oai_didl', 'small.txt'));
  const refs = [...xml.matchAll(/<didl:Resource [^>]*ref="([^"]+)"/g)].map((match) => match[1]!);
  assert.equal(refs.length, 1, 'one By-Reference Resource: the site URL rewritten, none added');
  assert.match(refs[0]!, new RegExp(`^${server.baseUrl}/files/harvest-000001/batch-00001/data/`));
  assert.equal(await text(refs[0]!), SMALL, 'the ref gives the bytes');
  const base64 = /<didl:Resource [^>]*encoding="base64">([^<]*)<\/didl:Resource>/.exec(xml)?.[1];
  assert.equal(Buffer.from(base64 ?? '', 'base64').toString('utf8'), SMALL);
  assert.ok(xml.includes(`<premis:messageDigest>${sha256(SMALL)}</premis:messageDigest>`), 'the digest Descriptor is kept');
  assert.ok(!xml.includes('oaibag:byValue'), 'no pointer of the bag is shown');
  assert.ok(!xml.includes(`ref="${repository.baseUrl}/small.txt"`), 'no ref to the site');
});

test('oai_didl: a datastream fetched By-Reference stays By-Reference, to the copy; --by-value-max 0 sends none By-Value', async () => {
  const big = valid(await getRecord(server.baseUrl, 'oai_didl', 'big.bin'));
  const ref = /<didl:Resource [^>]*ref="([^"]+)"/.exec(big)?.[1];
  assert.match(ref ?? '', /\/files\/harvest-000001\/batch-00001\/data\//);
  assert.equal(sha256(Buffer.from(await (await fetch(ref!)).arrayBuffer())), sha256(BIG));
  assert.ok(!big.includes('encoding="base64"'));

  const byReference = await startArchiveServer({ archiveDir: archive, byValueMax: 0 });
  try {
    const small = valid(await getRecord(byReference.baseUrl, 'oai_didl', 'small.txt'));
    assert.ok(!small.includes('encoding="base64"'), 'the By-Value Resource is dropped');
    assert.match(small, /<didl:Resource mimeType="text\/plain" ref="[^"]+\/files\/[^"]+"\/>/);
  } finally {
    await byReference.close();
  }
});

test('http_header: the headers the site sent; every live record carries our provenance', async () => {
  const xml = valid(await getRecord(server.baseUrl, 'http_header', 'page.html'));
  assert.match(xml, /<metadata>\s*<http:header [^>]*xmlns:http="http:\/\/www.openarchives.org\/OAI\/2.0\/http_header\/"[^>]*>/);
  assert.match(xml, /<http:Content-Type>text\/html<\/http:Content-Type>/);
  assert.match(xml, /<http:Last-Modified>Sat, 01 Jan 2000 00:00:00 GMT<\/http:Last-Modified>/);
  const list = valid(await text(`${server.baseUrl}/oai?verb=ListRecords&metadataPrefix=http_header`));
  assert.equal([...list.matchAll(/<provenance xmlns="http:\/\/www.openarchives.org\/OAI\/2.0\/provenance"/g)].length, 3);
  assert.match(list, new RegExp(`<originDescription harvestDate="[^"]+" altered="true">\\s*<baseURL>${repository.baseUrl}/oai</baseURL>`));
  const schema = await fetch(`${server.baseUrl}/oai/schemas/http_header.xsd`);
  assert.equal(schema.status, 200);
});

test('ore: a resource map per version, as a format and at its own URL', async () => {
  const xml = valid(await getRecord(server.baseUrl, 'ore', 'big.bin'));
  const map = /<ore:ResourceMap rdf:about="([^"]+)">/.exec(xml)?.[1];
  assert.match(map ?? '', new RegExp(`^${server.baseUrl}/ore/harvest-000001/batch-00001/\\d+$`));
  assert.match(xml, new RegExp(`<dcterms:creator>oaibag archive at ${server.baseUrl}</dcterms:creator>`));
  assert.match(xml, /<dcterms:modified rdf:datatype="http:\/\/www.w3.org\/2001\/XMLSchema#dateTime">20\d\d-[^<]+Z<\/dcterms:modified>/);
  assert.match(xml, new RegExp(`<ore:describes rdf:resource="${map}#aggregation"/>`));
  const file = /<ore:aggregates rdf:resource="([^"]+)"\/>/.exec(xml)?.[1];
  assert.match(file ?? '', /\/files\//);
  assert.match(
    xml,
    new RegExp(
      `<rdf:Description rdf:about="${file}">\\s*<dcterms:format>application/octet-stream</dcterms:format>\\s*<dcterms:extent [^>]*>${BIG.length}</dcterms:extent>`,
    ),
  );
  const response = await fetch(map!);
  assert.equal(response.status, 200);
  assert.match(String(response.headers.get('content-type')), /^application\/rdf\+xml/);
  const standalone = await response.text();
  assert.ok(standalone.startsWith('<?xml'));
  assert.ok(standalone.includes(`<ore:ResourceMap rdf:about="${map}">`));
  assert.equal((await fetch(`${server.baseUrl}/ore/harvest-000001/batch-00001/999`)).status, 404);
});

test('the MIME sets of the records select their items; a set the archive does not have matches nothing', async () => {
  const identifiers = async (set: string) => {
    const xml = valid(await text(`${server.baseUrl}/oai?verb=ListIdentifiers&metadataPrefix=oai_dc&set=${encodeURIComponent(set)}`));
    return [...xml.matchAll(/<identifier>([^<]+)<\/identifier>/g)].map((match) => match[1]!.slice(repository.baseUrl.length + 1)).sort();
  };
  assert.deepEqual(await identifiers('mime:text:plain'), ['small.txt']);
  assert.deepEqual(await identifiers('mime:text'), ['page.html', 'small.txt']);
  assert.deepEqual(await identifiers('mime'), ['big.bin', 'page.html', 'small.txt']);
  for (const set of ['mime:image', 'mime:Text', 'other']) {
    assert.match(await text(`${server.baseUrl}/oai?verb=ListIdentifiers&metadataPrefix=oai_dc&set=${set}`), /<error code="noRecordsMatch"/, set);
  }
});

test('--auth: protected paths want credentials, the rest is open', async () => {
  const auth = parseAuthFile(`user alice ${await hashPassword('secret')}\nprotect /files/ alice\n`, 'auth');
  const guarded = await startArchiveServer({ archiveDir: archive, auth });
  try {
    const xml = await getRecord(guarded.baseUrl, 'oai_didl', 'small.txt');
    const ref = /ref="([^"]+)"/.exec(xml)![1]!;
    const anonymous = await fetch(ref);
    assert.equal(anonymous.status, 401);
    assert.match(String(anonymous.headers.get('www-authenticate')), /^Basic realm="oaibag archive"/);
    const alice = await fetch(ref, { headers: { Authorization: `Basic ${Buffer.from('alice:secret').toString('base64')}` } });
    assert.equal(alice.status, 200);
    assert.equal(await alice.text(), SMALL);
    const wrong = await fetch(ref, { headers: { Authorization: `Basic ${Buffer.from('alice:nope').toString('base64')}` } });
    assert.equal(wrong.status, 401);
  } finally {
    await guarded.close();
  }
});

test('a payload damaged in the bag: the record is cut off mid-answer, never sent with other bytes', async () => {
  const data = join(archive, 'aips', 'harvest-000001', 'batch-00001', 'data');
  const host = readdirSync(data)[0]!;
  const file = join(data, host, 'small.txt');
  writeFileSync(file, SMALL.toUpperCase()); // same size, other bytes
  try {
    const url = `${server.baseUrl}/oai?verb=GetRecord&metadataPrefix=oai_didl&identifier=${encodeURIComponent(`${repository.baseUrl}/small.txt`)}`;
    // Cut off: before the first byte (the answer is small) or after it; never a whole answer.
    await assert.rejects(async () => (await fetch(url)).text());
  } finally {
    writeFileSync(file, SMALL);
  }
});
