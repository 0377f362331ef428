// bench:scale-out (issue 28): what the archive pays for leaving one machine's folder and SQLite.
//
// 1. per-record: the mod_oai testbed (experiment-testbed.mjs, quick by default, --full for the
//    paper's 5,268 files) harvested whole by `oaibag harvest` into (a) a folder + SQLite and
//    (b) `--catalog postgres://… --store s3://…`, alternated a, b, a, b… (--runs each): wall
//    time, CPU of the oaibag process and, read from /proc, of PostgreSQL (the postmaster and
//    its backends), radosgw and the Ceph OSD and monitor; per-record costs and (b)/(a).
// 2. workers: the same testbed's files spread over --sources small sites (one repository each,
//    bench/scale-out-sites.mjs), added with `oaibag sources add` to a PostgreSQL catalog, then
//    harvested by 1, 2 and 4 `oaibag worker --until-idle` processes (each its own folder, one
//    catalog and store): wall time until the last one stops, records/s, speed-up, and where
//    the CPU went.
// PostgreSQL 15 and Ceph RGW are started here, on loopback, by the tests' own scripts
// (test/postgres-server.ts, test/ceph-rgw-server.ts): run with `node --import tsx`.
// Timing hygiene: before each measured run the 1-minute load average must fall below 1.0
// (polled every 10 s, up to --load-wait seconds; then the run goes ahead), and it is recorded
// with every result.
import { spawnSync } from 'node:child_process';
import { linkSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { CreateBucketCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { machineFacts, parseBenchArgs, sectionsArg, wholeNumberArg } from './bench-args.mjs';
import { listFiles, prepareTestbed } from './experiment-testbed.mjs';
import { ARCHIVER_BIN, archiveUsage, checkBuilt, runArchiver, runHarvester, startRepository, summarizeProfile } from './harvest-common.mjs';
import { cpuSecondsOf, median, ROOT, round, startChild } from './repository-common.mjs';
import { removeRunFolders, settleDisk } from './settle-disk.mjs';

const USAGE = `usage: node --import tsx bench/scale-out.mjs [--full] [--runs N] [--worker-runs N] [--workers 1,2,4] [--sources N] [--only per-record,workers] [--load-wait SECONDS] [--no-profile] [--keep] [--out FILE]
  --full          the paper's testbed (5,268 files, 292 MB) instead of the quick one (500 files, about 30 MB)
  --runs N        harvests of each kind, alternated folder, store, folder… (default 3; medians)
  --worker-runs N rounds of the workers section, each 1, 2, 4 workers in turn (default 3; medians)
  --workers LIST  worker counts (default 1,2,4)
  --sources N     small sites the testbed is spread over for the workers section (default 20)
  --only LIST     sections: per-record, workers (default both)
  --load-wait S   the longest wait for the 1-minute load average to fall below 1.0 before a run (default 600)
  --no-profile    skip the untimed profiled harvests (node --cpu-prof) of each kind
  --keep          keep bench/work/scale-out/<variant>/run-scale-out
  --out FILE      results file (default bench/results/scale-out-<variant>.json)`;

const { args, usageError } = parseBenchArgs('scale-out', USAGE, {
  full: { type: 'boolean', default: false },
  runs: { type: 'string', default: '3' },
  'worker-runs': { type: 'string', default: '3' },
  workers: { type: 'string', default: '1,2,4' },
  sources: { type: 'string', default: '20' },
  only: { type: 'string' },
  'load-wait': { type: 'string', default: '600' },
  'no-profile': { type: 'boolean', default: false },
  keep: { type: 'boolean', default: false },
  out: { type: 'string' },
});
const runs = wholeNumberArg(args.runs, '--runs', usageError);
const workerRuns = wholeNumberArg(args['worker-runs'], '--worker-runs', usageError);
const sourceCount = wholeNumberArg(args.sources, '--sources', usageError);
const loadWaitSeconds = wholeNumberArg(args['load-wait'], '--load-wait', usageError, 0);
const workerCounts = args.workers.split(',').map((count) => wholeNumberArg(count.trim(), '--workers', usageError));
const sections = sectionsArg(args.only, ['per-record', 'workers'], usageError);
const variant = args.full ? 'full' : 'quick';
const out = args.out ?? join(ROOT, `bench/results/scale-out-${variant}.json`);

const SEED = 20261122; // experiment.mjs's: the same testbed
const BY_VALUE_MAX = 16 * 2 ** 20; // the repository's default
const LOAD_LIMIT = 1.0;
const CLOCK_TICKS = 100; // USER_HZ on Linux
const BUCKET = 'bench';
const log = (line) => process.stderr.write(`${line}\n`);

checkBuilt();
const { startPostgres, POSTGRES_SKIP } = await import('../test/postgres-server.ts');
const { startCephRgw, CEPH_SKIP } = await import('../test/ceph-rgw-server.ts');
if (POSTGRES_SKIP || CEPH_SKIP) {
  log(`scale-out: ${POSTGRES_SKIP || CEPH_SKIP}`);
  process.exit(1);
}

// ---- measuring helpers ----

const sleep = (ms) => new Promise((done) => setTimeout(done, ms));
const loadAverage = () => Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);

/** Waits (polling every 10 s, at most `loadWaitSeconds`) for the 1-minute load average to fall below 1.0. */
async function waitForQuiet(what) {
  const started = Date.now();
  let load = loadAverage();
  if (load >= LOAD_LIMIT) log(`  ${what}: load average ${load}, waiting for < ${LOAD_LIMIT} (at most ${loadWaitSeconds} s)`);
  while (load >= LOAD_LIMIT && Date.now() - started < loadWaitSeconds * 1000) {
    await sleep(10_000);
    load = loadAverage();
  }
  const settled = await settleDisk({ maxMs: 30_000 });
  return { loadAverageAtStart: load, quiet: load < LOAD_LIMIT, waitedSeconds: Math.round((Date.now() - started) / 1000), diskSettledSeconds: settled };
}

/** pid → { ppid, seconds } for every process: utime+stime of itself and of its reaped children. */
function processTable() {
  const table = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // After the name: state(0) ppid(1) … utime(11) stime(12) cutime(13) cstime(14).
      const ticks = Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
      table.set(Number(name), { ppid: Number(fields[1]), seconds: ticks / CLOCK_TICKS });
    } catch {
      // ended meanwhile
    }
  }
  return table;
}

