#!/usr/bin/env node
// Repository benchmark: scan, ListIdentifiers and By-Value throughput, first-page latency over
// a million items, and the server's memory under concurrent By-Value harvests.
// See bench/README.md. Run with `npx --yes pnpm@10.34.9 bench:repository [-- --runs N]`.
import { spawnSync } from 'node:child_process';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { machineFacts, parseBenchArgs, wholeNumberArg } from './bench-args.mjs';
import { loadBetterSqlite3, loadRepository, median, percentile, ROOT, round } from './repository-common.mjs';
import { ensureLargeFiles, ensureMillionIndex, ensureSmallSite } from './repository-fixture.mjs';
import { measureByValue, measureMemory, measureMillion, measureSmallSite } from './repository-sections.mjs';

const MB = 1e6; // every "MB" printed or stored here is 10^6 bytes; MiB is 2^20
const MiB = 2 ** 20;
const SECTIONS = ['scan', 'list', 'million', 'byvalue', 'memory'];
const DEFAULTS = { runs: 3, files: 100_000, million: 1_000_000, requests: 20, harvesters: 10 };
const SEED = 20261122;
const PAGE_SIZES = [1000, 100, 5000]; // the default first
const BY_VALUE_GROUPS = [
  { prefix: 'one', files: 200, size: MiB },
  { prefix: 'twenty', files: 20, size: 20 * MiB },
];
const MEMORY_GROUPS = [{ prefix: 'hundred', files: 5, size: 100 * MiB }];
const BY_VALUE_MAX = 128 * MiB; // above every file here: all of them go By-Value
const TARGET_FIRST_PAGE_MS = 100;
const TARGET_RSS_BYTES = 200 * MB;
const RSS_SAMPLE_MS = 50;

const USAGE = `usage: node bench/repository.mjs [--runs N] [--only LIST] [--files N] [--million N] [--keep] [--regenerate] [--out FILE] [--strict]

  --runs N        repetitions of each measurement; medians are reported (default ${DEFAULTS.runs})
  --only LIST     comma-separated sections to run: ${SECTIONS.join(',')} (default: all)
  --files N       files of the small site for the scan and ListIdentifiers (default ${DEFAULTS.files})
  --million N     rows of the large index for first-page latency (default ${DEFAULTS.million})
  --keep          keep the generated fixtures under bench/work/repository/ for the next run
                  (about 4.5 GB; by default they are deleted at the end)
  --regenerate    rebuild the fixtures even if kept ones match
  --out FILE      where to write the JSON (default bench/results/repository.json for a full run
                  with default sizes, bench/work/results/repository-<label>.json otherwise)
  --strict        exit with status 1 when a target is missed`;

const { args, usageError } = parseBenchArgs('repository', USAGE, {
  runs: { type: 'string', default: String(DEFAULTS.runs) },
  only: { type: 'string' },
  files: { type: 'string', default: String(DEFAULTS.files) },
  million: { type: 'string', default: String(DEFAULTS.million) },
  keep: { type: 'boolean', default: false },
  regenerate: { type: 'boolean', default: false },
  out: { type: 'string' },
  strict: { type: 'boolean', default: false },
});
const runs = wholeNumberArg(args.runs, '--runs', usageError);
const files = wholeNumberArg(args.files, '--files', usageError);
const millionRows = wholeNumberArg(args.million, '--million', usageError);
const sections = args.only === undefined ? SECTIONS : args.only.split(',').map((name) => name.trim());
for (const name of sections) if (!SECTIONS.includes(name)) usageError(`--only: unknown section "${name}" (sections: ${SECTIONS.join(', ')})`);
const full = sections.length === SECTIONS.length && files === DEFAULTS.files && millionRows === DEFAULTS.million;
const label = full ? '' : `${sections.join('+')}-${files}-${millionRows}-r${runs}`;
const outPath = resolve(args.out ?? (full ? join(ROOT, 'bench/results/repository.json') : join(ROOT, `bench/work/results/repository-${label}.json`)));
const workDir = join(ROOT, 'bench/work/repository');
const log = (line) => process.stderr.write(`${line}\n`);
const has = (name) => sections.includes(name);

