#!/usr/bin/env node
// The SPARQL store over a large archive (issue 27): `oaibag serve --sparql-store` as a process
// over an existing archive (a synthetic catalog of bench:scale, e.g. a 30k archive grown to 1M
// resources with scale-synthetic.mjs), against a Virtuoso of its own on loopback ports
// (test/virtuoso-server.ts), written by the Graph Store Protocol as docs/linked-data.md sets it
// up. Timed: the first catch-up (the whole graph written into the empty store), the example
// queries of docs/linked-data.md through serve's /sparql (the point query, "what changed since"
// and the digest join, median of --runs), then a harvest of --changed modified versions
// committed to the catalog through the Catalog API (a bag of 1,000 a transaction, as harvest
// commits) and the catch-up, from its first commit and from its last, and the queries again. Serve's and Virtuoso's CPU time (user + system) and serve's peak RSS besides wall
// times: the machine is shared. The archive's catalog gains that harvest (use a copy).
// Run with `node --import tsx bench/sparql-store-archive.mjs --archive DIR [--changed N]` after
// `npx tsc -b && node scripts/bundle-cli.mjs`.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { parseBenchArgs, wholeNumberArg } from './bench-args.mjs';
import { cpuSecondsOf, loadBetterSqlite3, median, ROOT, round } from './repository-common.mjs';
import { startServe } from './scale-process.mjs';

const USAGE = `usage: node --import tsx bench/sparql-store-archive.mjs --archive DIR [--changed N] [--runs N] [--buffers N] [--results FILE]

  --archive DIR   the archive served (its catalog gains a harvest: give a copy)
  --changed N     versions the second harvest modifies (default 100000)
  --runs N        repetitions of each query; medians are reported (default 3)
  --buffers N     Virtuoso's NumberOfBuffers, 8 KB each (default 170000: 1.3 GB; MaxDirtyBuffers 3/4 of it)
  --results FILE  also write the JSON there`;
const { args, usageError } = parseBenchArgs('sparql-store-archive', USAGE, {
  archive: { type: 'string' },
  changed: { type: 'string', default: '100000' },
  runs: { type: 'string', default: '3' },
  buffers: { type: 'string', default: '170000' },
  results: { type: 'string' },
});
if (!args.archive) usageError('--archive is required');
const CHANGED = wholeNumberArg(args.changed, '--changed', usageError);
const RUNS = wholeNumberArg(args.runs, '--runs', usageError);
const BUFFERS = wholeNumberArg(args.buffers, '--buffers', usageError, 10_000);
const ARCHIVE = args.archive;

const { Catalog } = await import(join(ROOT, 'packages/archiver/dist/index.js'));
const { startVirtuoso, VIRTUOSO_SKIP } = await import('../test/virtuoso-server.ts');
if (VIRTUOSO_SKIP) {
  process.stderr.write(`${VIRTUOSO_SKIP}\n`);
  process.exit(2);
}
const log = (line) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);

/** What the queries and the change need from the catalog (read only). */
function catalogFacts() {
  const { Database } = loadBetterSqlite3();
  const db = new Database(join(ARCHIVE, 'catalog.sqlite'), { readonly: true, fileMustExist: true });
  try {
    const resources = db.prepare('SELECT COUNT(*) AS n FROM resources').get().n;
    const versions = db.prepare('SELECT COUNT(*) AS n FROM versions').get().n;
    const { identifier } = db.prepare('SELECT identifier FROM resources WHERE deleted_at IS NULL ORDER BY id LIMIT 1 OFFSET ?').get(Math.floor(resources / 2));
    return { resources, versions, identifier };
  } finally {
    db.close();
  }
}

/** The resources the second harvest modifies: the first `count` not deleted, in id order. */
function changedResources(count) {
  const { Database } = loadBetterSqlite3();
  const db = new Database(join(ARCHIVE, 'catalog.sqlite'), { readonly: true, fileMustExist: true });
  try {
    return db.prepare('SELECT source_id AS sourceId, identifier, mime_type AS mimeType FROM resources WHERE deleted_at IS NULL ORDER BY id LIMIT ?').all(count);
  } finally {
    db.close();
  }
}

