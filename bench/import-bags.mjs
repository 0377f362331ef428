#!/usr/bin/env node
// Import of serialized bags (issue 26): `oaibag import` of a folder of bag ZIPs (`oaibag export
// --bags`) and of one bag ZIP on its own, each into a new archive, wall time only. The fixture is
// built once and kept: a site of incompressible files as one ZIP, imported into an archive in
// bags of --batch-records files, exported as bag ZIPs. `--bin FILE` times another build of the
// command (a copy of dist/bundle/oaibag.js kept from before a change), so that two builds are
// timed on the same fixture in alternating runs. See bench/README.md.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import yazl from 'yazl';
import { machineFacts, parseBenchArgs, wholeNumberArg } from './bench-args.mjs';
import { ARCHIVER_BIN, checkBuilt } from './harvest-common.mjs';
import { median, ROOT, round } from './repository-common.mjs';

const MB = 1e6;
const USAGE = `usage: node bench/import-bags.mjs [--files N] [--file-kb N] [--batch-records N] [--runs N] [--bin FILE] [--vs FILE]

  --files N          files of the site (default 600)
  --file-kb N        KiB per file (default 256): about 157 MB in all
  --batch-records N  records per bag of the fixture archive (default 150: 4 bags)
  --runs N           runs of each import; medians are printed (default 3)
  --bin FILE         the oaibag entry to time (default packages/archiver/bin/oaibag.js)
  --vs FILE          a second entry, timed in the same runs, alternating with --bin`;

const { args, usageError } = parseBenchArgs('import-bags', USAGE, {
  files: { type: 'string', default: '600' },
  'file-kb': { type: 'string', default: '256' },
  'batch-records': { type: 'string', default: '150' },
  runs: { type: 'string', default: '3' },
  bin: { type: 'string' },
  vs: { type: 'string' },
});
const files = wholeNumberArg(args.files, '--files', usageError);
const fileBytes = wholeNumberArg(args['file-kb'], '--file-kb', usageError) * 1024;
const batchRecords = wholeNumberArg(args['batch-records'], '--batch-records', usageError);
const runs = wholeNumberArg(args.runs, '--runs', usageError);
const bins = [resolve(args.bin ?? ARCHIVER_BIN), ...(args.vs ? [resolve(args.vs)] : [])];
const log = (line) => process.stderr.write(`${line}\n`);

checkBuilt();
const work = join(ROOT, 'bench/work/import-bags', `${files}x${fileBytes}-b${batchRecords}`);
const bagsDir = join(work, 'bags');
if (!existsSync(join(bagsDir, 'SHA256SUMS'))) await buildFixture();
const zips = readdirSync(bagsDir).filter((name) => name.endsWith('.zip'));
const bagBytes = zips.reduce((sum, name) => sum + statSync(join(bagsDir, name)).size, 0);
const single = join(bagsDir, zips[0]);
log(`fixture: ${zips.length} bag ZIPs, ${(bagBytes / MB).toFixed(1)} MB; one of them: ${(statSync(single).size / MB).toFixed(1)} MB`);

const cases = [
  ['folder of bag ZIPs', bagsDir],
  ['one bag ZIP', single],
];
const seconds = new Map();
for (let run = 1; run <= runs; run++) {
  const order = run % 2 === 1 ? bins : [...bins].reverse();
  for (const [name, delivery] of cases) {
    for (const bin of order) {
      const archive = join(work, 'run-archive');
      rmSync(archive, { recursive: true, force: true });
      const started = performance.now();
      const child = spawnSync(process.execPath, [bin, 'import', '--archive', archive, '--json', delivery], { encoding: 'utf8' });
      const elapsed = (performance.now() - started) / 1000;
      if (child.status !== 0) throw new Error(`${bin} import ${delivery}: exit ${child.status}\n${child.stderr}`);
      const key = `${name}\t${bin}`;
      seconds.set(key, [...(seconds.get(key) ?? []), elapsed]);
      log(`run ${run}/${runs}: ${name}, ${bin}: ${elapsed.toFixed(2)} s`);
    }
  }
}
rmSync(join(work, 'run-archive'), { recursive: true, force: true });

const rows = [...seconds].map(([key, values]) => {
  const [name, bin] = key.split('\t');
  return { case: name, bin, medianSeconds: round(median(values), 2), min: round(Math.min(...values), 2), max: round(Math.max(...values), 2) };
});
for (const row of rows) process.stdout.write(`${row.case}, ${row.bin}: median ${row.medianSeconds} s (${row.min}..${row.max})\n`);
process.stdout.write(
  `${JSON.stringify({ machine: machineFacts(), fixture: { files, fileBytes, batchRecords, zips: zips.length, bagBytes }, runs, rows }, null, 2)}\n`,
);

/** A site of incompressible files as one ZIP, imported in bags of `batchRecords`, exported as bag ZIPs. */
async function buildFixture() {
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const siteZip = join(work, 'site.zip');
  const zip = new yazl.ZipFile();
  for (let n = 0; n < files; n++) {
    const block = Buffer.alloc(fileBytes);
    for (let at = 0; at < fileBytes; at += 32) createHash('sha256').update(`${n}/${at}`).digest().copy(block, at);
    zip.addBuffer(block, `files/${String(n).padStart(5, '0')}.bin`, { compress: false, mtime: new Date('2010-01-01T00:00:00Z') });
  }
  zip.end();
  await new Promise((done, fail) => zip.outputStream.pipe(createWriteStream(siteZip)).on('close', done).on('error', fail));
  const archive = join(work, 'archive');
  const run = (...argv) => {
    const child = spawnSync(process.execPath, [ARCHIVER_BIN, ...argv], { encoding: 'utf8' });
    if (child.status !== 0) throw new Error(`oaibag ${argv.join(' ')}: exit ${child.status}\n${child.stderr}`);
  };
  run('import', '--archive', archive, '--base-url', 'http://bags.example/', '--batch-records', String(batchRecords), siteZip);
  run('export', '--archive', archive, '--to', bagsDir, '--bags');
  rmSync(archive, { recursive: true, force: true });
  rmSync(siteZip, { force: true });
}
