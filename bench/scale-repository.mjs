#!/usr/bin/env node
// The repository of the scale benchmark (scale.mjs) in a process of its own: createRepository from
// packages/repository/dist, as `oaibag-repository` builds it (no watcher, no timed rescans), plus
// a rescan on request, so that the benchmark times the scan a changed site needs in the same
// process that serves it. Argument: one JSON object; JSON lines on stdout, commands on stdin.
//
//   {"root":…,"index":…,"fresh":true|false,"port":N}
//       fresh: deletes the index first (createRepository then scans the whole tree before it
//       resolves: the "scan" step); otherwise opens the index and waits for its start-up rescan.
//       Prints {"event":"listening","baseUrl":…,"seconds":…,"files":…}.
//   stdin {"command":"scan"}  → prints {"event":"scanned","seconds":…,"summary":{…}}
// Stops on SIGTERM or when stdin closes.
import { rmSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { loadRepository } from './repository-common.mjs';

const options = JSON.parse(process.argv[2] ?? '{}');
const { createRepository } = await loadRepository();
const print = (object) => process.stdout.write(`${JSON.stringify(object)}\n`);
const log = (line) => {
  if (line.startsWith('error') || line.includes('failed')) process.stderr.write(`repository: ${line}\n`);
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
  onScanProgress: (progress) => {
    files = progress.files;
  },
});
// A fresh index was scanned before createRepository resolved; an existing one is being rescanned
// in the background: scan() joins that scan.
if (!options.fresh) await repository.scan();
const baseUrl = await repository.listen(options.port ?? 0, '127.0.0.1');
print({ event: 'listening', baseUrl, seconds: (performance.now() - started) / 1000, files });

let stopping;
const stop = () => {
  stopping ??= repository.close().then(() => process.exit(0));
  return stopping;
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
const commands = createInterface({ input: process.stdin });
commands.on('close', stop);
for await (const line of commands) {
  const { command } = JSON.parse(line);
  if (command === 'scan') {
    const scanStarted = performance.now();
    const summary = await repository.scan();
    print({ event: 'scanned', seconds: (performance.now() - scanStarted) / 1000, summary });
  } else process.stderr.write(`scale-repository: unknown command ${JSON.stringify(command)}\n`);
}
