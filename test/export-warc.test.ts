// `oaibag export --warc` (docs/import-export.md, "WARC, CDXJ and WACZ"): a real site served by
// the real repository, harvested three times (the same bytes at two URLs; then a 5 MiB file;
// then a modification, a touch, an addition and a deletion), exported as WARC files, read back
// with warcio's own parser (every response's payload against the catalog, every record's block
// digest, every revisit against the response it names), the CDXJ index against warcio's
// indexer, two exports byte-identical, --as-of and --since, files split at a size bound, a
// kill -9 and a SIGINT mid-export, damaged bags, the catalog on PostgreSQL, and the WACZ
// replayed in ReplayWeb.page in headless Chromium. The command runs from the bundle (node
// scripts/bundle-cli.mjs, as `npm test` does before the tests).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { cpSync, createReadStream, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, extname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';
import { CDXIndexer, WARCParser, WARCRecord, WARCSerializer } from '../packages/archiver/node_modules/warcio/dist/index.js';
import { Catalog, type CatalogVersion, exportWarc, responseHead, WarcExportTable, warcDigest, warcQueryPlans } from '../packages/archiver/src/index.ts';
import { HarvestedSite, nextSecond, YEAR_2000 } from './harvested-site.ts';
import { OAIBAG_BIN, oaibagAsync } from './oaibag-process.ts';
import { POSTGRES_SKIP, type Postgres, startPostgres } from './postgres-server.ts';
import { readZipEntries } from './zip-entries.ts';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_SKIP = existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is missing (install Debian's chromium package, as .ci/run does): the WACZ is not replayed in ReplayWeb.page`;
const REPLAYWEBPAGE = join(dirname(fileURLToPath(import.meta.url)), '..', 'node_modules', 'replaywebpage');
const DAY = 86_400;
const sha256 = (bytes: Buffer | string): string => createHash('sha256').update(bytes).digest('hex');
/** Every wait of this file is bounded: a hung export or server fails its test instead of hanging the run (a busy 2-core machine takes a few seconds a test). */
const BOUND = { timeout: 180_000 };
const about = '<html><head><title>About us</title></head><body><p>About the archived site</p></body></html>';

let site: HarvestedSite;
let work: string;
/** An instant after the first two harvests and before the third. */
let between: string;
/** Every version of every resource, with its identifier. */
let versions: CatalogVersion[];
const url = (path: string): string => `${site.repository.baseUrl}/${path}`;

before(async () => {
  site = await HarvestedSite.start('oaibag-export-warc-', {
    'index.html': '<html><head><title>Home page</title></head><body><p>Welcome to the first home page</p></body></html>',
    'about.html': about,
    'copy/about.html': about, // the same bytes at another URL: a revisit in the first harvest
    'papers/notes.txt': 'notes of a meeting',
    'old.txt': 'deleted by the second harvest',
    'logo.png': '\x89PNG not really',
  });
  // Over the 4 MiB the export reads into memory: this one is read twice, streamed.
  writeFileSync(join(site.site, 'big.bin'), randomBytes(5 * 1024 * 1024));
  utimesSync(join(site.site, 'big.bin'), YEAR_2000, YEAR_2000);
  await site.harvestAgain();
  await nextSecond();
  between = new Date().toISOString();
  await nextSecond();
  site.write('index.html', '<html><head><title>Home page, edited</title></head><body><p>Welcome to the second home page</p></body></html>', YEAR_2000 + DAY);
  site.write('about.html', about, YEAR_2000 + 2 * DAY); // touched: same bytes, new date
  site.write('news.html', '<html><head><title>News</title></head><body><p>Fresh news</p></body></html>');
  site.remove('old.txt');
  const second = await site.harvestAgain();
  assert.deepEqual([second.added, second.modified, second.touched, second.deleted], [1, 1, 1, 1]);
  work = mkdtempSync(join(tmpdir(), 'oaibag-export-warc-out-'));
  const catalog = Catalog.openForReading(site.archive);
  try {
    const sourceId = catalog.source(site.endpoint)!.id;
    const paths = ['index.html', 'about.html', 'copy/about.html', 'papers/notes.txt', 'old.txt', 'logo.png', 'big.bin', 'news.html'];
    versions = paths.flatMap((path) => catalog.versions(sourceId, url(path)));
  } finally {
    catalog.close();
  }
  assert.equal(versions.length, 10);
}, BOUND);

after(async () => {
  await site?.close();
  if (work) rmSync(work, { recursive: true, force: true });
}, BOUND);

/** One record as read back. */
interface ReadBack {
  file: string;
  type: string;
  id: string;
  uri: string | undefined;
  date: string;
  fields: Map<string, string>;
  payload: Buffer;
  status: number | undefined;
  http: Map<string, string>;
}

const fieldsOf = (headers: Headers | Map<string, string>): Map<string, string> => {
  const map = new Map<string, string>();
  for (const [name, value] of headers.entries()) map.set(name.toLowerCase(), value);
  return map;
};

/**
 * Every record of a WARC file, read with warcio's parser; each gzip member also inflated alone at
 * the offset the parser gives, its block checked against WARC-Block-Digest and its end.
 */
async function readWarc(file: string): Promise<ReadBack[]> {
  const bytes = readFileSync(file);
  const parser = new WARCParser(createReadStream(file));
  const records: ReadBack[] = [];
  for await (const record of parser) {
    const payload = Buffer.from(await record.readFully());
    const fields = fieldsOf(record.warcHeaders.headers);
    // The member alone: a record can be read at its offset without what comes before it.
    const raw = gunzipSync(bytes.subarray(parser.offset, parser.offset + parser.recordLength));
    const headEnd = raw.indexOf('\r\n\r\n') + 4;
    const length = Number(fields.get('content-length'));
    const block = raw.subarray(headEnd, headEnd + length);
    assert.equal(raw.length, headEnd + length + 4, 'one record a member');
    assert.equal(raw.subarray(headEnd + length).toString('latin1'), '\r\n\r\n');
    assert.equal(fields.get('warc-block-digest'), warcDigest(sha256(block)), 'WARC-Block-Digest');
    assert.equal(raw.subarray(0, 10).toString('latin1'), 'WARC/1.1\r\n');
    records.push({
      file,
      type: record.warcType ?? '',
      id: fields.get('warc-record-id') ?? '',
      uri: record.warcTargetURI ?? undefined,
      date: record.warcDate ?? '',
      fields,
      payload,
      status: record.httpHeaders?.statusCode === undefined ? undefined : Number(record.httpHeaders.statusCode),
      http: record.httpHeaders ? fieldsOf(record.httpHeaders.headers) : new Map(),
    });
  }
  return records;
}

/** The WARC files of an export folder, in order. */
const warcFiles = (folder: string, name = 'oaibag'): string[] =>
  readdirSync(folder)
    .filter((entry) => entry.startsWith(`${name}-`) && entry.endsWith('.warc.gz'))
    .sort()
    .map((entry) => join(folder, entry));

/** Every record of every WARC file of an export folder, each file's warcinfo first. */
async function readExport(folder: string, name = 'oaibag'): Promise<ReadBack[]> {
  const all: ReadBack[] = [];
  for (const file of warcFiles(folder, name)) {
    const records = await readWarc(file);
    assert.equal(records[0]?.type, 'warcinfo', `${file} starts with its warcinfo record`);
    assert.equal(records[0]?.fields.get('warc-filename'), file.slice(folder.length + 1));
    assert.equal(records.filter((record) => record.type === 'warcinfo').length, 1);
    all.push(...records);
  }
  return all;
}

/** The version a record is of: its URL and its capture time, to the second. */
function versionOf(record: ReadBack): CatalogVersion {
  const found = versions.filter((version) => version.identifier === record.uri && `${version.storedAt.slice(0, 19)}Z` === record.date);
  assert.equal(found.length, 1, `one version of ${record.uri} at ${record.date}`);
  return found[0]!;
}

/**
 * The checks every export passes: each response's payload is its version's bytes (SHA-256 and
 * WARC-Payload-Digest), its head is consistent with them, and each revisit names an earlier
 * response of the same export with the same payload digest, by id, URI and date.
 */
function checkRecords(records: ReadBack[]): { responses: ReadBack[]; revisits: ReadBack[] } {
  const responses = records.filter((record) => record.type === 'response');
  const revisits = records.filter((record) => record.type === 'revisit');
  assert.equal(responses.length + revisits.length + records.filter((record) => record.type === 'warcinfo').length, records.length);
  const seen = new Map<string, ReadBack>();
  for (const record of records) {
    if (record.type === 'warcinfo') continue;
    const version = versionOf(record);
    assert.equal(record.fields.get('warc-payload-digest'), warcDigest(version.sha256));
    assert.equal(record.status, 200);
    assert.equal(record.http.get('content-length'), String(version.size));
    assert.equal(record.http.has('transfer-encoding') || record.http.has('content-encoding'), false);
    if (record.type === 'response') {
      assert.equal(sha256(record.payload), version.sha256, `the bytes of ${record.uri}`);
      assert.equal(record.payload.length, version.size);
      assert.equal(seen.has(version.sha256), false, `${record.uri}: the bytes were written once`);
      seen.set(version.sha256, record);
    } else {
      assert.equal(record.payload.length, 0, 'a revisit holds the head alone');
      assert.equal(record.fields.get('warc-profile'), 'http://netpreserve.org/warc/1.1/revisit/identical-payload-digest');
      const first = seen.get(version.sha256);
      assert.ok(first, `${record.uri} at ${record.date}: an earlier response with the same bytes`);
      assert.equal(record.fields.get('warc-refers-to'), first.id);
      assert.equal(record.fields.get('warc-refers-to-target-uri'), first.uri);
      assert.equal(record.fields.get('warc-refers-to-date'), first.date);
      assert.equal(record.fields.get('warc-payload-digest'), first.fields.get('warc-payload-digest'));
    }
  }
  const ids = records.map((record) => record.id);
  assert.equal(new Set(ids).size, ids.length, 'record ids are unique');
  return { responses, revisits };
}

/** What warcio's own indexer (CDXJ) gives for the WARC files, sorted by bytes. */
async function warcioIndex(files: string[]): Promise<string> {
  const indexer = new CDXIndexer({ format: 'cdxj' });
  const lines: string[] = [];
  for (const file of files) {
    for await (const entry of indexer.iterIndex([{ filename: file.slice(file.lastIndexOf('/') + 1), reader: createReadStream(file) }])) {
      lines.push(indexer.serialize(entry));
    }
  }
  return lines.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))).join('');
}