const repository = await loadRepository();
const { Database, version: betterSqlite3Version } = loadBetterSqlite3();
const benchStarted = performance.now();
const load = [];
const loadMark = (phase) => load.push({ phase, loadavg: os.loadavg().map((value) => round(value, 2)) });
loadMark('start');

const results = {};
const fixtures = {};
const smallIndex = join(workDir, 'small/index.sqlite');

if (has('scan') || has('list')) {
  log('\n(1,2) small site');
  fixtures.small = ensureSmallSite({ dir: join(workDir, 'small'), files, seed: SEED, regenerate: args.regenerate, log });
  log(
    `${has('scan') ? `(1) scans of ${files} files, ${runs} run(s), each in a fresh process; ` : ''}` +
      `${has('list') ? `(2) ListIdentifiers through ${files} identifiers, pages of ${PAGE_SIZES.join(', ')}, ${runs} run(s) each` : ''}`,
  );
  const small = await measureSmallSite({
    site: fixtures.small,
    indexFile: smallIndex,
    scans: has('scan'),
    pageSizes: has('list') ? PAGE_SIZES : [],
    runs,
    log,
  });
  if (small.scan) results.scan = small.scan;
  if (small.list) results.list = small.list;
  loadMark('after small site');
}

if (has('million')) {
  log(`\n(3) first page of ListIdentifiers with ${millionRows} items in the index`);
  const { FileIndex } = await loadRepository('site/file-index.js');
  fixtures.million = ensureMillionIndex({
    dir: join(workDir, 'million'),
    rows: millionRows,
    seed: SEED,
    regenerate: args.regenerate,
    log,
    Database,
    FileIndex,
    // The repository's MIME types come from the site mapping it shares with `oaibag import`.
    mimeTypeForPath: (await import('../packages/oai-pmh/dist/index.js')).mimeTypeForPath,
    setSpecForMimeType: repository.setSpecForMimeType,
  });
  results.million = await measureMillion({ fixture: fixtures.million, runs, requests: DEFAULTS.requests, log });
  loadMark('after million');
}

if (has('byvalue')) {
  log('\n(4) ListRecords By-Value against read + base64 in process');
  fixtures.byValue = ensureLargeFiles({ dir: join(workDir, 'byvalue'), groups: BY_VALUE_GROUPS, regenerate: args.regenerate, log });
  results.byValue = await measureByValue({
    fixture: { ...fixtures.byValue, groups: BY_VALUE_GROUPS },
    indexFile: join(workDir, 'byvalue/index.sqlite'),
    byValueMax: BY_VALUE_MAX,
    runs,
    log,
  });
  loadMark('after byvalue');
}

if (has('memory')) {
  log(`\n(5) server RSS, ${DEFAULTS.harvesters} concurrent By-Value harvesters`);
  fixtures.memory = ensureLargeFiles({ dir: join(workDir, 'memory'), groups: MEMORY_GROUPS, regenerate: args.regenerate, log });
  results.memory = await measureMemory({
    fixture: fixtures.memory,
    indexFile: join(workDir, 'memory/index.sqlite'),
    byValueMax: BY_VALUE_MAX,
    harvesters: DEFAULTS.harvesters,
    runs,
    sampleMs: RSS_SAMPLE_MS,
    log,
  });
  loadMark('after memory');
}

// ---- figures -------------------------------------------------------------------------------
const figures = {};
const rows = [];
const targets = [];
const row = (metric, value, target = '', pass) => rows.push([metric, String(value), target, pass === undefined ? '' : pass ? 'PASS' : 'FAIL']);
const spread = (values, digits = 1) => `${round(Math.min(...values), digits)}..${round(Math.max(...values), digits)}`;

