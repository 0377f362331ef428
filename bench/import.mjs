#!/usr/bin/env node
// Import benchmark (issue 16): `oaibag import` of an out-of-band delivery against the harvest it
// stands in for, and its memory with one 1 GiB entry.
//   compare: the mod_oai testbed of bench:experiment (experiment-testbed.mjs) written once as
//     one ZIP, then in each run, in alternating order, a baseline `oaibag harvest` of the same
//     site from the repository and an `oaibag import` of the ZIP, each into a new archive: wall
//     time, peak RSS, CPU, archive on disk; after the last run, one harvest of the repository
//     into the imported archive, which should find nothing to add (the import's continuation).
//   large: a ZIP holding one stored 1 GiB entry, imported, then `oaibag export --bags` and
//     `oaibag export --site` of that archive: wall time and peak RSS of each.
// Targets: import no slower than the baseline harvest; under 150 MB of RSS for the 1 GiB entry
// on import and export. See bench/README.md.
// Run with `npx --yes pnpm@10.34.9 bench:import [-- --quick] [-- --runs N] [-- --only large]`.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createWriteStream, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import yauzl from 'yauzl';
import yazl from 'yazl';
import { machineFacts, parseBenchArgs, sectionsArg, wholeNumberArg } from './bench-args.mjs';
import { listFiles, prepareTestbed } from './experiment-testbed.mjs';
import { ARCHIVER_BIN, archiveUsage, checkBuilt, requestLogFigures, runArchiver, runHarvester, startRepository, summarizeProfile } from './harvest-common.mjs';
import { SITE_MTIME } from './harvest-fixture.mjs';
import { cpuSecondsOf, median, ROOT, round } from './repository-common.mjs';
import { removeRunFolders, settleDisk } from './settle-disk.mjs';

const MB = 1e6; // every "MB" printed or stored here is 10^6 bytes; MiB is 2^20
const MiB = 2 ** 20;
const GiB = 2 ** 30;
const SECTIONS = ['compare', 'large'];
const SEED = 20261122; // bench:experiment's: its cached testbed is reused
const BY_VALUE_MAX = 16 * MiB; // the repository's default
const TARGET_RATIO = 1; // import wall time / baseline harvest wall time
const TARGET_RSS_BYTES = 150 * MB;
const RSS_SAMPLE_MS = 50;
const LARGE_BASE_URL = 'http://large.example/';
const LARGE_TIMEOUT_SECONDS = 900;
const LARGE_FORMAT = 1; // bump when the large ZIP's content changes, so a kept one is rebuilt

const USAGE = `usage: node bench/import.mjs [--full | --quick] [--runs N] [--only LIST] [--keep] [--regenerate] [--no-profile] [--out FILE] [--strict]

  --full          the mod_oai testbed of bench:experiment: 5,268 files, about 292 MB (the default)
  --quick         its 500-file variant, about 30 MB: a fast check
  --runs N        rounds of measurements; medians are reported (default 3)
  --only LIST     comma-separated sections: ${SECTIONS.join(',')} (default: both)
  --keep          keep the testbed ZIP, the archives and the 1 GiB ZIP under bench/work/import/
                  (by default deleted at the end; the cached pristine testbed under
                  bench/work/experiment/ is always kept)
  --regenerate    rebuild the cached pristine testbed
  --no-profile    skip the extra, untimed import under node --cpu-prof after the last run
  --out FILE      where to write the JSON (default bench/results/import.json for the full
                  testbed with both sections, bench/work/results/import-<label>.json otherwise)
  --strict        exit with status 1 when a target is missed`;

const { args, usageError } = parseBenchArgs('import', USAGE, {
  full: { type: 'boolean', default: false },
  quick: { type: 'boolean', default: false },
  runs: { type: 'string', default: '3' },
  only: { type: 'string' },
  keep: { type: 'boolean', default: false },
  regenerate: { type: 'boolean', default: false },
  'no-profile': { type: 'boolean', default: false },
  out: { type: 'string' },
  strict: { type: 'boolean', default: false },
});
if (args.full && args.quick) usageError('--full and --quick exclude each other');
const variant = args.quick ? 'quick' : 'full';
const runs = wholeNumberArg(args.runs, '--runs', usageError);
const sections = sectionsArg(args.only, SECTIONS, usageError);
const has = (name) => sections.includes(name);
const complete = variant === 'full' && sections.length === SECTIONS.length;
const label = `${variant}-${sections.join('+')}-r${runs}`;
const outPath = resolve(args.out ?? (complete ? join(ROOT, 'bench/results/import.json') : join(ROOT, `bench/work/results/import-${label}.json`)));
const workDir = join(ROOT, 'bench/work/import');
const testbedDir = join(ROOT, 'bench/work/experiment');
const log = (line) => process.stderr.write(`${line}\n`);