/**
 * CPU seconds of the process trees rooted at `pids` so far: every live process in them with
 * the reaped children each has waited for (a PostgreSQL backend that ended is in the
 * postmaster's cutime). Differences of two readings are what the trees spent in between.
 */
function treeCpuSeconds(pids, table = processTable()) {
  const children = new Map();
  for (const [pid, { ppid }] of table) children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  let seconds = 0;
  const seen = new Set();
  const walk = (pid) => {
    if (seen.has(pid) || !table.has(pid)) return;
    seen.add(pid);
    seconds += table.get(pid).seconds;
    for (const child of children.get(pid) ?? []) walk(child);
  };
  for (const pid of pids) walk(pid);
  return seconds;
}

/** CPU of this process's reaped children (the oaibag runs and what they spawned): /proc/self/stat cutime + cstime. */
function reapedChildrenSeconds() {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) / CLOCK_TICKS;
}

/** A reading of every engine's CPU, to subtract from the next. */
function cpuReading(engines, sites) {
  const table = processTable();
  const [gateway, osd, mon] = engines.rgw.pids();
  return {
    oaibag: reapedChildrenSeconds(),
    postgres: treeCpuSeconds([engines.postgres.pid()], table),
    radosgw: treeCpuSeconds([gateway], table),
    cephOsd: treeCpuSeconds([osd], table),
    cephMon: treeCpuSeconds([mon], table),
    sites: cpuSecondsOf(sites) ?? 0,
  };
}

