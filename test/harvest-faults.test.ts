// End to end: the harvester against the real repository, through a proxy that misbehaves on
// purpose (issue 4, "Faults"). The repository is started with its base URL set to the proxy's,
// so identifiers, By-Reference refs and the OAI endpoint all point at the proxy: every request
// the harvester makes passes through it. Each test scripts which request misbehaves and how,
// then checks the harvest's summary, the catalog (versions, failures, watermark) and the disk
// (every stored bag verifies, no bag for a refused record, no temporary file left).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { Agent, createServer, type IncomingHttpHeaders, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { ArchiverError, Catalog, type CatalogFailure, type HarvestSummary, harvest, reindexArchive, verifyBag } from '../packages/archiver/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';
import { payloadOf } from './batch-bags.ts';

const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;
const FAST_RETRY = { retries: 2, baseDelayMs: 10, maxDelayMs: 100 };
const nextSecond = () => new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));

// Five files, two records a page: three pages. big.bin is over byValueMax: By-Reference.
const FILES = ['alpha.txt', 'bravo.txt', 'charlie.txt', 'delta.txt', 'big.bin'] as const;
const BY_REFERENCE = 'big.bin';
const ONE_EACH: Record<string, number> = Object.fromEntries(FILES.map((path) => [path, 1]));

// ---------------------------------------------------------------------------------------------
// The misbehaving proxy

/** A request as the proxy sees it, with its place in the list when it is a ListRecords page. */
interface ProxiedRequest {
  path: string;
  verb: string | null;
  /** ListRecords: 1 for a request without a token, n + 1 for a token issued by page n, 0 for an unknown token. */
  page: number;
  /** How many times this page (or this path, for other requests) has been asked for, this one included. */
  attempt: number;
}

/** What the proxy does instead of forwarding faithfully. */
type Fault =
  | { kind: 'status'; status: number; headers?: Record<string, string> }
  | { kind: 'forward'; path: string }
  /** `at`: where the body is cut, in bytes (default: half of it). */
  | { kind: 'reset'; at?: (body: Buffer) => number }
  | { kind: 'truncate'; at?: (body: Buffer) => number }
  | { kind: 'rewrite'; edit: (body: string) => string }
  | { kind: 'body'; bytes: Buffer };

type Script = (request: ProxiedRequest) => Fault | undefined;

interface Proxy {
  url: string;
  server: Server;
  /** Which page issued each resumption token (as the repository sent it). */
  tokenPage: Map<string, number>;
  /** The token each page carried (the latest, as the repository sent it). */
  pageToken: Map<number, string>;
  /** Every request, in order, with the fault applied to it. */
  log: Array<{ path: string; page: number; fault: Fault['kind'] | null }>;
  attempts: Map<string, number>;
  script: Script;
  upstreamPort: number;
}

const HOP_BY_HOP = ['connection', 'keep-alive', 'transfer-encoding', 'content-length'];
const upstreamAgent = new Agent({ keepAlive: false });

function responseHeaders(headers: IncomingHttpHeaders, keepLength: boolean): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    if (HOP_BY_HOP.includes(name) && !(keepLength && name === 'content-length')) continue;
    out[name] = value;
  }
  return out;
}

function forward(proxy: Proxy, req: IncomingMessage, path: string): Promise<IncomingMessage> {
  const headers = { ...req.headers };
  // Plain bodies, so that the faults can rewrite text.
  delete headers['accept-encoding'];
  delete headers.connection;
  return new Promise((resolve, reject) => {
    const upstream = request({ host: '127.0.0.1', port: proxy.upstreamPort, path, method: req.method, headers, agent: upstreamAgent }, resolve);
    upstream.on('error', reject);
    upstream.end();
  });
}