/** `oaibag export --warc ARGS --archive ARCHIVE --to FOLDER`; asserts exit 0. */
async function exportCommand(archive: string, folder: string, ...args: string[]): Promise<{ stdout: string; stderr: string }> {
  const result = await oaibagAsync('export', '--archive', archive, '--to', folder, '--warc', ...args);
  assert.equal(result.status, 0, result.stderr);
  return result;
}

test('every version: a response for each new payload, a revisit for bytes written before, read back with warcio', BOUND, async () => {
  const folder = join(work, 'all');
  const { stdout, stderr } = await exportCommand(site.archive, folder);
  assert.deepEqual(readdirSync(folder).sort(), ['oaibag-00001.warc.gz', 'oaibag.cdxj']);
  // stdout: sha256sum -c lines, one a file.
  for (const line of stdout.trim().split('\n')) {
    const [digest, name] = line.split('  ');
    assert.equal(sha256(readFileSync(join(folder, name!))), digest);
  }
  assert.match(stderr, /^exported 10 records \(8 responses, 2 revisits; \d+ payload bytes\) of every version to /);
  const records = await readExport(folder);
  const { responses, revisits } = checkRecords(records);
  assert.equal(responses.length, 8); // 8 payloads: 7 files, one of them modified, and the added one
  assert.equal(revisits.length, 2);
  // The touch, and one of the two URLs of the same bytes in the first harvest (the other is the response).
  assert.equal(revisits.at(-1)!.uri, url('about.html'));
  assert.ok([url('about.html'), url('copy/about.html')].includes(revisits[0]!.uri!));
  assert.equal(revisits[0]!.date, responses[0]!.date);
  // The deleted file's capture is written: a deletion is not a capture, and writes nothing.
  assert.ok(responses.some((record) => record.uri === url('old.txt')));
  // Capture order: stored_at, then id.
  const dates = records.slice(1).map((record) => record.date);
  assert.deepEqual(dates, [...dates].sort());
  // The large file came through whole (checkRecords compared its SHA-256).
  assert.equal(responses.find((record) => record.uri === url('big.bin'))?.payload.length, 5 * 1024 * 1024);
  // The head is the one the DIDL recorded: the repository's Last-Modified and ETag among them.
  const home = responses.find((record) => record.uri === url('index.html'))!;
  assert.equal(home.http.get('content-type'), 'text/html');
  assert.ok(home.http.has('last-modified') && home.http.has('etag'));
  // The warcinfo record: no clock, the export's instant.
  const info = records[0]!;
  assert.equal(info.date, records.at(-1)!.date);
  assert.match(info.payload.toString('utf8'), /^software: oaibag .*\r\nformat: WARC File Format 1\.1\r\n/);
});