checkBuilt();
const bundleAtStart = bundleDigest();
const exportHelp = spawnSync(process.execPath, [ARCHIVER_BIN, 'export', '--help'], { encoding: 'utf8' });
const hasExportSite = exportHelp.stdout.includes('--site');
mkdirSync(workDir, { recursive: true });
checkFreeSpace();
const benchStarted = performance.now();
const load = [];
const loadMark = (phase) => load.push({ phase, loadavg: os.loadavg().map((value) => round(value, 2)) });
loadMark('start');
const fixtures = {};
const samples = { harvest: [], import: [], large: [] };
const errors = [];
let continuation;
let profile;

// ---- compare: the testbed harvested and imported ---------------------------------------------
if (has('compare')) {
  const variantDir = join(workDir, variant);
  // What an earlier invocation left goes first, then a pause: a large deletion slows the disk.
  await removeRunFolders(variantDir, log);
  mkdirSync(variantDir, { recursive: true });
  const tb = prepareTestbed({ workDir: testbedDir, variant, run: 'import', seed: SEED, regenerate: args.regenerate, log });
  const zipFile = join(variantDir, 'testbed.zip');
  fixtures.testbed = { variant, root: relative(ROOT, tb.root), ...(await writeSiteZip(tb.root, zipFile)) };
  const t = fixtures.testbed;
  log(`testbed: ${t.files} files, ${(t.bytes / MB).toFixed(1)} MB; ZIP ${(t.zipBytes / MB).toFixed(1)} MB written in ${t.zipSeconds} s`);
  const requestLog = join(variantDir, 'requests.log');
  rmSync(requestLog, { force: true });
  const server = await startRepository({ root: tb.root, index: join(variantDir, 'index.sqlite'), fresh: true, byValueMax: BY_VALUE_MAX, requestLog });
  fixtures.testbed.repository = server.baseUrl;
  try {
    for (let run = 1; run <= runs; run++) {
      const runDir = join(variantDir, `run-${run}`);
      mkdirSync(runDir, { recursive: true });
      const order = run % 2 === 1 ? ['harvest', 'import'] : ['import', 'harvest'];
      log(`\nrun ${run}/${runs} (${order.join(' first, then ')})`);
      for (const phase of order) {
        const archiveDir = join(runDir, `${phase}-archive`);
        log(`  disk settled in ${await settleDisk()} s`);
        loadMark(`run ${run}: ${phase}`);
        const logFrom = requestLogFigures(requestLog).lines;
        const serverCpu = cpuSecondsOf(server.child.pid);
        try {
          const result =
            phase === 'harvest'
              ? await runHarvester({ oaiUrl: server.oaiUrl, archiveDir, sampleMs: RSS_SAMPLE_MS })
              : await runArchiver({ args: importArgs(archiveDir, zipFile, server), archiveDir, sampleMs: RSS_SAMPLE_MS });
          checkSummary(phase, result.summary, { records: t.files, added: t.files });
          const sample = {
            run,
            order: order.indexOf(phase) + 1,
            ...result,
            usage: archiveUsage(archiveDir),
            repositoryLog: requestLogFigures(requestLog, logFrom),
            repositoryCpuSeconds: round(cpuSecondsOf(server.child.pid) - serverCpu, 2),
          };
          samples[phase].push(sample);
          log(`  ${phase}: ${describe(sample)}`);
        } catch (error) {
          errors.push({ section: 'compare', run, phase, message: error.message });
          log(`  ${phase} FAILED: ${error.message}`);
        }
      }
      if (run === runs && samples.import.some((s) => s.run === run)) {
        // The import's continuation: the repository's records are the ones imported.
        const archiveDir = join(runDir, 'import-archive');
        await settleDisk();
        loadMark('continuation');
        const logFrom = requestLogFigures(requestLog).lines;
        const serverCpu = cpuSecondsOf(server.child.pid);
        try {
          const result = await runHarvester({ oaiUrl: server.oaiUrl, archiveDir, sampleMs: RSS_SAMPLE_MS });
          continuation = {
            ...result,
            repositoryLog: requestLogFigures(requestLog, logFrom),
            repositoryCpuSeconds: round(cpuSecondsOf(server.child.pid) - serverCpu, 2),
          };
          log(`  harvest into the imported archive: ${describe(continuation)}`);
        } catch (error) {
          errors.push({ section: 'compare', run, phase: 'continuation', message: error.message });
          log(`  harvest into the imported archive FAILED: ${error.message}`);
        }
      }
      if (run === runs && !args['no-profile']) profile = await profiledImport(join(runDir, 'profiled'), zipFile, server);
    }
  } finally {
    await server.child.stop();
  }
  loadMark('after compare');
}