async function readAll(stream: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

async function handle(proxy: Proxy, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = req.url ?? '/';
  const url = new URL(path, proxy.url);
  const verb = url.searchParams.get('verb');
  const token = url.searchParams.get('resumptionToken');
  const page = verb === 'ListRecords' ? (token === null ? 1 : (proxy.tokenPage.get(token) ?? -1) + 1) : 0;
  const key = verb === 'ListRecords' ? `page ${page}` : path;
  const attempt = (proxy.attempts.get(key) ?? 0) + 1;
  proxy.attempts.set(key, attempt);
  const fault = proxy.script({ path, verb, page, attempt });
  proxy.log.push({ path, page, fault: fault?.kind ?? null });

  if (fault?.kind === 'status') {
    res.writeHead(fault.status, { 'content-type': 'text/plain', ...fault.headers });
    res.end(`${fault.status} from the proxy\n`);
    return;
  }
  const upstream = await forward(proxy, req, fault?.kind === 'forward' ? fault.path : path);
  if (verb !== 'ListRecords' && (fault === undefined || fault.kind === 'forward')) {
    // Files and small answers stream straight through.
    res.writeHead(upstream.statusCode ?? 502, responseHeaders(upstream.headers, true));
    upstream.pipe(res);
    return;
  }
  // Pages are small (two records): read whole, so that their tokens can be noted and faults applied.
  const body = await readAll(upstream);
  const issued = /<resumptionToken[^>]*>([^<]+)<\/resumptionToken>/.exec(body.toString('utf8'))?.[1];
  if (issued !== undefined && page > 0) {
    proxy.tokenPage.set(issued, page);
    proxy.pageToken.set(page, issued);
  }
  const status = upstream.statusCode ?? 502;
  switch (fault?.kind) {
    case 'reset':
      // The promised length, half the bytes, then the connection is gone.
      res.writeHead(status, responseHeaders(upstream.headers, true));
      res.write(body.subarray(0, fault.at?.(body) ?? body.length >> 1), () => res.destroy());
      return;
    case 'truncate':
      // A clean end of the HTTP message (chunked), but the XML stops half-way.
      res.writeHead(status, responseHeaders(upstream.headers, false));
      res.end(body.subarray(0, fault.at?.(body) ?? body.length >> 1));
      return;
    case 'rewrite': {
      const edited = Buffer.from(fault.edit(body.toString('utf8')), 'utf8');
      res.writeHead(status, { ...responseHeaders(upstream.headers, false), 'content-length': String(edited.length) });
      res.end(edited);
      return;
    }
    case 'body':
      res.writeHead(status, { ...responseHeaders(upstream.headers, false), 'content-length': String(fault.bytes.length) });
      res.end(fault.bytes);
      return;
    default:
      res.writeHead(status, { ...responseHeaders(upstream.headers, false), 'content-length': String(body.length) });
      res.end(body);
  }
}

async function startProxy(): Promise<Proxy> {
  const proxy: Proxy = {
    url: '',
    server: createServer(),
    tokenPage: new Map(),
    pageToken: new Map(),
    log: [],
    attempts: new Map(),
    script: () => undefined,
    upstreamPort: 0,
  };
  proxy.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    handle(proxy, req, res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(proxy.server.address() as AddressInfo).port}`;
  return proxy;
}

// ---------------------------------------------------------------------------------------------
// The site, the repository behind the proxy, and what every test checks

let work: string;
let site: string;
let proxy: Proxy;
let repository: Repository;
let endpoint: string;

function write(path: string, content: string | Buffer, mtime = YEAR_2000): void {
  mkdirSync(dirname(join(site, path)), { recursive: true });
  writeFileSync(join(site, path), content);
  utimesSync(join(site, path), mtime, mtime);
}

const identifierOf = (path: string) => `${proxy.url}/${path}`;
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** Sets the script of the next harvest and forgets what the proxy saw before. */
function script(fn: Script): void {
  proxy.script = fn;
  proxy.log = [];
  proxy.attempts.clear();
}

function newArchive(name: string): string {
  return join(work, `archive-${name}`);
}

/** Applies `edit` to the text of one record (from its header to its end) inside a page. */
function editRecord(body: string, path: string, edit: (record: string) => string): string {
  const start = body.indexOf(`<identifier>${identifierOf(path)}</identifier>`);
  if (start < 0) return body;
  const end = body.indexOf('</record>', start);
  return body.slice(0, start) + edit(body.slice(start, end)) + body.slice(end);
}

/**
 * A cut half-way through a page's second record: the first record is complete before the
 * break, so it is delivered again when the page is asked again (and must not be stored twice).
 */
/**
 * Inside the page's first record. A cut at half the body fell on either side of the first
 * record's end depending on a few bytes of the envelope (the token, the dates), so whether that
 * record could be stored changed from run to run (seen once in 15 full runs).
 */
function insideFirstRecord(body: Buffer): number {
  const firstEnd = body.indexOf('</record>');
  assert.ok(firstEnd > 0, 'the page has a record');
  return firstEnd - 1;
}

function midSecondRecord(body: Buffer): number {
  const firstEnd = body.indexOf('</record>');
  const secondEnd = body.indexOf('</record>', firstEnd + 1);
  assert.ok(firstEnd > 0 && secondEnd > firstEnd, 'the page has two records');
  return (firstEnd + secondEnd) >> 1;
}

/** How many times the proxy was asked for ListRecords page `page`. */
function pageRequests(page: number): number {
  return proxy.log.filter((entry) => entry.page === page).length;
}

interface ArchiveState {
  /** Files with a stored version (each exactly one), whose bags verify and hold the site's bytes. */
  stored: number;
  failures: CatalogFailure[];
  watermark: string | null;
}

/**
 * Checks the archive on disk and in the catalog: `refused` files have no version, no file has
 * a duplicate version (`versions` gives how many each file must have, default at most one),
 * every stored bag verifies and its latest payload is the site's bytes (except `stale` files,
 * changed since), the bags on disk are exactly the recorded ones (none for a refused record,
 * no half-written one), and `<archive>/tmp` is empty or absent.
 */
async function checkArchive(
  archive: string,
  expect: { refused?: readonly string[]; versions?: Record<string, number>; stale?: readonly string[] } = {},
): Promise<ArchiveState> {
  const refused = expect.refused ?? [];
  const versionsOf = expect.versions ?? {};
  const catalog = Catalog.open(archive);
  const recorded = new Set<string>();
  let stored = 0;
  let state: Omit<ArchiveState, 'stored'>;
  try {
    const source = catalog.source(`${proxy.url}/oai`);
    assert.ok(source, 'the source is recorded');
    for (const path of FILES) {
      const versions = catalog.versions(source.id, identifierOf(path));
      if (refused.includes(path)) assert.equal(versions.length, 0, `${path} was refused, yet has a version`);
      const wanted = versionsOf[path];
      if (wanted !== undefined) assert.equal(versions.length, wanted, `${path}: versions`);
      else assert.ok(versions.length <= 1, `${path} has ${versions.length} versions (a duplicate)`);
      if (versions.length > 0) stored++;
      for (const version of versions) {
        if (recorded.has(version.bagPath)) continue;
        recorded.add(version.bagPath);
        const report = await verifyBag(join(archive, version.bagPath));
        assert.equal(report.valid, true, `${version.bagPath}: ${JSON.stringify(report.problems)}`);
      }
      const latest = versions.at(-1);
      if (latest) assert.equal(sha256(readFileSync(payloadOf(archive, catalog, latest.id))), latest.sha256, `${path}: the payload's digest`);
      if (latest && !expect.stale?.includes(path))
        assert.deepEqual(readFileSync(payloadOf(archive, catalog, latest.id)), readFileSync(join(site, path)), `${path}: the payload`);
    }
    for (const bag of catalog.bags()) recorded.add(bag.bagPath);
    state = { failures: catalog.openFailures(source.id), watermark: source.watermark };
  } finally {
    catalog.close();
  }
  assert.deepEqual(bagsOnDisk(archive).sort(), [...recorded].sort(), 'the bags on disk are exactly the recorded bags');
  const tmp = join(archive, 'tmp');
  assert.deepEqual(existsSync(tmp) ? readdirSync(tmp) : [], [], 'no temporary file or half-written bag is left');
  return { stored, ...state };
}