test("the payload digest is in the form warcio's own serializer writes (sha256, base32)", BOUND, async () => {
  const payload = Buffer.from('notes of a meeting');
  const record = WARCRecord.create(
    { url: 'http://example.org/', date: '2026-01-01T00:00:00Z', type: 'response', warcVersion: 'WARC/1.1', httpHeaders: { 'Content-Type': 'text/plain' } },
    (async function* () {
      yield new Uint8Array(payload);
    })(),
  );
  await WARCSerializer.serialize(record, { gzip: false, digest: { algo: 'sha-256', prefix: 'sha256:', base32: true } });
  assert.equal(warcDigest(sha256(payload)), record.warcPayloadDigest);
});

test("the CDXJ index is warcio's indexer's output, sorted", BOUND, async () => {
  const folder = join(work, 'all');
  const ours = readFileSync(join(folder, 'oaibag.cdxj'), 'utf8');
  assert.equal(ours, await warcioIndex(warcFiles(folder)));
  const keys = ours
    .trim()
    .split('\n')
    .map((line) => line.split(' ', 2).join(' '));
  assert.deepEqual(keys, [...keys].sort());
  assert.equal(keys.length, 10);
});

test('the same archive gives the same bytes: two exports, one through the API in another time zone', BOUND, async () => {
  const first = join(work, 'all');
  const again = join(work, 'again');
  const child = spawn(process.execPath, [OAIBAG_BIN, 'export', '--archive', site.archive, '--to', again, '--warc'], {
    env: { ...process.env, TZ: 'Pacific/Kiritimati' },
    stdio: 'ignore',
  });
  const code = await new Promise((resolve) => child.once('close', resolve));
  assert.equal(code, 0);
  for (const name of readdirSync(first)) assert.ok(readFileSync(join(first, name)).equals(readFileSync(join(again, name))), name);
  const api = join(work, 'api');
  const exported = await exportWarc({ archiveDir: site.archive, to: api, pageRows: 2 }); // pages of 2 rows: the keyset paging
  for (const file of exported.files) assert.ok(readFileSync(file.file).equals(readFileSync(join(first, file.name))), file.name);
});

