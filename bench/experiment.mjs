#!/usr/bin/env node
// The mod_oai experiment (Nelson et al. 2005, section 6), oaibag against wget: one seeded
// mod_oai-shaped site served by the repository (OAI-PMH and the files from one server), a
// baseline (wget -r -N mirror from the listing page against `oaibag harvest` into a new
// archive), then an update (a quarter touched, a fifth of those rewritten, 10 added, 10
// deleted) and again wget -N (If-Modified-Since, and the paper's HEAD+GET) against an
// incremental harvest. Requests and bytes come from the server's log; changes found are
// checked against the ground truth; disk bytes and inodes of the archive and the mirror are
// counted after each phase; the archive is restored and compared byte for byte; the machine's
// sha-256, base64 and disk limits are measured in the same run. The targets are issue 13's
// (experiment-report.mjs). See bench/README.md.
// Run with `npx --yes pnpm@10.34.9 bench:experiment [-- --full] [-- --runs N]`.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join, relative, resolve } from 'node:path';
import { parseBenchArgs, wholeNumberArg } from './bench-args.mjs';
import { measureMachine } from './experiment-machine.mjs';
import { harvestBags, oaibagFound, restoreArchive } from './experiment-oaibag.mjs';
import { buildFigures, writeOutputs } from './experiment-report.mjs';
import { compareTrees, groundTruth, LISTING, prepareTestbed, scoreFound, snapshot, writeListing } from './experiment-testbed.mjs';
import { ensureWget, requestLog, runWget, wgetArguments, wgetFound } from './experiment-wget.mjs';
import { ARCHIVER_BIN, archiveUsage, checkBuilt, runHarvester, startRepository, summarizeProfile } from './harvest-common.mjs';
import { applyUpdate, VARIANTS } from './harvest-fixture.mjs';
import { cpuSecondsOf, ROOT, round } from './repository-common.mjs';
import { removeRunFolders, settleDisk } from './settle-disk.mjs';

const MB = 1e6;
const MiB = 2 ** 20;
const SEED = 20261122;
const BY_VALUE_MAX = 16 * MiB; // the repository's default
const RSS_SAMPLE_MS = 50;

const USAGE = `usage: node bench/experiment.mjs [--full | --quick] [--runs N] [--keep] [--regenerate] [--no-wget] [--no-profile] [--out-dir DIR]

  --quick         the site of 500 files, about 30 MB (the default)
  --full          the paper's testbed: 5,268 files, about 292 MB
  --runs N        repetitions; wall times are medians (default 3)
  --keep          keep the run's site, mirrors and archive under bench/work/experiment/<variant>/run
                  (the pristine site is always kept: it is the cache)
  --regenerate    rebuild the cached pristine site
  --no-wget       oaibag alone (as when wget cannot be installed)
  --no-profile    skip the two extra, untimed oaibag harvests of the last run under
                  node --cpu-prof (a baseline and an incremental one), whose self time
                  by area and function goes into the JSON and the table
  --out-dir DIR   where experiment.json/.md/.svg go (default bench/results for --full,
                  bench/work/results/experiment-quick otherwise)`;

const { args, usageError } = parseBenchArgs('experiment', USAGE, {
  full: { type: 'boolean', default: false },
  quick: { type: 'boolean', default: false },
  runs: { type: 'string', default: '3' },
  keep: { type: 'boolean', default: false },
  regenerate: { type: 'boolean', default: false },
  'no-wget': { type: 'boolean', default: false },
  'no-profile': { type: 'boolean', default: false },
  'out-dir': { type: 'string' },
});
if (args.full && args.quick) usageError('--full and --quick exclude each other');
const variant = args.full ? 'full' : 'quick';
const runs = wholeNumberArg(args.runs, '--runs', usageError);
const outDir = resolve(args['out-dir'] ?? (variant === 'full' ? join(ROOT, 'bench/results') : join(ROOT, 'bench/work/results/experiment-quick')));
const workDir = join(ROOT, 'bench/work/experiment');
const log = (line) => process.stderr.write(`${line}\n`);

