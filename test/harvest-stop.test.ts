// End to end (issue 24, finding 3): SIGTERM during a multi-page harvest always ends with status
// 130 and no stack trace, wherever it lands (a page being read, one asked for in advance, a
// batch being committed); a response whose Content-Encoding the harvester cannot read is one
// coded line and exit 3, never an unhandled 'error'; and `oaibag mirror` goes on with its other
// sources when one of them fails that way.
//
// Needs the built command: `npx --yes pnpm@10.34.9 build` first.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Catalog } from '../packages/archiver/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';

const BIN = fileURLToPath(new URL('../packages/archiver/bin/oaibag.js', import.meta.url));
const FILES = 1500;
const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;

let work: string;
let repository: Repository;
let endpoint: string;
/** ListRecords requests the repository answered so far. */
let listRequests = 0;
/** A repository that answers Identify and then every ListRecords page with Content-Encoding: br. */
let brotliServer: Server;
/** When set, the same server holds every ListRecords request without ever answering it. */
let hold = false;
let heldRequests = 0;
let brotliEndpoint: string;

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-stop-'));
  const site = join(work, 'site');
  for (let i = 0; i < FILES; i++) {
    const path = join(site, `d${i % 30}`, `f${i}.txt`);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, `file ${i}\n`.repeat(1 + (i % 40)));
    utimesSync(path, YEAR_2000 + i, YEAR_2000 + i);
  }
  repository = await createRepository({
    root: site,
    index: join(work, 'index.sqlite'),
    watch: false,
    rescanSeconds: 0,
    pageRecords: 5,
    log: (line) => {
      if (line.includes('verb=ListRecords')) listRequests++;
    },
  });
  await repository.listen(0, '127.0.0.1');
  endpoint = `http://127.0.0.1:${(repository.server.address() as AddressInfo).port}/oai`;

  // Identify is forwarded to the real repository (so the source is a real one); ListRecords is
  // answered with bytes in an encoding nobody asked for.
  brotliServer = createServer((req, res) => {
    if ((req.url ?? '').includes('verb=ListRecords') && hold) {
      heldRequests++;
      return; // never answered
    }
    if ((req.url ?? '').includes('verb=ListRecords')) {
      res.writeHead(200, { 'content-type': 'text/xml', 'content-encoding': 'br', 'content-length': '64' });
      res.end(Buffer.alloc(64, 7));
      return;
    }
    fetch(`${endpoint}${(req.url ?? '').replace(/^\/oai/, '')}`)
      .then(async (answer) => {
        const text = (await answer.text()).replaceAll(endpoint, brotliEndpoint);
        res.writeHead(answer.status, { 'content-type': 'text/xml' });
        res.end(text);
      })
      .catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => brotliServer.listen(0, '127.0.0.1', resolve));
  brotliEndpoint = `http://127.0.0.1:${(brotliServer.address() as AddressInfo).port}/oai`;
});

after(async () => {
  await repository.close();
  brotliServer.closeAllConnections();
  await new Promise<void>((resolve) => brotliServer.close(() => resolve()));
  rmSync(work, { recursive: true, force: true });
});

