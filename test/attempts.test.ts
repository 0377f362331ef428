// Every harvest attempt leaves its trace (issue 25, "A failed night leaves no trace"): one that
// never reached a list (the source is not OAI-PMH, stopped during Identify), one whose process
// was killed, one refused because the archive is locked. `oaibag status` names each; the exit
// codes are those of the one table (docs/operations.md).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';
import { OAIBAG_BIN as OAIBAG, oaibag, oaibagAsync } from './oaibag-process.ts';

const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;
const NO_DISK_ALARM = ['--disk-warning', '0', '--disk-critical', '0'];

let work: string;
let repository: Repository;
let server: Server;
let endpoint: string;
/** What the server does with the next requests: answer as OAI-PMH, as a web page, or hold them. */
let mode: 'oai' | 'html' | 'hold' = 'oai';
let arrived: (() => void) | undefined;

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-attempts-'));
  const site = join(work, 'site');
  mkdirSync(site);
  for (let i = 0; i < 6; i++) {
    writeFileSync(join(site, `page-${i}.html`), `<p>page ${i}</p>`);
    utimesSync(join(site, `page-${i}.html`), YEAR_2000, YEAR_2000);
  }
  server = createServer((req, res) => {
    if (mode === 'html') {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>a web page, not OAI-PMH</body></html>');
      return;
    }
    if (mode === 'hold') {
      arrived?.();
      return; // never answered: the client is killed or stopped meanwhile
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

/** The harvest as a child process, resolved once the held request has arrived. */
async function harvestUntilHeld(archive: string): Promise<{ child: ReturnType<typeof spawn>; closed: Promise<unknown[]>; stderr: () => string }> {
  mode = 'hold';
  const held = new Promise<void>((resolve) => {
    arrived = resolve;
  });
  const child = spawn(process.execPath, [OAIBAG, 'harvest', '--archive', archive, '--retries', '0', endpoint], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  const closed = once(child, 'close');
  await held;
  return { child, closed, stderr: () => stderr };
}

interface Health {
  sources: Array<{ baseUrl: string; lastAttempt?: { status: string; reason: string | null }; lastSuccess?: { status: string } }>;
}
const healthOf = (archive: string): Health => (JSON.parse(oaibag('status', '--archive', archive, '--json').stdout) as { health: Health }).health;

test('an attempt whose source is not OAI-PMH is recorded failed with its reason; status and --check name it; the last success stays', async () => {
  const archive = join(work, 'not-oai');
  mode = 'oai';
  assert.equal((await oaibagAsync('harvest', '--archive', archive, endpoint)).status, 0);
  mode = 'html';
  const failed = await oaibagAsync('harvest', '--archive', archive, '--retries', '0', endpoint);
  mode = 'oai';
  assert.equal(failed.status, 3, failed.stderr);
  assert.equal(failed.stderr.trim().split('\n').length, 1, failed.stderr);
  const [source] = healthOf(archive).sources;
  assert.equal(source?.lastAttempt?.status, 'failed');
  assert.match(source?.lastAttempt?.reason ?? '', /\[ERR_HARVEST_NOT_OAI\]$/);
  assert.equal(source?.lastSuccess?.status, 'complete');
  const text = oaibag('status', '--archive', archive).stdout;
  assert.match(text, /\n {2}last attempt: #2 failed, .* \[ERR_HARVEST_NOT_OAI\]\n {2}last success: #1 complete, /);
  const check = oaibag('status', '--archive', archive, '--check', ...NO_DISK_ALARM);
  assert.equal(check.status, 2, check.stdout);
  assert.match(check.stdout, /^OAIBAG CRITICAL: .*: last attempt failed .*\[ERR_HARVEST_NOT_OAI\]/);
});

test('a first attempt that never reached its source is recorded too: the source is listed, never harvested successfully', async () => {
  const archive = join(work, 'never');
  mode = 'html';
  const failed = await oaibagAsync('harvest', '--archive', archive, '--retries', '0', endpoint);
  mode = 'oai';
  assert.equal(failed.status, 3, failed.stderr);
  const [source] = healthOf(archive).sources;
  assert.equal(source?.baseUrl, endpoint);
  assert.equal(source?.lastAttempt?.status, 'failed');
  assert.equal(source?.lastSuccess, undefined);
  const check = oaibag('status', '--archive', archive, '--check', ...NO_DISK_ALARM);
  assert.equal(check.status, 2, check.stdout);
  assert.ok(check.stdout.includes(`${endpoint}: never harvested successfully`), check.stdout);
});

test('a harvest killed with -9 shows as interrupted at once, not running; --check warns; the next harvest completes', async () => {
  const archive = join(work, 'killed');
  const run = await harvestUntilHeld(archive);
  run.child.kill('SIGKILL');
  await run.closed;
  mode = 'oai';
  const [source] = healthOf(archive).sources;
  assert.equal(source?.lastAttempt?.status, 'interrupted', 'a row left running by a dead process is shown interrupted');
  assert.match(source?.lastAttempt?.reason ?? '', /its process ended without closing it/);
  const check = oaibag('status', '--archive', archive, '--check', ...NO_DISK_ALARM);
  assert.equal(check.status, 2, 'never harvested successfully is critical; the interruption is named too');
  assert.match(check.stdout, /last attempt interrupted/);
  const again = await oaibagAsync('harvest', '--archive', archive, endpoint);
  assert.equal(again.status, 0, again.stderr);
  const ok = oaibag('status', '--archive', archive, '--check', ...NO_DISK_ALARM);
  assert.equal(ok.status, 0, ok.stdout);
});

test('SIGTERM during Identify: the attempt is recorded interrupted, exit 130', async () => {
  const archive = join(work, 'stopped');
  const run = await harvestUntilHeld(archive);
  run.child.kill('SIGTERM');
  const [code] = (await run.closed) as [number | null];
  mode = 'oai';
  assert.equal(code, 130, run.stderr());
  const [source] = healthOf(archive).sources;
  assert.equal(source?.lastAttempt?.status, 'interrupted');
  assert.match(source?.lastAttempt?.reason ?? '', /stopped on request/);
});

test('a locked archive: exit 4 (an archive problem, not "some records failed"), one coded line', async () => {
  const archive = join(work, 'locked');
  mode = 'oai';
  assert.equal((await oaibagAsync('harvest', '--archive', archive, endpoint)).status, 0);
  // The lock of a live process (this test's) on this host.
  writeFileSync(join(archive, 'lock'), JSON.stringify({ pid: process.pid, hostname: hostname(), startedAt: new Date().toISOString(), purpose: 'test' }));
  try {
    const locked = await oaibagAsync('harvest', '--archive', archive, endpoint);
    assert.equal(locked.status, 4, locked.stderr);
    assert.match(locked.stderr, /^oaibag: the archive is locked by pid \d+ .*\[ERR_ARCHIVE_LOCKED\]/);
    assert.equal(locked.stderr.trim().split('\n').length, 1);
  } finally {
    rmSync(join(archive, 'lock'));
  }
});