/** A harvest modifying `resources` (new bytes for each), committed a bag of 1,000 at a time as harvest commits. */
function commitChange(resources) {
  const catalog = Catalog.open(ARCHIVE, { create: false });
  try {
    const bySource = new Map();
    for (const resource of resources) {
      if (!bySource.has(resource.sourceId)) bySource.set(resource.sourceId, []);
      bySource.get(resource.sourceId).push(resource);
    }
    const datestamp = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    for (const [sourceId, list] of bySource) {
      const harvestId = catalog.startRun(sourceId, 'harvest', { prefix: 'oai_didl' });
      for (let start = 0; start < list.length; start += 1000) {
        const batch = list.slice(start, start + 1000);
        const bagPath = `aips/harvest-${String(harvestId).padStart(6, '0')}/batch-${String(start / 1000 + 1).padStart(5, '0')}`;
        const digest = (n) => `${harvestId.toString(16).padStart(8, '0')}${(start + n).toString(16).padStart(56, '0')}`;
        catalog.transaction(() => {
          catalog.recordBag({
            bagPath,
            sourceId,
            harvestId,
            records: batch.length,
            newPayloads: batch.length,
            revisits: 0,
            deletions: 0,
            payloadBytes: 0,
            payloads: batch.map((_resource, n) => ({ sha256: digest(n), size: 1000 + n, path: `data/changed/${start + n}` })),
          });
          batch.forEach((resource, n) => {
            catalog.recordVersion({
              sourceId,
              identifier: resource.identifier,
              datestamp,
              size: 1000 + n,
              sha256: digest(n),
              mimeType: resource.mimeType,
              bagPath,
              record: n + 1,
              harvestId,
              parts: [digest(n)],
              lastModified: new Date().toUTCString(),
            });
          });
        });
      }
      catalog.finishRun(harvestId, 'complete');
    }
  } finally {
    catalog.close();
  }
}

/** The example queries of docs/linked-data.md timed here, and the point query. */
function queries(identifier) {
  const docs = readFileSync(join(ROOT, 'docs/linked-data.md'), 'utf8');
  const examples = [...docs.slice(docs.indexOf('## Example queries')).matchAll(/```sparql\n([\s\S]*?)```/g)].map((match) => match[1]);
  return {
    'point query: the versions of one URL': `prefix dcterms: <http://purl.org/dc/terms/> prefix prov: <http://www.w3.org/ns/prov#> select ?v ?t where { ?i dcterms:source <${identifier}> . ?v dcterms:isVersionOf ?i ; prov:generatedAtTime ?t } order by ?t`,
    'what changed since: every PDF that changed in the last harvest': examples[0],
    'what changed since: resources deleted since a date': examples[1],
    'digest join: versions whose bytes were already held (first 100)': examples[2],
  };
}

async function timedQueries(url, named) {
  const timed = {};
  for (const [name, query] of Object.entries(named)) {
    const times = [];
    let rows;
    for (let run = 0; run < RUNS; run++) {
      const started = performance.now();
      const response = await fetch(`${url}/sparql`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/sparql-results+json' },
        body: new URLSearchParams({ query }).toString(),
      });
      const text = await response.text();
      times.push((performance.now() - started) / 1000);
      if (response.status !== 200) throw new Error(`${name}: HTTP ${response.status}: ${text.slice(0, 300)}`);
      rows = JSON.parse(text).results.bindings.length;
    }
    timed[name] = { medianSeconds: round(median(times), 4), rows };
    log(`  ${name}: ${(median(times) * 1000).toFixed(1)} ms, ${rows} row(s)`);
  }
  return timed;
}

/** The value of a gauge at /metrics, or undefined. */
function gauge(metrics, name) {
  const match = new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, 'm').exec(metrics);
  return match ? Number(match[1]) : undefined;
}

/** Where wall time and both processes' CPU stand now, for `inStep`. */
function startMark(serve, virtuoso) {
  return { wall: performance.now(), serve: serve.watch.mark(), virtuosoCpu: cpuSecondsOf(virtuoso.pid()) };
}

/**
 * Waits until serve's /metrics says the store holds every version, in step since `after` (Unix
 * seconds); the wall and CPU seconds since `start`, and the wall seconds since this call.
 */
