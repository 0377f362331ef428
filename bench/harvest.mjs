#!/usr/bin/env node
// Harvest benchmark: `oaibag harvest` of a mod_oai-shaped site served by the repository (a
// baseline into a new archive, then an incremental harvest after a quarter of the files
// changed), and of a single 1 GiB By-Value record: time, throughput, requests, the
// harvester's peak RSS, and what the archive costs on disk. See bench/README.md.
// Run with `npx --yes pnpm@10.34.9 bench:harvest [-- --full] [-- --runs N]`.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { machineFacts, parseBenchArgs, sectionsArg, wholeNumberArg } from './bench-args.mjs';
import { ARCHIVER_BIN, archiveUsage, checkBuilt, requestLogFigures, runHarvester, startRepository, summarizeProfile } from './harvest-common.mjs';
import { applyUpdate, ensureLargeSite, ensureSite } from './harvest-fixture.mjs';
import { median, ROOT, round } from './repository-common.mjs';
import { pauseAfterDeletion, settleDisk } from './settle-disk.mjs';

const MB = 1e6; // every "MB" printed or stored here is 10^6 bytes; MiB is 2^20
const MiB = 2 ** 20;
const GiB = 2 ** 30;
const SECTIONS = ['baseline', 'update', 'profile', 'large'];
const SEED = 20261122;
const BY_VALUE_MAX = 16 * MiB; // the repository's default: the tens-of-MB files go By-Reference
const LARGE_DEFAULT_MIB = 1024;
const TARGET_LARGE_RSS_BYTES = 150 * MB;
const RSS_SAMPLE_MS = 50;
const LARGE_TIMEOUT_SECONDS = 240; // 1 GiB at 4.5 MB/s; a harvest slower than that is reported as not finished

const USAGE = `usage: node bench/harvest.mjs [--full | --quick] [--runs N] [--only LIST] [--large-mib N] [--keep] [--regenerate] [--out FILE] [--strict]

  --quick         the site of 500 files, about 30 MB (the default)
  --full          the mod_oai-shaped site: 5,268 files, about 292 MB
  --runs N        repetitions of each measurement; medians are reported (default 1)
  --only LIST     comma-separated sections: ${SECTIONS.join(',')} (default: all;
                  update also runs the baseline it starts from)
  --large-mib N   the size of the large section's one By-Value record, in MiB (default
                  ${LARGE_DEFAULT_MIB}: issue 13's 1 GiB record under 150 MB of RSS; a smaller one
                  checks that the section runs)
  --keep          keep the sites under bench/work/harvest/ (about 1.4 GB with --full;
                  by default they are deleted at the end; archives always are)
  --regenerate    rebuild kept sites
  --out FILE      where to write the JSON (default bench/results/harvest.json for --full with
                  every section, bench/work/results/harvest-<label>.json otherwise)
  --strict        exit with status 1 when a target is missed`;

const { args, usageError } = parseBenchArgs('harvest', USAGE, {
  full: { type: 'boolean', default: false },
  quick: { type: 'boolean', default: false },
  runs: { type: 'string', default: '1' },
  only: { type: 'string' },
  'large-mib': { type: 'string', default: String(LARGE_DEFAULT_MIB) },
  keep: { type: 'boolean', default: false },
  regenerate: { type: 'boolean', default: false },
  out: { type: 'string' },
  strict: { type: 'boolean', default: false },
});
if (args.full && args.quick) usageError('--full and --quick exclude each other');
const variant = args.full ? 'full' : 'quick';
const runs = wholeNumberArg(args.runs, '--runs', usageError);
const sections = sectionsArg(args.only, SECTIONS, usageError);
const has = (name) => sections.includes(name);
const largeMiB = wholeNumberArg(args['large-mib'], '--large-mib', usageError);
const LARGE = { size: largeMiB * MiB, byValueMax: Math.max(2 * GiB, 2 * largeMiB * MiB), pageBytes: Math.max(4 * GiB, 4 * largeMiB * MiB) };
const largeName = largeMiB % 1024 === 0 ? `${largeMiB / 1024} GiB` : `${largeMiB} MiB`;
const complete = variant === 'full' && sections.length === SECTIONS.length && largeMiB === LARGE_DEFAULT_MIB;
const label = `${variant}-${sections.join('+')}${largeMiB === LARGE_DEFAULT_MIB ? '' : `-large${largeMiB}MiB`}-r${runs}`;
const outPath = resolve(args.out ?? (complete ? join(ROOT, 'bench/results/harvest.json') : join(ROOT, `bench/work/results/harvest-${label}.json`)));
const workDir = join(ROOT, 'bench/work/harvest');
const log = (line) => process.stderr.write(`${line}\n`);

