// The embedded SPARQL store knows its cap (issue 27, L2): an archive whose graph is estimated
// past `--sparql-max-quads` is not loaded; `/sparql` and the Linked Data routes answer 503 with
// one line naming ERR_SPARQL_TOO_LARGE, the estimate, the cap and the way out, while the
// OAI-PMH endpoint goes on answering. A harvest that grows the graph past the cap while it is
// served stops the loading with the same answer, never a WebAssembly trap.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { exportRdf, harvest, startArchiveServer } from '../packages/archiver/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';

const BIN = new URL('../packages/archiver/dist/cli.js', import.meta.url).pathname;
const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;
const COUNT = 'select (count(*) as ?n) where { ?s ?p ?o }';
/** The store reads the catalog at most once a second: a little more than that. */
const storeCatchesUp = () => new Promise((resolve) => setTimeout(resolve, 1100));
const nextSecond = () => new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));

let work: string;
let site: string;
let archive: string;
let repository: Repository;

function write(path: string, content: string): void {
  mkdirSync(dirname(join(site, path)), { recursive: true });
  writeFileSync(join(site, path), content);
  utimesSync(join(site, path), YEAR_2000, YEAR_2000);
}

async function sparql(base: string, query: string): Promise<{ status: number; text: string }> {
  const response = await fetch(`${base}/sparql?query=${encodeURIComponent(query)}`, { headers: { Accept: 'application/sparql-results+json' } });
  return { status: response.status, text: await response.text() };
}

/** The lines of the graph (export-rdf, as /sparql would hold it). */
async function graphQuads(): Promise<number> {
  const sink = new (await import('node:stream')).Writable({ write: (_chunk, _encoding, done) => done() });
  return exportRdf({ archiveDir: archive, baseUrl: 'http://127.0.0.1', out: sink });
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-sparql-cap-'));
  site = join(work, 'site');
  archive = join(work, 'archive');
  for (let n = 0; n < 6; n++) write(`page-${n}.html`, `<p>${n}</p>`);
  repository = await createRepository({ root: site, index: join(work, 'index.sqlite'), watch: false, rescanSeconds: 0 });
  await repository.listen(0, '127.0.0.1');
  await nextSecond();
  await harvest({ baseUrl: `${repository.baseUrl}/oai`, archiveDir: archive });
  // A list ends one second before its first response: items stored in this second are not listed yet.
  await nextSecond();
});

after(async () => {
  await repository?.close();
  rmSync(work, { recursive: true, force: true });
});