/** Relative paths of every directory under aips/ that holds a bagit.txt. */
function bagsOnDisk(archive: string): string[] {
  const found: string[] = [];
  const walk = (relative: string) => {
    const entries = readdirSync(join(archive, relative), { withFileTypes: true });
    if (entries.some((entry) => entry.isFile() && entry.name === 'bagit.txt')) {
      found.push(relative);
      return;
    }
    for (const entry of entries) if (entry.isDirectory()) walk(`${relative}/${entry.name}`);
  };
  if (existsSync(join(archive, 'aips'))) walk('aips');
  return found;
}

/**
 * One batch bag a page (two records): every fault lands between committed bags, where a kill or
 * a failure in one batch must not be forgotten by the next (issue 24). The default bounds (1,000
 * records) would put the whole five-record list in one bag.
 */
const SMALL_BATCHES = { records: 2, bytes: 1 << 30 };

function run(archive: string): Promise<HarvestSummary> {
  return harvest({ baseUrl: endpoint, archiveDir: archive, retry: FAST_RETRY, batchBounds: SMALL_BATCHES });
}

function failureOf(failures: CatalogFailure[], path: string): CatalogFailure {
  const failure = failures.find((candidate) => candidate.identifier === identifierOf(path));
  assert.ok(failure, `a failure is recorded for ${path}; found ${JSON.stringify(failures)}`);
  return failure;
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-faults-'));
  site = join(work, 'site');
  write('alpha.txt', 'alpha '.repeat(40));
  write('bravo.txt', 'bravo, a short one');
  write('charlie.txt', 'charlie '.repeat(12));
  write('delta.txt', 'delta '.repeat(20));
  write(BY_REFERENCE, Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 7) % 251)));
  proxy = await startProxy();
  repository = await createRepository({
    root: site,
    index: join(work, 'index.sqlite'),
    watch: false,
    rescanSeconds: 0,
    byValueMax: 1000,
    pageRecords: 2,
    baseUrl: proxy.url,
  });
  await repository.listen(0, '127.0.0.1');
  proxy.upstreamPort = (repository.server.address() as AddressInfo).port;
  endpoint = `${proxy.url}/oai`;
});

