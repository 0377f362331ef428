#!/usr/bin/env node
// The many small sites of bench:scale-out's workers section (scale-out.mjs), each a repository
// of its own (createRepository from packages/repository/dist, as `oaibag-repository` builds
// it) on its own loopback port, all in this one process: twenty repository processes would
// take twenty Node starts and their memory from a 2-core machine that is measuring the workers.
// Argument: one JSON object; output: JSON lines on stdout.
//
//   {"sites":[{"root":…,"index":…}, …],"byValueMax":…}
//       Every index is made afresh (createRepository completes the first scan before it
//       resolves). Prints {"event":"listening","endpoints":[BASEURL/oai, …],"files":[N, …],
//       "seconds":…} in the order of `sites`; stops on SIGTERM.
import { rmSync } from 'node:fs';
import { loadRepository } from './repository-common.mjs';

const options = JSON.parse(process.argv[2] ?? '{}');
const { createRepository } = await loadRepository();
const print = (object) => process.stdout.write(`${JSON.stringify(object)}\n`);
const log = (line) => {
  if (line.startsWith('error') || line.includes('failed')) process.stderr.write(`repository: ${line}\n`);
};
const started = performance.now();
const repositories = [];
const endpoints = [];
const files = [];
for (const site of options.sites) {
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${site.index}${suffix}`, { force: true });
  let scanned = 0;
  const repository = await createRepository({
    root: site.root,
    index: site.index,
    watch: false,
    rescanSeconds: 0,
    log,
    ...(options.byValueMax !== undefined ? { byValueMax: options.byValueMax } : {}),
    onScanProgress: (progress) => {
      scanned = progress.files;
    },
  });
  repositories.push(repository);
  endpoints.push(`${await repository.listen(0, '127.0.0.1')}/oai`);
  files.push(scanned);
}
const stopped = new Promise((resolve) => {
  process.once('SIGTERM', resolve);
  process.once('SIGINT', resolve);
});
print({ event: 'listening', endpoints, files, seconds: (performance.now() - started) / 1000 });
await stopped;
for (const repository of repositories) await repository.close();
