#!/usr/bin/env node
// The scale benchmark (issue 27): real sites of N small files served by the repository and
// harvested, then every step of the archive's life over them, each timed with the CPU time and
// peak RSS of each process; synthetic catalogs (a real archive's rows copied in SQL) for the
// steps that read the catalog only, to 10M; the growth exponent of each step between sizes and
// the issue's targets. Results in bench/results/scale.json (sizes measured again replace their
// entry), a Markdown report on stdout for bench/README.md, progress on stderr.
// Run with `npx --yes pnpm@10.34.9 bench:scale -- --sizes 100k,1m [--synthetic 10m] [--keep]`.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { machineFacts, parseBenchArgs, wholeNumberArg } from './bench-args.mjs';
import { checkBuilt } from './harvest-common.mjs';
import { ROOT } from './repository-common.mjs';
import { checkTargets, markdownReport, parseSize, sizeLabel, targetTable } from './scale-report.mjs';
import { ensureSite, revertSite } from './scale-site.mjs';
import { ARCHIVE_STEPS, archiveSteps, SITE_STEPS, STEPS, SYNTHETIC_STEPS, siteSteps, syntheticSteps } from './scale-steps.mjs';
import { makeSyntheticArchive, replicateCatalog } from './scale-synthetic.mjs';

const USAGE = `usage: node bench/scale.mjs [--sizes LIST] [--steps LIST] [--synthetic LIST] [--work DIR] [--keep] …

  --sizes LIST         sites to generate and measure, e.g. 10k,30k,100k,1m (default 10k)
  --steps LIST         steps over each site (default all): ${STEPS.join(', ')}
                       (noop, touch and change need baseline in the same run; it is added)
  --synthetic LIST     synthetic catalogs to measure, e.g. 1m,10m (default none): copies of the
                       largest site's archive (or --synthetic-from's) grown in SQL
  --synthetic-from N   the size whose archive is copied (it must have been harvested: run it
                       in the same run or keep it with --keep)
  --synthetic-steps L  steps over each synthetic catalog (default all): ${SYNTHETIC_STEPS.join(', ')}
  --work DIR           where sites, archives and catalogs go (default bench/work/scale; 1M files
                       take about 25 GB with their archive, its copy and a restore)
  --keep               keep sites, archives and synthetic catalogs for the next run (otherwise
                       removed at the end); a kept site changed by touch/change is put back
  --seed N             the sites' seed (default 27)
  --step-timeout S     a step still running after S seconds is stopped and counted failed
                       (default 7200)
  --sparql-store URL   an external SPARQL store, passed to serve as --sparql-store (the
                       embedded store is used without it)
  --results FILE       the JSON results (default bench/results/scale.json)`;

const { args, usageError } = parseBenchArgs('scale', USAGE, {
  sizes: { type: 'string', default: '10k' },
  steps: { type: 'string' },
  synthetic: { type: 'string' },
  'synthetic-from': { type: 'string' },
  'synthetic-steps': { type: 'string' },
  work: { type: 'string', default: join(ROOT, 'bench/work/scale') },
  keep: { type: 'boolean', default: false },
  seed: { type: 'string', default: '27' },
  'step-timeout': { type: 'string', default: '7200' },
  'sparql-store': { type: 'string' },
  results: { type: 'string', default: join(ROOT, 'bench/results/scale.json') },
});

const sizesOf = (list, option) =>
  (list ?? '')
    .split(',')
    .filter((text) => text.trim() !== '')
    .map((text) => parseSize(text) ?? usageError(`${option}: "${text}" is not a size (10k, 1m, 250000)`));
const listOf = (list, known, option) => {
  const names = list === undefined ? known : list.split(',').map((name) => name.trim());
  for (const name of names) if (!known.includes(name)) usageError(`${option}: unknown step "${name}" (steps: ${known.join(', ')})`);
  return new Set(names);
};
const sizes = [...new Set(sizesOf(args.sizes, '--sizes'))].sort((a, b) => a - b);
const syntheticSizes = [...new Set(sizesOf(args.synthetic, '--synthetic'))].sort((a, b) => a - b);
const steps = listOf(args.steps, STEPS, '--steps');
if (['noop', 'touch', 'change'].some((step) => steps.has(step))) steps.add('baseline');
const syntheticStepSet = listOf(args['synthetic-steps'], SYNTHETIC_STEPS, '--synthetic-steps');
const syntheticFrom = args['synthetic-from'] ? (parseSize(args['synthetic-from']) ?? usageError('--synthetic-from: not a size')) : sizes.at(-1);
const seed = wholeNumberArg(args.seed, '--seed', usageError, 0);
const timeoutSeconds = wholeNumberArg(args['step-timeout'], '--step-timeout', usageError);
const work = resolve(args.work);
const resultsFile = isAbsolute(args.results) ? args.results : resolve(args.results);
const log = (line) => process.stderr.write(`${line}\n`);
checkBuilt();