// ---- large: one 1 GiB entry, imported and exported -------------------------------------------
if (has('large')) {
  const dir = join(workDir, 'large');
  await removeRunFolders(dir, log);
  mkdirSync(dir, { recursive: true });
  const zipFile = join(dir, 'large.zip');
  fixtures.large = await ensureLargeZip(zipFile, GiB);
  log(
    `\nlarge: one stored entry of ${GiB} bytes, ZIP ${fixtures.large.zipBytes} bytes${fixtures.large.zipSeconds ? ` written in ${fixtures.large.zipSeconds} s` : ' (kept)'}`,
  );
  for (let run = 1; run <= runs; run++) {
    const runDir = join(dir, `run-${run}`);
    mkdirSync(runDir, { recursive: true });
    const archiveDir = join(runDir, 'archive');
    const steps = [
      ['import', ['import', '--archive', archiveDir, '--base-url', LARGE_BASE_URL, '--json', zipFile], true],
      ['export --bags', ['export', '--archive', archiveDir, '--to', join(runDir, 'bags'), '--bags'], false],
      ...(hasExportSite ? [['export --site', ['export', '--archive', archiveDir, '--site', '--to', join(runDir, 'site.zip')], false]] : []),
    ];
    const sample = { run };
    for (const [name, stepArgs, json] of steps) {
      log(`  run ${run}/${runs}: ${name}: disk settled in ${await settleDisk()} s`);
      loadMark(`large run ${run}: ${name}`);
      try {
        const result = await runArchiver({ args: stepArgs, archiveDir, sampleMs: RSS_SAMPLE_MS, timeoutSeconds: LARGE_TIMEOUT_SECONDS, json });
        if (result.timedOut) throw new Error(`not finished in ${LARGE_TIMEOUT_SECONDS} s (peak RSS ${round((result.peak.vmHwmBytes ?? 0) / MB, 1)} MB)`);
        if (name === 'import') checkSummary('large import', result.summary, { records: 1, added: 1 });
        sample[name] = { ...result, usage: usageOf(name === 'import' ? archiveDir : stepArgs[stepArgs.indexOf('--to') + 1]) };
        log(`    ${result.seconds.toFixed(1)} s, peak RSS ${(peakOf(result) / MB).toFixed(1)} MB`);
      } catch (error) {
        errors.push({ section: 'large', run, phase: name, message: error.message });
        log(`    ${name} FAILED: ${error.message}`);
        break;
      }
    }
    if (sample['export --site']) sample.siteZipCheck = await checkSiteZip(join(runDir, 'site.zip'), fixtures.large);
    samples.large.push(sample);
  }
  loadMark('after large');
}

// ---- figures -------------------------------------------------------------------------------
const figures = {};
const targets = [];
const rows = [];
const row = (metric, value, spread = '', target = '', pass = undefined) =>
  rows.push([metric, String(value), spread, target, pass === undefined ? '' : pass ? 'PASS' : 'FAIL']);
const range = (values, digits) => (values.length > 1 ? `${round(Math.min(...values), digits)}..${round(Math.max(...values), digits)}` : '');
const phaseFigures = (list) => {
  const seconds = list.map((s) => s.seconds);
  const rss = list.map(peakOf);
  const cpu = list.map((s) => (s.peak.userSeconds ?? 0) + (s.peak.systemSeconds ?? 0));
  return {
    runs: list.length,
    seconds: round(median(seconds), 2),
    secondsRange: range(seconds, 2),
    cpuSeconds: round(median(cpu), 2),
    repositoryCpuSeconds: list[0].repositoryCpuSeconds === undefined ? undefined : round(median(list.map((s) => s.repositoryCpuSeconds)), 2),
    peakRssMB: round(median(rss) / MB, 1),
    peakRssRangeMB: range(
      rss.map((b) => b / MB),
      1,
    ),
    worstPeakRssMB: round(Math.max(...rss) / MB, 1),
    archiveDiskMB: round(median(list.map((s) => s.usage?.diskBytes ?? 0)) / MB, 1),
    archiveInodes: list[0].usage?.inodes,
    summary: list[0].summary,
  };
};

