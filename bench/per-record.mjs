#!/usr/bin/env node
// Per-record cost (issue 27): the CPU time `oaibag harvest` and the repository spend per record
// on a site of many small files, for a baseline, a no-op update and an update after a share of
// the files was touched (mtime only). CPU time (user + system), not wall time: the figure this
// script exists for must survive a machine shared with other work. See bench/README.md.
// Run with `npx --yes pnpm@10.34.9 build && node bench/per-record.mjs [--files N] [--runs N]`.
import { readdirSync, rmSync, statSync, utimesSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { machineFacts, parseBenchArgs, wholeNumberArg } from './bench-args.mjs';
import { checkBuilt, requestLogFigures, runHarvester, startRepository, summarizeProfile } from './harvest-common.mjs';
import { cpuSecondsOf, median, ROOT, round } from './repository-common.mjs';
import { ensureSmallSite, seededRandom } from './repository-fixture.mjs';

const SEED = 20270127;
const PHASES = ['baseline', 'noop', 'touch'];

const USAGE = `usage: node bench/per-record.mjs [--files N] [--touch PERCENT] [--runs N] [--profile DIR] [--bin FILE] [--keep] [--out FILE]

  --files N        small files of the site (1–20 KiB each; default 30000)
  --touch PERCENT  files whose mtime the touch update moves (default 10)
  --runs N         repetitions (each a new archive); medians are reported (default 1)
  --profile DIR    also write a V8 CPU profile of each phase's harvest into DIR (one run;
                   profiled runs are slower, their CPU figures are not the reported ones)
  --bin FILE       the command to measure (default packages/archiver/bin/oaibag.js); e.g. a
                   bundle built from another commit, to compare two builds on one machine state
  --keep           keep the site under bench/work/per-record/ for the next run
  --out FILE       where to write the JSON (default bench/work/results/per-record-<files>.json)`;

const { args, usageError } = parseBenchArgs('per-record', USAGE, {
  files: { type: 'string', default: '30000' },
  touch: { type: 'string', default: '10' },
  runs: { type: 'string', default: '1' },
  profile: { type: 'string' },
  bin: { type: 'string' },
  keep: { type: 'boolean', default: false },
  out: { type: 'string' },
});
const files = wholeNumberArg(args.files, '--files', usageError);
const touchPercent = wholeNumberArg(args.touch, '--touch', usageError);
const runs = wholeNumberArg(args.runs, '--runs', usageError);
if (touchPercent > 100) usageError('--touch is a percentage, at most 100');
const profileDir = args.profile === undefined ? undefined : resolve(args.profile);
const bin = args.bin === undefined ? undefined : resolve(args.bin);
const log = (line) => process.stderr.write(`${line}\n`);

checkBuilt();
const work = join(ROOT, 'bench/work/per-record');
const site = ensureSmallSite({ dir: join(work, `site-${files}`), files, seed: SEED, regenerate: false, log });
const results = [];
for (let run = 1; run <= runs; run++) results.push(await oneRun(run));

const figures = {};
for (const phase of PHASES) {
  const of = (key) => median(results.map((result) => result[phase][key]));
  figures[phase] = {
    records: of('records'),
    harvesterCpuSeconds: round(of('harvesterCpuSeconds'), 2),
    repositoryCpuSeconds: round(of('repositoryCpuSeconds'), 2),
    // Per record harvested; a no-op harvest has none (its CPU is the fixed cost of a run).
    harvesterCpuMsPerRecord: of('records') > 0 ? round((1000 * of('harvesterCpuSeconds')) / of('records'), 3) : null,
    repositoryCpuMsPerRecord: of('records') > 0 ? round((1000 * of('repositoryCpuSeconds')) / of('records'), 3) : null,
    wallSeconds: round(of('wallSeconds'), 2),
    peakRssMB: round(Math.max(...results.map((result) => result[phase].peakRssBytes)) / 1e6, 1),
  };
}
const load = os.loadavg().map((value) => round(value, 2));
const output = { files, siteBytes: site.bytes, touchPercent, runs, load, machine: machineFacts(), figures, perRun: results };
const out = args.out ? resolve(args.out) : join(ROOT, `bench/work/results/per-record-${files}.json`);
await mkdir(dirname(out), { recursive: true });
await writeFile(out, `${JSON.stringify(output, null, 2)}\n`);

const rows = PHASES.map((phase) => {
  const f = figures[phase];
  const perRecord = (value) => (value === null ? '-' : value.toFixed(3));
  return `| ${phase} | ${f.records} | ${f.harvesterCpuSeconds.toFixed(2)} | ${perRecord(f.harvesterCpuMsPerRecord)} | ${f.repositoryCpuSeconds.toFixed(2)} | ${perRecord(f.repositoryCpuMsPerRecord)} | ${f.wallSeconds.toFixed(2)} | ${f.peakRssMB.toFixed(1)} |`;
});
process.stdout.write(
  [
    `${files} files (${round(site.bytes / 1e6, 1)} MB), touch ${touchPercent}%, ${runs} run(s), load average at the end ${load.join(' ')}`,
    '| phase | records | harvester CPU s | ms/record | repository CPU s | ms/record | wall s | peak RSS MB |',
    '| ----- | ------: | ----: | ----: | ----: | ----: | -----: | ----: |',
    ...rows,
    `JSON: ${relative(ROOT, out)}`,
    '',
  ].join('\n'),
);
if (!args.keep) rmSync(work, { recursive: true, force: true });

/** One baseline, no-op update and touch update into a new archive, against one repository index. */
async function oneRun(run) {
  const dir = join(work, `run-${run}`);
  rmSync(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const archiveDir = join(dir, 'archive');
  const index = join(dir, 'index.sqlite');
  const requestLog = join(dir, 'requests.log');
  log(`run ${run}: first scan of ${files} files`);
  let repository = await startRepository({ root: site.root, index, fresh: true, requestLog });
  const port = Number(new URL(repository.baseUrl).port);
  const result = {};
  const phase = async (name) => {
    const before = cpuSecondsOf(repository.child.pid);
    const lines = requestLogFigures(requestLog).lines;
    const profile = profileDir && run === 1 ? join(profileDir, name) : undefined;
    const harvest = await runHarvester({
      oaiUrl: repository.oaiUrl,
      archiveDir,
      sampleMs: 50,
      ...(bin ? { bin } : {}),
      ...(profile ? { cpuProfileDir: profile } : {}),
    });
    const repositoryCpuSeconds = cpuSecondsOf(repository.child.pid) - before;
    const { userSeconds, systemSeconds, vmHwmBytes } = harvest.peak;
    const counts = harvest.summary.counts ?? harvest.summary;
    result[name] = {
      records: counts.records,
      counts,
      harvesterCpuSeconds: userSeconds + systemSeconds,
      harvesterUserSeconds: userSeconds,
      repositoryCpuSeconds,
      wallSeconds: harvest.seconds,
      peakRssBytes: vmHwmBytes,
      requests: requestLogFigures(requestLog, lines).requests,
      ...(profile ? { profile: profileSummary(profile) } : {}),
    };
    log(
      `  ${name}: ${counts.records} records, harvester ${(userSeconds + systemSeconds).toFixed(2)} s CPU, repository ${repositoryCpuSeconds.toFixed(2)} s, wall ${harvest.seconds.toFixed(2)} s`,
    );
  };
  await phase('baseline');
  await phase('noop');
  const touched = touchShare(site.root, touchPercent / 100, SEED + run);
  log(`  touched ${touched} files; repository restarted to rescan`);
  await repository.child.stop();
  repository = await startRepository({ root: site.root, index, fresh: false, port, requestLog });
  await phase('touch');
  await repository.child.stop();
  rmSync(dir, { recursive: true, force: true });
  return result;
}

/** Moves the mtime of `share` of the site's files (seeded choice) a day on: a touch, same bytes. */
function touchShare(root, share, seed) {
  const random = seededRandom(seed);
  let touched = 0;
  const walk = (folder) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (random.next() < share) {
        const { mtimeMs } = statSync(path);
        const moved = (mtimeMs + 86_400_000) / 1000;
        utimesSync(path, moved, moved);
        touched++;
      }
    }
  };
  walk(root);
  return touched;
}

function profileSummary(dir) {
  const file = readdirSync(dir).find((name) => name.endsWith('.cpuprofile'));
  return file ? summarizeProfile(join(dir, file), 25) : undefined;
}