test('--as-of: the archive as it stood then; --since: every version captured since, with no revisit of bytes written before', BOUND, async () => {
  const asOfBefore = join(work, 'as-of-before');
  await exportCommand(site.archive, asOfBefore, '--as-of', between);
  const before = checkRecords(await readExport(asOfBefore));
  assert.deepEqual(
    [...before.responses, ...before.revisits].map((record) => record.uri).sort(),
    ['about.html', 'big.bin', 'copy/about.html', 'index.html', 'logo.png', 'old.txt', 'papers/notes.txt'].map(url).sort(),
  );
  assert.equal(before.revisits.length, 1);
  assert.equal(
    sha256(before.responses.find((record) => record.uri === url('index.html'))!.payload),
    versions.find((v) => v.identifier === url('index.html'))!.sha256,
  );

  const asOfNow = join(work, 'as-of-now');
  await exportCommand(site.archive, asOfNow, '--as-of', new Date(Date.now() + 60_000).toISOString());
  const now = checkRecords(await readExport(asOfNow));
  const written = [...now.responses, ...now.revisits];
  assert.deepEqual(
    written.map((record) => record.uri).sort(),
    ['about.html', 'big.bin', 'copy/about.html', 'index.html', 'logo.png', 'news.html', 'papers/notes.txt'].map(url).sort(),
  );
  assert.match(written.find((record) => record.uri === url('index.html'))!.payload.toString(), /second home page/);
  // The touched page is current; its bytes were captured first at the copy's URL.
  assert.deepEqual(
    now.revisits.map((record) => record.uri),
    [url('about.html')],
  );

  const since = join(work, 'since');
  await exportCommand(site.archive, since, '--since', between);
  const recent = checkRecords(await readExport(since));
  assert.deepEqual(recent.responses.map((record) => record.uri).sort(), ['about.html', 'index.html', 'news.html'].map(url).sort());
  assert.equal(recent.revisits.length, 0, 'the touch is a response: its bytes were first captured before --since');
  assert.equal(readFileSync(join(since, 'oaibag.cdxj'), 'utf8'), await warcioIndex(warcFiles(since)));

  // Before anything was captured: one WARC file with its warcinfo record, an empty index.
  const empty = join(work, 'empty');
  await exportCommand(site.archive, empty, '--as-of', '2000-01-01');
  const nothing = await readExport(empty);
  assert.deepEqual(
    nothing.map((record) => [record.type, record.date]),
    [['warcinfo', '2000-01-01T23:59:59Z']],
  );
  assert.equal(readFileSync(join(empty, 'oaibag.cdxj'), 'utf8'), '');

  const both = await oaibagAsync('export', '--archive', site.archive, '--to', join(work, 'both'), '--warc', '--as-of', between, '--since', between);
  assert.equal(both.status, 2);
  assert.match(both.stderr, /^oaibag: --as-of and --since cannot go together \[ERR_ARCHIVE_USAGE\]/);
});

