// End to end: `oaibag harvest` killed with SIGKILL at chosen moments (issue 4, "Crashes"). The
// built command runs as a child process against the real repository, reached through a small
// proxy that lets the test see every request, slow large files down (so a kill can land while
// one is being received) and kill the child at an exact point of the list. After each kill the
// command is run again to completion and the archive is checked as a whole: one version per
// exported file, the bags on disk are exactly the catalogued ones and each verifies with the
// site's bytes, nothing left in tmp/, the stale lock taken over, the killed harvest marked
// interrupted, the watermark set.
//
// Needs the built command: `npx --yes pnpm@10.34.9 build` first (packages/archiver/bin/oaibag.js imports the bundle in dist/).
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { Agent, createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Catalog, type CatalogHarvest, verifyBag } from '../packages/archiver/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';
import { payloadOf, recordsXml } from './batch-bags.ts';

const BIN = fileURLToPath(new URL('../packages/archiver/bin/oaibag.js', import.meta.url));

/** The few calls of better-sqlite3 (the archiver's dependency) used to hold the catalog's write lock. */
interface SqliteDatabase {
  exec(sql: string): void;
  pragma(sql: string): unknown;
  prepare(sql: string): { all(): unknown[]; get(...params: unknown[]): unknown };
  readonly inTransaction: boolean;
  close(): void;
}
const Sqlite = createRequire(fileURLToPath(new URL('../packages/archiver/package.json', import.meta.url)))('better-sqlite3') as new (
  file: string,
) => SqliteDatabase;
const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;
const BY_VALUE_MAX = 100_000;
const PAGE_RECORDS = 5;
// Over twice the 1 MiB a harvest keeps in memory for one datastream: a file held back half-way
// has gone to tmp/ (see receiveIncoming).
const BIG_BYTES = 3_000_000;

// 40 files: 36 By-Value (up to ~90 KB), 4 By-Reference of 3 MB spread over the pages (the list
// is in datestamp order, and each file has its own mtime).
const FILES: string[] = [];
const BIG = new Set<string>();

// ---------------------------------------------------------------------------------------------
// The proxy in front of the repository

interface Proxy {
  url: string;
  server: Server;
  upstreamPort: number;
  /** The query string of every ListRecords request, in order. */
  lists: string[];
  /** Called before a ListRecords request is forwarded; 'hold' never answers it. */
  beforeList?: ((query: URLSearchParams, index: number) => 'forward' | 'hold') | undefined;
  /** The next large file is sent half-way and then held (never finished). */
  stallNextBigFile: boolean;
}

const upstreamAgent = new Agent({ keepAlive: false });
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding']);