if (results.scan) {
  const samples = results.scan.samples;
  const firstSeconds = samples.map((sample) => sample.first.seconds);
  const rescanSeconds = samples.map((sample) => sample.rescans[0].seconds);
  figures.scan = {
    files,
    folders: fixtures.small.folders,
    siteBytes: fixtures.small.bytes,
    firstScanSeconds: round(median(firstSeconds), 2),
    firstScanFilesPerSecond: Math.round(files / median(firstSeconds)),
    firstScanMBps: round(fixtures.small.bytes / MB / median(firstSeconds), 1),
    firstScanCpuSeconds: round(median(samples.map((sample) => sample.first.cpuSeconds)), 2),
    rescanSeconds: round(median(rescanSeconds), 2),
    rescanFilesPerSecond: Math.round(files / median(rescanSeconds)),
    rescanCpuSeconds: round(median(samples.map((sample) => sample.rescans[0].cpuSeconds)), 2),
    indexBytes: results.scan.indexBytes,
    indexBytesPerFile: round(results.scan.indexBytes / files, 1),
    scanChildPeakRssBytes: Math.max(...samples.map((sample) => sample.peakRssBytes)),
    ranges: { firstScanSeconds: spread(firstSeconds, 2), rescanSeconds: spread(rescanSeconds, 2) },
  };
  const f = figures.scan;
  row(`(1) first scan, ${files} files (s)`, f.firstScanSeconds, '', undefined);
  row('    first scan (files/s)', f.firstScanFilesPerSecond);
  row('    first scan (MB/s of files)', f.firstScanMBps);
  row('(1) rescan, nothing changed (s)', f.rescanSeconds);
  row('    rescan (files/s)', f.rescanFilesPerSecond);
  row('(1) index file (MB)', round(f.indexBytes / MB, 1), `${f.indexBytesPerFile} bytes/file`);
}

if (results.list) {
  figures.listIdentifiers = {};
  for (const { pageIdentifiers, samples } of results.list) {
    const seconds = samples.map((sample) => sample.seconds);
    const entry = {
      identifiers: files,
      pages: samples[0].pages,
      seconds: round(median(seconds), 3),
      identifiersPerSecond: Math.round(files / median(seconds)),
      medianPageMilliseconds: round(median(samples.map((sample) => sample.medianPageMilliseconds)), 2),
      firstPageMilliseconds: round(median(samples.map((sample) => sample.firstPageMilliseconds)), 2),
      bytesPerIdentifier: round(samples[0].bytes / files, 1),
      range: spread(
        samples.map((sample) => files / sample.seconds),
        0,
      ),
    };
    figures.listIdentifiers[pageIdentifiers] = entry;
    row(
      `(2) ListIdentifiers, pages of ${pageIdentifiers} (ids/s)`,
      entry.identifiersPerSecond,
      `${entry.pages} pages, ${entry.medianPageMilliseconds} ms/page`,
    );
  }
}