after(async () => {
  await repository.close();
  await new Promise<void>((resolve) => {
    proxy.server.close(() => resolve());
    proxy.server.closeAllConnections();
  });
  upstreamAgent.destroy();
  rmSync(work, { recursive: true, force: true });
});

function assertComplete(summary: HarvestSummary): void {
  assert.equal(summary.status, 'complete');
  assert.equal(summary.added, FILES.length);
  assert.equal(summary.failed, 0);
  assert.ok(summary.watermark, 'the watermark is set after a complete list');
}

// ---------------------------------------------------------------------------------------------
// Transient HTTP failures

test('503 with Retry-After: 0 on the first ListRecords: retried, the harvest completes', async () => {
  const archive = newArchive('503');
  script(({ page, attempt }) => (page === 1 && attempt === 1 ? { kind: 'status', status: 503, headers: { 'retry-after': '0' } } : undefined));
  const summary = await run(archive);
  assertComplete(summary);
  assert.equal(pageRequests(1), 2, 'the first page was asked again');
  const state = await checkArchive(archive);
  assert.equal(state.stored, FILES.length);
  assert.deepEqual(state.failures, []);
});

test('500 once on a later page: retried, the harvest completes', async () => {
  const archive = newArchive('500');
  script(({ page, attempt }) => (page === 2 && attempt === 1 ? { kind: 'status', status: 500 } : undefined));
  const summary = await run(archive);
  assertComplete(summary);
  assert.equal(pageRequests(2), 2);
  const state = await checkArchive(archive);
  assert.equal(state.stored, FILES.length);
  assert.deepEqual(state.failures, []);
});

// ---------------------------------------------------------------------------------------------
// Pages that break off

test('a connection reset in the middle of a page: the page is asked again, no duplicate version', async () => {
  const archive = newArchive('reset');
  script(({ page, attempt }) => (page === 1 && attempt === 1 ? { kind: 'reset', at: midSecondRecord } : undefined));
  const summary = await run(archive);
  assertComplete(summary);
  assert.equal(summary.records, FILES.length + 1, 'the record before the break came twice');
  assert.equal(pageRequests(1), 2, 'the broken page was asked again');
  const state = await checkArchive(archive, { versions: ONE_EACH });
  assert.deepEqual(state.failures, []);
});

test('truncated XML once: the page is asked again rather than taken as a short list', async () => {
  const archive = newArchive('truncated-once');
  script(({ page, attempt }) => (page === 2 && attempt === 1 ? { kind: 'truncate', at: midSecondRecord } : undefined));
  const summary = await run(archive);
  assertComplete(summary);
  assert.equal(summary.records, FILES.length + 1, 'the record before the cut came twice');
  assert.equal(pageRequests(2), 2, 'the truncated page was asked again');
  assert.equal(pageRequests(3), 1, 'the list went on past the truncated page');
  const state = await checkArchive(archive, { versions: ONE_EACH });
  assert.deepEqual(state.failures, []);
});