async function proxyRequest(proxy: Proxy, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = req.url ?? '/';
  const url = new URL(path, proxy.url);
  if (url.searchParams.get('verb') === 'ListRecords') {
    proxy.lists.push(url.search);
    if (proxy.beforeList?.(url.searchParams, proxy.lists.length) === 'hold') return;
  }
  const upstream = await new Promise<IncomingMessage>((resolve, reject) => {
    const headers = { ...req.headers };
    delete headers.connection;
    request({ host: '127.0.0.1', port: proxy.upstreamPort, path, method: req.method, headers, agent: upstreamAgent }, resolve).on('error', reject).end();
  });
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(upstream.headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
  res.writeHead(upstream.statusCode ?? 502, headers);
  const length = Number(upstream.headers['content-length'] ?? 0);
  if (length < 1_000_000) {
    upstream.pipe(res);
    return;
  }
  // A large file: 128 KB at a time with a pause, so that its reception takes a while.
  const stall = proxy.stallNextBigFile;
  proxy.stallNextBigFile = false;
  let sent = 0;
  for await (const chunk of upstream as AsyncIterable<Buffer>) {
    for (let at = 0; at < chunk.length; at += 131_072) {
      if (res.destroyed) {
        upstream.destroy();
        return;
      }
      const slice = chunk.subarray(at, at + 131_072);
      res.write(slice);
      sent += slice.length;
      if (stall && sent >= length / 2) {
        upstream.destroy(); // held: the child is killed while it waits for the rest
        return;
      }
      await sleep(1);
    }
  }
  res.end();
}

async function startProxy(): Promise<Proxy> {
  const proxy: Proxy = { url: '', server: createServer(), upstreamPort: 0, lists: [], stallNextBigFile: false };
  proxy.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    proxyRequest(proxy, req, res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(proxy.server.address() as AddressInfo).port}`;
  return proxy;
}

// ---------------------------------------------------------------------------------------------
// The site, the repository, the command

let work: string;
let site: string;
let proxy: Proxy;
let repository: Repository;
let endpoint: string;
/** The repository's request log (one line per request, Combined Log Format). */
const repositoryLog: string[] = [];

async function startRepository(index: string): Promise<void> {
  repository = await createRepository({
    root: site,
    index,
    watch: false,
    rescanSeconds: 0,
    byValueMax: BY_VALUE_MAX,
    pageRecords: PAGE_RECORDS,
    baseUrl: proxy.url,
    log: (line) => repositoryLog.push(line),
  });
  await repository.listen(0, '127.0.0.1');
  proxy.upstreamPort = (repository.server.address() as AddressInfo).port;
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-crash-'));
  site = join(work, 'site');
  for (let i = 0; i < 40; i++) {
    const big = i % 10 === 8;
    const path = big ? `big/b${i}.bin` : i % 9 === 4 ? `media/m${i}.bin` : `text/t${i}.txt`;
    const content = big
      ? randomBytes(BIG_BYTES + i)
      : path.endsWith('.bin')
        ? randomBytes(50_000 + i * 800)
        : Buffer.from(`line ${i} of a small page\n`.repeat(1 + i * 40));
    mkdirSync(dirname(join(site, path)), { recursive: true });
    writeFileSync(join(site, path), content);
    utimesSync(join(site, path), YEAR_2000 + i * 60, YEAR_2000 + i * 60);
    FILES.push(path);
    if (big) BIG.add(path);
  }
  proxy = await startProxy();
  await startRepository(join(work, 'index.sqlite'));
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

interface Outcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

interface Running {
  child: ChildProcess;
  pid: number;
  exited: Promise<Outcome>;
}

/** Starts `oaibag harvest <endpoint> --archive <archive> --json` as a child process. */
function startHarvest(archive: string): Running {
  proxy.beforeList = undefined;
  // A batch bag per page (5 records), so that a harvest writes 8 bags to be killed between.
  const child = spawn(process.execPath, [BIN, 'harvest', endpoint, '--archive', archive, '--json', '--batch-records', String(PAGE_RECORDS)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr!.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  // 'close' comes after the process was reaped: its pid is then free, not a zombie that
  // a liveness check would still find.
  const exited = new Promise<Outcome>((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
  assert.ok(child.pid, 'the child started');
  return { child, pid: child.pid, exited };
}

/** Runs the command to its end; asserts a clean exit and returns the JSON summary. */
async function harvestToEnd(archive: string): Promise<{ summary: Record<string, unknown>; outcome: Outcome }> {
  const outcome = await startHarvest(archive).exited;
  assert.equal(outcome.code, 0, `oaibag harvest exited ${outcome.code ?? outcome.signal}: ${outcome.stderr}`);
  assert.doesNotMatch(outcome.stderr, /ERR_ARCHIVE_LOCKED/);
  return { summary: JSON.parse(outcome.stdout) as Record<string, unknown>, outcome };
}

async function kill(running: Running): Promise<Outcome> {
  running.child.kill('SIGKILL');
  const outcome = await running.exited;
  assert.equal(outcome.signal, 'SIGKILL', `the child was killed, not ended by itself (exit ${outcome.code}): ${outcome.stderr}`);
  return outcome;
}

/** Polls (every 2 ms, leaving the event loop free for the servers) until `condition` holds. */
/** Polls `condition` every `everyMs` (0: as often as the event loop allows). */
async function until(condition: () => boolean, running: Running, what: string, everyMs = 2): Promise<void> {
  let ended = false;
  void running.exited.then(() => (ended = true));
  while (!condition()) {
    assert.ok(!ended, `the harvest ended before ${what}`);
    await (everyMs === 0 ? new Promise<void>((resolve) => setImmediate(resolve)) : sleep(everyMs));
  }
}

// ---------------------------------------------------------------------------------------------
// What every crash must leave

const identifierOf = (path: string) => `${proxy.url}/${path}`;
const newArchive = (name: string) => join(work, `archive-${name}`);

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
  return found.sort();
}

/** The bag paths the catalog records. */
function recordedBags(archive: string): string[] {
  if (!existsSync(join(archive, 'catalog.sqlite'))) return [];
  const catalog = Catalog.open(archive);
  try {
    return catalog
      .bags()
      .map((bag) => bag.bagPath)
      .sort();
  } finally {
    catalog.close();
  }
}

/**
 * Right after a kill: whatever the catalog records is on disk, complete (it never runs ahead
 * of the bags). Returns how many bags are on disk without a catalog row (a kill between the
 * rename of a bag and its row), which the next harvest must adopt.
 */
async function checkAfterKill(archive: string): Promise<number> {
  const onDisk = new Set(bagsOnDisk(archive));
  const recorded = recordedBags(archive);
  for (const bag of recorded) {
    assert.ok(onDisk.has(bag), `the catalog records ${bag}, which is not on disk`);
    const report = await verifyBag(join(archive, bag));
    assert.equal(report.valid, true, `${bag}: ${JSON.stringify(report.problems)}`);
  }
  return onDisk.size - recorded.length;
}

/** The lock left by the killed child: it names the child, which is gone. */
function assertStaleLock(archive: string, pid: number): void {
  const lock = JSON.parse(readFileSync(join(archive, 'lock'), 'utf8')) as { pid: number };
  assert.equal(lock.pid, pid, 'the lock left behind names the killed process');
}

/**
 * After a harvest that completed: every exported file has exactly one version, its bytes held
 * once and equal to the site's, its bag valid; the bags on disk are exactly the recorded ones; tmp/ is
 * empty; the lock is released; the last harvest is complete and every earlier one is
 * `earlier` (interrupted: it was killed); the watermark is set. Returns the harvests, oldest first.
 */
async function checkArchive(archive: string, earlier: 'interrupted' | 'complete' = 'interrupted'): Promise<CatalogHarvest[]> {
  const catalog = Catalog.open(archive);
  let recorded: string[] = [];
  const harvests: CatalogHarvest[] = [];
  try {
    const source = catalog.source(endpoint);
    assert.ok(source, 'the source is recorded');
    assert.ok(source.watermark, 'the watermark is set');
    const held = new Set<string>();
    for (const path of FILES) {
      const versions = catalog.versions(source.id, identifierOf(path));
      assert.equal(versions.length, 1, `${path} has ${versions.length} versions`);
      const parts = catalog.versionParts(versions[0]!.id);
      assert.equal(parts.length, 1);
      assert.ok(!held.has(`${parts[0]!.bagPath}/${parts[0]!.path}`), `${path}: a payload file held twice`);
      held.add(`${parts[0]!.bagPath}/${parts[0]!.path}`);
      assert.ok(readFileSync(payloadOf(archive, catalog, versions[0]!.id)).equals(readFileSync(join(site, path))), `${path}: the payload is the site's file`);
    }
    recorded = catalog.bags().map((bag) => bag.bagPath);
    const reports = await Promise.all(recorded.map((bag) => verifyBag(join(archive, bag))));
    reports.forEach((report, i) => assert.equal(report.valid, true, `${recorded[i]}: ${JSON.stringify(report.problems)}`));
    for (let id = 1; ; id++) {
      const harvest = catalog.harvest(id);
      if (!harvest) break;
      harvests.push(harvest);
    }
  } finally {
    catalog.close();
  }
  assert.deepEqual(bagsOnDisk(archive), recorded.sort(), 'the bags on disk are exactly the recorded bags');
  const tmp = join(archive, 'tmp');
  assert.deepEqual(existsSync(tmp) ? readdirSync(tmp) : [], [], 'nothing is left in tmp/');
  assert.equal(existsSync(join(archive, 'lock')), false, 'the lock is released');
  assert.ok(harvests.length > 0);
  assert.equal(harvests.at(-1)!.status, 'complete');
  for (const harvest of harvests.slice(0, -1)) assert.equal(harvest.status, earlier, `harvest #${harvest.id}`);
  return harvests;
}