checkBuilt();
mkdirSync(workDir, { recursive: true });
const benchStarted = performance.now();
const load = [];
const loadMark = (phase) => load.push({ phase, loadavg: os.loadavg().map((value) => round(value, 2)) });
loadMark('start');
const samples = { baseline: [], update: [], large: [] };
const fixtures = {};
let profile;

// ---- the mod_oai-shaped site: baseline, profile, update --------------------------------------
if (has('baseline') || has('update') || has('profile')) {
  const siteDir = join(workDir, variant);
  for (let run = 1; run <= runs; run++) {
    // The update changes the site: every run starts from a site rebuilt as generated.
    const site = ensureSite({ dir: siteDir, variant, seed: SEED, regenerate: args.regenerate && run === 1, log });
    fixtures.site = { ...site, root: relative(ROOT, site.root) };
    const indexFile = join(siteDir, 'index.sqlite');
    const requestLog = join(siteDir, 'requests.log');
    rmSync(requestLog, { force: true });
    const archiveDir = join(siteDir, 'archive');
    rmSync(archiveDir, { recursive: true, force: true });
    if (run > 1) await pauseAfterDeletion(log, "the previous run's archive was removed");
    let server = await startRepository({ root: site.root, index: indexFile, fresh: true, byValueMax: BY_VALUE_MAX, requestLog });
    try {
      log(`\nrun ${run}/${runs}: ${variant} site (${site.files} files, ${(site.bytes / MB).toFixed(1)} MB), repository scan ${server.seconds.toFixed(1)} s`);
      if (has('baseline') || has('update')) {
        log(`  disk settled in ${await settleDisk()} s`);
        loadMark(`run ${run}: before baseline`);
        const logFrom = requestLogFigures(requestLog).lines;
        const result = await runHarvester({ oaiUrl: server.oaiUrl, archiveDir, sampleMs: RSS_SAMPLE_MS });
        const usage = archiveUsage(archiveDir);
        const sample = { ...result, usage, repositoryLog: requestLogFigures(requestLog, logFrom), loadavg: os.loadavg() };
        checkSummary('baseline', result.summary, { records: site.files, added: site.files });
        log(`  baseline: ${describe(sample, site.bytes)}`);
        samples.baseline.push(sample);
      }
      if (has('profile') && run === 1) {
        const profileDir = join(siteDir, 'profile');
        rmSync(profileDir, { recursive: true, force: true });
        const profiledArchive = join(siteDir, 'archive-profiled');
        rmSync(profiledArchive, { recursive: true, force: true });
        // Kept until the end of the run: deleting 630 MB right before the update slowed it.
        const result = await runHarvester({ oaiUrl: server.oaiUrl, archiveDir: profiledArchive, sampleMs: RSS_SAMPLE_MS, cpuProfileDir: profileDir });
        const file = readdirSync(profileDir).find((name) => name.endsWith('.cpuprofile'));
        profile = { seconds: round(result.seconds, 2), ...summarizeProfile(join(profileDir, file)) };
        log(
          `  profiled baseline (node --cpu-prof, ${result.seconds.toFixed(1)} s): ${profile.byArea
            .slice(0, 5)
            .map((a) => `${a.name} ${a.percent}%`)
            .join(', ')}`,
        );
      }
      if (has('update')) {
        const previousUrl = server.baseUrl;
        await server.child.stop();
        server = { baseUrl: previousUrl };
        const changes = applyUpdate({ dir: siteDir, site, seed: SEED + run });
        const before = archiveUsage(archiveDir);
        server = await startRepository({
          root: site.root,
          index: indexFile,
          fresh: false,
          port: Number(new URL(server.baseUrl).port),
          byValueMax: BY_VALUE_MAX,
          requestLog,
        });
        // Lists exclude the current second: the changes' datestamps must be in the past.
        await new Promise((done) => setTimeout(done, 1000 - (Date.now() % 1000) + 50));
        log(
          `  update: ${changes.touched} touched, ${changes.rewritten} rewritten, ${changes.added} added, ${changes.deleted} deleted; repository rescan ${JSON.stringify(server.scan)}`,
        );
        await settleDisk();
        loadMark(`run ${run}: before update`);
        const logFrom = requestLogFigures(requestLog).lines;
        const result = await runHarvester({ oaiUrl: server.oaiUrl, archiveDir, sampleMs: RSS_SAMPLE_MS });
        const after = archiveUsage(archiveDir);
        const sample = {
          ...result,
          changes,
          rescan: server.scan,
          usageBefore: before,
          usage: after,
          growthBytes: after.diskBytes - before.diskBytes,
          repositoryLog: requestLogFigures(requestLog, logFrom),
          loadavg: os.loadavg(),
        };
        checkSummary('incremental', result.summary, { records: changes.touched + changes.rewritten + changes.added + changes.deleted });
        log(`  incremental: ${describe(sample, changes.changedPayloadBytes)}; growth ${(sample.growthBytes / MB).toFixed(2)} MB`);
        samples.update.push(sample);
      }
    } finally {
      await server?.child?.stop();
      rmSync(archiveDir, { recursive: true, force: true });
      rmSync(join(siteDir, 'archive-profiled'), { recursive: true, force: true });
    }
  }
  loadMark('after site');
}

