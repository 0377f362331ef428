#!/usr/bin/env node
// Hostile SPARQL queries against `oaibag serve` (issue 24, finding 13): each query's answer, its
// time, the server's peak RSS while it ran (VmHWM, set back before each) and the RSS once a
// normal query has answered after it (memory given back or still held). The archive is small
// (20 files harvested from oaibag-repository): the queries make their own memory. Run against
// the command built here, or another build with --bin (the code before a change, say).
// Run with `npx tsc -b && node bench/sparql-limits.mjs [--bin PATH] [-- serve options]`.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { parseBenchArgs } from './bench-args.mjs';
import { memoryOf, ROOT, round } from './repository-common.mjs';

const USAGE = `usage: node bench/sparql-limits.mjs [--bin PATH] [--serve-options "OPTIONS"]

  --bin PATH               the oaibag command (default packages/archiver/dist/cli.js)
  --serve-options OPTIONS  more options for oaibag serve, space separated (--serve-options="--sparql-memory 256M")`;
const { args } = parseBenchArgs('sparql-limits', USAGE, {
  bin: { type: 'string', default: join(ROOT, 'packages/archiver/dist/cli.js') },
  'serve-options': { type: 'string', default: '' },
});
for (const file of [args.bin, join(ROOT, 'packages/archiver/dist/index.js'), join(ROOT, 'packages/repository/dist/index.js')]) {
  if (!existsSync(file)) {
    process.stderr.write(`${file} is missing: build first (npx tsc -b)\n`);
    process.exit(2);
  }
}
const { harvest } = await import(join(ROOT, 'packages/archiver/dist/index.js'));
const { createRepository } = await import(join(ROOT, 'packages/repository/dist/index.js'));

const MB = 1e6;
const doubled = (n) => {
  let text = `bind("${'a'.repeat(64)}" as ?s0) `;
  for (let i = 1; i <= n; i++) text += `bind(concat(?s${i - 1}, ?s${i - 1}) as ?s${i}) `;
  return text;
};
// The one that fails with 400 first: before the bounds, the others left the store holding 3 GB.
const QUERIES = [
  ['64 MiB string, then a federated query (400)', `select ?x where { ${doubled(20)} service <http://127.0.0.1:1/sparql> { ?x ?y ?z } }`],
  ['nested BIND/CONCAT doubling to 64 GiB', `select (strlen(?s30) as ?n) where { ${doubled(30)} }`],
  ['GROUP_CONCAT of 4 MiB over a cross join', `select (group_concat(?s16) as ?all) where { ${doubled(16)} ?a ?b ?c . ?d ?e ?f }`],
];
const NORMAL = 'select (count(?i) as ?n) where { ?i a <http://www.mediaspaces.info/vocab/oai-pmh.rdf#Item> }';

const work = mkdtempSync(join(os.tmpdir(), 'oaibag-bench-sparql-limits-'));
mkdirSync(join(work, 'site'));
for (let n = 0; n < 20; n++) writeFileSync(join(work, 'site', `page-${n}.txt`), `page ${n}`);
const repository = await createRepository({ root: join(work, 'site'), index: join(work, 'index.sqlite'), watch: false, rescanSeconds: 0 });
await repository.listen(0, '127.0.0.1');
await new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));
await harvest({ baseUrl: `${repository.baseUrl}/oai`, archiveDir: join(work, 'archive') });
await repository.close();

const extra = args['serve-options'].split(/\s+/).filter(Boolean);
const child = spawn(process.execPath, [args.bin, 'serve', '--archive', join(work, 'archive'), '--port', '0', ...extra], {
  stdio: ['ignore', 'ignore', 'pipe'],
});
let stderr = '';
child.stderr.setEncoding('utf8');
const base = await new Promise((resolve, reject) => {
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
    const match = / at (http:\/\/\S+)\/oai /.exec(stderr);
    if (match) resolve(match[1]);
  });
  child.on('exit', () => reject(new Error(`serve exited: ${stderr}`)));
});
const memory = () => memoryOf(child.pid);
const ask = async (query) => {
  const started = performance.now();
  const response = await fetch(`${base}/sparql?query=${encodeURIComponent(query)}`, { headers: { Accept: 'application/sparql-results+json' } });
  const text = await response.text();
  return { status: response.status, text, seconds: (performance.now() - started) / 1000 };
};

await ask(NORMAL);
process.stdout.write(`oaibag serve ${extra.join(' ')} (${args.bin}); idle RSS ${round(memory().rss / MB, 0)} MB\n`);
process.stdout.write('| query | answer | time (s) | peak RSS (MB) | RSS after the next query (MB) |\n|---|---|---|---|---|\n');
for (const [name, query] of QUERIES) {
  await ask(NORMAL);
  writeFileSync(`/proc/${child.pid}/clear_refs`, '5');
  const result = await ask(query);
  const peak = memory().hwm;
  const next = await ask(NORMAL);
  const line = `${result.status} ${result.text.split('\n')[0].slice(0, 80)}`;
  process.stdout.write(`| ${name} | ${line} | ${round(result.seconds, 1)} | ${round(peak / MB, 0)} | ${round(memory().rss / MB, 0)} (${next.status}) |\n`);
}
child.kill('SIGTERM');
rmSync(work, { recursive: true, force: true });
