#!/usr/bin/env node
// Linked Data benchmark (issue 15): the SPARQL store of `oaibag serve` over an archive of
// 100,000 resources with two versions each (built through the Catalog API: batch bags of 1,000
// records with their payload files; 5 % deleted after the second harvest). Measures the load of
// the store from the catalog, the process's memory with it loaded, and the time of the example
// queries of docs/linked-data.md; from the memory per triple, the largest archive served in
// memory within 2 GB. Run with `npx --yes pnpm@10.34.9 bench:linked-data [-- --resources N] [-- --runs N]`.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { parseBenchArgs, wholeNumberArg } from './bench-args.mjs';
import { median, ROOT, round } from './repository-common.mjs';
import { addHarvest, identifier, syntheticSource } from './synthetic-harvests.mjs';

const MB = 1e6;
const USAGE = `usage: node bench/linked-data.mjs [--resources N] [--runs N]

  --resources N   resources in the archive, each with two versions (default 100000)
  --runs N        repetitions of each query; medians are reported (default 5)`;
const { args, usageError } = parseBenchArgs('linked-data', USAGE, {
  resources: { type: 'string', default: '100000' },
  runs: { type: 'string', default: '5' },
});
const RESOURCES = wholeNumberArg(args.resources, '--resources', usageError, 100);
const RUNS = wholeNumberArg(args.runs, '--runs', usageError);

const DIST = join(ROOT, 'packages/archiver/dist');
for (const file of ['index.js', 'serve/graph-store.js', 'serve/archive-graph.js']) {
  if (!existsSync(join(DIST, file))) {
    process.stderr.write(`packages/archiver/dist/${file} is missing: build first (npx tsc -b)\n`);
    process.exit(2);
  }
}
const { Catalog } = await import(join(DIST, 'index.js'));
// The graph store and the archive's URIs are serve's machinery, no part of the public API: this
// bench measures them alone, without a server in front.
const { GraphStore } = await import(join(DIST, 'serve/graph-store.js'));
const { ArchiveUris } = await import(join(DIST, 'serve/archive-graph.js'));

/** Harvest 1 adds every resource, harvest 2 modifies every one and deletes 5 % (synthetic-harvests.mjs). */
function buildCatalog(dir) {
  const catalog = Catalog.open(dir);
  const source = syntheticSource(catalog, 'linked data bench');
  addHarvest(catalog, source, RESOURCES, 1, '2026-01-01T00:00:00Z');
  addHarvest(catalog, source, RESOURCES, 2, '2026-02-01T00:00:00Z');
  return catalog;
}

const QUERIES = {
  'count the items': 'PREFIX oai: <http://www.mediaspaces.info/vocab/oai-pmh.rdf#> SELECT (COUNT(?i) AS ?n) WHERE { ?i a oai:Item }',
  'the versions of one URL': `PREFIX dcterms: <http://purl.org/dc/terms/> SELECT ?v ?t WHERE { ?i dcterms:source <${identifier(4242)}> . ?v dcterms:isVersionOf ?i ; <http://www.w3.org/ns/prov#generatedAtTime> ?t } ORDER BY ?t`,
  'every PDF that changed in the last harvest':
    'PREFIX dcterms: <http://purl.org/dc/terms/> PREFIX prov: <http://www.w3.org/ns/prov#> PREFIX oaibag: <urn:oaibag:terms:> ' +
    'SELECT (COUNT(?v) AS ?n) WHERE { ?h a prov:Activity ; prov:startedAtTime ?s . FILTER NOT EXISTS { ?h2 a prov:Activity ; prov:startedAtTime ?s2 FILTER (?s2 > ?s) } ' +
    '?v prov:wasGeneratedBy ?h ; oaibag:change "modified" ; dcterms:format <https://www.iana.org/assignments/media-types/application/pdf> }',
  'resources deleted since a date':
    'PREFIX prov: <http://www.w3.org/ns/prov#> SELECT (COUNT(?d) AS ?n) WHERE { ?i prov:qualifiedInvalidation ?d . ?d prov:atTime ?t FILTER (?t >= "2026-01-15T00:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime>) }',
  'versions whose bytes were already held':
    'PREFIX dcterms: <http://purl.org/dc/terms/> SELECT (COUNT(?v) AS ?n) WHERE { ?v dcterms:isVersionOf ?i ; dcterms:identifier ?d . ?w dcterms:isVersionOf ?j ; dcterms:identifier ?d FILTER (?v != ?w) }',
};

const dir = mkdtempSync(join(os.tmpdir(), 'oaibag-bench-linked-data-'));
try {
  process.stderr.write(`building an archive catalog of ${RESOURCES} resources, two versions each, in ${dir}...\n`);
  const built = Date.now();
  const catalog = buildCatalog(dir);
  process.stderr.write(`  built in ${((Date.now() - built) / 1000).toFixed(1)} s\n`);
  global.gc?.();
  const rssBefore = process.memoryUsage().rss;
  const loadStarted = performance.now();
  const graph = await GraphStore.open(catalog, new ArchiveUris('http://127.0.0.1:8080'), { timeoutMs: 600_000, rowLimit: 10_000 });
  const loadSeconds = (performance.now() - loadStarted) / 1000;
  const triples = await graph.size();
  const rssSettled = process.memoryUsage().rss;
  global.gc?.();
  const rssLoaded = await graph.collectGarbage();
  process.stderr.write(
    `loaded ${triples} triples in ${loadSeconds.toFixed(1)} s; RSS ${round(rssBefore / MB, 0)} MB before, ${round(rssSettled / MB, 0)} MB just after, ${round(rssLoaded / MB, 0)} MB once garbage is collected\n`,
  );
  const queries = {};
  for (const [name, query] of Object.entries(QUERIES)) {
    const times = [];
    let answer;
    for (let run = 0; run < RUNS; run++) {
      const started = performance.now();
      answer = (await graph.query(query, 'application/sparql-results+json', true)).text;
      times.push((performance.now() - started) / 1000);
    }
    const bindings = JSON.parse(answer).results.bindings;
    queries[name] = { medianSeconds: round(median(times), 4), rows: bindings.length, first: bindings[0] ?? null };
    process.stderr.write(`  ${name}: ${(median(times) * 1000).toFixed(1)} ms (${bindings.length} row(s); ${JSON.stringify(bindings[0] ?? {}).slice(0, 80)})\n`);
  }
  const bytesPerTriple = (rssLoaded - rssBefore) / triples;
  const triplesPerResource = triples / RESOURCES;
  const within2GB = Math.floor((2e9 - rssBefore) / bytesPerTriple / triplesPerResource);
  const result = {
    resources: RESOURCES,
    versions: 2 * RESOURCES,
    triples: triples,
    loadSeconds: round(loadSeconds, 2),
    rssBeforeBytes: rssBefore,
    rssJustAfterLoadBytes: rssSettled,
    rssLoadedBytes: rssLoaded,
    bytesPerTriple: round(bytesPerTriple, 1),
    largestArchiveWithin2GB: { resourcesWithTwoVersions: within2GB },
    queries,
    machine: { cpus: os.cpus().length, node: process.version },
  };
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  await graph.close();
  catalog.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