if (results.million) {
  const { rounds, duringScan, startupScan, pagedToMiddle } = results.million;
  const firstMedians = rounds.map((r) => median(r.first));
  const firstP95s = rounds.map((r) => percentile(r.first, 95));
  const deepMedians = rounds.map((r) => median(r.deep));
  const deepP95s = rounds.map((r) => percentile(r.deep, 95));
  figures.million = {
    rows: millionRows,
    liveRows: fixtures.million.liveRows,
    requestsPerRound: DEFAULTS.requests,
    firstPageMedianMs: round(median(firstMedians), 1),
    firstPageP95Ms: round(median(firstP95s), 1),
    deepPageMedianMs: round(median(deepMedians), 1),
    deepPageP95Ms: round(median(deepP95s), 1),
    deepPageCursor: pagedToMiddle.headers,
    firstPageAllRoundsMaxMs: round(Math.max(...rounds.flatMap((r) => r.first)), 1),
    startupScanSeconds: round(startupScan.secondsSinceStart, 1),
    startupScanFilesPerSecond: Math.round(startupScan.files / startupScan.secondsSinceStart),
    firstPageDuringStartupScan:
      duringScan.length > 0
        ? {
            requests: duringScan.length,
            medianMs: round(median(duringScan.map((d) => d.milliseconds)), 1),
            maxMs: round(Math.max(...duringScan.map((d) => d.milliseconds)), 1),
          }
        : null,
    pagingToMiddle: {
      pages: pagedToMiddle.pages,
      seconds: round(pagedToMiddle.seconds, 2),
      identifiersPerSecond: Math.round(pagedToMiddle.headers / pagedToMiddle.seconds),
      medianPageMilliseconds: round(pagedToMiddle.medianPageMilliseconds, 2),
    },
    ranges: {
      firstPageMedianMs: spread(firstMedians),
      firstPageP95Ms: spread(firstP95s),
      deepPageMedianMs: spread(deepMedians),
      deepPageP95Ms: spread(deepP95s),
    },
  };
  const f = figures.million;
  const firstPass = f.firstPageMedianMs < TARGET_FIRST_PAGE_MS;
  const p95Pass = f.firstPageP95Ms < TARGET_FIRST_PAGE_MS;
  targets.push({
    metric: `first page of ListIdentifiers, ${millionRows} items, median (ms)`,
    value: f.firstPageMedianMs,
    target: `< ${TARGET_FIRST_PAGE_MS}`,
    pass: firstPass,
  });
  targets.push({
    metric: `first page of ListIdentifiers, ${millionRows} items, p95 (ms)`,
    value: f.firstPageP95Ms,
    target: `< ${TARGET_FIRST_PAGE_MS}`,
    pass: p95Pass,
  });
  row(`(3) first page, ${millionRows} items, median (ms)`, f.firstPageMedianMs, `< ${TARGET_FIRST_PAGE_MS}`, firstPass);
  row('    first page, p95 (ms)', f.firstPageP95Ms, `< ${TARGET_FIRST_PAGE_MS}`, p95Pass);
  row(`(3) deep page (cursor ${f.deepPageCursor}), median (ms)`, f.deepPageMedianMs);
  row('    deep page, p95 (ms)', f.deepPageP95Ms);
  row('    start-up rescan of the index (s)', f.startupScanSeconds, `${f.startupScanFilesPerSecond} files/s`);
  if (f.firstPageDuringStartupScan)
    row('    first page during that rescan, median (ms)', f.firstPageDuringStartupScan.medianMs, `max ${f.firstPageDuringStartupScan.maxMs}`);
}

if (results.byValue) {
  const payload = fixtures.byValue.bytes;
  const harvestSeconds = results.byValue.samples.map((sample) => sample.harvest.seconds);
  const baselineSeconds = results.byValue.samples.map((sample) => sample.baseline.seconds);
  figures.byValue = {
    files: fixtures.byValue.files,
    payloadBytes: payload,
    xmlBytes: results.byValue.samples[0].harvest.bytes,
    pages: results.byValue.samples[0].harvest.pages,
    listRecordsPayloadMBps: round(payload / MB / median(harvestSeconds), 1),
    listRecordsXmlMBps: round(results.byValue.samples[0].harvest.bytes / MB / median(harvestSeconds), 1),
    inProcessPayloadMBps: round(payload / MB / median(baselineSeconds), 1),
    ratio: round(median(baselineSeconds) / median(harvestSeconds), 3),
    ranges: {
      listRecordsPayloadMBps: spread(harvestSeconds.map((s) => payload / MB / s)),
      inProcessPayloadMBps: spread(baselineSeconds.map((s) => payload / MB / s)),
    },
  };
  const f = figures.byValue;
  row('(4) ListRecords By-Value (MB/s of payload)', f.listRecordsPayloadMBps, `${f.listRecordsXmlMBps} MB/s of XML`);
  row('(4) read + base64 in process (MB/s)', f.inProcessPayloadMBps);
  row('(4) ListRecords / in process', `${f.ratio}x`);
}

