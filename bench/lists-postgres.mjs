#!/usr/bin/env node
// A list page at the start and at the end of a long list, on a catalog in PostgreSQL (issue 28):
// the same synthetic catalog as lists.mjs (its base recorded through the Catalog API, then
// copied with SQL up to each size), served by the same functions of catalog/served-items.ts,
// through the catalog's PostgreSQL connection. The work is the server's, so the times are wall
// times of the call (median of the runs), not this process's CPU. Each query's plan is checked
// too: no sequential scan of resources, versions or deletions at any size.
// Run with `node --import tsx bench/lists-postgres.mjs [--sizes 100000,1000000]` after the build.
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startPostgres } from '../test/postgres-server.ts';
import { parseBenchArgs, wholeNumberArg } from './bench-args.mjs';
import { BASE, buildBase } from './lists-base.mjs';
import { median, ROOT, round } from './repository-common.mjs';

const USAGE = `usage: node --import tsx bench/lists-postgres.mjs [--sizes N,N] [--runs N]

  --sizes N,N   catalog sizes in resources (default 100000,1000000)
  --runs N      repetitions of each query; medians of the wall times are reported (default 5)`;

const { args, usageError } = parseBenchArgs('lists-postgres', USAGE, {
  sizes: { type: 'string', default: '100000,1000000' },
  runs: { type: 'string', default: '5' },
});
const SIZES = args.sizes.split(',').map((size) => wholeNumberArg(size.trim(), '--sizes', usageError, 10000));
const RUNS = wholeNumberArg(args.runs, '--runs', usageError);
const log = (line) => process.stderr.write(`${line}\n`);
const DIST = join(ROOT, 'packages/archiver/dist');
const { Client } = createRequire(join(ROOT, 'packages/archiver/package.json'))('pg');

/** Median wall milliseconds of `fn` over the runs, after one warm-up call. */
function wall(fn) {
  fn();
  const samples = [];
  for (let run = 0; run < RUNS; run++) {
    const start = performance.now();
    fn();
    samples.push(performance.now() - start);
  }
  return round(median(samples), 3);
}