// ---- one 1 GiB By-Value record (or --large-mib) ----------------------------------------------
if (has('large')) {
  // Another size has a folder of its own: the cached 1 GiB site stays.
  const dir = join(workDir, largeMiB === LARGE_DEFAULT_MIB ? 'large' : `large-${largeMiB}MiB`);
  const site = ensureLargeSite({ dir, size: LARGE.size, regenerate: args.regenerate, log });
  fixtures.large = { ...site, root: relative(ROOT, site.root) };
  const requestLog = join(dir, 'requests.log');
  rmSync(requestLog, { force: true });
  const server = await startRepository({
    root: site.root,
    index: join(dir, 'index.sqlite'),
    fresh: true,
    byValueMax: LARGE.byValueMax,
    pageBytes: LARGE.pageBytes,
    requestLog,
  });
  const archiveDir = join(dir, 'archive');
  try {
    log(`\none ${site.bytes} byte By-Value record (by-value-max ${LARGE.byValueMax}), ${runs} run(s)`);
    for (let run = 1; run <= runs; run++) {
      rmSync(archiveDir, { recursive: true, force: true });
      if (run > 1 || has('baseline') || has('update')) await pauseAfterDeletion(log, 'earlier archives were removed');
      loadMark(`large run ${run}`);
      const logFrom = requestLogFigures(requestLog).lines;
      const result = await runHarvester({ oaiUrl: server.oaiUrl, archiveDir, sampleMs: RSS_SAMPLE_MS, timeoutSeconds: LARGE_TIMEOUT_SECONDS });
      const sample = { ...result, usage: archiveUsage(archiveDir), repositoryLog: requestLogFigures(requestLog, logFrom), loadavg: os.loadavg() };
      if (result.timedOut) {
        log(
          `  run ${run}/${runs}: NOT FINISHED after ${LARGE_TIMEOUT_SECONDS} s: ${(result.receivedBytes / MB).toFixed(1)} MB received, peak RSS ${(result.peak.vmHwmBytes / MB).toFixed(1)} MB`,
        );
        samples.large.push(sample);
        continue;
      }
      checkSummary('large', result.summary, { records: 1, added: 1 });
      if (sample.repositoryLog.byVerb.file) throw new Error('the large record was fetched By-Reference; it should have come By-Value');
      log(`  run ${run}/${runs}: ${describe(sample, site.bytes)}`);
      samples.large.push(sample);
      rmSync(archiveDir, { recursive: true, force: true });
    }
  } finally {
    await server.child.stop();
    rmSync(archiveDir, { recursive: true, force: true });
  }
  loadMark('after large');
}

