// Typos fail fast (issue 25): a URL that is not an absolute http(s) URL is a usage error of one
// line in every command that takes one; a source that never answered and whose name does not
// resolve (or whose port refuses) fails in seconds; one retry line per retry, naming the
// request; a --prefix that is not a DIDL format of the source is refused before anything is
// stored. The real command as a child process, the real repository behind a server on 127.0.0.1
// that can answer 503 or stop.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ArchiverError, Catalog, harvest, listChangedUrls } from '../packages/archiver/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OAIBAG = join(ROOT, 'packages/archiver/bin/oaibag.js');
const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;

let work: string;
let repository: Repository;
let server: Server;
let endpoint: string;
/** How many more requests matching `pattern` the server answers 503 (Retry-After: 0). */
let failing: { pattern: RegExp; left: number } | undefined;

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs `oaibag` asynchronously (the repository answering it lives in this process). */
function oaibag(args: string[], options: { killOn?: RegExp } = {}): Promise<Run> {
  const started = Date.now();
  const child = spawn(process.execPath, [OAIBAG, ...args], { cwd: work, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
    if (options.killOn?.test(stderr)) child.kill('SIGKILL');
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr, ms: Date.now() - started });
    });
  });
}

const lines = (text: string): string[] => text.split('\n').filter((line) => line !== '');

/** Exit 2 and one line on stderr naming `name` and `shownValue`, no stack trace. */
function assertUsageLine(run: Run, name: string, shownValue: string, what: string): void {
  assert.equal(run.status, 2, `${what}: ${run.stderr}`);
  assert.equal(lines(run.stderr).length, 1, `${what}: one line, got:\n${run.stderr}`);
  assert.doesNotMatch(run.stderr, /^\s+at /m, `${what}: a stack trace`);
  assert.ok(run.stderr.startsWith(`oaibag: ${name}: ${JSON.stringify(shownValue)} `), `${what}: ${run.stderr}`);
  assert.match(run.stderr, /\[ERR_ARCHIVE_USAGE\] \(hint: .+\)\n$/, what);
}

function write(path: string, content: string): void {
  const file = join(work, 'site', path);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, content);
  utimesSync(file, YEAR_2000, YEAR_2000);
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-fail-fast-'));
  for (let i = 0; i < 3; i++) write(`page-${i}.html`, `<p>page ${i}</p>`);
  server = createServer((req, res) => {
    if (failing && failing.left > 0 && failing.pattern.test(req.url ?? '')) {
      failing.left--;
      res.writeHead(503, { 'retry-after': '0', 'content-type': 'text/plain' }).end('busy');
      return;
    }
    repository.handler(req, res);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  repository = await createRepository({
    root: join(work, 'site'),
    index: join(work, 'index.sqlite'),
    baseUrl: base,
    watch: false,
    rescanSeconds: 0,
    pageRecords: 1,
  });
  endpoint = `${base}/oai`;
});

after(async () => {
  server.closeAllConnections();
  server.close();
  await repository.close();
  rmSync(work, { recursive: true, force: true });
});