if (samples.harvest.length > 0 || samples.import.length > 0) {
  const t = fixtures.testbed;
  row(`testbed: ${t.files} files, ${round(t.bytes / MB, 1)} MB; one ZIP of ${round(t.zipBytes / MB, 1)} MB (deflated)`, '', '', '');
  for (const phase of ['harvest', 'import']) {
    if (samples[phase].length === 0) continue;
    const f = (figures[phase] = phaseFigures(samples[phase]));
    const what = phase === 'harvest' ? 'baseline `oaibag harvest`' : '`oaibag import` of the ZIP';
    const s = f.summary;
    row(`${what}: wall s`, f.seconds, f.secondsRange);
    row('  CPU s (user + system)', f.cpuSeconds, '', phase === 'harvest' ? `the repository's: ${f.repositoryCpuSeconds} s` : '');
    row('  peak RSS MB', f.peakRssMB, f.peakRssRangeMB);
    row('  records / added / bags', `${s.records} / ${s.added} / ${s.bags ?? '–'}`);
    row('  archive on disk MB', f.archiveDiskMB, `${f.archiveInodes} inodes`);
  }
  if (figures.harvest && figures.import) {
    const ratio = figures.import.seconds / figures.harvest.seconds;
    const perRun = samples.import
      .map((s) => {
        const h = samples.harvest.find((other) => other.run === s.run);
        return h ? s.seconds / h.seconds : undefined;
      })
      .filter((value) => value !== undefined);
    figures.ratio = { importOverHarvest: round(ratio, 2), perRun: perRun.map((value) => round(value, 2)), medianPerRun: round(median(perRun), 2) };
    const pass = ratio <= TARGET_RATIO;
    targets.push({ metric: 'import / baseline harvest, wall time (medians)', value: round(ratio, 2), target: `<= ${TARGET_RATIO}`, pass });
    row('import / harvest (medians)', `${round(ratio, 2)}×`, range(perRun, 2), `<= ${TARGET_RATIO}`, pass);
    row('  import / harvest of the same run (median of the runs)', `${figures.ratio.medianPerRun}×`, figures.ratio.perRun.join(', '));
  }
  if (continuation) {
    const s = continuation.summary;
    const nothing = s.added === 0 && s.modified === 0 && s.touched === 0 && s.deleted === 0;
    figures.continuation = {
      seconds: round(continuation.seconds, 2),
      records: s.records,
      added: s.added,
      modified: s.modified,
      touched: s.touched,
      deleted: s.deleted,
      requests: continuation.repositoryLog.requests,
      peakRssMB: round(peakOf(continuation) / MB, 1),
    };
    targets.push({
      metric: 'harvest after the import: added / modified / touched / deleted',
      value: `${s.added}/${s.modified}/${s.touched}/${s.deleted}`,
      target: '0/0/0/0',
      pass: nothing,
    });
    row('harvest into the imported archive: wall s', figures.continuation.seconds, `${figures.continuation.requests} requests`);
    row('  records / added / modified / touched / deleted', `${s.records} / ${s.added} / ${s.modified} / ${s.touched} / ${s.deleted}`, '', 'all 0', nothing);
  }
}