interface Outcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function start(args: string[]): { child: ReturnType<typeof spawn>; exited: Promise<Outcome> } {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr!.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  const exited = new Promise<Outcome>((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
  return { child, exited };
}

function assertNoStackTrace(outcome: Outcome): void {
  assert.doesNotMatch(outcome.stderr, /^\s+at /m, `no stack trace on stderr:\n${outcome.stderr}`);
  assert.doesNotMatch(outcome.stderr, /Unhandled|uncaught|UND_ERR_ABORTED/i, `no unhandled error:\n${outcome.stderr}`);
}

test('SIGTERM at pages spread over a 300-page harvest: exit 130 each time, no stack trace, and the next harvest completes the archive', async () => {
  const archive = join(work, 'archive-sigterm');
  // Each trial runs on from where the last one stopped, so the stops land ever later in the list.
  for (const pagesIn of [1, 3, 8, 15, 25]) {
    const before = listRequests;
    const running = start(['harvest', endpoint, '--archive', archive, '--batch-records', '20', '--json']);
    let ended = false;
    void running.exited.then(() => (ended = true));
    while (!ended && listRequests < before + pagesIn) await sleep(1);
    running.child.kill('SIGTERM');
    const outcome = await running.exited;
    assertNoStackTrace(outcome);
    if (outcome.code === 0) break; // the list ended before the signal (a fast machine): nothing left to stop
    assert.equal(outcome.code, 130, `stopped after ${pagesIn} pages: exit ${outcome.code ?? outcome.signal}\n${outcome.stderr}`);
    assert.match(outcome.stderr, /SIGTERM: finishing the records in progress, then stopping/);
  }
  const last = await start(['harvest', endpoint, '--archive', archive, '--json']).exited;
  assert.equal(last.code, 0, last.stderr);
  const catalog = Catalog.open(archive);
  try {
    const source = catalog.source(endpoint)!;
    assert.equal(catalog.status().sources[0]!.liveResources, FILES, 'every file is in the archive');
    assert.ok(source.watermark);
    assert.equal(catalog.openFailures(source.id).length, 0);
  } finally {
    catalog.close();
  }
});

test('a ListRecords answer with Content-Encoding: br: one coded line, exit 3, no unhandled error', async () => {
  const outcome = await start(['harvest', brotliEndpoint, '--archive', join(work, 'archive-br'), '--compression', 'always']).exited;
  assertNoStackTrace(outcome);
  assert.equal(outcome.code, 3, outcome.stderr);
  const coded = outcome.stderr.split('\n').filter((line) => /\[ERR_[A-Z_]+\]/.test(line));
  assert.equal(coded.length, 1, `one coded line:\n${outcome.stderr}`);
  assert.match(coded[0]!, /Content-Encoding this harvester cannot read: br \[ERR_HARVEST_PROTOCOL\]$/);
});

test('oaibag mirror with a source that answers br and a good one: the good one is harvested, the bad one reported, the mirror goes on until stopped', async () => {
  const archive = join(work, 'archive-mirror');
  const config = join(work, 'mirror.json');
  writeFileSync(
    config,
    JSON.stringify({
      archive,
      sources: [
        { baseUrl: brotliEndpoint, every: '1h', compression: 'always' },
        { baseUrl: endpoint, every: '1h' },
      ],
    }),
  );
  const running = start(['mirror', '--config', config]);
  let ended = false;
  void running.exited.then(() => (ended = true));
  let stdout = '';
  running.child.stdout!.on('data', (text: string) => (stdout += text));
  // Both sources run once at the start, one after the other.
  while (!ended && (stdout.match(/next run/g) ?? []).length < 2) await sleep(20);
  assert.equal(ended, false, 'the mirror is still running after a source failed');
  running.child.kill('SIGTERM');
  const outcome = await running.exited;
  assertNoStackTrace(outcome);
  assert.equal(outcome.code, 0, outcome.stderr);
  assert.match(outcome.stdout, new RegExp(`${brotliEndpoint.replaceAll('.', '\\.')}: not harvested: .*cannot read: br \\[ERR_HARVEST_PROTOCOL\\]`));
  assert.match(outcome.stdout, new RegExp(`${endpoint.replaceAll('.', '\\.')}: harvest #\\d+ complete: ${FILES} records`));
  assert.match(outcome.stdout, /mirror stopped/);
});

test('SIGTERM while a ListRecords request is held unanswered: exit 130 at once, the archive valid, no stack trace', async () => {
  hold = true;
  try {
    const archive = join(work, 'archive-held');
    const running = start(['harvest', brotliEndpoint, '--archive', archive]);
    let ended = false;
    void running.exited.then(() => (ended = true));
    while (!ended && heldRequests === 0) await sleep(10);
    running.child.kill('SIGTERM');
    const outcome = await running.exited;
    assertNoStackTrace(outcome);
    assert.equal(outcome.code, 130, outcome.stderr);
    const catalog = Catalog.open(archive);
    try {
      assert.equal(catalog.lastHarvest(catalog.source(brotliEndpoint)!.id)?.status, 'interrupted');
    } finally {
      catalog.close();
    }
  } finally {
    hold = false;
  }
});