// ---------------------------------------------------------------------------------------------
// Kills at chosen moments

let baselineMs = 0;

test('killed as soon as the catalog exists: the next harvest completes the archive', async () => {
  const archive = newArchive('early');
  const running = startHarvest(archive);
  await until(() => existsSync(join(archive, 'catalog.sqlite')), running, 'the catalog was created');
  await kill(running);
  await checkAfterKill(archive);
  assertStaleLock(archive, running.pid);
  const started = Date.now();
  const { summary } = await harvestToEnd(archive);
  baselineMs = Date.now() - started;
  assert.equal(summary.status, 'complete');
  await checkArchive(archive);
});

test('killed after some bags exist: resumed, no missing and no duplicate AIP', async () => {
  const archive = newArchive('some-bags');
  const running = startHarvest(archive);
  await until(() => bagsOnDisk(archive).length >= 3, running, 'three bags existed');
  await kill(running);
  await checkAfterKill(archive);
  assertStaleLock(archive, running.pid);
  const { summary } = await harvestToEnd(archive);
  assert.equal(summary.status, 'complete');
  const harvests = await checkArchive(archive);
  assert.equal(harvests.length, 2, 'the killed harvest and the one that completed');
});

test('killed while a large By-Reference file is being received: the partial file is cleaned up', async () => {
  const archive = newArchive('mid-fetch');
  proxy.stallNextBigFile = true;
  const running = startHarvest(archive);
  const tmp = join(archive, 'tmp');
  const partial = (): boolean => {
    try {
      return readdirSync(tmp).some((name) => name.startsWith('incoming-') && statSync(join(tmp, name)).size > BY_VALUE_MAX);
    } catch {
      return false;
    }
  };
  await until(partial, running, 'a large file was half received');
  await kill(running);
  assert.equal(proxy.stallNextBigFile, false, 'a large file was held');
  const sizes = readdirSync(tmp).map((name) => statSync(join(tmp, name)).size);
  assert.ok(
    sizes.some((size) => size > BY_VALUE_MAX && size < BIG_BYTES),
    `a partial file was left in tmp/ by the kill (sizes ${sizes.join(', ')})`,
  );
  await checkAfterKill(archive);
  assertStaleLock(archive, running.pid);
  await harvestToEnd(archive);
  const harvests = await checkArchive(archive);
  assert.equal(harvests.length, 2);
});