async function inStep(serve, virtuoso, start, after) {
  const called = performance.now();
  const wall = start.wall;
  let said = 0;
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    let metrics;
    try {
      metrics = await (await fetch(`${serve.url}/metrics`)).text();
    } catch (error) {
      // A kept-alive connection serve closed as it was reused (its event loop late under load).
      log(`  /metrics: ${error.cause?.code ?? error.message}; asked again`);
      continue;
    }
    const behind = gauge(metrics, 'oaibag_sparql_store_versions_behind');
    const at = gauge(metrics, 'oaibag_sparql_store_in_step_timestamp_seconds');
    if (gauge(metrics, 'oaibag_sparql_store_up') === 0) log(`  a write failed (attempt ${gauge(metrics, 'oaibag_sparql_store_failed_attempts')})`);
    if (behind === 0 && at !== undefined && at >= after) break;
    if (performance.now() - said > 60_000) {
      said = performance.now();
      log(`  ${behind} versions behind after ${Math.round((performance.now() - wall) / 1000)} s`);
    }
  }
  const serveSide = serve.watch.since(start.serve);
  return {
    wallSeconds: round((performance.now() - wall) / 1000, 1),
    wallSecondsAfterCommit: round((performance.now() - called) / 1000, 1),
    serveCpuSeconds: round(serveSide.cpuSeconds, 1),
    virtuosoCpuSeconds: round(cpuSecondsOf(virtuoso.pid()) - start.virtuosoCpu, 1),
    servePeakRssBytes: serveSide.peakRssBytes,
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

const facts = catalogFacts();
log(`${ARCHIVE}: ${facts.resources} resources, ${facts.versions} versions`);
const changed = changedResources(CHANGED);
const virtuoso = await startVirtuoso({ numberOfBuffers: BUFFERS, maxDirtyBuffers: Math.floor((BUFFERS * 3) / 4) });
const work = mkdtempSync(join(os.tmpdir(), 'oaibag-bench-sparql-store-archive-'));
try {
  const serve = await startServe({
    archiveDir: ARCHIVE,
    accessLog: join(work, 'access.log'),
    extraArgs: [
      ...['--sparql-store', virtuoso.queryUrl, '--sparql-store-update', virtuoso.updateUrl, '--sparql-store-data', virtuoso.dataUrl],
      ...['--sparql-store-user', virtuoso.user, '--sparql-store-password-file', virtuoso.passwordFile, '--sparql-timeout', '600'],
    ],
  });
  try {
    const graph = `${serve.url}/graph`;
    log(`first catch-up: the whole graph into the empty store (serve at ${serve.url})`);
    const firstLoad = await inStep(serve, virtuoso, startMark(serve, virtuoso), 0);
    const afterFirst = await storeTriples(virtuoso, graph);
    log(`  ${afterFirst} triples: ${JSON.stringify(firstLoad)}`);
    const named = queries(facts.identifier);
    const queriesBefore = await timedQueries(serve.url, named);
    log(`a harvest modifying ${changed.length} resources committed`);
    // Serve follows while the harvest commits, as it would a harvest's batches: its work is
    // counted from the first commit, and the wall time also from the last.
    const start = startMark(serve, virtuoso);
    commitChange(changed);
    const commitSeconds = round((performance.now() - start.wall) / 1000, 1);
    const catchUp = await inStep(serve, virtuoso, start, Date.now() / 1000);
    const afterSecond = await storeTriples(virtuoso, graph);
    log(`  committed in ${commitSeconds} s; caught up: ${afterSecond - afterFirst} triples more, ${JSON.stringify(catchUp)}`);
    const queriesAfter = await timedQueries(serve.url, named);
    const result = {
      archive: ARCHIVE,
      resources: facts.resources,
      versions: facts.versions,
      changed: changed.length,
      virtuosoBuffers: BUFFERS,
      triples: { afterFirstLoad: afterFirst, afterChange: afterSecond },
      firstLoad,
      change: { commitSeconds, catchUp },
      triplesPerSecond: { firstLoad: Math.round(afterFirst / firstLoad.wallSeconds), catchUp: Math.round((afterSecond - afterFirst) / catchUp.wallSeconds) },
      // Each wait resets VmHWM: the peak is the larger of the two.
      servePeakRssBytes: Math.max(firstLoad.servePeakRssBytes, catchUp.servePeakRssBytes),
      queries: { afterFirstLoad: queriesBefore, afterChange: queriesAfter },
      machine: { cpus: os.cpus().length, node: process.version, loadAverage: os.loadavg().map((value) => round(value, 1)) },
    };
    const json = `${JSON.stringify(result, null, 2)}\n`;
    process.stdout.write(json);
    if (args.results) writeFileSync(args.results, json);
  } finally {
    await serve.stop();
  }
} finally {
  await virtuoso.remove();
  rmSync(work, { recursive: true, force: true });
}