if (samples.large.length > 0) {
  figures.large = {};
  for (const step of ['import', 'export --bags', 'export --site']) {
    const list = samples.large.filter((s) => s[step]).map((s) => s[step]);
    if (list.length === 0) continue;
    const f = (figures.large[step] = phaseFigures(list));
    const pass = f.worstPeakRssMB * MB < TARGET_RSS_BYTES;
    targets.push({ metric: `1 GiB entry, ${step}: peak RSS MB (worst run)`, value: f.worstPeakRssMB, target: `< ${TARGET_RSS_BYTES / MB}`, pass });
    row(`1 GiB entry, \`oaibag ${step}\`: wall s`, f.seconds, f.secondsRange, `${step === 'import' ? 'archive' : 'written'} ${f.archiveDiskMB} MB`);
    row('  peak RSS MB (worst)', f.worstPeakRssMB, f.peakRssRangeMB, `< ${TARGET_RSS_BYTES / MB}`, pass);
  }
  if (!hasExportSite) row('`oaibag export --site`', 'not available', '', '', undefined);
  const checks = samples.large.filter((s) => s.siteZipCheck).map((s) => s.siteZipCheck);
  if (checks.length > 0) {
    const same = checks.every((check) => check.same);
    figures.large.siteZipCheck = checks;
    row('  the site ZIP holds the entry (size, CRC-32)', same ? 'yes' : 'NO', '', '', same);
  }
}

const totalSeconds = (performance.now() - benchStarted) / 1000;
// Others build in the same tree: a bundle rebuilt during the run means the runs measured two versions.
const bundleAtEnd = bundleDigest();
if (bundleAtEnd !== bundleAtStart)
  errors.push({ section: 'all', run: '-', phase: 'build', message: 'the archiver bundle was rebuilt during the run: figures mix two builds' });
console.log(
  `\nImport benchmark (${has('compare') ? `${variant} testbed, ` : ''}${sections.join(' + ')}): median of ${runs} run(s); MB = 10^6 bytes; total ${round(totalSeconds, 0)} s\n`,
);
console.log(markdown(['metric', 'median', 'range (runs)', 'target', 'result'], rows));
if (profile) {
  console.log(`\nProfile of one import (node --cpu-prof, ${profile.seconds} s, self time):`);
  for (const area of profile.byArea.slice(0, 8)) console.log(`  ${String(area.percent).padStart(5)}%  ${area.name}`);
  console.log('  top functions:');
  for (const fn of profile.topFunctions.slice(0, 12)) console.log(`  ${String(fn.percent).padStart(5)}%  ${fn.name}`);
}
for (const error of errors) console.log(`\nFAILED (${error.section}, run ${error.run}, ${error.phase}): ${error.message}`);

const report = {
  benchmark: 'import',
  date: new Date().toISOString(),
  units: { MB: 1e6, MiB: 2 ** 20, note: 'medians over runs; peak RSS = VmHWM written by the child as it exits; disk = st_blocks*512 of unique inodes' },
  machine: machineFacts(),
  software: { ...sourceState(), bundle: { file: 'packages/archiver/dist/bundle/oaibag.js', sha256AtStart: bundleAtStart, sha256AtEnd: bundleAtEnd } },
  options: {
    variant,
    runs,
    sections,
    seed: SEED,
    byValueMax: BY_VALUE_MAX,
    import: `${relative(ROOT, ARCHIVER_BIN)} import --archive DIR --base-url BASE --source BASE/oai --json testbed.zip`,
    harvest: `${relative(ROOT, ARCHIVER_BIN)} harvest BASE/oai --archive DIR --json`,
    large: { baseUrl: LARGE_BASE_URL, exportSite: hasExportSite },
  },
  loadAverage: load,
  totalSeconds: round(totalSeconds, 1),
  fixtures,
  figures,
  targets,
  allTargetsMet: targets.length > 0 && targets.every((target) => target.pass) && errors.length === 0,
  errors,
  profile,
  samples: {
    harvest: samples.harvest.map(trim),
    import: samples.import.map(trim),
    continuation: continuation ? trim(continuation) : null,
    large: samples.large.map((s) => Object.fromEntries(Object.entries(s).map(([key, value]) => [key, typeof value === 'object' ? trim(value) : value]))),
  },
};
await mkdir(dirname(outPath), { recursive: true });
await writeFile(`${outPath}.tmp`, `${JSON.stringify(report, null, 2)}\n`);
await rename(`${outPath}.tmp`, outPath);
if (!args.keep) {
  rmSync(workDir, { recursive: true, force: true });
  rmSync(join(testbedDir, variant, 'run-import'), { recursive: true, force: true });
  log(`deleted ${relative(ROOT, workDir)} and the testbed copy (--keep keeps them)`);
}
console.log(`\n${report.allTargetsMet ? 'all targets met' : 'TARGET MISSED or a step failed'}; figures written to ${relative(ROOT, outPath)}`);
if (args.strict && !report.allTargetsMet) process.exitCode = 1;