test('killed at moments spread over a whole harvest: every trial ends complete, without duplicates', async (t: TestContext) => {
  // A kill between a bag's rename and its catalog row cannot be aimed at from outside; kills
  // spread evenly over the time a harvest takes land there sometimes (reported below), and at
  // every other stage the rest of the time. Every trial must end with the same archive.
  assert.ok(baselineMs > 0, 'the first test measured a harvest');
  const trials = 2;
  let orphans = 0;
  let late = 0;
  for (let trial = 0; trial < trials; trial++) {
    const archive = newArchive(`spread-${trial}`);
    const running = startHarvest(archive);
    await sleep(Math.round(((trial + 0.5) / trials) * 0.7 * baselineMs));
    running.child.kill('SIGKILL');
    const outcome = await running.exited;
    if (outcome.signal !== 'SIGKILL') {
      // The harvest ended before its kill (a slow machine measured a slow baseline): fine,
      // but then it must have ended well.
      assert.equal(outcome.code, 0, outcome.stderr);
      late++;
    } else {
      orphans += (await checkAfterKill(archive)) > 0 ? 1 : 0;
      if (existsSync(join(archive, 'lock'))) assertStaleLock(archive, running.pid);
    }
    await harvestToEnd(archive);
    await checkArchive(archive, outcome.signal === 'SIGKILL' ? 'interrupted' : 'complete');
  }
  assert.ok(late < trials, 'at least one kill landed during a harvest');
  t.diagnostic(`${orphans} of ${trials} kills left a bag on disk without its catalog row (adopted by the next harvest); ${late} came after the end`);
});