checkBuilt();
mkdirSync(workDir, { recursive: true });
const started = performance.now();
const loadAtStart = os.loadavg().map((value) => round(value, 2));
const tools = args['no-wget'] ? { missing: '--no-wget' } : ensureWget(log);
if (tools.missing) log(`wget: ${tools.missing}; reporting oaibag's figures alone`);
log('measuring the machine: sha-256, base64 decoding, sequential write with fsync');
const machine = measureMachine(workDir);
log(`  sha-256 ${machine.sha256MBps} MB/s, base64 decode ${machine.base64DecodeMBps} MB/s, disk write ${machine.diskWriteMBps} MB/s`);

const samples = [];
const profiles = {};
let testbed;
// Folders of earlier invocations go first, and every run keeps its own folder until the end: a
// phase timed right after a large deletion measured the deletion (see settle-disk.mjs).
await removeRunFolders(join(workDir, variant), log);
const runDirs = [];
for (let run = 1; run <= runs; run++) {
  const tb = prepareTestbed({ workDir, variant, run, seed: SEED, regenerate: args.regenerate && run === 1, log });
  const runDir = tb.dir;
  runDirs.push(runDir);
  const logFile = join(runDir, 'requests.log');
  const index = join(runDir, 'index.sqlite');
  const archive = join(runDir, 'archive');
  const mirror = join(runDir, 'mirror');
  const mirrorHead = join(runDir, 'mirror-head');
  const sample = { run };
  let server = await startRepository({ root: tb.root, index, fresh: true, byValueMax: BY_VALUE_MAX, requestLog: logFile });
  try {
    const siteBefore = snapshot(tb.root);
    const payloadBytes = [...siteBefore.values()].reduce((sum, entry) => sum + entry.size, 0);
    testbed = {
      variant,
      seed: SEED,
      files: siteBefore.size,
      siteFiles: tb.site.files,
      payloadBytes,
      listing: LISTING,
      awkwardNames: tb.renamed.map(({ to }) => to),
      extensions: tb.site.extensions,
      largeFiles: VARIANTS[variant].large,
      root: relative(ROOT, tb.root),
    };
    const listingUrl = `${server.baseUrl}/${LISTING}`;
    log(`\nrun ${run}/${runs}: ${variant} site, ${siteBefore.size} files (listing included), ${(payloadBytes / MB).toFixed(1)} MB at ${server.baseUrl}`);

    // ---- baseline ----
    log(`  disk settled in ${await settleDisk()} s`);
    if (!tools.missing) {
      const from = requestLog(logFile).lines;
      const serverCpu = cpuSecondsOf(server.child.pid);
      const result = await runWget({
        tools,
        args: wgetArguments({ url: listingUrl, mirror, logFile: join(runDir, 'wget-baseline.log'), mode: 'ims' }),
        timeFile: join(runDir, 'wget.time'),
        sampleMs: RSS_SAMPLE_MS,
      });
      const check = compareTrees(siteBefore, snapshot(mirror));
      const usage = archiveUsage(mirror);
      sample.wgetBaseline = {
        ...result,
        log: requestLog(logFile, from),
        serverCpuSeconds: cpuSecondsOf(server.child.pid) - serverCpu,
        storedDiskBytes: usage.diskBytes,
        inodes: usage.inodes,
        mirrorCheck: brief(check),
      };
      log(`  wget baseline: ${describe(sample.wgetBaseline)}; mirror ${check.matching}/${check.referenceFiles} files identical`);
    }
    {
      await settleDisk();
      const from = requestLog(logFile).lines;
      const serverCpu = cpuSecondsOf(server.child.pid);
      const result = await runHarvester({ oaiUrl: server.oaiUrl, archiveDir: archive, sampleMs: RSS_SAMPLE_MS });
      const usage = archiveUsage(archive);
      sample.oaibagBaseline = {
        ...oaibagSample(result),
        log: requestLog(logFile, from),
        serverCpuSeconds: cpuSecondsOf(server.child.pid) - serverCpu,
        storedDiskBytes: usage.diskBytes,
        inodes: usage.inodes,
      };
      log(`  oaibag baseline: ${describe(sample.oaibagBaseline)}; ${summaryLine(result.summary)}`);
    }
    const profiling = !args['no-profile'] && run === runs;
    // The profiled incremental harvest starts from a copy of the baseline's archive (cp -a keeps its hard links).
    if (profiling) spawnSync('cp', ['-a', archive, join(runDir, 'archive-profiled-update')]);

    // ---- update ----
    const port = Number(new URL(server.baseUrl).port);
    await server.child.stop();
    server = undefined;
    const changes = applyUpdate({ dir: runDir, site: tb.site, seed: SEED + run });
    writeListing(tb.root, Date.now() / 1000);
    server = await startRepository({ root: tb.root, index, fresh: false, port, byValueMax: BY_VALUE_MAX, requestLog: logFile });
    // Lists exclude the current second: the changes' datestamps must be in the past.
    await new Promise((done) => setTimeout(done, 1000 - (Date.now() % 1000) + 50));
    const siteAfter = snapshot(tb.root);
    const truth = groundTruth(siteBefore, siteAfter);
    sample.changes = {
      ...changes,
      truth: { touched: truth.touched.length, rewritten: truth.rewritten.length, added: truth.added.length, deleted: truth.deleted.length },
      listingBytes: siteAfter.get(LISTING).size,
    };
    log(
      `  update: ${truth.touched.length} touched, ${truth.rewritten.length} rewritten, ${truth.added.length} added, ${truth.deleted.length} deleted (+ the listing regenerated); rescan ${JSON.stringify(server.scan)}`,
    );

    if (!tools.missing) {
      spawnSync('cp', ['-a', mirror, mirrorHead]);
      for (const [key, mode, dir] of [
        ['wgetIms', 'ims', mirror],
        ['wgetHead', 'head', mirrorHead],
      ]) {
        const before = snapshot(dir, { hash: false });
        const usageBefore = archiveUsage(dir);
        await settleDisk();
        const from = requestLog(logFile).lines;
        const serverCpu = cpuSecondsOf(server.child.pid);
        const result = await runWget({
          tools,
          args: wgetArguments({ url: listingUrl, mirror: dir, logFile: join(runDir, `wget-${mode}.log`), mode }),
          timeFile: join(runDir, 'wget.time'),
          sampleMs: RSS_SAMPLE_MS,
        });
        const after = snapshot(dir);
        const found = wgetFound(before, after);
        const usage = archiveUsage(dir);
        sample[key] = {
          ...result,
          log: requestLog(logFile, from),
          serverCpuSeconds: cpuSecondsOf(server.child.pid) - serverCpu,
          storedDiskBytes: usage.diskBytes,
          growthBytes: usage.diskBytes - usageBefore.diskBytes,
          inodesBefore: usageBefore.inodes,
          inodes: usage.inodes,
          found: scoreFound(truth, found),
          listingFetched: found.changed.has(LISTING),
          mirrorCheck: brief(compareTrees(siteAfter, after)),
        };
        log(
          `  wget update (${mode === 'ims' ? 'If-Modified-Since' : 'HEAD+GET'}): ${describe(sample[key])}; found ${sample[key].found.found}/${sample[key].found.expected}`,
        );
      }
    }
    {
      const usageBefore = archiveUsage(archive);
      await settleDisk();
      const from = requestLog(logFile).lines;
      const serverCpu = cpuSecondsOf(server.child.pid);
      const result = await runHarvester({ oaiUrl: server.oaiUrl, archiveDir: archive, sampleMs: RSS_SAMPLE_MS });
      const usage = archiveUsage(archive);
      // Read from the catalog only now: opening it may leave SQLite's -shm beside it.
      const found = oaibagFound(archive, server.baseUrl);
      const bags = harvestBags(archive);
      sample.oaibagUpdate = {
        ...oaibagSample(result),
        log: requestLog(logFile, from),
        serverCpuSeconds: cpuSecondsOf(server.child.pid) - serverCpu,
        storedDiskBytes: usage.diskBytes,
        growthBytes: usage.diskBytes - usageBefore.diskBytes,
        growthCatalogBytes: usage.catalogDiskBytes - usageBefore.catalogDiskBytes,
        growthBagsBytes: usage.bagsDiskBytes - usageBefore.bagsDiskBytes,
        inodesBefore: usageBefore.inodes,
        inodes: usage.inodes,
        bags: { baseline: bags[found.harvestId - 1] ?? null, update: bags[found.harvestId] ?? null },
        found: scoreFound(truth, found),
        foundByChange: found.byChange,
        listingFetched: found.changed.has(LISTING),
      };
      log(
        `  oaibag update: ${describe(sample.oaibagUpdate)}; ${summaryLine(result.summary)}; found ${sample.oaibagUpdate.found.found}/${sample.oaibagUpdate.found.expected}`,
      );
      const u = sample.oaibagUpdate;
      log(
        `  inodes: archive ${u.inodesBefore} after the baseline${sample.wgetBaseline ? ` (wget's mirror ${sample.wgetBaseline.inodes})` : ''}, ${u.inodes} after the update; update wrote ${u.bags.update?.bags ?? 0} bag(s) holding ${u.bags.update?.payloadFiles ?? 0} payload files in ${u.bags.update?.payloadFolders ?? 0} folders`,
      );
    }

    if (profiling) {
      profiles.update = await profiledHarvest(server.oaiUrl, join(runDir, 'archive-profiled-update'), join(runDir, 'profile-update'));
      profiles.baseline = await profiledHarvest(server.oaiUrl, join(runDir, 'archive-profiled-baseline'), join(runDir, 'profile-baseline'));
    }

    // ---- restore ----
    const restored = join(runDir, 'restored');
    rmSync(restored, { recursive: true, force: true });
    const restore = restoreArchive(archive, restored);
    const restoreCheck = compareTrees(siteAfter, snapshot(restored));
    sample.restore = {
      exitCode: restore.exitCode,
      seconds: round(restore.seconds, 2),
      summary: restore.summary,
      stderr: restore.stderr,
      check: brief(restoreCheck),
    };
    log(
      `  restore: exit ${restore.exitCode}, ${restore.seconds.toFixed(1)} s; ${restoreCheck.identical ? 'identical to the site, byte for byte' : `NOT identical: ${restoreCheck.missing.length} missing, ${restoreCheck.different.length} different, ${restoreCheck.extra.length} extra`}`,
    );
    samples.push(sample);
  } finally {
    await server?.child.stop();
  }
}
if (!args.keep) for (const dir of runDirs) rmSync(dir, { recursive: true, force: true });

const figures = buildFigures({ samples, testbed, tools, machine });
const report = {
  benchmark: 'experiment',
  date: new Date().toISOString(),
  units: {
    MB: 1e6,
    MiB: 2 ** 20,
    note: 'wall times are medians over runs; requests/bytes from the repository log of the first run; peak RSS is the worst run; disk = st_blocks*512 of unique inodes; inodes = unique inodes below the archive or mirror folder (files and folders, catalog included), first run',
  },
  machine: {
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    cpus: os.cpus().length,
    totalMemoryBytes: os.totalmem(),
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    node: process.version,
    loadAverage: { start: loadAtStart, end: os.loadavg().map((value) => round(value, 2)) },
    limits: machine,
  },
  software: { ...gitInfo(), wget: tools.version ?? null, wgetMissing: tools.missing ?? null },
  options: {
    variant,
    runs,
    seed: SEED,
    byValueMax: BY_VALUE_MAX,
    harvester: `${relative(ROOT, ARCHIVER_BIN)} harvest URL --archive DIR --json`,
    wget: tools.missing
      ? null
      : `wget ${wgetArguments({ url: `BASE/${LISTING}`, mirror: 'MIRROR', logFile: 'LOG', mode: 'ims' }).join(' ')} (update: the same; HEAD+GET mode adds --no-if-modified-since)`,
  },
  totalSeconds: round((performance.now() - started) / 1000, 1),
  testbed,
  paper: PAPER(),
  ...figures,
  profiles,
  samples: samples.map(stripSample),
};
const written = await writeOutputs(report, outDir);
console.log(`\nfigures written to ${written.map((file) => relative(ROOT, file)).join(', ')}`);

// ---- helpers -------------------------------------------------------------------------------
function PAPER() {
  return {
    source: 'Nelson, Smith, Van de Sompel, Liu, Gagnon, Bekaert: mod_oai, an Apache module for metadata harvesting (2005), section 6',
    files: 5268,
    bytes: 292e6,
    allDated: '2000-01-01',
    touched: 1335,
    wgetUpdateHeadRequests: 5739,
    wgetUpdateGetRequests: 1318,
    note: 'after touching 25% of the files, wget -N needed 5,739 HEAD + 1,318 GET requests to find the changes; an OAI-PMH harvest asked only for what changed',
  };
}

/** One untimed harvest under node --cpu-prof, summarized: self time by area and by function. */
async function profiledHarvest(oaiUrl, archiveDir, profileDir) {
  rmSync(profileDir, { recursive: true, force: true });
  const result = await runHarvester({ oaiUrl, archiveDir, sampleMs: RSS_SAMPLE_MS, cpuProfileDir: profileDir });
  const file = readdirSync(profileDir).find((name) => name.endsWith('.cpuprofile'));
  const summary = {
    seconds: round(result.seconds, 2),
    cpuSeconds: round((result.peak.userSeconds ?? 0) + (result.peak.systemSeconds ?? 0), 2),
    ...summarizeProfile(join(profileDir, file), 12),
  };
  log(
    `  profiled ${archiveDir.endsWith('update') ? 'incremental' : 'baseline'} harvest (${summary.seconds} s, CPU ${summary.cpuSeconds} s): ${summary.byArea
      .slice(0, 5)
      .map((a) => `${a.name} ${a.percent}%`)
      .join(', ')}`,
  );
  return summary;
}

function oaibagSample(result) {
  return {
    seconds: result.seconds,
    cpuSeconds: (result.peak.userSeconds ?? 0) + (result.peak.systemSeconds ?? 0),
    cpuUserSeconds: result.peak.userSeconds ?? null,
    exitCode: 0,
    peakRssBytes: result.peak.vmHwmBytes ?? result.sampledPeakRssBytes,
    summary: result.summary,
  };
}

function brief(check) {
  return {
    referenceFiles: check.referenceFiles,
    matching: check.matching,
    identical: check.identical,
    missing: check.missing.length,
    different: check.different.length,
    extra: check.extra.length,
    examples: [...check.missing, ...check.different, ...check.extra].slice(0, 10),
  };
}

function stripSample(sample) {
  const copy = JSON.parse(JSON.stringify(sample));
  for (const value of Object.values(copy)) if (value && typeof value === 'object' && value.log) delete value.log.lines;
  return copy;
}

function describe(s) {
  return `${s.seconds.toFixed(2)} s, ${s.log.requests} requests, ${(s.log.bytes / MB).toFixed(1)} MB sent, peak RSS ${(s.peakRssBytes / MB).toFixed(1)} MB${s.exitCode ? ` (exit ${s.exitCode})` : ''}`;
}

function summaryLine(summary) {
  return `${summary.records} records (${summary.added} added, ${summary.modified} modified, ${summary.touched} touched, ${summary.deleted} deleted, ${summary.failed} failed)`;
}

function gitInfo() {
  const head = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' });
  return head.status === 0 ? { gitCommit: head.stdout.trim() } : {};
}