// ---- helpers -------------------------------------------------------------------------------
function importArgs(archiveDir, zipFile, server) {
  return ['import', '--archive', archiveDir, '--base-url', server.baseUrl, '--source', server.oaiUrl, '--json', zipFile];
}

/** One untimed import under node --cpu-prof, summarized: self time by area and by function. */
async function profiledImport(dir, zipFile, server) {
  const profileDir = join(dir, 'profile');
  const archiveDir = join(dir, 'archive');
  await settleDisk();
  try {
    const result = await runArchiver({ args: importArgs(archiveDir, zipFile, server), archiveDir, sampleMs: RSS_SAMPLE_MS, cpuProfileDir: profileDir });
    const file = readdirSync(profileDir).find((name) => name.endsWith('.cpuprofile'));
    const summary = { seconds: round(result.seconds, 2), ...summarizeProfile(join(profileDir, file), 20) };
    log(
      `  profiled import (${summary.seconds} s): ${summary.byArea
        .slice(0, 5)
        .map((a) => `${a.name} ${a.percent}%`)
        .join(', ')}`,
    );
    return summary;
  } catch (error) {
    errors.push({ section: 'compare', run: runs, phase: 'profiled import', message: error.message });
    return undefined;
  }
}

/** The site as one ZIP: an entry per file in sorted order, each with its mtime, deflated. */
async function writeSiteZip(root, file) {
  const started = performance.now();
  const names = listFiles(root);
  let bytes = 0;
  await writeZip(file, (zip) => {
    for (const name of names) {
      const stats = lstatSync(join(root, name));
      bytes += stats.size;
      zip.addFile(join(root, name), name, { mtime: stats.mtime, compress: true });
    }
  });
  return { files: names.length, bytes, zipBytes: lstatSync(file).size, zipSeconds: round((performance.now() - started) / 1000, 1) };
}

/**
 * The ZIP of one stored entry of `size` bytes, streamed from a generator (never in memory): a
 * 1 MiB random block, each copy stamped with its number so no two MiB are alike. Kept (with
 * --keep) and reused while its description matches.
 */
async function ensureLargeZip(file, size) {
  const descriptionFile = `${file}.json`;
  const expected = { format: LARGE_FORMAT, entry: 'large.bin', size };
  try {
    const cached = JSON.parse(readFileSync(descriptionFile, 'utf8'));
    if (existsSync(file) && lstatSync(file).size === cached.zipBytes && Object.entries(expected).every(([key, value]) => cached[key] === value)) return cached;
  } catch {
    // none kept
  }
  rmSync(descriptionFile, { force: true });
  const started = performance.now();
  const block = createHash('sha512').update('oaibag bench/import large entry').digest();
  const random = Buffer.alloc(MiB);
  for (let at = 0; at < MiB; at += block.length) createHash('sha512').update(block).update(String(at)).digest().copy(random, at);
  const sha256 = createHash('sha256');
  async function* chunks() {
    for (let n = 0; n * MiB < size; n++) {
      const chunk = Buffer.from(random.subarray(0, Math.min(MiB, size - n * MiB)));
      chunk.writeUInt32BE(n, 0);
      sha256.update(chunk);
      yield chunk;
    }
  }
  await writeZip(file, (zip) => zip.addReadStream(Readable.from(chunks()), expected.entry, { mtime: new Date(SITE_MTIME * 1000), compress: false, size }));
  const description = {
    ...expected,
    sha256: sha256.digest('hex'),
    crc32: (await zipEntries(file))[0].crc32,
    zipBytes: lstatSync(file).size,
    zipSeconds: round((performance.now() - started) / 1000, 1),
  };
  writeFileSync(descriptionFile, `${JSON.stringify(description, null, 2)}\n`);
  return description;
}

/** Writes a ZIP under a temporary name, `add` putting the entries in, then renames it. */
async function writeZip(file, add) {
  const zip = new yazl.ZipFile();
  const written = pipeline(zip.outputStream, createWriteStream(`${file}.partial`));
  add(zip);
  zip.end();
  await written;
  renameSync(`${file}.partial`, file);
}

/** The entries of a ZIP's central directory: name, sizes, CRC-32 (nothing decompressed). */
function zipEntries(file) {
  return new Promise((done, fail) => {
    yauzl.open(file, { lazyEntries: true }, (error, zip) => {
      if (error) return fail(error);
      const entries = [];
      zip.on('entry', (entry) => {
        entries.push({ name: entry.fileName, size: entry.uncompressedSize, compressedSize: entry.compressedSize, crc32: entry.crc32 });
        zip.readEntry();
      });
      zip.on('end', () => done(entries));
      zip.on('error', fail);
      zip.readEntry();
    });
  });
}