test('a URL that is not an absolute http(s) URL is exit 2 and one line naming the option and the value, in every command', async () => {
  const config = join(work, 'mirror.json');
  writeFileSync(config, JSON.stringify({ archive: 'archive-m', sources: [{ baseUrl: '127.0.0.1:8080/oai', every: '1h' }] }));
  mkdirSync(join(work, 'delivery'), { recursive: true });
  writeFileSync(join(work, 'delivery', 'index.html'), '<p>x</p>');
  const cases: { args: string[]; name: string; value: string }[] = [
    { args: ['harvest', '127.0.0.1:8080/oai', '--archive', 'archive-h'], name: 'BASEURL', value: '127.0.0.1:8080/oai' },
    { args: ['harvest', 'ftp://example.org/oai', '--archive', 'archive-h'], name: 'BASEURL', value: 'ftp://example.org/oai' },
    { args: ['harvest', 'localhost:8080/oai', '--archive', 'archive-h'], name: 'BASEURL', value: 'localhost:8080/oai' },
    { args: ['harvest', 'http:example.org/oai', '--archive', 'archive-h'], name: 'BASEURL', value: 'http:example.org/oai' },
    { args: ['harvest', 'http://', '--archive', 'archive-h'], name: 'BASEURL', value: 'http://' },
    { args: ['urls', 'example.org/oai'], name: 'BASEURL', value: 'example.org/oai' },
    { args: ['urls', 'file:///etc/passwd'], name: 'BASEURL', value: 'file:///etc/passwd' },
    { args: ['mirror', 'example.org/oai', '--every', '1h', '--archive', 'archive-m'], name: 'BASEURL', value: 'example.org/oai' },
    { args: ['mirror', '--config', config], name: `${config}: sources[0].baseUrl`, value: '127.0.0.1:8080/oai' },
    { args: ['serve', '--archive', 'archive-s', '--base-url', 'archive.example.org'], name: '--base-url', value: 'archive.example.org' },
    {
      args: ['serve', '--archive', 'archive-s', '--base-url', 'https://archive.example.org/a?b=c'],
      name: '--base-url',
      value: 'https://archive.example.org/a?b=c',
    },
    { args: ['export-rdf', '--archive', 'archive-s', '--base-url', 'archive.example.org'], name: '--base-url', value: 'archive.example.org' },
    { args: ['import', 'delivery', '--archive', 'archive-i', '--base-url', 'www.example.org/'], name: '--base-url', value: 'www.example.org/' },
    {
      args: ['import', 'delivery', '--archive', 'archive-i', '--base-url', 'https://www.example.org/', '--source', 'gopher://x/oai'],
      name: '--source',
      value: 'gopher://x/oai',
    },
  ];
  const runs = await Promise.all(cases.map((entry) => oaibag(entry.args)));
  cases.forEach((entry, index) => assertUsageLine(runs[index]!, entry.name, entry.value, entry.args.join(' ')));
  assert.match(runs[0]!.stderr, /is not an http\(s\) URL \[ERR_ARCHIVE_USAGE\] \(hint: write https:\/\/127\.0\.0\.1:8080\/oai/);
  assert.match(runs[1]!.stderr, /has the scheme ftp, not http or https/);
  assert.match(runs[9]!.stderr, /hint: write https:\/\/archive\.example\.org/);
  for (const folder of ['archive-h', 'archive-m', 'archive-s', 'archive-i']) assert.equal(existsSync(join(work, folder)), false, `${folder} was created`);
});

test('a password in a base URL is refused without being repeated', async () => {
  const run = await oaibag(['harvest', 'http://me:s3cret@example.org/oai', '--archive', 'archive-p']);
  assertUsageLine(run, 'BASEURL', 'http://me:***@example.org/oai', 'credentials');
  assert.doesNotMatch(run.stderr, /s3cret/);
  assert.match(run.stderr, /--password-file/);
});

test('the library refuses such a URL with a coded error, not a TypeError, and opens no archive', async () => {
  await assert.rejects(
    listChangedUrls({ baseUrl: '127.0.0.1:8080/oai', onPage: () => undefined }),
    (error: unknown) => error instanceof ArchiverError && error.code === 'ERR_ARCHIVE_USAGE',
  );
  const archiveDir = join(work, 'archive-lib');
  await assert.rejects(
    harvest({ baseUrl: 'ftp://example.org/oai', archiveDir }),
    (error: unknown) => error instanceof ArchiverError && error.code === 'ERR_ARCHIVE_USAGE',
  );
  assert.equal(existsSync(archiveDir), false);
});

test('a host name that does not resolve fails in seconds when the source never answered (exit 3, one line)', async () => {
  for (const args of [
    ['harvest', 'http://no-such-host.invalid/oai', '--archive', 'archive-dns'],
    ['urls', 'http://no-such-host.invalid/oai'],
  ]) {
    const run = await oaibag(args);
    assert.equal(run.status, 3, run.stderr);
    assert.ok(run.ms < 10_000, `took ${run.ms} ms`);
    assert.deepEqual(lines(run.stderr).length, 1, run.stderr);
    assert.match(
      run.stderr,
      /^oaibag: Identify http:\/\/no-such-host\.invalid\/oai\?verb=Identify: the host name no-such-host\.invalid does not resolve \((ENOTFOUND|EAI_AGAIN)\) \[ERR_HARVEST_UNREACHABLE\] \(hint: check the base URL/,
    );
  }
});

test('a refused connection fails at once when the source never answered, and is retried once it has', async () => {
  // A port that was open a moment ago and is closed now: nothing listens there.
  const probe = createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const closedPort = (probe.address() as AddressInfo).port;
  probe.close();
  await once(probe, 'close');
  const never = await oaibag(['harvest', `http://127.0.0.1:${closedPort}/oai`, '--archive', 'archive-refused']);
  assert.equal(never.status, 3, never.stderr);
  assert.ok(never.ms < 10_000, `took ${never.ms} ms`);
  assert.match(
    never.stderr,
    /^oaibag: Identify \S+: 127\.0\.0\.1:\d+ refused the connection \(ECONNREFUSED\) \[ERR_HARVEST_UNREACHABLE\] \(hint: check the port/,
  );
  assert.equal(lines(never.stderr).length, 1, never.stderr);

  // A source that answered before: the same refusal is a passing failure, retried.
  const known = createServer((req, res) => repository.handler(req, res));
  known.listen(0, '127.0.0.1');
  await once(known, 'listening');
  const knownUrl = `http://127.0.0.1:${(known.address() as AddressInfo).port}/oai`;
  const first = await oaibag(['harvest', knownUrl, '--archive', 'archive-known']);
  assert.equal(first.status, 0, first.stderr);
  known.closeAllConnections();
  known.close();
  await once(known, 'close');
  const again = await oaibag(['harvest', knownUrl, '--archive', 'archive-known'], { killOn: /retry 1 in/ });
  assert.match(again.stderr, /^oaibag: retry 1 in \d+ s: Identify \S+verb=Identify: connect ECONNREFUSED/m);
});

test('one retry line per retry, naming the request: Identify, then a page by its resumption token', async () => {
  failing = { pattern: /verb=Identify/, left: 3 };
  const identify = await oaibag(['harvest', endpoint, '--archive', 'archive-retry']);
  assert.equal(identify.status, 0, identify.stderr);
  const identifyRetries = lines(identify.stderr).filter((line) => /^oaibag: retry /.test(line));
  assert.deepEqual(
    identifyRetries.map((line) => line.replace(/ in \d+ s/, '')),
    [1, 2, 3].map((n) => `oaibag: retry ${n}: Identify ${endpoint}?verb=Identify: HTTP 503`),
  );

  // A new archive: the list of three records comes in three pages, two of them by token.
  failing = { pattern: /resumptionToken=/, left: 2 };
  const page = await oaibag(['harvest', endpoint, '--archive', 'archive-retry2']);
  assert.equal(page.status, 0, page.stderr);
  const pageRetries = lines(page.stderr).filter((line) => /^oaibag: retry /.test(line));
  assert.equal(pageRetries.length, 2, page.stderr);
  pageRetries.forEach((line, index) => {
    assert.match(line, new RegExp(`^oaibag: retry ${index + 1} in \\d+ s: ListRecords \\S+verb=ListRecords&resumptionToken=\\S+: HTTP 503$`));
  });
  failing = undefined;
});

test('a --prefix the source offers in another namespace than DIDL, or does not offer, is refused before anything is stored (exit 3)', async () => {
  const dc = await oaibag(['harvest', endpoint, '--archive', 'archive-dc', '--prefix', 'oai_dc']);
  assert.equal(dc.status, 3, dc.stderr);
  assert.equal(lines(dc.stderr).length, 1, dc.stderr);
  assert.match(
    dc.stderr,
    /offers oai_dc in the namespace http:\/\/www\.openarchives\.org\/OAI\/2\.0\/oai_dc\/, not MPEG-21 DIDL \(urn:mpeg:mpeg21:2002:02-DIDL-NS\) \[ERR_HARVEST_FORMAT\] \(hint: harvest with --prefix oai_didl\)/,
  );
  const missing = await oaibag(['harvest', endpoint, '--archive', 'archive-dc', '--prefix', 'didl']);
  assert.equal(missing.status, 3, missing.stderr);
  assert.match(missing.stderr, /does not offer the metadata format didl \(it offers [^)]*oai_didl[^)]*\) \[ERR_HARVEST_FORMAT\]/);

  const bagFiles = readdirSync(join(work, 'archive-dc'), { recursive: true }).filter((name) => String(name).endsWith('bag-info.txt'));
  assert.deepEqual(bagFiles, [], 'no bag');
  const catalog = Catalog.openForReading(join(work, 'archive-dc'));
  try {
    assert.deepEqual(catalog.bags(), []);
    assert.equal(
      catalog.status().sources.reduce((sum, source) => sum + source.versions, 0),
      0,
      'no version',
    );
  } finally {
    catalog.close();
  }
  // `urls` lists identifiers in any format the source offers.
  const urls = await oaibag(['urls', endpoint, '--prefix', 'oai_dc']);
  assert.equal(urls.status, 0, urls.stderr);
  assert.match(urls.stdout, /page-0\.html/);
});
