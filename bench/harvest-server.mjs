#!/usr/bin/env node
// The repository in a process of its own for the harvest benchmark (harvest.mjs), built with
// createRepository from packages/repository/dist, as `oaibag-repository` builds it, plus what
// the benchmark needs and the command does not print: the start-up scan's summary (so the
// harvest starts only once the repository has seen the changes) and the request log in a file.
// Argument: one JSON object; output: JSON lines on stdout.
//
//   {"root":…,"index":…,"fresh":true|false,"port":N,"byValueMax":…,"pageBytes":…,"requestLog":FILE}
//       fresh: deletes the index first (createRepository then completes the first scan before
//       it resolves); otherwise opens the existing index and waits for its start-up rescan.
//       Prints {"event":"listening","baseUrl":…,"scan":{…},"seconds":…}; stops on SIGTERM.
//       port: the port to listen on (default any free one; a restart takes the same port,
//       because the archive knows a source by its base URL).
//       Every request's Combined Log Format line (bytes sent included) is appended to requestLog.
import { appendFileSync, rmSync } from 'node:fs';
import { loadRepository } from './repository-common.mjs';

const options = JSON.parse(process.argv[2] ?? '{}');
const { createRepository } = await loadRepository();
const print = (object) => process.stdout.write(`${JSON.stringify(object)}\n`);
const log = (line) => {
  if (line.startsWith('error') || line.includes('failed')) process.stderr.write(`repository: ${line}\n`);
  else if (options.requestLog && line.includes('] "')) appendFileSync(options.requestLog, `${line}\n`);
};
if (options.fresh) for (const suffix of ['', '-wal', '-shm']) rmSync(`${options.index}${suffix}`, { force: true });
const started = performance.now();
let files = 0;
const repository = await createRepository({
  root: options.root,
  index: options.index,
  watch: false,
  rescanSeconds: 0,
  log,
  ...(options.byValueMax !== undefined ? { byValueMax: options.byValueMax } : {}),
  ...(options.pageBytes !== undefined ? { pageBytes: options.pageBytes } : {}),
  onScanProgress: (progress) => {
    files = progress.files;
  },
});
// A fresh index was scanned before createRepository resolved; an existing one is being
// rescanned in the background: scan() joins that scan.
const scan = options.fresh ? { files, first: true } : await repository.scan();
const stopped = new Promise((resolve) => {
  process.once('SIGTERM', resolve);
  process.once('SIGINT', resolve);
});
const baseUrl = await repository.listen(options.port ?? 0, '127.0.0.1');
print({ event: 'listening', baseUrl, scan, seconds: (performance.now() - started) / 1000 });
await stopped;
await repository.close();
