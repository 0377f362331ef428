#!/usr/bin/env node
// The repository in a process of its own, driven by the benchmark (repository.mjs): the
// harvesting clients then do not share its event loop, and the scans are timed alone.
// Argument: one JSON object; output: JSON lines on stdout.
//
//   {"mode":"scan","root":…,"index":…,"rescans":N,"serveAfter":true|false, pageIdentifiers…}
//       deletes the index, creates the repository (which completes the first scan of a new
//       index before it resolves: timed), then times N full rescans with nothing changed and
//       prints the figures; then either closes, or (serveAfter) listens as in "serve" mode:
//       the index has just been scanned, so no start-up scan has to be waited for.
//   {"mode":"serve","root":…,"index":…,"waitForScan":true|false, pageIdentifiers…}
//       opens the existing index (createRepository starts a background scan of it), and
//       either waits for that scan before listening (waitForScan), or listens at once and
//       reports the scan's end later. Prints {"event":"listening","baseUrl":…}; stops on SIGTERM.
//
// Also the simplest way to profile the scanner:
//   node --cpu-prof bench/repository-server.mjs '{"mode":"scan","root":"bench/work/repository/small/site","index":"/tmp/i.sqlite","rescans":1}'
import { rmSync } from 'node:fs';
import { loadRepository } from './repository-common.mjs';

const options = JSON.parse(process.argv[2] ?? '{}');
const { createRepository } = await loadRepository();
const print = (object) => process.stdout.write(`${JSON.stringify(object)}\n`);
const log = (line) => {
  if (line.startsWith('error') || line.includes('failed')) process.stderr.write(`repository: ${line}\n`);
};
const cpu = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1e6;
};
const settings = {
  ...(options.pageIdentifiers ? { pageIdentifiers: options.pageIdentifiers } : {}),
  ...(options.pageRecords ? { pageRecords: options.pageRecords } : {}),
  ...(options.byValueMax !== undefined ? { byValueMax: options.byValueMax } : {}),
  ...(options.pageBytes ? { pageBytes: options.pageBytes } : {}),
};

if (options.mode === 'scan') {
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${options.index}${suffix}`, { force: true });
  let final = { files: 0, directories: 0 };
  let cpuBefore = cpu();
  let started = performance.now();
  const repository = await createRepository({
    root: options.root,
    index: options.index,
    watch: false,
    rescanSeconds: 0,
    log,
    ...settings,
    onScanProgress: (progress) => {
      final = progress;
    },
  });
  const first = { seconds: (performance.now() - started) / 1000, cpuSeconds: cpu() - cpuBefore, files: final.files, directories: final.directories };
  const rescans = [];
  for (let n = 0; n < (options.rescans ?? 0); n++) {
    cpuBefore = cpu();
    started = performance.now();
    const summary = await repository.scan();
    rescans.push({ seconds: (performance.now() - started) / 1000, cpuSeconds: cpu() - cpuBefore, ...summary });
  }
  print({ first, rescans, peakRssBytes: process.resourceUsage().maxRSS * 1024 });
  if (options.serveAfter) await serve(repository);
  await repository.close();
} else if (options.mode === 'serve') {
  const started = performance.now();
  const repository = await createRepository({ root: options.root, index: options.index, watch: false, rescanSeconds: 0, log, ...settings });
  const openedSeconds = (performance.now() - started) / 1000;
  const scanned = repository.scan().then((summary) => ({ ...summary, secondsSinceStart: (performance.now() - started) / 1000 }));
  if (options.waitForScan) {
    const scan = await scanned;
    await serve(repository, { openedSeconds, scan });
  } else {
    await serve(repository, { openedSeconds }, async () => print({ event: 'scanned', scan: await scanned }));
  }
  await repository.close();
} else {
  process.stderr.write(`repository-server: unknown mode ${JSON.stringify(options.mode)}\n`);
  process.exit(2);
}

/** Listens on 127.0.0.1 (any port), says where, starts `then`, and returns on SIGTERM or SIGINT. */
async function serve(repository, facts = {}, then) {
  const stopped = new Promise((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  const baseUrl = await repository.listen(0, '127.0.0.1');
  print({ event: 'listening', baseUrl, ...facts });
  then?.().catch((error) => process.stderr.write(`repository-server: ${error.message}\n`));
  await stopped;
}