/**
 * Kills a harvest at the one moment a timed kill rarely hits: bags renamed into place, their
 * catalog rows not yet written. A page's bags are noted as pending, renamed, flushed, and only
 * then recorded (IngestBatch). The test watches for pending notes and then holds the catalog's
 * write lock (BEGIN IMMEDIATE), so the child's page commit waits (busy_timeout) while its
 * renames go on; once a bag is on disk without its row, SIGKILL. A page whose commit came
 * before the lock is let go, and the next page is tried. With `afterBags`, the hunt starts
 * once that many bags are recorded, so the kill lands after a page committed its resumption
 * token (the next harvest then resumes the list) whatever the machine's speed. Returns the bag
 * paths left without a row.
 */
async function killBetweenBagAndRow(archive: string, afterBags = 0): Promise<string[]> {
  const listsBefore = proxy.lists.length;
  const running = startHarvest(archive);
  await until(() => proxy.lists.length > listsBefore, running, 'the list was asked for (the catalog exists)');
  const db = new Sqlite(join(archive, 'catalog.sqlite'));
  db.pragma('busy_timeout = 5000');
  const pending = db.prepare('SELECT count(*) AS n FROM pending_bags');
  const rows = db.prepare('SELECT bag_path FROM bags');
  let orphans: string[] = [];
  try {
    await until(() => rows.all().length >= afterBags, running, `${afterBags} bags were recorded`);
    for (;;) {
      await until(() => (pending.get() as { n: number }).n > 0, running, 'a page noted its bags as pending', 0);
      db.exec('BEGIN IMMEDIATE');
      if ((pending.get() as { n: number }).n > 0) break;
      db.exec('ROLLBACK'); // that page committed first
    }
    await until(
      () => {
        const recorded = new Set((rows.all() as Array<{ bag_path: string }>).map((row) => row.bag_path));
        orphans = bagsOnDisk(archive).filter((bag) => !recorded.has(bag));
        return orphans.length > 0;
      },
      running,
      'a bag was on disk without its catalog row',
    );
    await kill(running);
  } finally {
    if (running.child.exitCode === null && running.child.signalCode === null) await kill(running);
    if (db.inTransaction) db.exec('ROLLBACK');
    db.close();
  }
  assertStaleLock(archive, running.pid);
  return orphans;
}

test('killed after a bag was renamed into place but before its catalog row: the next harvest records it once', async () => {
  const archive = newArchive('bag-no-row');
  const orphans = await killBetweenBagAndRow(archive);
  assert.ok(orphans.length > 0);
  await harvestToEnd(archive);
  const harvests = await checkArchive(archive);
  assert.equal(harvests.length, 2);
});

// ---------------------------------------------------------------------------------------------
// Resuming the interrupted list

/** The resumption token the catalog holds now (read-only; the harvest may be writing). */
function savedToken(archive: string): string | null {
  const db = new Sqlite(join(archive, 'catalog.sqlite'));
  try {
    return (db.prepare('SELECT resume_token FROM sources').get() as { resume_token: string | null } | undefined)?.resume_token ?? null;
  } catch {
    return null; // the catalog is being created
  } finally {
    db.close();
  }
}

/** Starts a harvest and kills it once it waits for page 3 with page 2's token saved. */
async function killAtPage3(archive: string): Promise<{ token: string; running: Running }> {
  const running = startHarvest(archive);
  let token: string | undefined;
  proxy.lists = [];
  // Page 3 is asked for while page 2 commits (prefetch): its answer is held, and the kill
  // comes once page 2's token is in the catalog.
  proxy.beforeList = (query, index) => {
    if (index !== 3) return 'forward';
    token = query.get('resumptionToken') ?? undefined;
    return 'hold';
  };
  await until(() => token !== undefined && savedToken(archive) === token, running, "page 2's token was saved");
  running.child.kill('SIGKILL');
  const outcome = await running.exited;
  proxy.beforeList = undefined;
  assert.equal(outcome.signal, 'SIGKILL', `the harvest was killed at page 3: ${outcome.stderr}`);
  assert.ok(token, 'page 3 was asked for with a resumption token');
  const catalog = Catalog.open(archive);
  try {
    assert.equal(catalog.source(endpoint)?.resume?.token, token, "page 2's token is saved in the catalog");
  } finally {
    catalog.close();
  }
  assert.equal(await checkAfterKill(archive), 0);
  assert.equal(bagsOnDisk(archive).length, 2, 'the records of pages 1 and 2 are stored, a bag each');
  return { token, running };
}

