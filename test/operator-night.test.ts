// The operator's night (issue 25): a mirror of two sources, run as cron or systemd would run it
// and watched only through what oaibag reports. One source goes unreachable, a payload of the
// other is damaged on disk; `status --check` must say CRITICAL naming both, the notification
// command and the webhook must receive both, /metrics must show both. Once the source is back
// and `repair --from` a replica has put the bytes back, `status --check` must say OK.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { Catalog } from '../packages/archiver/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';
import { OAIBAG_BIN as OAIBAG, oaibag, oaibagAsync } from './oaibag-process.ts';

const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;
/** Free space on the test machine's disk is not what is tested: never a disk warning. */
const NO_DISK_ALARM = ['--disk-warning', '0', '--disk-critical', '0'];

interface Source {
  name: string;
  site: string;
  repository: Repository;
  server: Server;
  endpoint: string;
  /** While true, every connection is cut at once: the source is unreachable. */
  down: boolean;
}

let work: string;
let archive: string;
const sources: Source[] = [];
let hook: Server;
let hookUrl: string;
const posted: Array<Record<string, unknown>> = [];

async function startSource(name: string, files: Record<string, string>): Promise<Source> {
  const site = join(work, name);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(site, path)), { recursive: true });
    writeFileSync(join(site, path), text);
    utimesSync(join(site, path), YEAR_2000, YEAR_2000);
  }
  const source = { name, site, down: false } as Source;
  source.server = createServer((req, res) => {
    if (source.down) {
      req.socket.destroy();
      return;
    }
    source.repository.handler(req, res);
  });
  source.server.listen(0, '127.0.0.1');
  await once(source.server, 'listening');
  const base = `http://127.0.0.1:${(source.server.address() as AddressInfo).port}`;
  source.repository = await createRepository({ root: site, index: join(work, `${name}.sqlite`), baseUrl: base, watch: false, rescanSeconds: 0 });
  source.endpoint = `${base}/oai`;
  return source;
}

