#!/usr/bin/env node
// SPARQL store benchmark (issue 27): `serve --sparql-store` against Virtuoso Open Source 7, an
// instance of its own on loopback ports (test/virtuoso-server.ts, 2 GB of buffers). A synthetic
// archive catalog (bench/synthetic-harvests.mjs, as bench/linked-data.mjs builds it): a first
// harvest adding N resources is written into the store from nothing (the first load), then a
// second harvest modifying every one and deleting 5 % is committed and the follower's catch-up
// timed. Then the example queries of docs/linked-data.md through the remote store: the point
// query (the versions of one URL), "what changed since" (deleted since a date; every PDF that
// changed in the last harvest) and the digest join. CPU time (user + system) of this process
// (serve's side) and of Virtuoso, and this process's peak RSS, besides wall times: the machine
// is shared. Writes go by the Graph Store Protocol (`--sparql-store-data`, the documented setup)
// or, with `--write update`, by SPARQL Update alone. Run with `node --import tsx
// bench/sparql-store.mjs [--resources N] [--runs N] [--write post|update]` after `npx tsc -b`.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { parseBenchArgs, wholeNumberArg } from './bench-args.mjs';
import { median, ROOT, round } from './repository-common.mjs';
import { addHarvest, identifier, syntheticSource } from './synthetic-harvests.mjs';

const USAGE = `usage: node --import tsx bench/sparql-store.mjs [--resources N] [--runs N] [--write post|update]

  --resources N     resources in the archive (default 20000); two harvests: N versions each
  --runs N          repetitions of each query; medians are reported (default 5)
  --write post      triples POSTed by the Graph Store Protocol (default)
  --write update    triples sent as SPARQL Update INSERT DATA`;
const { args, usageError } = parseBenchArgs('sparql-store', USAGE, {
  resources: { type: 'string', default: '20000' },
  runs: { type: 'string', default: '5' },
  write: { type: 'string', default: 'post' },
});
if (args.write !== 'post' && args.write !== 'update') usageError(`--write: "${args.write}" is neither post nor update`);
const RESOURCES = wholeNumberArg(args.resources, '--resources', usageError, 100);
const RUNS = wholeNumberArg(args.runs, '--runs', usageError);

const DIST = join(ROOT, 'packages/archiver/dist');
for (const file of ['index.js', 'serve/remote-graph-store.js', 'serve/archive-graph.js']) {
  if (!existsSync(join(DIST, file))) {
    process.stderr.write(`packages/archiver/dist/${file} is missing: build first (npx tsc -b)\n`);
    process.exit(2);
  }
}
const { Catalog } = await import(join(DIST, 'index.js'));
// The follower and the archive's URIs are serve's machinery, no part of the public API: measured
// here without a server in front.
const { RemoteGraphStore } = await import(join(DIST, 'serve/remote-graph-store.js'));
const { ArchiveUris } = await import(join(DIST, 'serve/archive-graph.js'));
const { startVirtuoso, VIRTUOSO_SKIP } = await import('../test/virtuoso-server.ts');
if (VIRTUOSO_SKIP) {
  process.stderr.write(`${VIRTUOSO_SKIP}\n`);
  process.exit(2);
}

const QUERIES = {
  'point query: the versions of one URL': `PREFIX dcterms: <http://purl.org/dc/terms/> SELECT ?v ?t WHERE { ?i dcterms:source <${identifier(4242)}> . ?v dcterms:isVersionOf ?i ; <http://www.w3.org/ns/prov#generatedAtTime> ?t } ORDER BY ?t`,
  'what changed since: resources deleted since a date':
    'PREFIX prov: <http://www.w3.org/ns/prov#> SELECT (COUNT(?d) AS ?n) WHERE { ?i prov:qualifiedInvalidation ?d . ?d prov:atTime ?t FILTER (?t >= "2026-01-15T00:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime>) }',
  'what changed since: every PDF that changed in the last harvest':
    'PREFIX dcterms: <http://purl.org/dc/terms/> PREFIX prov: <http://www.w3.org/ns/prov#> PREFIX oaibag: <urn:oaibag:terms:> ' +
    'SELECT (COUNT(?v) AS ?n) WHERE { ?h a prov:Activity ; prov:startedAtTime ?s . FILTER NOT EXISTS { ?h2 a prov:Activity ; prov:startedAtTime ?s2 FILTER (?s2 > ?s) } ' +
    '?v prov:wasGeneratedBy ?h ; oaibag:change "modified" ; dcterms:format <https://www.iana.org/assignments/media-types/application/pdf> }',
  'digest join: versions whose bytes were already held (first 100)':
    'PREFIX dcterms: <http://purl.org/dc/terms/> PREFIX prov: <http://www.w3.org/ns/prov#> SELECT ?version ?earlier WHERE { ?version dcterms:identifier ?digest ; prov:generatedAtTime ?t ; dcterms:isVersionOf ?item . ?earlier dcterms:identifier ?digest ; prov:generatedAtTime ?t0 ; dcterms:isVersionOf ?other . FILTER (?t0 < ?t) } LIMIT 100',
};