function cpuSpent(before, after) {
  const spent = {};
  for (const key of Object.keys(before)) spent[key] = round(after[key] - before[key], 2);
  return spent;
}

/** Objects and bytes under an S3 prefix, by top-level area (aips/, commits/, claims/, probe/…). */
async function storeUsage(s3, prefix) {
  const usage = { objects: 0, bytes: 0, byArea: {} };
  let token;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: `${prefix}/`, ContinuationToken: token }));
    for (const object of page.Contents ?? []) {
      const area = object.Key.slice(prefix.length + 1).split('/')[0];
      usage.objects++;
      usage.bytes += object.Size;
      usage.byArea[area] = (usage.byArea[area] ?? 0) + 1;
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return usage;
}

/** The catalog database's size and its transactions so far (pg_stat_database). */
async function databaseFigures(postgres, database) {
  const text = await postgres.psql(
    'postgres',
    `SELECT pg_database_size('${database}'), xact_commit, xact_rollback, tup_inserted, tup_updated FROM pg_stat_database WHERE datname = '${database}'`,
  );
  const [sizeBytes, commits, rollbacks, inserted, updated] = text.trim().split('|').map(Number);
  return { sizeBytes, commits, rollbacks, inserted, updated };
}

/** `oaibag ARGS` to its end; its stdout (throws on a non-zero exit). */
function oaibag(args) {
  const result = spawnSync(process.execPath, [ARCHIVER_BIN, ...args], { encoding: 'utf8', maxBuffer: 64 * 2 ** 20 });
  if (result.status !== 0) throw new Error(`oaibag ${args.join(' ')} ended with ${result.status}: ${result.stderr.trim().slice(-1500)}`);
  return result.stdout;
}

/** Versions and bags in an archive's catalog (`oaibag status --json`), over every source. */
function catalogCounts(archiveDir) {
  const status = JSON.parse(oaibag(['status', '--archive', archiveDir, '--json']));
  const sum = (key) => status.sources.reduce((total, source) => total + (source[key] ?? 0), 0);
  return { sources: status.sources.length, versions: sum('versions'), liveResources: sum('liveResources'), bags: sum('bags') };
}

/** How many sources ended their last run each way (`sources list --json`'s lastOutcome). */
function tallyOutcomes(sources) {
  const tally = {};
  for (const { lastOutcome } of sources) tally[lastOutcome] = (tally[lastOutcome] ?? 0) + 1;
  return tally;
}

function perRecord(seconds, records) {
  return round((seconds * 1000) / records, 3);
}

// ---- set-up ----

const startedAt = new Date();
const workDir = join(ROOT, 'bench/work/scale-out');
mkdirSync(workDir, { recursive: true });
await removeRunFolders(join(workDir, variant), log);
const testbed = prepareTestbed({ workDir, variant, run: 'scale-out', seed: SEED, regenerate: false, log });
const runDir = testbed.dir;
log(`starting PostgreSQL and Ceph RGW…`);
const [postgres, rgw] = await Promise.all([startPostgres(), startCephRgw()]);
const engines = { postgres, rgw };
const versions = {
  postgres: (await postgres.psql('postgres', 'SHOW server_version')).trim(),
  radosgw: spawnSync('radosgw', ['--version'], { encoding: 'utf8' }).stdout.trim(),
};
Object.assign(process.env, {
  AWS_ACCESS_KEY_ID: rgw.accessKeyId,
  AWS_SECRET_ACCESS_KEY: rgw.secretAccessKey,
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
});
const s3 = new S3Client({
  endpoint: rgw.endpoint,
  region: rgw.region,
  forcePathStyle: true,
  credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey },
});
await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
const storeArgs = (prefix) => ['--store', `s3://${BUCKET}/${prefix}`, '--store-endpoint', rgw.endpoint, '--store-region', rgw.region];
log(`PostgreSQL ${versions.postgres} (pid ${postgres.pid()}), ${versions.radosgw} at ${rgw.endpoint}`);