test(
  '--warc-size: each WARC file ends once it reaches the bound, begins with its warcinfo record; a later export removes the parts it no longer has',
  BOUND,
  async () => {
    const folder = join(work, 'split');
    await exportCommand(site.archive, folder, '--warc-size', '1K', '--name', 'split');
    const files = warcFiles(folder, 'split');
    assert.ok(files.length >= 6, `${files.length} files`);
    for (const file of files.slice(0, -1)) assert.ok(statSync(file).size >= 1024);
    const records = await readExport(folder, 'split');
    checkRecords(records);
    assert.equal(records.length, 10 + files.length);
    assert.equal(readFileSync(join(folder, 'split.cdxj'), 'utf8'), await warcioIndex(files));
    // Records are whole in one file each: the same records as one file holds.
    const whole = (await readExport(join(work, 'all'))).filter((record) => record.type !== 'warcinfo');
    assert.deepEqual(
      records.filter((record) => record.type !== 'warcinfo').map((record) => [record.id, sha256(record.payload)]),
      whole.map((record) => [record.id, sha256(record.payload)]),
    );
    await exportCommand(site.archive, folder, '--name', 'split');
    assert.deepEqual(readdirSync(folder).sort(), ['split-00001.warc.gz', 'split.cdxj']);
  },
);

test("the catalog's reads are seeks, and the export table's too (no scan, no sort)", BOUND, () => {
  const catalog = Catalog.openForReading(site.archive);
  const table = WarcExportTable.open();
  try {
    const plans = [...warcQueryPlans(catalog).map((query) => query.plan), ...table.explainReads()];
    assert.equal(plans.length, 9);
    for (const plan of plans) {
      assert.match(plan, /^SEARCH /, plan);
      assert.doesNotMatch(plan.replace(/SCAN json_each VIRTUAL TABLE[^;]*/g, ''), /\bSCAN\b|TEMP B-TREE/, plan);
    }
  } finally {
    table.close();
    catalog.close();
  }
});