/** User + system CPU seconds of a process, from /proc (Linux). */
function cpuSeconds(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
const ownCpu = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1e6;
};
const peakRss = () => Number(/^VmHWM:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))[1]) * 1024;

/** Waits until the follower has written every version the catalog holds; its wall, serve CPU and Virtuoso CPU seconds. */
async function caughtUp(store, virtuoso) {
  const wall = performance.now();
  const cpu = ownCpu();
  const storeCpu = cpuSeconds(virtuoso.pid());
  for (;;) {
    await store.nextAttempt();
    const state = store.state();
    if (state.failures > 0) process.stderr.write(`  a write failed: ${state.error}\n`);
    if (state.failures === 0 && state.writtenAt !== undefined && state.writtenVersion === state.lastVersion) break;
  }
  return {
    wallSeconds: round((performance.now() - wall) / 1000, 1),
    serveCpuSeconds: round(ownCpu() - cpu, 1),
    virtuosoCpuSeconds: round(cpuSeconds(virtuoso.pid()) - storeCpu, 1),
  };
}

async function storeTriples(virtuoso, graph) {
  const response = await fetch(virtuoso.queryUrl, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/sparql-results+json' },
    body: new URLSearchParams({ query: `select (count(*) as ?n) where { graph <${graph}> { ?s ?p ?o } }` }).toString(),
  });
  return Number((await response.json()).results.bindings[0].n.value);
}

const dir = mkdtempSync(join(os.tmpdir(), 'oaibag-bench-sparql-store-'));
const virtuoso = await startVirtuoso({ numberOfBuffers: 170_000, maxDirtyBuffers: 130_000 });
try {
  const catalog = Catalog.open(dir);
  const source = syntheticSource(catalog, 'sparql store bench');
  process.stderr.write(`harvest 1: ${RESOURCES} resources added, in ${dir}\n`);
  addHarvest(catalog, source, RESOURCES, 1, '2026-01-01T00:00:00Z');
  const uris = new ArchiveUris('http://127.0.0.1:8080');
  const options = {
    queryUrl: virtuoso.queryUrl,
    updateUrl: virtuoso.updateUrl,
    ...(args.write === 'post' ? { dataUrl: virtuoso.dataUrl } : {}),
    credentials: { user: virtuoso.user, password: virtuoso.password },
  };
  const store = RemoteGraphStore.start(dir, catalog, uris, { timeoutMs: 600_000, rowLimit: 10_000 }, options, (line) =>
    process.stderr.write(`  serve: ${line}\n`),
  );
  const firstLoad = await caughtUp(store, virtuoso);
  const afterFirst = await storeTriples(virtuoso, store.graph);
  process.stderr.write(`  first load: ${afterFirst} triples, ${JSON.stringify(firstLoad)}\n`);
  process.stderr.write(`harvest 2: ${RESOURCES} modified, ${Math.ceil(RESOURCES / 20)} deleted\n`);
  addHarvest(catalog, source, RESOURCES, 2, '2026-02-01T00:00:00Z');
  const catchUp = await caughtUp(store, virtuoso);
  const afterSecond = await storeTriples(virtuoso, store.graph);
  process.stderr.write(`  catch-up: ${afterSecond - afterFirst} triples more, ${JSON.stringify(catchUp)}\n`);
  const queries = {};
  for (const [name, query] of Object.entries(QUERIES)) {
    const times = [];
    let answer;
    for (let run = 0; run < RUNS; run++) {
      const started = performance.now();
      answer = (await store.query(query, 'application/sparql-results+json', true)).text;
      times.push((performance.now() - started) / 1000);
    }
    const bindings = JSON.parse(answer).results.bindings;
    queries[name] = { medianSeconds: round(median(times), 4), rows: bindings.length, first: bindings[0] ?? null };
    process.stderr.write(`  ${name}: ${(median(times) * 1000).toFixed(1)} ms (${bindings.length} row(s); ${JSON.stringify(bindings[0] ?? {}).slice(0, 80)})\n`);
  }
  const result = {
    resources: RESOURCES,
    write: args.write,
    versions: 2 * RESOURCES,
    triples: { afterFirstHarvest: afterFirst, afterSecondHarvest: afterSecond },
    firstLoad,
    catchUpOfSecondHarvest: catchUp,
    triplesPerSecond: { firstLoad: Math.round(afterFirst / firstLoad.wallSeconds), catchUp: Math.round((afterSecond - afterFirst) / catchUp.wallSeconds) },
    servePeakRssBytes: peakRss(),
    queries,
    machine: { cpus: os.cpus().length, node: process.version, loadAverage: os.loadavg().map((value) => round(value, 1)) },
  };
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  await store.close();
  catalog.close();
} finally {
  await virtuoso.remove();
  rmSync(dir, { recursive: true, force: true });
}