const results = {
  benchmark: 'scale-out',
  startedAt: startedAt.toISOString(),
  machine: {
    ...machineFacts(),
    nproc: Number(spawnSync('nproc', { encoding: 'utf8' }).stdout.trim()),
    free: spawnSync('free', ['-g'], { encoding: 'utf8' }).stdout,
  },
  engines: versions,
  variant,
  loadLimit: LOAD_LIMIT,
  loadWaitSeconds,
};
const newDatabase = async (name) => ({ name, url: await postgres.createDatabase(name) });

try {
  if (sections.includes('per-record')) results.perRecord = await perRecordSection();
  if (sections.includes('workers')) results.workers = await workersSection();
} finally {
  s3.destroy();
  await rgw.stop();
  await postgres.stop();
  mkdirSync(dirname(out), { recursive: true });
  results.endedAt = new Date().toISOString();
  writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);
  log(`\nresults: ${relative(ROOT, out)}`);
  if (!args.keep) rmSync(runDir, { recursive: true, force: true });
}
printTables(results);

// ---- 1. per-record cost: folder + SQLite against PostgreSQL + S3 ----

async function perRecordSection() {
  const server = await startRepository({ root: testbed.root, index: join(runDir, 'index.sqlite'), fresh: true, byValueMax: BY_VALUE_MAX });
  const files = listFiles(testbed.root).length;
  log(`\nper-record: ${variant} testbed, ${files} files at ${server.oaiUrl}`);
  const samples = { folder: [], store: [] };
  try {
    for (let run = 1; run <= runs; run++) {
      for (const kind of ['folder', 'store']) {
        const archiveDir = join(runDir, `archive-${kind}-${run}`);
        const database = kind === 'store' ? await newDatabase(`per_record_${run}`) : undefined;
        const prefix = `per-record-${run}`;
        const extraArgs = kind === 'store' ? ['--catalog', database.url, ...storeArgs(prefix)] : [];
        const quiet = await waitForQuiet(`${kind} run ${run}`);
        const before = cpuReading(engines, server.child.pid);
        const result = await runHarvester({ oaiUrl: server.oaiUrl, archiveDir, extraArgs, sampleMs: 200 });
        const cpu = cpuSpent(before, cpuReading(engines, server.child.pid));
        const { summary } = result;
        if (summary.status !== 'complete' || summary.failed !== 0) throw new Error(`${kind} run ${run}: status ${summary.status}, ${summary.failed} failed`);
        const sample = {
          run,
          seconds: round(result.seconds, 3),
          records: summary.records,
          requests: summary.requests,
          loadAverageAtEnd: loadAverage(),
          ...quiet,
          oaibagSelfCpuSeconds: round(result.peak.userSeconds + result.peak.systemSeconds, 2),
          oaibagUserSeconds: round(result.peak.userSeconds, 2),
          oaibagSystemSeconds: round(result.peak.systemSeconds, 2),
          cpu,
          peakRssBytes: result.peak.vmHwmBytes,
        };
        if (kind === 'store') {
          sample.store = await storeUsage(s3, prefix);
          sample.catalog = await databaseFigures(postgres, database.name);
          sample.folder = archiveUsage(archiveDir);
        } else sample.folder = archiveUsage(archiveDir);
        sample.catalogCounts = catalogCounts(archiveDir);
        samples[kind].push(sample);
        log(
          `  ${kind} run ${run}: ${sample.seconds} s, ${sample.records} records, oaibag CPU ${cpu.oaibag} s, postgres ${cpu.postgres} s, radosgw ${cpu.radosgw} s, osd ${cpu.cephOsd} s, load ${quiet.loadAverageAtStart}→${sample.loadAverageAtEnd}`,
        );
      }
    }
    const profiles = args['no-profile'] ? undefined : await profileBoth(server);
    return { testbed: { variant, files, root: relative(ROOT, testbed.root) }, samples, figures: perRecordFigures(samples), profiles };
  } finally {
    await server.child.stop();
  }
}