/** The OAI ListRecords requests the repository logged from `mark` on, in order. */
function loggedLists(mark: number): string[] {
  return repositoryLog.slice(mark).flatMap((line) => /"GET (\/oai\?verb=ListRecords[^ ]*) HTTP/.exec(line)?.[1] ?? []);
}

test('killed after page 2: the next harvest resumes from the saved resumption token', async () => {
  const archive = newArchive('resume');
  const { token, running } = await killAtPage3(archive);
  assertStaleLock(archive, running.pid);
  const mark = repositoryLog.length;
  const { summary } = await harvestToEnd(archive);
  const lists = loggedLists(mark);
  assert.ok(lists.length > 0, 'the repository logged the resumed list');
  assert.equal(lists[0], `/oai?verb=ListRecords&resumptionToken=${token}`, 'the first request of the second run resumes from the token');
  assert.ok(!lists.some((path) => path.includes('metadataPrefix=')), 'the list was not started over');
  assert.equal(summary.records, FILES.length - 2 * PAGE_RECORDS, 'only the records after page 2 came');
  const harvests = await checkArchive(archive);
  assert.equal(harvests.length, 2);
  // The killed harvest's row tells what its committed pages did; both rows name the list's
  // first responseDate (the resumed list's watermark).
  const [killed, resumed] = harvests as [CatalogHarvest, CatalogHarvest];
  assert.equal(killed.counts.records, 2 * PAGE_RECORDS);
  assert.equal(killed.counts.added, 2 * PAGE_RECORDS);
  assert.ok(killed.counts.requests > 0);
  assert.ok(killed.listResponseDate, 'the killed harvest recorded its list responseDate');
  assert.equal(resumed.listResponseDate, killed.listResponseDate);
  assert.equal(resumed.counts.added, FILES.length - 2 * PAGE_RECORDS);
});

test('a lock held by a running harvest refuses a second one; after SIGKILL it is taken over', async () => {
  const archive = newArchive('lock');
  const first = startHarvest(archive);
  await until(() => existsSync(join(archive, 'catalog.sqlite')) && existsSync(join(archive, 'lock')), first, 'the lock was taken');
  first.child.kill('SIGSTOP'); // a harvest that is slow, as far as anyone can tell
  try {
    const second = await startHarvest(archive).exited;
    assert.notEqual(second.code, 0, 'the second harvest is refused');
    assert.match(second.stderr, /ERR_ARCHIVE_LOCKED/);
    assert.match(second.stderr, new RegExp(`locked by pid ${first.pid} `), 'the error names the holder');
    assert.equal(second.stdout, '');
  } finally {
    await kill(first);
  }
  assertStaleLock(archive, first.pid);
  await harvestToEnd(archive);
  const harvests = await checkArchive(archive);
  assert.ok(harvests.length <= 2);
});

test('killed after page 2, then the repository restarts with a new index: its tokens are refused, the list restarts, no duplicates', async () => {
  const archive = newArchive('new-index');
  const { token } = await killAtPage3(archive);
  await repository.close();
  await startRepository(join(work, 'index-2.sqlite'));
  const mark = repositoryLog.length;
  const { summary } = await harvestToEnd(archive);
  const lists = loggedLists(mark);
  assert.equal(lists[0], `/oai?verb=ListRecords&resumptionToken=${token}`, 'the saved token was tried first');
  assert.match(lists[1] ?? '', /metadataPrefix=oai_didl/, 'then the list started again from the checkpoint');
  assert.equal(summary.records, FILES.length, 'every record came again');
  assert.equal(summary.added, FILES.length - 2 * PAGE_RECORDS, 'the records stored before the kill were recognised');
  const harvests = await checkArchive(archive);
  assert.equal(harvests.length, 2);
});

// ---------------------------------------------------------------------------------------------
// Last, as it changes the site

test('a bag left without its row, then its file changes before the next harvest: the old bag is recorded, the change comes with the next incremental harvest', async () => {
  // Killed after page 1 committed (its token saved), at the bag of a later page. The harvest
  // after the kill finishes that interrupted list from its token: the list's upper bound was
  // fixed when its first page was served, before the change, so the changed file has left it
  // (docs/repository.md, "Paging while things change"). The watermark that harvest sets is the
  // interrupted list's first responseDate, and the change is dated after it, so the next
  // incremental harvest delivers it. (Killed at page 1's bag, nothing is resumed and the
  // harvest after the kill lists everything, the change included: the test caught either page
  // depending on the machine's load, and expected the second version one harvest early.)
  const archive = newArchive('bag-no-row-changed');
  const orphans = await killBetweenBagAndRow(archive, 1);
  assert.ok(savedToken(archive), 'the killed harvest saved a resumption token before the orphan bag');
  // Which files it holds: its records.xml says; the first one changes.
  const identifier = /<record n="1" identifier="([^"]*)"/.exec(recordsXml(archive, orphans[0]!))?.[1];
  const path = FILES.find((candidate) => identifierOf(candidate) === identifier);
  assert.ok(path, `the orphan bag ${orphans[0]} belongs to a site file (${identifier})`);
  const before = readFileSync(join(site, path));
  writeFileSync(join(site, path), Buffer.concat([before, Buffer.from(' changed')]));
  await repository.scan();
  const changedAt = indexedDatestamp(path);

  const versionsOf = (catalog: Catalog) => catalog.versions(catalog.source(endpoint)!.id, identifierOf(path));
  // 1. The interrupted list, resumed: the orphan bag is recorded from its own files, the
  // changed file is not in the list, and the watermark is the list's first responseDate.
  await harvestToEnd(archive);
  let catalog = Catalog.open(archive);
  try {
    const versions = versionsOf(catalog);
    assert.equal(versions.length, 1, "the orphan bag's version; the changed file has left the resumed list");
    assert.equal(versions[0]!.bagPath, orphans[0], 'the orphan bag was recorded from its own files');
    assert.ok(readFileSync(payloadOf(archive, catalog, versions[0]!.id)).equals(before), 'the orphan bag holds the bytes before the change');
    const watermark = catalog.source(endpoint)!.watermark!;
    assert.ok(
      Date.parse(watermark) / 1000 <= changedAt,
      `the change (${new Date(changedAt * 1000).toISOString()}) is dated at or after the watermark ${watermark}`,
    );
  } finally {
    catalog.close();
  }
  assert.deepEqual(bagsOnDisk(archive), recordedBags(archive), 'the bags on disk are exactly the recorded bags');

  // 2. The next incremental harvest. A list leaves out the second it starts in (its upper
  // bound is one second before its responseDate): it must start after the change's second.
  while (Math.floor(Date.now() / 1000) <= changedAt) await sleep(10);
  const { summary } = await harvestToEnd(archive);
  assert.equal(summary.records, 1, 'the incremental harvest (from the watermark) listed the changed file alone');
  assert.equal(summary.modified, 1);
  assert.deepEqual(bagsOnDisk(archive), recordedBags(archive), 'the bags on disk are exactly the recorded bags');
  catalog = Catalog.open(archive);
  try {
    const versions = versionsOf(catalog);
    assert.equal(versions.length, 2, "the orphan bag's version, then the changed file");
    assert.equal(versions[0]!.bagPath, orphans[0]);
    assert.ok(readFileSync(payloadOf(archive, catalog, versions[1]!.id)).equals(readFileSync(join(site, path))), 'the latest version is the changed file');
  } finally {
    catalog.close();
  }
});

/** The datestamp (seconds) the repository's index gives `path` now. */
function indexedDatestamp(path: string): number {
  const db = new Sqlite(repository.indexFile);
  try {
    const row = db.prepare('SELECT datestamp FROM records WHERE path = ?').get(path) as { datestamp: number } | undefined;
    assert.ok(row, `${path} is in the repository's index`);
    return row.datestamp;
  } finally {
    db.close();
  }
}
