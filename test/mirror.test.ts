// `oaibag mirror` end to end: the real command as a child process, the real repository behind
// a server that can hold a page back, so that SIGTERM arrives in the middle of a harvest.
import assert from 'node:assert/strict';
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Catalog, mirror, verifyBag } from '../packages/archiver/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OAIBAG = join(ROOT, 'packages/archiver/bin/oaibag.js');
const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;
const nextSecond = () => new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));

let work: string;
let site: string;
let repository: Repository;
let server: Server;
let endpoint: string;
/** While set, a ListRecords request that carries a resumption token waits for `release`. */
let holding: { arrived: () => void; released: Promise<void> } | undefined;

function write(path: string, content: string): void {
  mkdirSync(dirname(join(site, path)), { recursive: true });
  writeFileSync(join(site, path), content);
  utimesSync(join(site, path), YEAR_2000, YEAR_2000);
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-mirror-'));
  site = join(work, 'site');
  for (let i = 0; i < 4; i++) write(`page-${i}.html`, `<p>page ${i}</p>`);
  server = createServer((req, res) => {
    const hold = holding;
    if (hold && req.url?.includes('resumptionToken=')) {
      hold.arrived();
      void hold.released.then(() => repository.handler(req, res));
      return;
    }
    repository.handler(req, res);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  repository = await createRepository({ root: site, index: join(work, 'index.sqlite'), baseUrl: base, watch: false, rescanSeconds: 0, pageRecords: 2 });
  endpoint = `${base}/oai`;
});

after(async () => {
  server.closeAllConnections();
  server.close();
  await repository.close();
  rmSync(work, { recursive: true, force: true });
});

/** The mirror command as a child process, with its stdout lines as they come. */
function startMirror(args: string[]): {
  child: ChildProcessWithoutNullStreams;
  lines: string[];
  waitFor: (pattern: RegExp) => Promise<string>;
  stderr: () => string;
} {
  const child = spawn(process.execPath, [OAIBAG, 'mirror', ...args], { stdio: 'pipe' });
  const lines: string[] = [];
  let stderr = '';
  const waiters: Array<{ pattern: RegExp; resolve: (line: string) => void }> = [];
  let buffered = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => {
    buffered += text;
    let end: number;
    while ((end = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, end);
      buffered = buffered.slice(end + 1);
      lines.push(line);
      for (const waiter of [...waiters]) {
        if (waiter.pattern.test(line)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(line);
        }
      }
    }
  });
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  const waitFor = (pattern: RegExp) => {
    const seen = lines.find((line) => pattern.test(line));
    if (seen) return Promise.resolve(seen);
    return new Promise<string>((resolve, reject) => {
      waiters.push({ pattern, resolve });
      child.once('exit', (code) => reject(new Error(`the mirror exited (${code}) before printing ${pattern}; stderr: ${stderr}`)));
    });
  };
  return { child, lines, waitFor, stderr: () => stderr };
}