function perRecordFigures(samples) {
  const figures = {};
  for (const [kind, list] of Object.entries(samples)) {
    const records = list[0].records;
    const m = (pick) => round(median(list.map(pick)), 2);
    const engineCpu = (sample) => sample.cpu.postgres + sample.cpu.radosgw + sample.cpu.cephOsd + sample.cpu.cephMon;
    figures[kind] = {
      records,
      wallSeconds: m((s) => s.seconds),
      wallRange: [Math.min(...list.map((s) => s.seconds)), Math.max(...list.map((s) => s.seconds))],
      oaibagCpuSeconds: m((s) => s.cpu.oaibag),
      postgresCpuSeconds: m((s) => s.cpu.postgres),
      radosgwCpuSeconds: m((s) => s.cpu.radosgw),
      cephOsdCpuSeconds: m((s) => s.cpu.cephOsd),
      cephMonCpuSeconds: m((s) => s.cpu.cephMon),
      sourceCpuSeconds: m((s) => s.cpu.sites),
      totalArchiveCpuSeconds: m((s) => s.cpu.oaibag + engineCpu(s)),
      wallMsPerRecord: perRecord(median(list.map((s) => s.seconds)), records),
      oaibagCpuMsPerRecord: perRecord(median(list.map((s) => s.cpu.oaibag)), records),
      totalArchiveCpuMsPerRecord: perRecord(median(list.map((s) => s.cpu.oaibag + engineCpu(s))), records),
      loadAverages: list.map((s) => s.loadAverageAtStart),
    };
  }
  if (figures.folder && figures.store) {
    const ratio = (key) => round(figures.store[key] / figures.folder[key], 2);
    figures.ratio = { wall: ratio('wallSeconds'), oaibagCpu: ratio('oaibagCpuSeconds'), totalArchiveCpu: ratio('totalArchiveCpuSeconds') };
  }
  return figures;
}

/** One more, untimed harvest of each kind under `node --cpu-prof`: every thread's profile summarized. */
async function profileBoth(server) {
  const profiles = {};
  for (const kind of ['folder', 'store']) {
    const archiveDir = join(runDir, `archive-${kind}-profiled`);
    const cpuProfileDir = join(runDir, `profile-${kind}`);
    rmSync(cpuProfileDir, { recursive: true, force: true });
    const extraArgs = kind === 'store' ? ['--catalog', (await newDatabase('profiled')).url, ...storeArgs('profiled')] : [];
    const result = await runHarvester({ oaiUrl: server.oaiUrl, archiveDir, extraArgs, sampleMs: 200, cpuProfileDir });
    const threads = readdirSync(cpuProfileDir)
      .filter((name) => name.endsWith('.cpuprofile'))
      .map((name) => ({ file: name, ...summarizeProfile(join(cpuProfileDir, name), 20) }));
    profiles[kind] = { seconds: round(result.seconds, 2), threads };
    log(`  profiled ${kind} harvest: ${round(result.seconds, 2)} s, ${threads.length} thread profile(s)`);
  }
  return profiles;
}

// ---- 2. workers: 1, 2, 4 over many small sources ----