test('a response head is the recorded headers made consistent with the stored bytes; a record without headers gets a plain one', BOUND, () => {
  const head = (headers: Array<{ name: string; value: string }> | undefined) =>
    responseHead(headers, { mimeType: 'text/plain', lastModified: 'Sat, 01 Jan 2000 00:00:00 GMT', size: 5 }).bytes.toString('latin1');
  assert.equal(
    head([
      { name: 'Content-Type', value: 'text/html' },
      { name: 'Content-Length', value: '3' },
      { name: 'Content-Encoding', value: 'gzip' },
      { name: 'Transfer-Encoding', value: 'chunked' },
      { name: 'X-Odd!', value: 'a\r\nb' },
      { name: 'Bad Name', value: 'left out' },
    ]),
    'HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5\r\nX-Odd!: a b\r\n' +
      'X-Oaibag-Original-Content-Length: 3\r\nX-Oaibag-Original-Content-Encoding: gzip\r\nX-Oaibag-Original-Transfer-Encoding: chunked\r\n\r\n',
  );
  assert.equal(head(undefined), 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nLast-Modified: Sat, 01 Jan 2000 00:00:00 GMT\r\nContent-Length: 5\r\n\r\n');
});

test('a kill -9 mid-export leaves no file under a final name; the export run again completes; SIGINT stops it and removes its files', BOUND, async () => {
  const big = await HarvestedSite.start('oaibag-export-warc-kill-', { 'index.html': '<html>big files</html>' });
  try {
    for (let i = 0; i < 4; i++) writeFileSync(join(big.site, `big-${i}.bin`), randomBytes(12 * 1024 * 1024));
    await big.harvestAgain();
    const folder = join(work, 'killed');
    const child = spawn(process.execPath, [OAIBAG_BIN, 'export', '--archive', big.archive, '--to', folder, '--warc'], { stdio: 'ignore' });
    const closed = new Promise((resolve) => child.once('close', (code, signal) => resolve(signal ?? code)));
    const deadline = Date.now() + 60_000;
    while (!(existsSync(folder) && readdirSync(folder).some((name) => name.endsWith('.partial')))) {
      assert.ok(Date.now() < deadline, 'the export began writing within a minute');
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    child.kill('SIGKILL');
    assert.equal(await closed, 'SIGKILL', 'killed before it ended');
    const left = readdirSync(folder);
    assert.ok(left.length > 0);
    assert.deepEqual(
      left.filter((name) => !/\.[0-9a-f]{8}\.partial$/.test(name)),
      [],
      'only temporary files',
    );
    await exportCommand(big.archive, folder);
    checkRecordsOf(await readExport(folder), 5);
    // SIGINT: the export stops before its next record and removes what it began.
    const stopped = join(work, 'stopped');
    const interrupted = spawn(process.execPath, [OAIBAG_BIN, 'export', '--archive', big.archive, '--to', stopped, '--warc'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    interrupted.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    const ended = new Promise((resolve) => interrupted.once('close', (code) => resolve(code)));
    while (!(existsSync(stopped) && readdirSync(stopped).some((name) => name.endsWith('.partial')))) {
      assert.ok(Date.now() < deadline + 60_000, 'the export began writing within a minute');
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    interrupted.kill('SIGINT');
    assert.equal(await ended, 130, stderr);
    assert.match(stderr, /oaibag: stopping; the files begun are removed\noaibag: stopped\n$/);
    assert.deepEqual(readdirSync(stopped), []);
  } finally {
    await big.close();
  }
});

/** Every record of an export of a one-harvest archive is a response of distinct bytes. */
function checkRecordsOf(records: ReadBack[], responses: number): void {
  assert.equal(records.filter((record) => record.type === 'response').length, responses);
  assert.equal(records.filter((record) => record.type === 'revisit').length, 0);
}

describe('a damaged bag stops the export with one coded line, and nothing is written', () => {
  const damagedCopy = (name: string): string => {
    const copy = join(work, name);
    cpSync(site.archive, copy, { recursive: true });
    return copy;
  };

  test('a payload file that does not match its digest', BOUND, async () => {
    const copy = damagedCopy('damaged-payload');
    const catalog = Catalog.openForReading(copy);
    const notes = versions.find((version) => version.identifier === url('papers/notes.txt'))!;
    const held = catalog.payload(notes.sha256)!;
    catalog.close();
    writeFileSync(join(copy, ...held.bagPath.split('/'), ...held.path.split('/')), 'NOTES OF A MEETING');
    const folder = join(work, 'damaged-payload-out');
    const result = await oaibagAsync('export', '--archive', copy, '--to', folder, '--warc', '--wacz');
    assert.equal(result.status, 4);
    assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
    assert.match(
      result.stderr,
      /^oaibag: damaged bag .*harvest-000001\/batch-00001 \(.*papers\/notes\.txt\): .*papers\/notes\.txt does not match its sha-256 \[ERR_ARCHIVE_DAMAGED\]/,
    );
    assert.deepEqual(readdirSync(folder), []);
  });

  test('a records file that is not gzip', BOUND, async () => {
    const copy = damagedCopy('damaged-records');
    writeFileSync(join(copy, 'aips', 'harvest-000003', 'batch-00001', 'metadata', 'records.xml.gz'), 'not gzip');
    const folder = join(work, 'damaged-records-out');
    const result = await oaibagAsync('export', '--archive', copy, '--to', folder, '--warc');
    assert.equal(result.status, 4);
    assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
    assert.match(result.stderr, /^oaibag: damaged bag .*harvest-000003\/batch-00001: .*records\.xml\.gz cannot be read: .*\[ERR_ARCHIVE_DAMAGED\]/);
    assert.deepEqual(readdirSync(folder), []);
  });
});

describe('the catalog on PostgreSQL', { skip: POSTGRES_SKIP }, () => {
  let postgres: Postgres;
  before(async () => {
    postgres = await startPostgres();
  }, BOUND);
  after(async () => {
    await postgres?.stop();
  }, BOUND);

  test('an archive whose catalog is in PostgreSQL exports the same records as its SQLite twin', BOUND, async () => {
    const archive = join(work, 'on-postgres');
    const catalog = await postgres.createDatabase('warc');
    const harvested = await oaibagAsync('harvest', site.endpoint, '--archive', archive, '--catalog', catalog);
    assert.equal(harvested.status, 0, harvested.stderr);
    const folder = join(work, 'on-postgres-out');
    await exportCommand(archive, folder);
    const onPostgres = await readExport(folder);
    assert.equal(readFileSync(join(folder, 'oaibag.cdxj'), 'utf8'), await warcioIndex(warcFiles(folder)));
    // One harvest of the site as it is: the same URLs and bytes as the SQLite archive's latest state.
    const latestFolder = join(work, 'on-sqlite-latest');
    await exportWarc({ archiveDir: site.archive, to: latestFolder, asOf: new Date(Date.now() + 60_000).toISOString() });
    const latest = await readExport(latestFolder);
    const facts = (records: ReadBack[]) =>
      records
        .filter((record) => record.type !== 'warcinfo')
        .map((record) => `${record.uri} ${record.fields.get('warc-payload-digest')}`)
        .sort();
    assert.deepEqual(facts(onPostgres), facts(latest));
    assert.equal(onPostgres.filter((record) => record.type === 'revisit').length, 1);
  });
});

/** A static server of ReplayWeb.page's files and of the WACZ, with HTTP range requests (ReplayWeb.page reads the WACZ by ranges). */
async function replayServer(wacz: string): Promise<{ server: Server; origin: string }> {
  const types: Record<string, string> = { '.html': 'text/html', '.js': 'application/javascript', '.json': 'application/json', '.wacz': 'application/wacz' };
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://127.0.0.1').pathname;
    const file = path === '/test.wacz' ? wacz : join(REPLAYWEBPAGE, path === '/' ? 'index.html' : path);
    let size: number;
    try {
      if (!file.startsWith(REPLAYWEBPAGE) && file !== wacz) throw new Error('outside');
      size = statSync(file).size;
    } catch {
      response.writeHead(404).end();
      return;
    }
    const headers = { 'Content-Type': types[extname(file)] ?? 'application/octet-stream', 'Accept-Ranges': 'bytes' };
    const range = /^bytes=(\d*)-(\d*)$/.exec(request.headers.range ?? '');
    let start = 0;
    let end = size - 1;
    if (range && (range[1] !== '' || range[2] !== '')) {
      start = range[1] === '' ? Math.max(0, size - Number(range[2])) : Number(range[1]);
      end = range[1] !== '' && range[2] !== '' ? Math.min(Number(range[2]), size - 1) : size - 1;
      if (start > end) {
        response.writeHead(416, { 'Content-Range': `bytes */${size}` }).end();
        return;
      }
      response.writeHead(206, { ...headers, 'Content-Range': `bytes ${start}-${end}/${size}`, 'Content-Length': String(end - start + 1) });
    } else response.writeHead(200, { ...headers, 'Content-Length': String(size) });
    if (request.method === 'HEAD' || size === 0) response.end();
    else createReadStream(file, { start, end }).pipe(response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as { port: number }).port}` };
}

/** Every entry of a ZIP, with its bytes and compression method. */
async function readZip(file: string): Promise<Map<string, { bytes: Buffer; method: number }>> {
  return new Map((await readZipEntries(file)).map(({ entry, bytes }) => [entry.fileName, { bytes, method: entry.compressionMethod }]));
}

test('--wacz: a WACZ 1.1.1 file, its parts listed with their digests, deterministic', BOUND, async () => {
  const folder = join(work, 'wacz');
  const { stdout } = await exportCommand(site.archive, folder, '--wacz', '--name', 'site');
  assert.deepEqual(readdirSync(folder), ['site.wacz']);
  assert.equal(stdout, `${sha256(readFileSync(join(folder, 'site.wacz')))}  site.wacz\n`);
  const entries = await readZip(join(folder, 'site.wacz'));
  assert.deepEqual(
    [...entries.keys()],
    ['archive/site-00001.warc.gz', 'datapackage-digest.json', 'datapackage.json', 'indexes/index.cdxj', 'pages/pages.jsonl'],
  );
  for (const [name, entry] of entries) assert.equal(entry.method, 0, `${name} is stored`);
  const datapackage = JSON.parse(entries.get('datapackage.json')!.bytes.toString('utf8')) as {
    profile: string;
    wacz_version: string;
    resources: Array<{ name: string; path: string; hash: string; bytes: number }>;
  };
  assert.equal(datapackage.profile, 'data-package');
  assert.equal(datapackage.wacz_version, '1.1.1');
  assert.deepEqual(
    datapackage.resources.map((resource) => resource.path),
    ['archive/site-00001.warc.gz', 'indexes/index.cdxj', 'pages/pages.jsonl'],
  );
  for (const resource of datapackage.resources) {
    const bytes = entries.get(resource.path)!.bytes;
    assert.equal(resource.hash, `sha256:${sha256(bytes)}`);
    assert.equal(resource.bytes, bytes.length);
  }
  assert.deepEqual(JSON.parse(entries.get('datapackage-digest.json')!.bytes.toString('utf8')), {
    path: 'datapackage.json',
    hash: `sha256:${sha256(entries.get('datapackage.json')!.bytes)}`,
  });
  const pages = entries
    .get('pages/pages.jsonl')!
    .bytes.toString('utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { url?: string; ts?: string; title?: string; format?: string });
  assert.equal(pages[0]?.format, 'json-pages-1.0');
  // One page a capture of an HTML page, revisits included (their title is the response's).
  assert.deepEqual(
    pages
      .slice(1)
      .map((page) => `${page.url?.slice(site.repository.baseUrl.length)} ${page.title}`)
      .sort(),
    ['/about.html About us', '/about.html About us', '/copy/about.html About us', '/index.html Home page', '/index.html Home page, edited', '/news.html News'],
  );
  assert.ok(pages.slice(1).every((page) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/.test(page.ts ?? '')));
  const again = join(work, 'wacz-again');
  await exportCommand(site.archive, again, '--wacz', '--name', 'site');
  assert.ok(readFileSync(join(folder, 'site.wacz')).equals(readFileSync(join(again, 'site.wacz'))));
});

test('the WACZ replays in ReplayWeb.page: an archived page, and a revisit, shown in headless Chromium', { skip: CHROMIUM_SKIP, timeout: 240_000 }, async () => {
  const wacz = join(work, 'wacz', 'site.wacz');
  assert.ok(existsSync(wacz), 'the WACZ test ran first');
  const { server, origin } = await replayServer(wacz);
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  try {
    const first = versions.find((version) => version.identifier === url('index.html'))!;
    const touched = versions.filter((version) => version.identifier === url('about.html')).at(-1)!;
    const timestamp = (version: CatalogVersion) => version.storedAt.slice(0, 19).replace(/[-:T]/g, '');
    for (const [version, text] of [
      [first, 'Welcome to the first home page'], // no longer on the site: only the archive has it
      [touched, 'About the archived site'], // a revisit of the bytes first captured at the copy's URL
    ] as const) {
      const page = await browser.newPage();
      const address = `${origin}/?source=${encodeURIComponent(`${origin}/test.wacz`)}#view=pages&url=${encodeURIComponent(version.identifier)}&ts=${timestamp(version)}`;
      await page.goto(address, { timeout: 60_000 });
      // ReplayWeb.page shows the page in an iframe inside its shadow DOM: look in every frame.
      const deadline = Date.now() + 120_000;
      let shown: string | undefined;
      while (shown === undefined) {
        for (const frame of page.frames()) {
          const body = String(await frame.evaluate("document.body ? document.body.innerText : ''").catch(() => ''));
          if (body.includes(text) && frame.url().includes(version.identifier)) shown = frame.url();
        }
        if (shown !== undefined) break;
        assert.ok(Date.now() < deadline, `${version.identifier} shown within two minutes`);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      assert.match(shown, new RegExp(`/${timestamp(version)}[a-z_]*/`), 'the capture asked for');
      const screenshot = join(work, `replay-${timestamp(version)}.png`);
      await page.screenshot({ path: screenshot });
      assert.ok(statSync(screenshot).size > 0);
      await page.close();
    }
  } finally {
    await browser.close();
    server.close();
  }
});