if (results.memory) {
  const samples = results.memory.samples;
  figures.memory = {
    harvesters: DEFAULTS.harvesters,
    files: fixtures.memory.files,
    fileBytes: MEMORY_GROUPS[0].size,
    peakRssBytes: Math.max(...samples.map((sample) => sample.vmHwmBytes)),
    peakRssMB: round(Math.max(...samples.map((sample) => sample.vmHwmBytes)) / MB, 1),
    medianPeakRssMB: round(median(samples.map((sample) => sample.vmHwmBytes)) / MB, 1),
    sampledPeakRssMB: round(Math.max(...samples.map((sample) => sample.sampledPeakRssBytes)) / MB, 1),
    idleRssMB: round(median(samples.map((sample) => sample.idleRssBytes)) / MB, 1),
    seconds: round(median(samples.map((sample) => sample.seconds)), 1),
    aggregateXmlMBps: round(median(samples.map((sample) => sample.bytes / MB / sample.seconds)), 1),
    aggregatePayloadMBps: round(median(samples.map((sample) => (DEFAULTS.harvesters * fixtures.memory.bytes) / MB / sample.seconds)), 1),
    ranges: { peakRssMB: spread(samples.map((sample) => sample.vmHwmBytes / MB)) },
  };
  const f = figures.memory;
  const pass = f.peakRssBytes < TARGET_RSS_BYTES;
  targets.push({ metric: `server peak RSS, ${f.harvesters} By-Value harvesters (MB)`, value: f.peakRssMB, target: `< ${TARGET_RSS_BYTES / MB}`, pass });
  row(`(5) server peak RSS, ${f.harvesters} harvesters (MB)`, f.peakRssMB, `< ${TARGET_RSS_BYTES / MB}`, pass);
  row('    server RSS idle (MB)', f.idleRssMB);
  row('    aggregate (MB/s of payload)', f.aggregatePayloadMBps, `${f.seconds} s per run`);
}

const totalSeconds = (performance.now() - benchStarted) / 1000;
console.log(`\nRepository benchmark: median of ${runs} run(s); MB = 10^6 bytes; no compression; total ${round(totalSeconds, 0)} s\n`);
console.log(table(['metric', 'value', 'target / note', 'result'], rows));

const sqliteVersion = (() => {
  const db = new Database(':memory:');
  try {
    return db.prepare('SELECT sqlite_version() AS v').get().v;
  } finally {
    db.close();
  }
})();
const report = {
  benchmark: 'repository',
  date: new Date().toISOString(),
  units: { MB: 1e6, MiB: 2 ** 20, note: 'medians over runs; ranges are slowest..fastest run; peak RSS is the worst run' },
  machine: machineFacts(),
  software: { betterSqlite3: betterSqlite3Version, sqlite: sqliteVersion, ...gitInfo() },
  options: {
    runs,
    sections,
    files,
    millionRows,
    seed: SEED,
    requests: DEFAULTS.requests,
    harvesters: DEFAULTS.harvesters,
    byValueMax: BY_VALUE_MAX,
    rssSampleMs: RSS_SAMPLE_MS,
  },
  loadAverage: load,
  totalSeconds: round(totalSeconds, 1),
  fixtures: Object.fromEntries(
    Object.entries(fixtures).map(([name, fixture]) => [
      name,
      { ...fixture, root: relative(ROOT, fixture.root), ...(fixture.indexFile ? { indexFile: relative(ROOT, fixture.indexFile) } : {}) },
    ]),
  ),
  figures,
  targets,
  allTargetsMet: targets.every((target) => target.pass),
  samples: results,
};
await mkdir(dirname(outPath), { recursive: true });
await writeFile(`${outPath}.tmp`, `${JSON.stringify(report, null, 2)}\n`);
await rename(`${outPath}.tmp`, outPath);
if (!args.keep) {
  await rm(workDir, { recursive: true, force: true });
  log(`deleted the fixtures under ${relative(ROOT, workDir)} (--keep keeps them)`);
}
console.log(
  `\n${targets.length === 0 ? 'no target measured' : report.allTargetsMet ? 'all targets met' : 'TARGET MISSED'}; figures written to ${relative(ROOT, outPath)}`,
);
if (args.strict && !report.allTargetsMet) process.exitCode = 1;

// ---- helpers -------------------------------------------------------------------------------
function gitInfo() {
  const git = (...gitArgs) => spawnSync('git', gitArgs, { cwd: ROOT, encoding: 'utf8' });
  const head = git('rev-parse', 'HEAD');
  if (head.status !== 0) return {};
  const status = git('status', '--porcelain', '--', 'packages/repository');
  return { gitCommit: head.stdout.trim(), repositoryPackageDirty: status.status === 0 ? status.stdout.trim() !== '' : null };
}

function table(header, body) {
  const all = [header, ...body];
  const widths = header.map((_, i) => Math.max(...all.map((line) => line[i].length)));
  const line = (cells) =>
    cells
      .map((cell, i) => (i === 1 ? cell.padStart(widths[i]) : cell.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}
