// SPARQL bounded in memory and size as well as in time (issue 24, finding 13): `oaibag serve`
// run as a command with small bounds; hostile queries (a string doubled by nested BIND/CONCAT,
// GROUP_CONCAT over a cross join) are stopped within --sparql-memory with a 503 naming it, the
// server's peak RSS stays under a bound, a query that fails with 400 after taking memory gives
// it back (the store's worker is replaced), an answer over --sparql-result-size and a query over
// --sparql-query-size are refused, and a normal query afterwards answers correctly each time.
// And a select query's solutions are cut to the row limit before they are parsed.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { harvest } from '../packages/archiver/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';

const BIN = new URL('../packages/archiver/dist/cli.js', import.meta.url).pathname;
const MB = 1024 * 1024;
/** The bound on the server's peak RSS with --sparql-memory 256M (it idles near 150 MB). */
const PEAK_RSS = 1024 * MB;
const FILES = 20;

let work: string;
let repository: Repository;
let child: ChildProcess;
let base: string;

/** `2^n` times a 64-character string, each doubling a BIND of the one before. */
function doubled(n: number): string {
  let text = `bind("${'a'.repeat(64)}" as ?s0) `;
  for (let i = 1; i <= n; i++) text += `bind(concat(?s${i - 1}, ?s${i - 1}) as ?s${i}) `;
  return text;
}

async function sparql(query: string, init: RequestInit = {}): Promise<{ status: number; text: string }> {
  const response = await fetch(`${base}/sparql?query=${encodeURIComponent(query)}`, { headers: { Accept: 'application/sparql-results+json' }, ...init });
  return { status: response.status, text: await response.text() };
}

/** A normal query: the number of archived resources. */
async function items(): Promise<number> {
  const { status, text } = await sparql('select (count(?i) as ?n) where { ?i a <http://www.mediaspaces.info/vocab/oai-pmh.rdf#Item> }');
  assert.equal(status, 200, text);
  return Number(JSON.parse(text).results.bindings[0].n.value);
}

/** The server's resident memory now and at its peak (bytes), from /proc. */
function memory(): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)![1]) * 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}

/** Sets the peak back to the present RSS (false where the kernel does not allow it). */
function resetPeak(): boolean {
  try {
    writeFileSync(`/proc/${child.pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-sparql-limits-'));
  mkdirSync(join(work, 'site'));
  for (let n = 0; n < FILES; n++) writeFileSync(join(work, 'site', `page-${n}.txt`), `page ${n}`);
  repository = await createRepository({ root: join(work, 'site'), index: join(work, 'index.sqlite'), watch: false, rescanSeconds: 0 });
  await repository.listen(0, '127.0.0.1');
  // The repository lists what changed before the present second only.
  await new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));
  const archive = join(work, 'archive');
  await harvest({ baseUrl: `${repository.baseUrl}/oai`, archiveDir: archive });
  // The time limit is long: the memory bound is what stops the hostile queries here.
  const args = ['serve', '--archive', archive, '--port', '0', '--sparql-timeout', '120', '--sparql-memory', '256M'];
  child = spawn(process.execPath, [BIN, ...args, '--sparql-result-size', '1M', '--sparql-query-size', '4K'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.setEncoding('utf8');
  base = await new Promise<string>((resolve, reject) => {
    child.stderr!.on('data', (chunk: string) => {
      stderr += chunk;
      const match = / at (http:\/\/\S+)\/oai /.exec(stderr);
      if (match) resolve(match[1]!);
    });
    child.on('exit', () => reject(new Error(`exited early: ${stderr}`)));
  });
  assert.equal(await items(), FILES);
});

after(async () => {
  child?.kill('SIGTERM');
  await repository?.close();
  rmSync(work, { recursive: true, force: true });
});

test('a string doubled by nested BIND/CONCAT is stopped at --sparql-memory (503 naming it), the peak RSS stays under 1 GB, and the next query answers', async () => {
  // 2^30 times 64 characters: 64 GiB if it were let run.
  const { status, text } = await sparql(`select (strlen(?s30) as ?n) where { ${doubled(30)} }`);
  assert.equal(status, 503, text);
  assert.equal(text, 'the query needed more memory than the limit (256M, --sparql-memory) and was stopped\n');
  assert.equal(await items(), FILES);
  assert.ok(memory().peak < PEAK_RSS, `peak RSS ${memory().peak}`);
});

test('GROUP_CONCAT over a cross join is stopped at --sparql-memory too, and the next query answers', async () => {
  // 4 MiB, joined with every pair of triples (some 40,000 of them): 160 GB if it were let run.
  const { status, text } = await sparql(`select (group_concat(?s16) as ?all) where { ${doubled(16)} ?a ?b ?c . ?d ?e ?f }`);
  assert.equal(status, 503, text);
  assert.match(text, /^the query needed more memory than the limit \(256M, --sparql-memory\) and was stopped\n$/);
  assert.equal(await items(), FILES);
  assert.ok(memory().peak < PEAK_RSS, `peak RSS ${memory().peak}`);
});

test('a query that fails with 400 after taking memory gives it back: the RSS returns to where it was', async () => {
  await items();
  const before = memory().rss;
  const measured = resetPeak();
  // A 32 MiB string (some 160 MB on the way, under the bound), then a federated query, which the
  // store refuses as it runs.
  const { status, text } = await sparql(`select ?x where { ${doubled(19)} service <http://127.0.0.1:1/sparql> { ?x ?y ?z } }`);
  assert.equal(status, 400, text);
  assert.match(text, /^the query cannot be run: .*service/i);
  // The next query waits for the fresh worker.
  assert.equal(await items(), FILES);
  const now = memory();
  if (measured) assert.ok(now.peak - before > 100 * MB, `the query grew the process by ${(now.peak - before) / MB} MB only`);
  assert.ok(now.rss - before < 40 * MB, `${(now.rss - before) / MB} MB still held`);
});

test('an answer over --sparql-result-size is refused (503 naming it), and the next query answers', async () => {
  // One value of 2 MiB.
  const { status, text } = await sparql(`select ?s15 where { ${doubled(15)} }`);
  assert.equal(status, 503, text);
  assert.equal(text, 'the result is larger than the limit (1M, --sparql-result-size)\n');
  assert.equal(await items(), FILES);
});

test('a query over --sparql-query-size is refused with 413 naming it, sent in each form', async () => {
  const long = `select * where { ?s ?p ?o } # ${'x'.repeat(5000)}`;
  const expected = 'the query is larger than the limit (4K, --sparql-query-size)\n';
  assert.deepEqual(await sparql(long), { status: 413, text: expected });
  const form = await fetch(`${base}/sparql`, { method: 'POST', body: new URLSearchParams({ query: long }) });
  assert.deepEqual([form.status, await form.text()], [413, expected]);
  const body = await fetch(`${base}/sparql`, { method: 'POST', headers: { 'Content-Type': 'application/sparql-query' }, body: long });
  assert.deepEqual([body.status, await body.text()], [413, expected]);
  assert.equal(await items(), FILES);
});