const commit = (() => {
  try {
    const hash = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT, encoding: 'utf8' }).trim() !== '';
    return `${hash}${dirty ? '+changes' : ''}`;
  } catch {
    return 'unknown';
  }
})();

const results = existsSync(resultsFile) ? JSON.parse(readFileSync(resultsFile, 'utf8')) : {};
results.benchmark = 'scale';
results.method =
  'bench/scale.mjs: each step in its own process(es); wall time from spawn to exit; CPU = user + system of each process (/proc, getrusage at exit); peak RSS = VmHWM (reset per step for the servers)';
results.machine = machineFacts();
results.sizes ??= {};
results.synthetic ??= {};

/** Where one size's files go, and the state kept between runs (the repository's port). */
function sizeContext(n, name = sizeLabel(n)) {
  const dir = join(work, name);
  mkdirSync(dir, { recursive: true });
  const stateFile = join(dir, 'state.json');
  const state = existsSync(stateFile) ? JSON.parse(readFileSync(stateFile, 'utf8')) : {};
  return { dir, archive: join(dir, 'archive'), stateFile, state, timeoutSeconds, log, sparqlStore: args['sparql-store'] };
}

function saveResults() {
  mkdirSync(resolve(resultsFile, '..'), { recursive: true });
  writeFileSync(`${resultsFile}.tmp`, `${JSON.stringify(results, null, 2)}\n`);
  renameSync(`${resultsFile}.tmp`, resultsFile);
}

for (const n of sizes) {
  const ctx = sizeContext(n);
  log(`== ${sizeLabel(n)} files in ${ctx.dir}`);
  const started = performance.now();
  const site = await ensureSite({ dir: ctx.dir, files: n, seed, log });
  const run = (step) => steps.has(step);
  const entry = {
    n,
    commit,
    date: new Date().toISOString(),
    loadAverage: os.loadavg(),
    site: {
      files: n,
      bytes: site.bytes,
      generated: site.generated,
      generationSeconds: site.generationSeconds,
      generationCpuSeconds: site.generationCpuSeconds,
    },
    steps: [],
  };
  try {
    if (SITE_STEPS.some(run)) entry.steps.push(...(await siteSteps({ ctx, site, run })));
    writeFileSync(ctx.stateFile, JSON.stringify(ctx.state));
    const baselineFailed = entry.steps.some((step) => step.step === 'baseline' && !step.ok);
    if (ARCHIVE_STEPS.some(run) && !baselineFailed) {
      if (!existsSync(join(ctx.archive, 'catalog.sqlite'))) throw new Error(`no archive at ${ctx.archive}: run with --steps baseline first (and --keep)`);
      entry.steps.push(...(await archiveSteps({ ctx, run })));
    }
  } finally {
    if (args.keep) await revertSite({ dir: ctx.dir, log });
  }
  entry.totalSeconds = (performance.now() - started) / 1000;
  results.sizes[sizeLabel(n)] = entry;
  saveResults();
  if (!args.keep && !(syntheticSizes.length > 0 && n === syntheticFrom)) rmSync(ctx.dir, { recursive: true, force: true });
}

for (const n of syntheticSizes) {
  const from = sizeContext(syntheticFrom);
  if (!existsSync(join(from.archive, 'catalog.sqlite')))
    usageError(`--synthetic: no archive of ${sizeLabel(syntheticFrom)} files to copy (run that size with baseline, or --keep it)`);
  const ctx = sizeContext(n, `synthetic-${sizeLabel(n)}`);
  log(`== synthetic catalog of ${sizeLabel(n)} resources from the ${sizeLabel(syntheticFrom)} archive, in ${ctx.dir}`);
  const started = performance.now();
  const archive = makeSyntheticArchive(from.archive, join(ctx.dir, 'archive'));
  const build = replicateCatalog(archive, n);
  log(
    `  ${build.resources} resources (${build.copies} copies of ${build.originals}) in ${build.seconds.toFixed(1)} s; tables copied: ${build.tables.join(', ')}`,
  );
  const entry = { n: build.resources, target: n, from: syntheticFrom, commit, date: new Date().toISOString(), loadAverage: os.loadavg(), build, steps: [] };
  entry.steps.push(...(await syntheticSteps({ ctx, archive, run: (step) => syntheticStepSet.has(step) })));
  entry.totalSeconds = (performance.now() - started) / 1000;
  results.synthetic[sizeLabel(n)] = entry;
  saveResults();
  if (!args.keep) rmSync(ctx.dir, { recursive: true, force: true });
}
if (syntheticSizes.length > 0 && !args.keep) rmSync(sizeContext(syntheticFrom).dir, { recursive: true, force: true });

const report = markdownReport(results);
process.stdout.write(`${report}\n`);
const misses = checkTargets(Object.values(results.sizes)).filter((check) => !check.pass);
log(`\n${misses.length} target(s) missed${misses.length > 0 ? `:\n${targetTable(misses)}` : ''}`);
log(`results: ${resultsFile}`);