/** `export --site`'s ZIP holds the one file with the size and CRC-32 it was delivered with. */
async function checkSiteZip(file, large) {
  const entries = await zipEntries(file);
  const entry = entries.find((e) => e.name.endsWith(large.entry));
  return {
    entries: entries.length,
    name: entry?.name,
    same: entries.length === 1 && entry?.size === large.size && entry?.crc32 === large.crc32,
    zipBytes: lstatSync(file).size,
  };
}

/** Free space the sections need (the archives of every run are kept until the end), or an error. */
function checkFreeSpace() {
  const { bavail, bsize } = statfsSync(workDir);
  const free = bavail * bsize;
  const needed = (has('compare') ? (variant === 'full' ? 0.7 + 1.4 * runs : 0.1 + 0.15 * runs) * 1e9 : 0) + (has('large') ? (1.2 + 3.3 * runs) * 1e9 : 0);
  log(`free space under ${relative(ROOT, workDir)}: ${(free / 1e9).toFixed(1)} GB; this run needs about ${(needed / 1e9).toFixed(1)} GB`);
  if (free < needed + 2e9)
    throw new Error(`not enough free space: ${(free / 1e9).toFixed(1)} GB free, about ${(needed / 1e9).toFixed(1)} GB needed plus 2 GB of margin`);
}

/** A run that stored less than the delivery or the site offers is a broken run, not a slow one. */
function checkSummary(what, summary, expected) {
  if (summary.status !== 'complete' || summary.failed !== 0)
    throw new Error(`${what}: status ${summary.status}, ${summary.failed} failed (${JSON.stringify(summary).slice(0, 500)})`);
  for (const [key, value] of Object.entries(expected)) {
    if (summary[key] !== value) throw new Error(`${what}: ${key} ${summary[key]}, expected ${value} (${JSON.stringify(summary).slice(0, 500)})`);
  }
}

/** What an archive, a folder of bag ZIPs or one ZIP takes on disk. */
function usageOf(path) {
  const stats = lstatSync(path);
  return stats.isDirectory() ? archiveUsage(path) : { diskBytes: stats.blocks * 512, files: 1, inodes: 1 };
}

function peakOf(result) {
  return result.peak.vmHwmBytes ?? result.sampledPeakRssBytes;
}

function describe(sample) {
  const s = sample.summary;
  const cpu = (sample.peak.userSeconds ?? 0) + (sample.peak.systemSeconds ?? 0);
  return (
    `${sample.seconds.toFixed(2)} s (CPU ${cpu.toFixed(1)} s), ${s.records} records (${s.added} added, ${s.modified} modified, ${s.touched} touched, ${s.deleted ?? 0} deleted)` +
    `${s.bags === undefined ? '' : `, ${s.bags} bag(s)`}, peak RSS ${(peakOf(sample) / MB).toFixed(1)} MB${sample.usage ? `, archive ${(sample.usage.diskBytes / MB).toFixed(1)} MB` : ''}`
  );
}

/** A sample without its RSS trace's bulk. */
function trim(sample) {
  const { rssTrace, ...rest } = sample;
  return { ...rest, rssTrace: rssTrace?.filter((_, i) => i % 4 === 0) };
}

/** The sha-256 of the archiver's bundle, which every `oaibag` child runs. */
function bundleDigest() {
  return createHash('sha256')
    .update(readFileSync(join(ROOT, 'packages/archiver/dist/bundle/oaibag.js')))
    .digest('hex');
}

function sourceState() {
  const commit = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).stdout?.trim();
  const dirty = spawnSync('git', ['status', '--porcelain', '--', 'packages'], { cwd: ROOT, encoding: 'utf8' }).stdout ?? '';
  return commit ? { gitCommit: commit, packagesDirty: dirty.trim() !== '' } : {};
}

function markdown(header, body) {
  const quoted = (cell) => cell.replace(/\|/g, '\\|');
  const lines = [header, header.map((_, i) => (i === 1 ? '---:' : '---')), ...body];
  return lines.map((cells) => `| ${cells.map(quoted).join(' | ')} |`).join('\n');
}