test('truncated XML every time: the harvest fails with a clear error, the watermark does not move', async () => {
  const archive = newArchive('truncated-always');
  script(({ page }) => (page === 2 ? { kind: 'truncate', at: insideFirstRecord } : undefined));
  const outcome = await run(archive).then(
    (summary) => summary,
    (error: unknown) => error,
  );
  assert.equal(pageRequests(2), FAST_RETRY.retries + 1, 'the page was asked for as often as the policy allows');
  assert.equal(pageRequests(3), 0, 'the list did not go on past the broken page');
  if (outcome instanceof Error) {
    assert.ok(outcome instanceof ArchiverError, `an ArchiverError, not ${outcome.name}: ${outcome.message}`);
    assert.equal(outcome.code, 'ERR_HARVEST_PROTOCOL');
    assert.match(outcome.message, /ListRecords page .* failed 3 times/);
  } else {
    assert.equal((outcome as HarvestSummary).status, 'failed');
  }
  const state = await checkArchive(archive);
  assert.equal(state.watermark, null, 'the watermark did not move');
  assert.ok(state.stored <= 2, `only the records of the first page could be stored, not ${state.stored}`);
  // The catalog must tell what happened: the harvest failed, and why (a list failure).
  const catalog = Catalog.open(archive);
  try {
    const source = catalog.source(endpoint)!;
    assert.equal(catalog.lastHarvest(source.id)?.status, 'failed', 'the harvest is recorded as failed, not left running');
    assert.ok(
      state.failures.some((failure) => failure.stage === 'list' && failure.identifier === null),
      `a list failure is recorded; found ${JSON.stringify(state.failures)}`,
    );
  } finally {
    catalog.close();
  }
});

test('after a harvest that failed on a truncated page, a harvest without the fault completes the archive', async () => {
  const archive = newArchive('truncated-then-clean');
  script(({ page }) => (page === 2 ? { kind: 'truncate' } : undefined));
  await run(archive).catch(() => undefined);
  script(() => undefined);
  const summary = await run(archive);
  assert.equal(summary.status, 'complete');
  assert.equal(summary.failed, 0);
  assert.ok(summary.watermark);
  const state = await checkArchive(archive, { versions: ONE_EACH });
  assert.deepEqual(state.failures, []);
});

// ---------------------------------------------------------------------------------------------
// Records whose bytes disagree with what they promise

test("a record's Content-Length rewritten (By-Value and By-Reference): failures with expected and found", async () => {
  const archive = newArchive('length');
  const bravoLength = readFileSync(join(site, 'bravo.txt')).length;
  const setLength = (length: number) => (record: string) =>
    record.replace(/<http:Content-Length>\d+<\/http:Content-Length>/, `<http:Content-Length>${length}</http:Content-Length>`);
  script(({ page }) =>
    page > 0
      ? { kind: 'rewrite', edit: (body) => editRecord(editRecord(body, 'bravo.txt', setLength(bravoLength + 1)), BY_REFERENCE, setLength(3001)) }
      : undefined,
  );
  const summary = await run(archive);
  assert.equal(summary.status, 'partial');
  assert.equal(summary.added, FILES.length - 2);
  assert.equal(summary.failed, 2);
  assert.equal(summary.watermark, null);
  const state = await checkArchive(archive, { refused: ['bravo.txt', BY_REFERENCE] });
  assert.equal(state.stored, FILES.length - 2);
  const bravo = failureOf(state.failures, 'bravo.txt');
  assert.equal(bravo.stage, 'verify');
  assert.equal(bravo.code, 'ERR_DIDL_LENGTH_MISMATCH');
  assert.deepEqual([bravo.expected, bravo.found], [String(bravoLength + 1), String(bravoLength)]);
  const big = failureOf(state.failures, BY_REFERENCE);
  assert.equal(big.stage, 'verify');
  assert.deepEqual([big.expected, big.found], ['3001', '3000']);
  assert.match(big.message, /content-length/i);
  assert.equal(state.failures.length, 2);
});

test('a digest mismatch (By-Value and By-Reference): failures with expected and found', async () => {
  const archive = newArchive('digest');
  const wrong = 'ab'.repeat(32);
  const setDigest = (record: string) =>
    record.replace(/<premis:messageDigest>[0-9a-f]+<\/premis:messageDigest>/, `<premis:messageDigest>${wrong}</premis:messageDigest>`);
  script(({ page }) =>
    page > 0 ? { kind: 'rewrite', edit: (body) => editRecord(editRecord(body, 'charlie.txt', setDigest), BY_REFERENCE, setDigest) } : undefined,
  );
  const summary = await run(archive);
  assert.equal(summary.status, 'partial');
  assert.equal(summary.added, FILES.length - 2);
  assert.equal(summary.failed, 2);
  assert.equal(summary.watermark, null);
  const state = await checkArchive(archive, { refused: ['charlie.txt', BY_REFERENCE] });
  const charlie = failureOf(state.failures, 'charlie.txt');
  assert.equal(charlie.stage, 'verify');
  assert.equal(charlie.code, 'ERR_DIDL_DIGEST_MISMATCH');
  assert.deepEqual([charlie.expected, charlie.found], [wrong, sha256(readFileSync(join(site, 'charlie.txt')))]);
  const big = failureOf(state.failures, BY_REFERENCE);
  assert.equal(big.stage, 'verify');
  assert.deepEqual([big.expected, big.found], [wrong, sha256(readFileSync(join(site, BY_REFERENCE)))]);
});