test('mirror: two ticks, SIGTERM in the middle of a harvest, then a restart resumes and completes', async () => {
  const archive = join(work, 'archive');
  const first = startMirror([endpoint, '--every', '2s', '--archive', archive]);
  await first.waitFor(/harvest #1 complete: 4 records .*; next run /);
  await first.waitFor(/harvest #2 complete: 0 records .*; next run /);

  // New files: the next harvest has three pages; hold the second one back and stop the mirror.
  for (let i = 0; i < 6; i++) write(`later-${i}.html`, `<p>later ${i}</p>`);
  await repository.scan();
  await nextSecond();
  let release!: () => void;
  const arrived = new Promise<void>((resolve) => {
    holding = { arrived: resolve, released: new Promise<void>((r) => (release = r)) };
  });
  await arrived;
  first.child.kill('SIGTERM');
  const [code] = (await once(first.child, 'exit')) as [number | null];
  holding = undefined;
  release();
  assert.equal(code, 0, first.stderr());
  assert.match(first.stderr(), /SIGTERM: finishing the harvest in progress, then stopping/);
  assert.match(first.lines.at(-1)!, /mirror stopped$/);
  assert.ok(
    first.lines.some((line) => /harvest #3 interrupted: /.test(line)),
    first.lines.join('\n'),
  );

  let catalog = Catalog.open(archive);
  try {
    const source = catalog.source(endpoint)!;
    assert.equal(catalog.harvest(3)?.status, 'interrupted');
    assert.ok(source.resume?.token, 'the checkpoint (the token of the last complete page) is saved');
  } finally {
    catalog.close();
  }

  const second = startMirror([endpoint, '--every', '1h', '--archive', archive]);
  await second.waitFor(/harvest #4 complete: .*; next run /);
  second.child.kill('SIGTERM');
  assert.equal(((await once(second.child, 'exit')) as [number | null])[0], 0);
  assert.match(second.stderr(), /resuming the interrupted list from its saved resumption token/);

  catalog = Catalog.open(archive);
  try {
    const source = catalog.source(endpoint)!;
    assert.equal(source.resume, null);
    const names = readdirSync(site).sort();
    assert.equal(names.length, 10);
    for (const name of names) {
      const versions = catalog.versions(source.id, `${endpoint.slice(0, -4)}/${name}`);
      assert.equal(versions.length, 1, `${name}: one version, no duplicate`);
      assert.equal((await verifyBag(join(archive, versions[0]!.bagPath))).valid, true);
    }
  } finally {
    catalog.close();
  }
  assert.deepEqual(existsSync(join(archive, 'tmp')) ? readdirSync(join(archive, 'tmp')) : [], []);
});

test('mirror --config: two sources with their own schedules into one archive; bad configs are refused by name', async () => {
  const archive = join(work, 'archive-config');
  const config = join(work, 'mirror.json');
  writeFileSync(
    config,
    JSON.stringify({
      archive: 'archive-config',
      sources: [
        { baseUrl: endpoint, every: '1h', compression: 'always' },
        { baseUrl: `${endpoint}?unused=1`.replace('?unused=1', '/'), every: '2h', jitter: '1s' },
      ],
    }),
  );
  const mirror = startMirror(['--config', config]);
  await mirror.waitFor(new RegExp(`^\\S+ ${endpoint.replace(/[.?*+()/]/g, '\\$&')}: harvest #1 complete`));
  await mirror.waitFor(/: (harvest #2 complete|not harvested: .*)/);
  mirror.child.kill('SIGTERM');
  assert.equal(((await once(mirror.child, 'exit')) as [number | null])[0], 0);
  assert.ok(existsSync(join(archive, 'catalog.sqlite')), 'the archive is where the config says, relative to the config file');

  writeFileSync(config, JSON.stringify({ sources: [{ baseUrl: endpoint, every: '1h', evry: '2h' }] }));
  const bad = startMirror(['--config', config]);
  const [badCode] = (await once(bad.child, 'exit')) as [number | null];
  assert.equal(badCode, 2);
  assert.match(bad.stderr(), /mirror\.json: sources\[0\]\.evry: unknown field \[ERR_ARCHIVE_USAGE\]/);

  writeFileSync(config, JSON.stringify({ sources: [{ baseUrl: endpoint, every: '1h', compression: 'sometimes' }] }));
  const badCompression = startMirror(['--config', config]);
  assert.equal(((await once(badCompression.child, 'exit')) as [number | null])[0], 2);
  assert.match(badCompression.stderr(), /sources\[0\]\.compression: expected "auto", "always" or "never"/);

  const noEvery = startMirror([endpoint]);
  assert.equal(((await once(noEvery.child, 'exit')) as [number | null])[0], 2);
  assert.match(noEvery.stderr(), /give BASEURL and --every DURATION/);
});

test('mirror (library): a source that is down is reported at each tick and tried again on its schedule', async () => {
  // A port that was just free: connections are refused at once.
  const closed = createServer();
  closed.listen(0, '127.0.0.1');
  await once(closed, 'listening');
  const port = (closed.address() as AddressInfo).port;
  closed.close();
  const controller = new AbortController();
  const runs: Array<{ error?: string; startedAt: number; nextAt?: number }> = [];
  let clock = 1_000_000;
  await mirror({
    archiveDir: join(work, 'archive-down'),
    sources: [{ baseUrl: `http://127.0.0.1:${port}/oai`, schedule: { everyMs: 50, jitterMs: 0 } }],
    signal: controller.signal,
    retry: { retries: 0, baseDelayMs: 1, maxDelayMs: 1 },
    // A clock that moves 50 ms per reading past a run: each run ends on the next tick's edge.
    now: () => clock,
    onRun: (run) => {
      runs.push({
        ...(run.error ? { error: run.error.code } : {}),
        startedAt: run.startedAt.getTime(),
        ...(run.nextAt ? { nextAt: run.nextAt.getTime() } : {}),
      });
      clock += 50;
      if (runs.length === 3) controller.abort();
    },
  });
  assert.equal(runs.length, 3);
  for (const run of runs) assert.equal(run.error, 'ERR_HARVEST_UNREACHABLE');
  assert.deepEqual(
    runs.map((run) => run.startedAt - 1_000_000),
    [0, 50, 100],
    'one run per tick, on the grid',
  );
  assert.deepEqual(
    runs.map((run) => run.nextAt! - 1_000_000),
    [50, 100, 150],
    'each failure still schedules the next tick',
  );
});

test('oaibag harvest: Ctrl-C (SIGINT to its whole process group) mid-harvest: exit 130, interrupted, the next harvest completes', async () => {
  // Its own process group, as a shell gives a command: the signal reaches the harvester and
  // anything it started (the helper that runs sync -f), as a Ctrl-C on a terminal would.
  const archive = join(work, 'archive-ctrl-c');
  let release!: () => void;
  const arrived = new Promise<void>((resolve) => {
    holding = { arrived: resolve, released: new Promise<void>((r) => (release = r)) };
  });
  const child = spawn(process.execPath, [OAIBAG, 'harvest', endpoint, '--archive', archive, '--json'], { stdio: 'pipe', detached: true });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  await arrived;
  process.kill(-child.pid!, 'SIGINT');
  const [code] = await exited;
  holding = undefined;
  release();
  assert.equal(code, 130, stderr);
  assert.match(stderr, /SIGINT: finishing the records in progress, then stopping/);
  assert.doesNotMatch(stderr, /ERR_ARCHIVE_IO|sync -f/, 'the page in progress was flushed and committed');

  let catalog = Catalog.open(archive);
  try {
    assert.equal(catalog.harvest(1)?.status, 'interrupted');
    assert.deepEqual(catalog.pendingBags(), []);
  } finally {
    catalog.close();
  }
  const next = spawn(process.execPath, [OAIBAG, 'harvest', endpoint, '--archive', archive], { stdio: 'pipe' });
  assert.equal(((await once(next, 'exit')) as [number | null])[0], 0);
  catalog = Catalog.open(archive);
  try {
    const source = catalog.source(endpoint)!;
    for (const name of readdirSync(site)) {
      const versions = catalog.versions(source.id, `${endpoint.slice(0, -4)}/${name}`);
      assert.equal(versions.length, 1, `${name}: one version`);
      assert.equal((await verifyBag(join(archive, versions[0]!.bagPath))).valid, true);
    }
  } finally {
    catalog.close();
  }
});