async function bodyOf(req: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of req) text += chunk;
  return text;
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-night-'));
  archive = join(work, 'archive');
  sources.push(await startSource('alpha', { 'index.html': '<p>alpha</p>', 'notes.txt': 'alpha notes' }));
  sources.push(await startSource('beta', { 'index.html': '<p>beta</p>', 'report.txt': 'the report of beta, kept for ever' }));
  hook = createServer((req, res) => {
    void bodyOf(req).then((text) => {
      posted.push(JSON.parse(text) as Record<string, unknown>);
      res.end('thanks\n');
    });
  });
  hook.listen(0, '127.0.0.1');
  await once(hook, 'listening');
  hookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`;
});

after(async () => {
  for (const source of sources) {
    source.server.closeAllConnections();
    source.server.close();
    await source.repository.close();
  }
  hook.close();
  rmSync(work, { recursive: true, force: true });
});

const notices = () => join(work, 'notices.jsonl');
const metricsFile = () => join(work, 'oaibag.prom');

/**
 * One night of the mirror: every source harvested once (both are due at once), then SIGTERM,
 * as a systemd timer with `RuntimeMaxSec` or a cron job with `timeout` would end it.
 */
async function night(): Promise<string> {
  const config = join(work, 'mirror.json');
  writeFileSync(config, JSON.stringify({ archive, sources: sources.map((source) => ({ baseUrl: source.endpoint, every: '1d' })) }));
  const child = spawn(
    process.execPath,
    [
      OAIBAG,
      'mirror',
      '--config',
      config,
      '--retries',
      '0',
      '--on-failure',
      `cat >> '${notices()}' && echo >> '${notices()}'`,
      '--notify',
      hookUrl,
      '--metrics-file',
      metricsFile(),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  const closed = once(child, 'close');
  await new Promise<void>((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      stdout += text;
      if ((stdout.match(/; next run /g) ?? []).length >= sources.length) resolve();
    });
    child.on('close', () => reject(new Error(`the mirror ended early: ${stdout}${stderr}`)));
  });
  // The report of the last run (notice, metrics file) follows its line on stdout.
  await new Promise((resolve) => setTimeout(resolve, 500));
  child.kill('SIGTERM');
  const [code] = (await closed) as [number | null];
  assert.equal(code, 0, `a mirror stopped by SIGTERM exits 0\n${stdout}${stderr}`);
  return stdout;
}

/** Flips one byte of a payload file of `source` in the archive; returns its path. */
function damagePayloadOf(source: Source): string {
  const catalog = Catalog.open(archive, { create: false });
  try {
    const sourceId = catalog.source(source.endpoint)!.id;
    const bag = catalog.bags().find((entry) => entry.sourceId === sourceId)!;
    const data = join(archive, bag.bagPath, 'data');
    const file = readdirSync(data, { recursive: true, withFileTypes: true }).find((entry) => entry.isFile())!;
    const path = join(file.parentPath, file.name);
    const bytes = readFileSync(path);
    bytes[0] = bytes[0]! ^ 0x20;
    writeFileSync(path, bytes);
    return path;
  } finally {
    catalog.close();
  }
}

async function metricsFromServe(): Promise<string> {
  const child = spawn(process.execPath, [OAIBAG, 'serve', '--archive', archive, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  try {
    const base = await new Promise<string>((resolve, reject) => {
      child.stderr.on('data', (text: string) => {
        stderr += text;
        const match = / at (http:\/\/\S+)\/oai /.exec(stderr);
        if (match) resolve(match[1]!);
      });
      child.on('close', () => reject(new Error(`serve ended early: ${stderr}`)));
    });
    const response = await fetch(`${base}/metrics`);
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    return await response.text();
  } finally {
    child.kill('SIGTERM');
    await once(child, 'close');
  }
}

test("the operator's night: an unreachable source and a damaged payload are CRITICAL, notified and in the metrics; fixed, the check is OK", async () => {
  const [alpha, beta] = sources as [Source, Source];

  // The first night: all is well.
  await night();
  const first = oaibag('status', '--archive', archive, '--check', ...NO_DISK_ALARM);
  assert.equal(first.status, 0, first.stdout + first.stderr);
  assert.match(first.stdout, /^OAIBAG OK: 2 source\(s\)/);
  assert.equal(first.stdout.trim().split('\n').length, 1, 'the plugin convention: one line');
  assert.equal(existsSync(notices()), false, 'no notification after a good night');
  assert.equal(posted.length, 0);
  const replica = join(work, 'replica');
  cpSync(archive, replica, { recursive: true });

  // The bad night: alpha cannot be reached, a payload of beta rots on disk, the weekly verify finds it.
  alpha.down = true;
  const damaged = damagePayloadOf(beta);
  const verify = await oaibagAsync('verify', '--archive', archive, '--on-failure', `cat >> '${notices()}' && echo >> '${notices()}'`, '--notify', hookUrl);
  assert.equal(verify.status, 4, `verify found damage: exit 4\n${verify.stdout}${verify.stderr}`);
  const stdout = await night();
  assert.match(stdout, new RegExp(`${alpha.endpoint.replace(/[.?]/g, '\\$&')}: not harvested: .*\\[ERR_HARVEST_UNREACHABLE\\]`));

  const check = oaibag('status', '--archive', archive, '--check', ...NO_DISK_ALARM);
  assert.equal(check.status, 2, check.stdout + check.stderr);
  assert.equal(check.stdout.trim().split('\n').length, 1);
  assert.match(check.stdout, /^OAIBAG CRITICAL: /);
  assert.ok(check.stdout.includes(`${alpha.endpoint}: last attempt failed`), check.stdout);
  assert.match(check.stdout, /\[ERR_HARVEST_UNREACHABLE\]/);
  assert.match(check.stdout, /archive: the fixity check of \S+ \(full\) found [1-9]\d* problem\(s\)/);
  assert.ok(!check.stdout.includes(`${beta.endpoint}:`), `beta itself is fine: ${check.stdout}`);
  assert.match(check.stdout, /\| sources=2 failing=1 failures=\d+ damaged=[1-9]/);

  // The plain status says the same, for people.
  const status = oaibag('status', '--archive', archive);
  assert.equal(status.status, 0, status.stderr);
  assert.match(
    status.stdout,
    new RegExp(`${alpha.endpoint.replace(/[.?]/g, '\\$&')}\\n  last attempt: #\\d+ failed, .*\\[ERR_HARVEST_UNREACHABLE\\]\\n  last success: #\\d+ complete`),
  );
  assert.match(status.stdout, /last verify: full, .*[1-9]\d* PROBLEM\(S\)/);

  // Both reached the notification command and the webhook: the damage, then the failed attempt.
  const lines = readFileSync(notices(), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  assert.deepEqual(
    lines.map((notice) => [notice.event, notice.outcome, notice.source]),
    [
      ['verify', 'damaged', undefined],
      ['harvest', 'failed', alpha.endpoint],
    ],
  );
  assert.match(String(lines[1]!.reason), /\[ERR_HARVEST_UNREACHABLE\]$/);
  assert.ok(String(lines[0]!.reason).includes('checksum') || String(lines[0]!.reason).includes('problem'), String(lines[0]!.reason));
  assert.deepEqual(
    posted.map((notice) => [notice.event, notice.outcome, notice.source]),
    lines.map((notice) => [notice.event, notice.outcome, notice.source]),
  );

  // The metrics, served and written for node_exporter, show both.
  for (const metrics of [await metricsFromServe(), readFileSync(metricsFile(), 'utf8')]) {
    assert.ok(metrics.includes(`oaibag_source_last_attempt_status{source="${alpha.endpoint}",status="failed"} 1`), metrics);
    assert.ok(metrics.includes(`oaibag_source_last_attempt_status{source="${beta.endpoint}",status="complete"} 1`), metrics);
    assert.match(metrics, /^oaibag_verify_last_damage [1-9]\d*$/m);
    assert.match(metrics, /^# TYPE oaibag_source_last_success_timestamp_seconds gauge$/m);
  }

  // The morning after: alpha is back, the bytes come back from the replica.
  alpha.down = false;
  await night();
  const repair = await oaibagAsync('repair', '--archive', archive, '--from', replica);
  assert.equal(repair.status, 0, `repair: ${repair.stdout}${repair.stderr}`);
  assert.deepEqual(readFileSync(damaged), readFileSync(join(replica, damaged.slice(archive.length))));
  const fixed = oaibag('status', '--archive', archive, '--check', ...NO_DISK_ALARM);
  assert.equal(fixed.status, 0, fixed.stdout + fixed.stderr);
  assert.match(fixed.stdout, /^OAIBAG OK: /);
  const clean = await oaibagAsync('verify', '--archive', archive);
  assert.equal(clean.status, 0, clean.stdout + clean.stderr);
});