test('a Component with a second By-Value Resource: the record is refused whole, never stored without it', async () => {
  const archive = newArchive('two-by-value');
  // The same Resource written twice: one file per By-Value Resource is decoded, but a version
  // keeps one payload per Component, so one of the two would otherwise be dropped unseen.
  const doubled = (record: string) => record.replace(/<didl:Resource[^>]*encoding="base64">[^<]*<\/didl:Resource>/, (resource) => resource + resource);
  script(({ page }) => (page > 0 ? { kind: 'rewrite', edit: (body) => editRecord(body, 'bravo.txt', doubled) } : undefined));
  const summary = await run(archive);
  assert.equal(summary.status, 'partial');
  assert.deepEqual({ added: summary.added, failed: summary.failed }, { added: FILES.length - 1, failed: 1 });
  const state = await checkArchive(archive, { refused: ['bravo.txt'] });
  const bravo = failureOf(state.failures, 'bravo.txt');
  assert.equal(bravo.stage, 'verify');
  assert.match(bravo.message, /a Component carries 2 By-Value Resources; one per Component is supported/);
});

test('a By-Reference URL answering 404: a fetch failure, the other records stored', async () => {
  const archive = newArchive('404');
  script(({ path }) => (path === `/${BY_REFERENCE}` ? { kind: 'status', status: 404 } : undefined));
  const summary = await run(archive);
  assert.equal(summary.status, 'partial');
  assert.equal(summary.added, FILES.length - 1);
  assert.equal(summary.failed, 1);
  assert.equal(summary.watermark, null);
  const state = await checkArchive(archive, { refused: [BY_REFERENCE] });
  assert.equal(state.stored, FILES.length - 1);
  const big = failureOf(state.failures, BY_REFERENCE);
  assert.equal(big.stage, 'fetch');
  assert.match(big.message, /404/);
  assert.equal(state.failures.length, 1);
});

test('a By-Reference URL answering changed bytes of the same length: a verify failure with both digests', async () => {
  const archive = newArchive('changed');
  const original = readFileSync(join(site, BY_REFERENCE));
  const changed = Buffer.from(original);
  changed[1500] = (changed[1500]! + 1) % 256;
  script(({ path }) => (path === `/${BY_REFERENCE}` ? { kind: 'body', bytes: changed } : undefined));
  const summary = await run(archive);
  assert.equal(summary.status, 'partial');
  assert.equal(summary.added, FILES.length - 1);
  assert.equal(summary.failed, 1);
  const state = await checkArchive(archive, { refused: [BY_REFERENCE] });
  const big = failureOf(state.failures, BY_REFERENCE);
  assert.equal(big.stage, 'verify');
  assert.deepEqual([big.expected, big.found], [sha256(original), sha256(changed)]);
  // The fault gone, the next harvest stores it and resolves the failure.
  script(() => undefined);
  const again = await run(archive);
  assert.equal(again.status, 'complete');
  assert.equal(again.added, 1);
  const after = await checkArchive(archive, { versions: ONE_EACH });
  assert.equal(after.stored, FILES.length);
  assert.deepEqual(after.failures, []);
});

// ---------------------------------------------------------------------------------------------
// Resumption tokens

test('badResumptionToken on the second page once: the list restarts from the checkpoint and completes', async () => {
  const archive = newArchive('bad-token');
  script(({ page, attempt, path }) =>
    page === 2 && attempt === 1 ? { kind: 'forward', path: path.replace(/resumptionToken=[^&]+/, 'resumptionToken=forgotten') } : undefined,
  );
  const summary = await run(archive);
  assertComplete(summary);
  assert.equal(pageRequests(1), 2, 'the list was started again');
  assert.equal(summary.records, FILES.length + 2, 'the first page came twice, recognised');
  const state = await checkArchive(archive, { versions: ONE_EACH });
  assert.deepEqual(state.failures, []);
});

