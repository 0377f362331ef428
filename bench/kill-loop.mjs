#!/usr/bin/env node
// The kill -9 loop of issue 24, with batches small enough that kills fall between committed
// bags: `oaibag harvest --batch-records 20` of a 400-file site served 10 records a page, killed
// with SIGKILL at seeded random moments, several times per archive, then run to its end. Half
// of the archives are harvested through a proxy that breaks one record's digest the first time
// it is delivered: a record failure committed in one run, then a kill, then a resumed list.
// After every run that was not killed: exit 0 only if the archive is complete (every file one
// version with the site's bytes, no open failure, the watermark set); exit 1 otherwise. After
// the last run of each archive: every file once, `oaibag verify` passes.
// Run with `npx tsc -b && node scripts/bundle-cli.mjs && node bench/kill-loop.mjs [--kills N] [--seed S]`.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseBenchArgs, wholeNumberArg } from './bench-args.mjs';
import { ARCHIVER_BIN, checkBuilt } from './harvest-common.mjs';
import { loadRepository } from './repository-common.mjs';

const USAGE = `usage: node bench/kill-loop.mjs [--kills N] [--per-archive N] [--seed S] [--files N]

  --kills N        SIGKILLs in all (default 50)
  --per-archive N  kills before an archive's harvest is let run to its end (default 5)
  --seed S         the seed of the kill moments and of the site (default 24)
  --files N        files of the site (default 400)`;
const { args, usageError } = parseBenchArgs('kill-loop', USAGE, {
  kills: { type: 'string', default: '50' },
  'per-archive': { type: 'string', default: '5' },
  seed: { type: 'string', default: '24' },
  files: { type: 'string', default: '400' },
});
const KILLS = wholeNumberArg(args.kills, '--kills', usageError);
const PER_ARCHIVE = wholeNumberArg(args['per-archive'], '--per-archive', usageError);
const FILE_COUNT = wholeNumberArg(args.files, '--files', usageError);
let seed = wholeNumberArg(args.seed, '--seed', usageError);
checkBuilt();
const { Catalog } = await import(new URL('../packages/archiver/dist/index.js', import.meta.url).href);
const { createRepository } = await loadRepository();

/** mulberry32: the same kill moments for the same seed. */
function random() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

const work = mkdtempSync(join(tmpdir(), 'oaibag-kill-loop-'));
const site = join(work, 'site');
const files = [];
for (let i = 0; i < FILE_COUNT; i++) {
  const path = i % 25 === 7 ? `big/b${i}.bin` : `pages/p${i}.html`;
  const bytes = path.endsWith('.bin') ? Buffer.alloc(300_000 + i, i % 251) : Buffer.from(`<p>page ${i}</p>\n`.repeat(1 + (i % 50)));
  mkdirSync(dirname(join(site, path)), { recursive: true });
  writeFileSync(join(site, path), bytes);
  const mtime = 946684800 + i * 60;
  utimesSync(join(site, path), mtime, mtime);
  files.push(path);
}

// The proxy in front of the repository: with `breakOnce`, the first delivery of the record of
// BROKEN promises a digest its bytes do not have.
const BROKEN = files[Math.floor(FILE_COUNT / 4)];
const proxy = { breakOnce: false, broken: false, upstream: 0 };
const proxyServer = createServer((req, res) => {
  const upstream = request({ host: '127.0.0.1', port: proxy.upstream, path: req.url, headers: { ...req.headers, 'accept-encoding': 'identity' } }, (answer) => {
    const isPage = /verb=ListRecords/.test(req.url ?? '');
    if (!isPage || !proxy.breakOnce || proxy.broken) {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
      return;
    }
    const chunks = [];
    answer.on('data', (chunk) => chunks.push(chunk));
    answer.on('end', () => {
      let body = Buffer.concat(chunks).toString('utf8');
      const at = body.indexOf(`<identifier>${proxyUrl}/${BROKEN}</identifier>`);
      if (at >= 0) {
        const digest = body.indexOf('<premis:messageDigest>', at);
        body = `${body.slice(0, digest)}<premis:messageDigest>${'ab'.repeat(32)}${body.slice(body.indexOf('</premis:messageDigest>', digest))}`;
        proxy.broken = true;
      }
      const headers = { ...answer.headers, 'content-length': String(Buffer.byteLength(body)) };
      delete headers['transfer-encoding'];
      res.writeHead(answer.statusCode ?? 502, headers);
      res.end(body);
    });
  });
  upstream.on('error', () => res.destroy());
  upstream.end();
});
await new Promise((resolve) => proxyServer.listen(0, '127.0.0.1', resolve));
const proxyUrl = `http://127.0.0.1:${proxyServer.address().port}`;
const repository = await createRepository({
  root: site,
  index: join(work, 'index.sqlite'),
  watch: false,
  rescanSeconds: 0,
  byValueMax: 100_000,
  pageRecords: 10,
  baseUrl: proxyUrl,
});
await repository.listen(0, '127.0.0.1');
proxy.upstream = repository.server.address().port;
const endpoint = `${proxyUrl}/oai`;