/** Copies the base until the catalog holds `size` resources, each copy later in time; returns the count. */
async function replicate(client, size) {
  const one = async (sql, values = []) => (await client.query(sql, values)).rows[0];
  // The base's rows: those of the resources that are not copies (a second size adds to the first's copies).
  const base = Number((await one("SELECT MAX(id) AS n FROM resources WHERE identifier NOT LIKE '%?copy=%'")).n);
  const versions = Number((await one('SELECT MAX(id) AS n FROM versions WHERE resource_id <= $1', [base])).n);
  const deletions = Number((await one('SELECT MAX(id) AS n FROM deletions WHERE resource_id <= $1', [base])).n);
  const have = Number((await one('SELECT COUNT(*) AS n FROM resources')).n);
  const span = 20; // seconds: a copy starts after the one before it ends
  const shifted = (column, k) => `to_char((${column}::timestamptz + make_interval(secs => ${k * span})) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
  // Resources and versions name each other: the copies go in one table at a time, with the
  // foreign keys and triggers off; a no-op update afterwards sets the served datestamps.
  await client.query('SET session_replication_role = replica');
  const copies = Math.ceil(size / base) - 1;
  for (let k = Math.round(have / base); k <= copies; k++) {
    await client.query('BEGIN');
    await client.query(`INSERT INTO resources (id, source_id, identifier, current_version_id, deleted_at, mime_type)
      SELECT id + ${k * base}, source_id, identifier || '?copy=${k}', current_version_id + ${k * versions}, deleted_at, mime_type FROM resources WHERE id <= ${base}`);
    await client.query(`INSERT INTO versions (id, resource_id, datestamp, size, sha256, mime_type, bag_id, record, harvest_id, stored_at, change, payload_files, last_modified)
      SELECT id + ${k * versions}, resource_id + ${k * base}, datestamp, size, sha256, mime_type, bag_id, record, harvest_id, ${shifted('stored_at', k)},
        change, payload_files, last_modified FROM versions WHERE id <= ${versions}`);
    await client.query(`INSERT INTO deletions (id, resource_id, datestamp, harvest_id, recorded_at, bag_id)
      SELECT id + ${k * deletions}, resource_id + ${k * base}, datestamp, harvest_id, ${shifted('recorded_at', k)}, bag_id FROM deletions WHERE id <= ${deletions}`);
    await client.query('COMMIT');
    if (k % 10 === 0) log(`  copy ${k} of ${copies}`);
  }
  await client.query('SET session_replication_role = origin');
  log('  served datestamps');
  await client.query(`UPDATE resources SET current_version_id = current_version_id WHERE id > ${base} AND served_at IS NULL`);
  await client.query('ANALYZE');
  return Number((await one('SELECT COUNT(*) AS n FROM resources')).n);
}

async function lastKey(client, where, back) {
  const row = (await client.query(`SELECT id, served_at FROM resources r WHERE ${where} ORDER BY served_at DESC, id DESC LIMIT 1 OFFSET $1`, [back])).rows[0];
  return { datestamp: Number(row.served_at), id: Number(row.id) };
}

const pg = await startPostgres();
const work = mkdtempSync(join(os.tmpdir(), 'oaibag-lists-pg-'));
const rows = [];
try {
  const { Catalog } = await import(join(DIST, 'index.js'));
  const served = await import(join(DIST, 'catalog/served-items.js'));
  const url = await pg.createDatabase('lists');
  log(`recording the base of ${BASE} resources`);
  const started = performance.now();
  buildBase(join(work, 'base'), Catalog, { postgres: url });
  rows.push({ size: BASE * 1.2, list: 'recording', page: 'ms a version', first: round((performance.now() - started) / (BASE * 1.2), 3), last: '' });
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    for (const size of [...SIZES].sort((a, b) => a - b)) {
      const total = await replicate(client, size);
      log(`${total} resources`);
      const catalog = Catalog.open(join(work, 'base'), { postgres: url });
      const until = Math.floor(Date.now() / 1000);
      const shapes = [
        { name: 'all', query: { until }, where: 'true' },
        { name: 'source:2', query: { until, sourceId: 2 }, where: 'r.source_id = 2' },
        { name: 'mime:text', query: { until, mime: { type: 'text' } }, where: "r.mime_type LIKE 'text/%'" },
        { name: 'mime:image:png', query: { until, mime: { type: 'image', subtype: 'png' } }, where: "r.mime_type = 'image/png'" },
      ];
      for (const shape of shapes) {
        for (const page of [100, 1000]) {
          const after = await lastKey(client, shape.where, page);
          const first = wall(() => served.listItems(catalog, { ...shape.query, limit: page + 1 }));
          const last = wall(() => served.listItems(catalog, { ...shape.query, after, limit: page + 1 }));
          const got = served.listItems(catalog, { ...shape.query, after, limit: page + 1 }).length;
          if (got !== page) throw new Error(`${shape.name}: the last page has ${got} items, not ${page}`);
          rows.push({ size: total, list: shape.name, page, first, last });
        }
        rows.push({ size: total, list: shape.name, page: 'count', first: wall(() => served.countItems(catalog, shape.query)), last: '' });
      }
      rows.push({ size: total, list: 'Identify', page: 'earliest', first: wall(() => served.earliestDatestamp(catalog)), last: '' });
      catalog.close();
    }
  } finally {
    await client.end();
  }
} finally {
  await pg.stop();
  rmSync(work, { recursive: true, force: true });
}
process.stdout.write(
  `load average ${os
    .loadavg()
    .map((n) => n.toFixed(1))
    .join(' ')}\n`,
);
process.stdout.write('| rows | list | page | first page (ms wall) | last page (ms wall) |\n| --- | --- | --- | --- | --- |\n');
for (const row of rows) process.stdout.write(`| ${row.size} | ${row.list} | ${row.page} | ${row.first} | ${row.last} |\n`);