async function workersSection() {
  // The testbed's files dealt out to the sites in turn (hard links), so each site has the mix.
  const all = listFiles(testbed.root);
  const sites = Array.from({ length: sourceCount }, (_, n) => ({
    root: join(runDir, 'sites', `site-${String(n + 1).padStart(2, '0')}`),
    index: join(runDir, 'sites', `index-${n + 1}.sqlite`),
  }));
  all.forEach((path, n) => {
    const target = join(sites[n % sourceCount].root, path);
    mkdirSync(dirname(target), { recursive: true });
    linkSync(join(testbed.root, path), target);
  });
  const server = startChild(process.execPath, [join(ROOT, 'bench/scale-out-sites.mjs'), JSON.stringify({ sites, byValueMax: BY_VALUE_MAX })], {
    label: 'scale-out-sites',
  });
  const ready = await server.nextJson();
  const files = ready.files.reduce((sum, count) => sum + count, 0);
  log(`\nworkers: ${files} files over ${sourceCount} sites (${Math.min(...ready.files)}-${Math.max(...ready.files)} each)`);
  const samples = [];
  let profile;
  try {
    for (let round_ = 1; round_ <= workerRuns; round_++) {
      for (const count of workerCounts) {
        const name = `workers_${count}_${round_}`;
        const database = await newDatabase(name);
        const admin = join(runDir, `${name}-admin`);
        for (const endpoint of ready.endpoints) oaibag(['sources', 'add', endpoint, '--every', '1d', '--archive', admin, '--catalog', database.url]);
        const folders = Array.from({ length: count }, (_, i) => join(runDir, `${name}-w${i + 1}`));
        const quiet = await waitForQuiet(`${count} worker(s), round ${round_}`);
        const before = cpuReading(engines, server.pid);
        const started = performance.now();
        // --poll 1s: a worker that finds nothing to claim while another still harvests looks
        // again a second later (default 30 s), so the wall time is the work, not the polling.
        const outcomes = await Promise.all(
          folders.map((archiveDir, i) =>
            runArchiver({
              args: ['worker', '--until-idle', '--poll', '1s', '--name', `w${i + 1}`, '--archive', archiveDir, '--catalog', database.url, ...storeArgs(name)],
              archiveDir,
              sampleMs: 500,
              json: false,
            }),
          ),
        );
        const seconds = (performance.now() - started) / 1000;
        const cpu = cpuSpent(before, cpuReading(engines, server.pid));
        const listed = oaibag(['sources', 'list', '--json', '--archive', admin])
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line));
        const counts = catalogCounts(admin);
        const sample = {
          round: round_,
          workers: count,
          seconds: round(seconds, 3),
          workerSeconds: outcomes.map((outcome) => round(outcome.seconds, 2)),
          outcomes: tallyOutcomes(listed),
          ...counts,
          recordsPerSecond: round(counts.versions / seconds, 1),
          loadAverageAtEnd: loadAverage(),
          ...quiet,
          workerSelfCpuSeconds: round(
            outcomes.reduce((sum, outcome) => sum + outcome.peak.userSeconds + outcome.peak.systemSeconds, 0),
            2,
          ),
          cpu,
          store: await storeUsage(s3, name),
          catalog: await databaseFigures(postgres, name),
        };
        samples.push(sample);
        log(
          `  ${count} worker(s), round ${round_}: ${sample.seconds} s, ${counts.versions} versions from ${counts.sources} sources (${JSON.stringify(sample.outcomes)}), ${sample.recordsPerSecond} records/s; CPU oaibag ${cpu.oaibag} s, postgres ${cpu.postgres} s, radosgw ${cpu.radosgw} s, osd ${cpu.cephOsd} s, sites ${cpu.sites} s; load ${quiet.loadAverageAtStart}→${sample.loadAverageAtEnd}`,
        );
      }
    }
    if (!args['no-profile']) profile = await profileWorker(ready.endpoints);
  } finally {
    await server.stop();
  }
  const figures = {};
  for (const count of workerCounts) {
    const list = samples.filter((sample) => sample.workers === count);
    const m = (pick) => round(median(list.map(pick)), 2);
    figures[count] = {
      wallSeconds: m((s) => s.seconds),
      recordsPerSecond: m((s) => s.recordsPerSecond),
      oaibagCpuSeconds: m((s) => s.cpu.oaibag),
      postgresCpuSeconds: m((s) => s.cpu.postgres),
      radosgwCpuSeconds: m((s) => s.cpu.radosgw),
      cephOsdCpuSeconds: m((s) => s.cpu.cephOsd + s.cpu.cephMon),
      sourceCpuSeconds: m((s) => s.cpu.sites),
      loadAverages: list.map((s) => s.loadAverageAtStart),
    };
  }
  const base = figures[workerCounts[0]];
  for (const count of workerCounts) figures[count].speedUp = round(base.wallSeconds / figures[count].wallSeconds, 2);
  return { sites: { count: sourceCount, files, filesPerSite: ready.files }, samples, figures, profile };
}

