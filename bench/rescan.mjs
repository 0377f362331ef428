#!/usr/bin/env node
// The repository's scan and rescan alone, on a site of bench:scale (scale-site.mjs), each pass in
// a process of its own: the first scan of a new index, a rescan of the unchanged site, and a
// rescan after the touch of bench:scale (every tenth file gets the mtime now). Prints each
// pass's CPU time (user + system of the process, so a loaded machine does not blur it), wall
// time, peak RSS (VmHWM) and µs of CPU a file. The touched site is put back at the end.
//
//   node bench/rescan.mjs --files 30000 [--work DIR] [--seed N] [--passes scan,rescan,touch]
// (after a build: npx tsc -b). A kept site of bench:scale is reused (--work bench/work/scale/30k).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadRepository } from './repository-common.mjs';
import { ensureSite, revertSite, touchSite } from './scale-site.mjs';

const PASSES = ['scan', 'rescan', 'touch'];

if (process.argv[2] === '--child') {
  const { root, index, fresh } = JSON.parse(process.argv[3]);
  const { createRepository } = await loadRepository();
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  if (fresh) for (const suffix of ['', '-wal', '-shm']) spawnSync('rm', ['-f', `${index}${suffix}`]);
  const repository = await createRepository({ root, index, watch: false, rescanSeconds: 0, log: () => {} });
  // A fresh index was scanned before createRepository resolved; an existing one is rescanned in
  // the background, which scan() joins.
  const summary = fresh ? undefined : await repository.scan();
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const { heapTotal } = process.memoryUsage();
  await repository.close();
  const hwm = Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0) * 1024;
  process.stdout.write(`${JSON.stringify({ seconds, cpuSeconds: (cpu.user + cpu.system) / 1e6, peakRssBytes: hwm, heapTotal, summary })}\n`);
  process.exit(0);
}

const { values } = parseArgs({
  options: {
    files: { type: 'string', default: '30000' },
    work: { type: 'string' },
    seed: { type: 'string', default: '27' },
    passes: { type: 'string', default: PASSES.join(',') },
  },
});
const files = Number(values.files);
const dir = resolve(values.work ?? `bench/work/scale/${files >= 1000 ? `${files / 1000}k` : files}`);
const passes = values.passes.split(',');
const log = (line) => process.stderr.write(`${line}\n`);
const { root } = await ensureSite({ dir, files, seed: Number(values.seed), log });
const index = join(dir, 'rescan-index.sqlite');

function pass(name, fresh) {
  const child = spawnSync(process.execPath, [new URL(import.meta.url).pathname, '--child', JSON.stringify({ root, index, fresh })], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (child.status !== 0) throw new Error(`${name} exited with ${child.status}`);
  const result = JSON.parse(child.stdout.trim().split('\n').at(-1));
  const perFile = (result.cpuSeconds / files) * 1e6;
  console.log(
    `${name.padEnd(7)} CPU ${result.cpuSeconds.toFixed(2)} s (${perFile.toFixed(0)} µs a file), wall ${result.seconds.toFixed(2)} s, ` +
      `peak ${(result.peakRssBytes / 1e6).toFixed(0)} MB (V8 heap ${(result.heapTotal / 1e6).toFixed(0)} MB)${result.summary ? `, ${JSON.stringify({ ...result.summary, milliseconds: undefined })}` : ''}`,
  );
}

if (passes.includes('scan')) pass('scan', true);
if (passes.includes('rescan')) pass('rescan', false);
if (passes.includes('touch')) {
  await touchSite({ dir, root });
  try {
    pass('touch', false);
  } finally {
    await revertSite({ dir, log });
  }
}