// ---- figures -------------------------------------------------------------------------------
const figures = {};
const targets = [];
const rows = [];
const row = (metric, value, note = '', pass) => rows.push([metric, String(value), note, pass === undefined ? '' : pass ? 'PASS' : 'FAIL']);
const spread = (values, digits = 1) => (values.length > 1 ? `${round(Math.min(...values), digits)}..${round(Math.max(...values), digits)}` : '');
const harvestFigures = (list, payloadBytes) => {
  const seconds = list.map((s) => s.seconds);
  const summary = list[0].summary;
  return {
    seconds: round(median(seconds), 2),
    payloadBytes,
    payloadMBps: round(payloadBytes / MB / median(seconds), 1),
    recordsPerSecond: round(summary.records / median(seconds), 1),
    records: summary.records,
    added: summary.added,
    modified: summary.modified,
    touched: summary.touched,
    deleted: summary.deleted,
    failed: summary.failed,
    storedBytes: summary.bytes,
    requests: summary.requests,
    repositoryRequests: list[0].repositoryLog.requests,
    repositoryRequestsByVerb: list[0].repositoryLog.byVerb,
    repositoryBytesSent: list[0].repositoryLog.bytes,
    cpuSeconds: round(median(list.map((s) => s.peak.userSeconds + s.peak.systemSeconds)), 2),
    peakRssBytes: Math.max(...list.map((s) => s.peak.vmHwmBytes ?? s.sampledPeakRssBytes)),
    peakRssMB: round(Math.max(...list.map((s) => s.peak.vmHwmBytes ?? s.sampledPeakRssBytes)) / MB, 1),
    sampledPeakRssMB: round(Math.max(...list.map((s) => s.sampledPeakRssBytes)) / MB, 1),
    archiveDiskBytes: list[0].usage.diskBytes,
    archiveCatalogDiskBytes: list[0].usage.catalogDiskBytes,
    archiveFiles: list[0].usage.files,
    archiveLinkedFiles: list[0].usage.linkedFiles,
    ranges: { seconds: spread(seconds, 2) },
  };
};

if (samples.baseline.length > 0) {
  const site = fixtures.site;
  const f = (figures.baseline = harvestFigures(samples.baseline, site.bytes));
  f.archiveOverheadPercent = round((100 * (f.archiveDiskBytes - site.bytes)) / site.bytes, 2);
  row(`baseline: ${site.files} files, ${round(site.bytes / MB, 1)} MB (s)`, f.seconds, `${f.recordsPerSecond} records/s`);
  row('  payload (MB/s)', f.payloadMBps);
  row(
    '  requests (summary / repository log)',
    `${f.requests} / ${f.repositoryRequests}`,
    Object.entries(f.repositoryRequestsByVerb)
      .map(([verb, n]) => `${verb} ${n}`)
      .join(', '),
  );
  row('  harvester peak RSS (MB)', f.peakRssMB, `sampled ${f.sampledPeakRssMB}`);
  row('  harvester CPU (s)', f.cpuSeconds);
  row(
    '  archive on disk (MB)',
    round(f.archiveDiskBytes / MB, 1),
    `${f.archiveOverheadPercent > 0 ? '+' : ''}${f.archiveOverheadPercent}% of the payload; catalog ${round(f.archiveCatalogDiskBytes / MB, 1)} MB`,
  );
  row('  records / added', `${f.records} / ${f.added}`);
}