function run(argv) {
  const child = spawn(process.execPath, [ARCHIVER_BIN, ...argv], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text) => (stdout += text));
  child.stderr.setEncoding('utf8').on('data', (text) => (stderr += text));
  const exited = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
  return { child, exited };
}

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

/** Missing and duplicated files, open failures and the watermark, from the catalog. */
function archiveState(archive) {
  const catalog = Catalog.open(archive);
  try {
    const source = catalog.source(endpoint);
    let missing = 0;
    let duplicated = 0;
    let wrong = 0;
    for (const path of files) {
      const versions = source ? catalog.versions(source.id, `${proxyUrl}/${path}`) : [];
      if (versions.length === 0) missing++;
      if (versions.length > 1) duplicated++;
      if (versions.length > 0 && versions.at(-1).sha256 !== sha256(readFileSync(join(site, path)))) wrong++;
    }
    return { missing, duplicated, wrong, failures: source ? catalog.openFailures(source.id).length : 0, watermark: source?.watermark ?? null };
  } finally {
    catalog.close();
  }
}

const totals = { kills: 0, runs: 0, exit0: 0, exit1: 0, other: 0, zeroWhileIncomplete: 0, missing: 0, duplicated: 0, verifyFailed: 0, archives: 0 };
const started = Date.now();
let baselineMs = 0;
for (let archiveNo = 0; totals.kills < KILLS; archiveNo++) {
  const archive = join(work, `archive-${archiveNo}`);
  proxy.breakOnce = archiveNo % 2 === 1;
  proxy.broken = false;
  totals.archives++;
  for (let attempt = 0; ; attempt++) {
    const killing = attempt < PER_ARCHIVE && totals.kills < KILLS && baselineMs > 0;
    const t0 = Date.now();
    const running = run(['harvest', endpoint, '--archive', archive, '--json', '--batch-records', '20']);
    let timer;
    if (killing) timer = setTimeout(() => running.child.kill('SIGKILL'), Math.round(random() * baselineMs));
    const outcome = await running.exited;
    clearTimeout(timer);
    if (outcome.signal === 'SIGKILL') {
      totals.kills++;
      continue;
    }
    if (baselineMs === 0) baselineMs = Date.now() - t0;
    totals.runs++;
    const state = archiveState(archive);
    const complete = state.missing === 0 && state.duplicated === 0 && state.wrong === 0 && state.failures === 0 && state.watermark !== null;
    if (outcome.code === 0) {
      totals.exit0++;
      if (!complete) {
        totals.zeroWhileIncomplete++;
        process.stderr.write(`archive ${archiveNo}: exit 0 while incomplete: ${JSON.stringify(state)}\n`);
      }
      break;
    }
    if (process.env.KILL_LOOP_VERBOSE)
      process.stderr.write(`archive ${archiveNo} run ${attempt}: exit ${outcome.code}: ${outcome.stderr.trim().split('\n').slice(-2).join(' | ')}\n`);
    if (outcome.code === 1) totals.exit1++;
    else {
      totals.other++;
      process.stderr.write(`archive ${archiveNo}: exit ${outcome.code}: ${outcome.stderr.split('\n').slice(-3).join(' | ')}\n`);
    }
    if (attempt > PER_ARCHIVE + 5) break;
  }
  const state = archiveState(archive);
  totals.missing += state.missing;
  totals.duplicated += state.duplicated;
  const verify = await run(['verify', '--archive', archive]).exited;
  if (verify.code !== 0) totals.verifyFailed++;
  rmSync(archive, { recursive: true, force: true });
}

await repository.close();
proxyServer.close();
rmSync(work, { recursive: true, force: true });
const result = { ...totals, files: FILE_COUNT, batchRecords: 20, pageRecords: 10, baselineMs, seconds: Math.round((Date.now() - started) / 1000) };
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
const ok = result.missing === 0 && result.duplicated === 0 && result.zeroWhileIncomplete === 0 && result.verifyFailed === 0 && result.other === 0;
process.stdout.write(ok ? 'kill loop: OK\n' : 'kill loop: NOT OK\n');
process.exitCode = ok ? 0 : 1;
if (!existsSync(ARCHIVER_BIN)) process.exitCode = 1;