test('status --check: no catalog is UNKNOWN (3), in one line; a source not in the archive is UNKNOWN; --max-age makes an old success CRITICAL', async () => {
  const none = oaibag('status', '--archive', join(work, 'no-archive'), '--check');
  assert.equal(none.status, 3, none.stdout + none.stderr);
  assert.match(none.stdout, /^OAIBAG UNKNOWN: no catalog at .*\[ERR_ARCHIVE_CATALOG\]\n$/);
  // A usage error of the plugin is UNKNOWN too, never CRITICAL; without --check its options are refused.
  const badAge = oaibag('status', '--archive', archive, '--check', '--max-age', '3x');
  assert.equal(badAge.status, 3, badAge.stdout + badAge.stderr);
  assert.match(badAge.stdout, /^OAIBAG UNKNOWN: --max-age "3x" is not a duration \[ERR_ARCHIVE_USAGE\]\n$/);
  assert.equal(oaibag('status', '--archive', archive, '--check', '--no-such-option').status, 3);
  const notChecking = oaibag('status', '--archive', archive, '--max-age', '1d');
  assert.equal(notChecking.status, 2, notChecking.stderr);
  assert.match(notChecking.stderr, /--max-age is an option of status --check \[ERR_ARCHIVE_USAGE\]/);
  const unknown = oaibag('status', '--archive', archive, '--check', '--source', 'http://127.0.0.1:9/elsewhere', ...NO_DISK_ALARM);
  assert.equal(unknown.status, 3, unknown.stdout);
  assert.match(unknown.stdout, /^OAIBAG UNKNOWN: http:\/\/127\.0\.0\.1:9\/elsewhere: not a source of this archive/);
  await new Promise((resolve) => setTimeout(resolve, 1100));
  const old = oaibag('status', '--archive', archive, '--check', '--max-age', '1s', '--source', sources[1]!.endpoint, ...NO_DISK_ALARM);
  assert.equal(old.status, 2, old.stdout);
  assert.ok(old.stdout.includes(`${sources[1]!.endpoint}: no successful harvest for`), old.stdout);
  assert.ok(!old.stdout.includes(sources[0]!.endpoint), '--source checks only that source');
});