if (samples.update.length > 0) {
  const site = fixtures.site;
  const first = samples.update[0];
  const f = (figures.update = harvestFigures(samples.update, first.changes.changedPayloadBytes));
  f.changes = first.changes;
  f.rescan = first.rescan;
  f.growthBytes = round(median(samples.update.map((s) => s.growthBytes)), 0);
  f.growthPercentOfChangedPayload = round((100 * f.growthBytes) / first.changes.changedPayloadBytes, 2);
  f.growthPercentOfSite = round((100 * f.growthBytes) / site.bytes, 2);
  f.growthBytesPerTouchedRecord = round((f.growthBytes - first.changes.rewrittenBytes - first.changes.addedBytes) / first.changes.touched, 0);
  const c = first.changes;
  row(`incremental: ${c.touched} touched, ${c.rewritten} rewritten, ${c.added} added, ${c.deleted} deleted (s)`, f.seconds, `${f.recordsPerSecond} records/s`);
  row(
    '  changed payload (MB/s)',
    f.payloadMBps,
    `${round(c.changedPayloadBytes / MB, 1)} MB, of which rewritten+added ${round((c.rewrittenBytes + c.addedBytes) / MB, 1)} MB`,
  );
  row(
    '  requests (summary / repository log)',
    `${f.requests} / ${f.repositoryRequests}`,
    Object.entries(f.repositoryRequestsByVerb)
      .map(([verb, n]) => `${verb} ${n}`)
      .join(', '),
  );
  row('  harvester peak RSS (MB)', f.peakRssMB);
  row(
    '  storage growth (MB)',
    round(f.growthBytes / MB, 2),
    `${f.growthPercentOfChangedPayload}% of the changed payload, ${f.growthPercentOfSite}% of the site`,
  );
  row('  growth beyond new bytes, per touched record', `${f.growthBytesPerTouchedRecord} B`, 'growth - rewritten - added, / touched');
  row('  added / modified / touched / deleted', `${f.added} / ${f.modified} / ${f.touched} / ${f.deleted}`);
}

if (samples.large.some((s) => s.timedOut)) {
  const list = samples.large;
  const peakRssBytes = Math.max(...list.map((s) => s.peak.vmHwmBytes ?? s.sampledPeakRssBytes));
  const received = median(list.map((s) => s.receivedBytes ?? fixtures.large.bytes));
  const f = (figures.large = {
    finished: list.filter((s) => !s.timedOut).length,
    timedOut: list.filter((s) => s.timedOut).length,
    timeoutSeconds: LARGE_TIMEOUT_SECONDS,
    receivedBytes: received,
    receivedMBps: round(received / MB / median(list.map((s) => s.seconds)), 2),
    peakRssBytes,
    peakRssMB: round(peakRssBytes / MB, 1),
  });
  targets.push({
    metric: `harvester peak RSS, one ${largeName} By-Value record (MB)`,
    value: f.peakRssMB,
    target: `< ${TARGET_LARGE_RSS_BYTES / MB}`,
    pass: false,
  });
  targets.push({
    metric: `one ${largeName} By-Value record harvested`,
    value: `${f.timedOut} of ${list.length} runs not finished in ${LARGE_TIMEOUT_SECONDS} s`,
    target: 'finished',
    pass: false,
  });
  row(`${largeName} By-Value record`, `NOT FINISHED in ${LARGE_TIMEOUT_SECONDS} s`, `${f.timedOut} of ${list.length} runs`, false);
  row('  payload received into tmp/ (MB/s)', f.receivedMBps, `${round(received / MB, 1)} MB by the timeout`);
  row('  harvester peak RSS (MB)', f.peakRssMB, `< ${TARGET_LARGE_RSS_BYTES / MB}`, false);
} else if (samples.large.length > 0) {
  const f = (figures.large = harvestFigures(samples.large, fixtures.large.bytes));
  const pass = f.peakRssBytes < TARGET_LARGE_RSS_BYTES;
  targets.push({ metric: `harvester peak RSS, one ${largeName} By-Value record (MB)`, value: f.peakRssMB, target: `< ${TARGET_LARGE_RSS_BYTES / MB}`, pass });
  row(`${largeName} By-Value record (s)`, f.seconds);
  row('  payload (MB/s)', f.payloadMBps, `${round(f.repositoryBytesSent / MB, 1)} MB of XML`);
  row('  harvester peak RSS (MB)', f.peakRssMB, `< ${TARGET_LARGE_RSS_BYTES / MB}`, pass);
  row('  harvester CPU (s)', f.cpuSeconds);
}