/** One more, untimed worker over every source under `node --cpu-prof`: where a small source's run goes. */
async function profileWorker(endpoints) {
  const name = 'workers_profiled';
  const database = await newDatabase(name);
  const admin = join(runDir, `${name}-admin`);
  for (const endpoint of endpoints) oaibag(['sources', 'add', endpoint, '--every', '1d', '--archive', admin, '--catalog', database.url]);
  const archiveDir = join(runDir, `${name}-w1`);
  const cpuProfileDir = join(runDir, 'profile-worker');
  rmSync(cpuProfileDir, { recursive: true, force: true });
  const result = await runArchiver({
    args: ['worker', '--until-idle', '--poll', '1s', '--name', 'w1', '--archive', archiveDir, '--catalog', database.url, ...storeArgs(name)],
    archiveDir,
    sampleMs: 500,
    json: false,
    cpuProfileDir,
  });
  const threads = readdirSync(cpuProfileDir)
    .filter((file) => file.endsWith('.cpuprofile'))
    .map((file) => ({ file, ...summarizeProfile(join(cpuProfileDir, file), 25) }));
  log(`  profiled worker: ${round(result.seconds, 2)} s, ${threads.length} thread profile(s)`);
  return { seconds: round(result.seconds, 2), threads };
}

// ---- report ----

function printTables(results) {
  const lines = [];
  const pr = results.perRecord?.figures;
  if (pr?.folder && pr?.store) {
    lines.push(
      `| archive | records | wall s (median, range) | oaibag CPU s | postgres CPU s | radosgw CPU s | OSD+mon CPU s | wall ms/record | CPU ms/record (oaibag + engines) | load averages |`,
    );
    lines.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |');
    for (const [kind, label] of [
      ['folder', '(a) folder + SQLite'],
      ['store', '(b) PostgreSQL + S3'],
    ]) {
      const f = pr[kind];
      lines.push(
        `| ${label} | ${f.records} | ${f.wallSeconds} (${f.wallRange.map((s) => round(s, 2)).join('-')}) | ${f.oaibagCpuSeconds} | ${f.postgresCpuSeconds} | ${f.radosgwCpuSeconds} | ${round(f.cephOsdCpuSeconds + f.cephMonCpuSeconds, 2)} | ${f.wallMsPerRecord} | ${f.totalArchiveCpuMsPerRecord} | ${f.loadAverages.join(', ')} |`,
      );
    }
    lines.push(`\n(b)/(a): wall ${pr.ratio.wall}, oaibag CPU ${pr.ratio.oaibagCpu}, CPU with the engines ${pr.ratio.totalArchiveCpu}\n`);
  }
  const wk = results.workers?.figures;
  if (wk) {
    lines.push('| workers | wall s | records/s | speed-up | oaibag CPU s | postgres CPU s | radosgw CPU s | OSD+mon CPU s | sites CPU s | load averages |');
    lines.push('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |');
    for (const [count, f] of Object.entries(wk))
      lines.push(
        `| ${count} | ${f.wallSeconds} | ${f.recordsPerSecond} | ${f.speedUp} | ${f.oaibagCpuSeconds} | ${f.postgresCpuSeconds} | ${f.radosgwCpuSeconds} | ${f.cephOsdCpuSeconds} | ${f.sourceCpuSeconds} | ${f.loadAverages.join(', ')} |`,
      );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}