test('serve --sparql-max-quads below the estimate: /sparql and /resource answer 503 with the coded line; /oai answers', async () => {
  const child = spawn(process.execPath, [BIN, 'serve', '--archive', archive, '--port', '0', '--no-access-log', '--sparql-max-quads', '10'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  try {
    let stderr = '';
    child.stderr.setEncoding('utf8');
    const oai = await new Promise<string>((resolve, reject) => {
      child.stderr.on('data', (chunk: string) => {
        stderr += chunk;
        const match = / at (http:\/\/\S+\/oai) /.exec(stderr);
        if (match) resolve(match[1]!);
      });
      child.on('exit', () => reject(new Error(`exited early: ${stderr}`)));
    });
    const base = oai.replace(/\/oai$/, '');
    const refused = await sparql(base, COUNT);
    assert.equal(refused.status, 503);
    assert.match(
      refused.text,
      /^the archive's graph has about \d+ quads, more than the embedded SPARQL store takes \(10, --sparql-max-quads\): serve it from a SPARQL server with --sparql-store URL .* \[ERR_SPARQL_TOO_LARGE\]\n$/,
    );
    assert.equal(refused.text.split('\n').length, 2, 'one line');
    const resource = await fetch(`${base}/resource/source/1`, { headers: { Accept: 'text/turtle' }, redirect: 'manual' });
    assert.equal(resource.status, 503);
    assert.match(await resource.text(), /\[ERR_SPARQL_TOO_LARGE\]/);
    const list = await fetch(`${oai}?verb=ListIdentifiers&metadataPrefix=oai_didl`);
    assert.equal(list.status, 200);
    assert.equal([...(await list.text()).matchAll(/<identifier>/g)].length, 6);
    assert.equal((await sparql(base, COUNT)).status, 503, 'and it stays refused');
  } finally {
    child.kill('SIGTERM');
  }
});

test('a harvest that grows the graph past the cap while it is served: loading stops, 503 with the code; OAI-PMH goes on', async () => {
  // The cap: just above both the graph as it is and the estimate the server makes of it (read from its refusal).
  const probe = await startArchiveServer({ archiveDir: archive, sparqlMaxQuads: 1 });
  const estimate = Number(/about ([\d,]+) quads/.exec((await sparql(probe.baseUrl, COUNT)).text)![1]!.replaceAll(',', ''));
  await probe.close();
  const held = await graphQuads();
  const cap = Math.max(estimate, held) + 5;
  const server = await startArchiveServer({ archiveDir: archive, sparqlMaxQuads: cap });
  try {
    const before = await sparql(server.baseUrl, COUNT);
    assert.equal(before.status, 200, before.text);
    assert.equal(Number(JSON.parse(before.text).results.bindings[0].n.value), held);
    for (let n = 6; n < 10; n++) write(`page-${n}.html`, `<p>${n}</p>`);
    await repository.scan();
    await nextSecond();
    const grown = await harvest({ baseUrl: `${repository.baseUrl}/oai`, archiveDir: archive });
    assert.equal(grown.added, 4);
    assert.ok((await graphQuads()) > cap, 'the graph is past the cap now');
    await storeCatchesUp();
    const refused = await sparql(server.baseUrl, COUNT);
    assert.equal(refused.status, 503, refused.text);
    assert.match(
      refused.text,
      new RegExp(
        `^the archive's graph has at least [\\d,]+ quads, more than the embedded SPARQL store takes \\(${cap.toLocaleString('en-US')}, --sparql-max-quads\\).*--sparql-store URL.*\\[ERR_SPARQL_TOO_LARGE\\]\n$`,
      ),
    );
    const list = await fetch(`${server.baseUrl}/oai?verb=ListIdentifiers&metadataPrefix=oai_didl`);
    assert.equal(list.status, 200);
    assert.equal([...(await list.text()).matchAll(/<identifier>/g)].length, 10);
  } finally {
    await server.close();
  }
});

/**
 * A server whose SPARQL workers run with the test-only fault of sparql-worker.ts
 * (`OAIBAG_TEST_SPARQL_WORKER`, read by each worker as it starts, so set until `close`);
 * `starts()` counts the workers started, that is, the loads of the store.
 */
async function faultyServer(fault: 'none' | 'trap' | 'die', options: Parameters<typeof startArchiveServer>[0] = { archiveDir: archive }) {
  const log = join(work, `starts-${fault}-${Date.now()}.log`);
  writeFileSync(log, '');
  process.env.OAIBAG_TEST_SPARQL_WORKER = `${fault}:${log}`;
  const server = await startArchiveServer(options).catch((error: unknown) => {
    delete process.env.OAIBAG_TEST_SPARQL_WORKER;
    throw error;
  });
  return {
    server,
    // The store is started when first needed: the first query starts it.
    first: await sparql(server.baseUrl, COUNT),
    starts: () => readFileSync(log, 'utf8').split('\n').filter(Boolean).length,
    close: async () => {
      delete process.env.OAIBAG_TEST_SPARQL_WORKER;
      await server.close();
    },
  };
}

test('a worker that traps while loading (out of memory below the cap): 503 with ERR_SPARQL_TOO_LARGE, loaded once, never again', async () => {
  const { server, first, starts, close } = await faultyServer('trap');
  try {
    assert.equal(first.status, 503, first.text);
    assert.match(
      first.text,
      /^the embedded SPARQL store ran out of memory loading the archive's graph at 0 quads \(--sparql-max-quads is 5,000,000\): serve it from a SPARQL server with --sparql-store URL .*\[ERR_SPARQL_TOO_LARGE\]\n$/,
    );
    for (let n = 0; n < 3; n++) {
      await storeCatchesUp();
      const again = await sparql(server.baseUrl, COUNT);
      assert.equal(again.status, 503);
      assert.equal(again.text, first.text, 'the same refusal');
    }
    const resource = await fetch(`${server.baseUrl}/resource/source/1`, { headers: { Accept: 'text/turtle' }, redirect: 'manual' });
    assert.equal(resource.status, 503);
    assert.equal((await fetch(`${server.baseUrl}/oai?verb=Identify`)).status, 200, 'OAI-PMH goes on');
    assert.equal(starts(), 1, 'one worker started: not reloaded in a loop');
  } finally {
    await close();
  }
});

test('a worker that dies while loading: 503 with ERR_ARCHIVE_INTERNAL, loaded once, never again', async () => {
  const { server, first, starts, close } = await faultyServer('die');
  try {
    assert.equal(first.status, 503, first.text);
    assert.match(
      first.text,
      /^the embedded SPARQL store failed while loading the archive's graph: the worker died \(OAIBAG_TEST_SPARQL_WORKER\) \[ERR_ARCHIVE_INTERNAL\]\n$/,
    );
    for (let n = 0; n < 3; n++) {
      await storeCatchesUp();
      assert.equal((await sparql(server.baseUrl, COUNT)).text, first.text);
    }
    assert.equal(starts(), 1, 'one worker started: not reloaded in a loop');
  } finally {
    await close();
  }
});

test('a query that makes the WebAssembly code trap (a real one: its stack overflows into its memory): 400, the worker replaced once, then answers', async () => {
  // A query nested 100,000 deep; the query size bound raised to let it through.
  const deep = `select * where { bind(${'('.repeat(100_000)}1${')'.repeat(100_000)} as ?x) }`;
  const { server, first, starts, close } = await faultyServer('none', { archiveDir: archive, sparqlBounds: { queryBytes: 1024 * 1024 } });
  try {
    assert.equal(first.status, 200, first.text);
    const held = JSON.parse(first.text).results.bindings[0].n.value;
    assert.equal(starts(), 1);
    const response = await fetch(`${server.baseUrl}/sparql`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/sparql-query', Accept: 'application/sparql-results+json' },
      body: deep,
    });
    const trapped = { status: response.status, text: await response.text() };
    assert.equal(trapped.status, 400, trapped.text);
    assert.match(trapped.text, /^the query cannot be run: (memory access out of bounds|Maximum call stack size exceeded)\n$/);
    const after = await sparql(server.baseUrl, COUNT);
    assert.equal(after.status, 200, after.text);
    assert.equal(JSON.parse(after.text).results.bindings[0].n.value, held, 'the fresh worker holds the whole graph');
    await storeCatchesUp();
    assert.equal((await sparql(server.baseUrl, COUNT)).status, 200);
    assert.equal(starts(), 2, 'replaced once after the trap, and only once');
  } finally {
    await close();
  }
});