test('a repeating resumption token: the harvest ends failed with a tokenLoop failure, the watermark unchanged', async () => {
  const archive = newArchive('token-loop');
  script(({ page }) =>
    page === 2
      ? { kind: 'rewrite', edit: (body) => body.replace(/(<resumptionToken[^>]*>)[^<]+(<\/resumptionToken>)/, `$1${proxy.pageToken.get(1)}$2`) }
      : undefined,
  );
  const summary = await run(archive);
  assert.equal(summary.status, 'failed');
  assert.equal(summary.watermark, null);
  assert.equal(pageRequests(3), 0);
  const state = await checkArchive(archive);
  assert.equal(state.stored, 4, 'the records of the two pages read are stored');
  assert.equal(state.watermark, null);
  const loop = state.failures.find((failure) => failure.stage === 'list' && failure.code === 'tokenLoop');
  assert.ok(loop, `a tokenLoop list failure; found ${JSON.stringify(state.failures)}`);
  assert.equal(loop.identifier, null);
  // Without the fault, the next harvest finishes the list and resolves the list failure.
  script(() => undefined);
  const again = await run(archive);
  assert.equal(again.status, 'complete');
  assert.ok(again.watermark);
  const after = await checkArchive(archive, { versions: ONE_EACH });
  assert.deepEqual(after.failures, []);
});

// ---------------------------------------------------------------------------------------------
// Bad base64, on an incremental harvest: the watermark must stay where it was

test('bytes whose promised digest the archive holds are declined unkept, yet checked: other bytes under that digest are refused', async () => {
  const archive = newArchive('held-promise');
  script(() => undefined);
  assertComplete(await run(archive));

  await nextSecond();
  write('alpha.txt', 'alpha, rewritten '.repeat(20), Date.now() / 1000);
  write('delta.txt', readFileSync(join(site, 'delta.txt')), Date.now() / 1000); // a touch: the same bytes, a new date
  await repository.scan();
  await nextSecond();

  // alpha's new bytes arrive under bravo's digest, which the archive holds: the harvester
  // declines them as held, and the reader's own digest of them must still refuse the record.
  const bravoDigest = sha256(readFileSync(join(site, 'bravo.txt')));
  const promiseBravo = (record: string) => record.replace(/<premis:messageDigest>[0-9a-f]+</, `<premis:messageDigest>${bravoDigest}<`);
  script(({ page }) => (page > 0 ? { kind: 'rewrite', edit: (body) => editRecord(body, 'alpha.txt', promiseBravo) } : undefined));
  const second = await run(archive);
  assert.equal(second.status, 'partial');
  assert.deepEqual({ modified: second.modified, touched: second.touched, failed: second.failed }, { modified: 0, touched: 1, failed: 1 });
  const state = await checkArchive(archive, { versions: { 'alpha.txt': 1, 'delta.txt': 2 }, stale: ['alpha.txt'] });
  const alpha = failureOf(state.failures, 'alpha.txt');
  assert.equal(alpha.code, 'ERR_DIDL_DIGEST_MISMATCH');
  assert.deepEqual([alpha.expected, alpha.found], [bravoDigest, sha256(readFileSync(join(site, 'alpha.txt')))]);

  // delta's touch was declined too and is a revisit: its new version's bytes are the first bag's.
  const catalog = Catalog.open(archive);
  try {
    const source = catalog.source(endpoint)!;
    const [before, touched] = catalog.versions(source.id, identifierOf('delta.txt'));
    assert.equal(touched!.change, 'touched');
    assert.notEqual(touched!.bagPath, before!.bagPath);
    assert.deepEqual(
      catalog.versionParts(touched!.id).map((part) => part.bagPath),
      [before!.bagPath],
    );
  } finally {
    catalog.close();
  }
});