const totalSeconds = (performance.now() - benchStarted) / 1000;
console.log(`\nHarvest benchmark (${variant} site): median of ${runs} run(s); MB = 10^6 bytes; peak RSS = worst VmHWM; total ${round(totalSeconds, 0)} s\n`);
console.log(table(['metric', 'value', 'target / note', 'result'], rows));
if (profile) {
  console.log(`\nProfile of one baseline harvest (node --cpu-prof, ${profile.seconds} s, self time):`);
  for (const area of profile.byArea.slice(0, 8)) console.log(`  ${String(area.percent).padStart(5)}%  ${area.name}`);
  console.log('  top functions:');
  for (const fn of profile.topFunctions.slice(0, 10)) console.log(`  ${String(fn.percent).padStart(5)}%  ${fn.name}`);
}

const report = {
  benchmark: 'harvest',
  date: new Date().toISOString(),
  units: {
    MB: 1e6,
    MiB: 2 ** 20,
    note: 'medians over runs; peak RSS is the worst run (VmHWM written by the harvester as it exits); disk = st_blocks*512 of unique inodes',
  },
  machine: machineFacts(),
  software: gitInfo(),
  options: {
    variant,
    runs,
    sections,
    seed: SEED,
    byValueMax: BY_VALUE_MAX,
    large: LARGE,
    rssSampleMs: RSS_SAMPLE_MS,
    harvester: `${relative(ROOT, ARCHIVER_BIN)} harvest URL --archive DIR --json (default concurrency)`,
  },
  loadAverage: load,
  totalSeconds: round(totalSeconds, 1),
  fixtures,
  figures,
  targets,
  allTargetsMet: targets.every((target) => target.pass),
  profile,
  samples,
};
await mkdir(dirname(outPath), { recursive: true });
await writeFile(`${outPath}.tmp`, `${JSON.stringify(report, null, 2)}\n`);
await rename(`${outPath}.tmp`, outPath);
if (!args.keep) {
  rmSync(workDir, { recursive: true, force: true });
  log(`deleted the sites under ${relative(ROOT, workDir)} (--keep keeps them)`);
}
console.log(
  `\n${targets.length === 0 ? 'no target measured' : report.allTargetsMet ? 'all targets met' : 'TARGET MISSED'}; figures written to ${relative(ROOT, outPath)}`,
);
if (args.strict && !report.allTargetsMet) process.exitCode = 1;

// ---- helpers -------------------------------------------------------------------------------
/** A harvest that stored less than the site offers is a broken run, not a slow one. */
function checkSummary(what, summary, expected) {
  if (summary.status !== 'complete' || summary.failed !== 0) throw new Error(`${what} harvest: status ${summary.status}, ${summary.failed} failed`);
  for (const [key, value] of Object.entries(expected)) {
    if (summary[key] !== value) throw new Error(`${what} harvest: ${key} ${summary[key]}, expected ${value} (${JSON.stringify(summary)})`);
  }
}

function describe(sample, payloadBytes) {
  const s = sample.summary;
  return (
    `${sample.seconds.toFixed(2)} s, ${(payloadBytes / MB / sample.seconds).toFixed(1)} MB/s, ${s.records} records (${s.added} added, ${s.modified} modified, ` +
    `${s.touched} touched, ${s.deleted} deleted), ${s.requests} requests, peak RSS ${((sample.peak.vmHwmBytes ?? 0) / MB).toFixed(1)} MB, ` +
    `archive ${(sample.usage.diskBytes / MB).toFixed(1)} MB`
  );
}

function gitInfo() {
  const git = (...gitArgs) => spawnSync('git', gitArgs, { cwd: ROOT, encoding: 'utf8' });
  const head = git('rev-parse', 'HEAD');
  if (head.status !== 0) return {};
  const status = git('status', '--porcelain', '--', 'packages/archiver', 'packages/repository', 'packages/didl');
  return { gitCommit: head.stdout.trim(), packagesDirty: status.status === 0 ? status.stdout.trim() !== '' : null };
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