test('corrupted By-Value base64: that record fails, the others are stored, the watermark stays; the next harvest stores it', async () => {
  const archive = newArchive('base64');
  script(() => undefined);
  const first = await run(archive);
  assertComplete(first);
  const watermark = first.watermark;

  await nextSecond();
  write('alpha.txt', 'alpha, edited '.repeat(20), Date.now() / 1000);
  write('delta.txt', 'delta, edited '.repeat(20), Date.now() / 1000);
  await repository.scan();
  await nextSecond();

  // Four characters inside alpha's base64 run become characters base64 does not have.
  const corrupt = (record: string) => record.replace(/(encoding="base64">\s*[A-Za-z0-9+/]{8})[A-Za-z0-9+/]{4}/, '$1*!*!');
  script(({ page }) => (page > 0 ? { kind: 'rewrite', edit: (body) => editRecord(body, 'alpha.txt', corrupt) } : undefined));
  const second = await run(archive);
  assert.equal(second.status, 'partial');
  assert.deepEqual({ modified: second.modified, failed: second.failed }, { modified: 1, failed: 1 });
  assert.equal(second.watermark, watermark, 'the watermark does not move past a record not stored');
  const state = await checkArchive(archive, { versions: { 'alpha.txt': 1, 'delta.txt': 2 }, stale: ['alpha.txt'] });
  const alpha = failureOf(state.failures, 'alpha.txt');
  assert.equal(alpha.stage, 'verify');
  assert.equal(alpha.code, 'ERR_DIDL_BAD_BASE64');
  assert.equal(state.failures.length, 1);

  script(() => undefined);
  const third = await run(archive);
  assert.equal(third.status, 'complete');
  assert.deepEqual({ modified: third.modified, failed: third.failed }, { modified: 1, failed: 0 });
  assert.ok(third.watermark && third.watermark > watermark!, 'the watermark moves once everything is stored');
  const after = await checkArchive(archive, { versions: { 'alpha.txt': 2, 'delta.txt': 2 } });
  assert.deepEqual(after.failures, [], 'the failure is resolved');
});

// ---------------------------------------------------------------------------------------------
// A list taken over several runs (issue 24): its outcome is decided over all of them

test('a record fails in a committed batch, the harvest is stopped, the resumed list completes: partial, the watermark stays, reindex agrees', async () => {
  const archive = newArchive('failure-then-stop');
  const stop = new AbortController();
  // The first record of page 1 promises a digest its bytes do not have; page 1 is committed as
  // its own batch (one batch a page), and the harvest is stopped when page 3 is asked for.
  const wrongDigest = (body: string) => body.replace(/<premis:messageDigest>[0-9a-f]+</, `<premis:messageDigest>${'ab'.repeat(32)}<`);
  script(({ page }) => {
    if (page === 1) return { kind: 'rewrite', edit: wrongDigest };
    if (page === 3) {
      stop.abort();
      return { kind: 'status', status: 503, headers: { 'retry-after': '0' } };
    }
    return undefined;
  });
  const first = await harvest({ baseUrl: endpoint, archiveDir: archive, retry: FAST_RETRY, batchBounds: SMALL_BATCHES, signal: stop.signal });
  assert.equal(first.status, 'interrupted');
  assert.equal(first.failed, 1);

  // Resumed from the saved token: pages 1 and 2 are not asked again, the list ends.
  script(() => undefined);
  const second = await run(archive);
  assert.equal(pageRequests(1), 0, 'the list was resumed, not started again');
  assert.equal(second.status, 'partial', 'a record of the list failed in an earlier run of it');
  assert.equal(second.watermark, null, 'the watermark does not move past the failed record');
  const state = await checkArchive(archive);
  assert.equal(state.failures.length, 1, 'the failure stays outstanding');
  const catalog = Catalog.open(archive);
  const lastBag = catalog.bags().at(-1)!;
  catalog.close();
  assert.match(readFileSync(join(archive, lastBag.bagPath, 'bag-info.txt'), 'utf8'), /^List-End: partial$/m);

  // The catalog rebuilt from the bags keeps the watermark where it was too.
  rmSync(join(archive, 'catalog.sqlite'), { force: true });
  await reindexArchive({ archiveDir: archive });
  const rebuilt = Catalog.open(archive);
  try {
    assert.equal(rebuilt.source(endpoint)?.watermark, null, 'reindex does not move the watermark past the failed record');
  } finally {
    rebuilt.close();
  }

  // The next harvest asks for the whole list again and stores the record.
  const third = await run(archive);
  assert.equal(third.status, 'complete');
  assert.ok(third.watermark);
  const after = await checkArchive(archive, { versions: ONE_EACH });
  assert.deepEqual(after.failures, []);
});

test('a connection reset in the page asked for while a batch commits: the page is asked again, no hang', async () => {
  const archive = newArchive('reset-while-committing');
  script(({ page, attempt }) => (page === 2 && attempt === 1 ? { kind: 'reset', at: midSecondRecord } : undefined));
  const summary = await harvest({ baseUrl: endpoint, archiveDir: archive, retry: FAST_RETRY, batchBounds: SMALL_BATCHES });
  assertComplete(summary);
  assert.equal(pageRequests(2), 2, 'the broken page was asked again');
  const state = await checkArchive(archive, { versions: ONE_EACH });
  assert.deepEqual(state.failures, []);
});
