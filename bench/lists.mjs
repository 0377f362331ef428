#!/usr/bin/env node
// The cost of one list page at the start and at the end of a long list (issue 27, rows S1 and R),
// measured at the query, as CPU time of this process:
// - `oaibag serve`: a synthetic catalog (a base of 10,000 resources recorded through the Catalog
//   API, two sources, one in ten of the second source's identifiers shadowing the first's, one in
//   a hundred resources deleted, about 1,000 ingests a second; then copied with SQL up to each
//   size) and the functions of catalog/served-items.ts that ListIdentifiers, ListRecords, their
//   completeListSize and Identify call: the first page, and the page that ends the list (after the
//   key of its 100th or 1,000th item from the end), plain, for a source set and for a MIME set.
// - `oaibag-repository`: its file index with every row in one datestamp second (a generated site,
//   `cp -r`), its first and last page, plain, for a leaf set, a major-type set and with a hidden
//   folder, the count and the earliest datestamp.
// Run with `node bench/lists.mjs [--sizes 100000,1000000] [--files 1000000]` after the build.
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { parseBenchArgs, wholeNumberArg } from './bench-args.mjs';
import { BASE, buildBase } from './lists-base.mjs';
import { loadBetterSqlite3, loadRepository, median, ROOT, round } from './repository-common.mjs';

const USAGE = `usage: node bench/lists.mjs [--sizes N,N] [--files N] [--runs N] [--only serve,repository]

  --sizes N,N   catalog sizes in resources (default 100000,1000000)
  --files N     rows of the repository's index, all in one second (default 1000000)
  --runs N      repetitions of each query; medians of the CPU time are reported (default 5)
  --only LIST   serve, repository (default both)
  --lists LIST  the lists timed, by name (default all of them: all, source:2, mime:text, mime:image:png,
                mime:image, hidden private/)
  --archiver-dist DIR  the archiver's build to time (default packages/archiver/dist; a copy of
                an earlier build, inside packages/archiver so that its imports resolve, compares)`;

const { args, usageError } = parseBenchArgs('lists', USAGE, {
  sizes: { type: 'string', default: '100000,1000000' },
  files: { type: 'string', default: '1000000' },
  runs: { type: 'string', default: '5' },
  only: { type: 'string', default: 'serve,repository' },
  lists: { type: 'string' },
  'archiver-dist': { type: 'string', default: 'packages/archiver/dist' },
});
const SIZES = args.sizes.split(',').map((size) => wholeNumberArg(size.trim(), '--sizes', usageError, 10000));
const FILES = wholeNumberArg(args.files, '--files', usageError, 1000);
const RUNS = wholeNumberArg(args.runs, '--runs', usageError);
const ONLY = new Set(args.only.split(',').map((name) => name.trim()));
const LISTS = args.lists === undefined ? undefined : new Set(args.lists.split(',').map((name) => name.trim()));
const timed = (shape) => LISTS === undefined || LISTS.has(shape.name);
const log = (line) => process.stderr.write(`${line}\n`);

const DIST = join(ROOT, args['archiver-dist']);
if (!existsSync(join(DIST, 'index.js')) || !existsSync(join(ROOT, 'packages/repository/dist/index.js'))) {
  process.stderr.write('build first: npx tsc -b && node scripts/bundle-cli.mjs\n');
  process.exit(2);
}
const { Database } = loadBetterSqlite3();

/** Median CPU milliseconds (user + system) of `fn` over the runs, after one warm-up call. */
function cpu(fn) {
  fn();
  const samples = [];
  for (let run = 0; run < RUNS; run++) {
    const start = process.cpuUsage();
    fn();
    const used = process.cpuUsage(start);
    samples.push((used.user + used.system) / 1000);
  }
  return round(median(samples), 3);
}

/** Copies the base's resources, versions and deletions until the catalog holds `size` resources, each copy later in time. */
function replicate(file, size) {
  const db = new Database(file);
  db.pragma('foreign_keys = OFF'); // resources and versions name each other: the copies are inserted one table at a time
  const base = db.prepare('SELECT MAX(id) AS n FROM resources').get().n;
  const versions = db.prepare('SELECT MAX(id) AS n FROM versions').get().n;
  const deletions = db.prepare('SELECT MAX(id) AS n FROM deletions').get().n;
  const span = 20 * 1000; // ms: a copy starts after the one before it ends
  const copy = db.transaction((k) => {
    db.prepare(`INSERT INTO resources (id, source_id, identifier, current_version_id, deleted_at, mime_type)
      SELECT id + @k * @base, source_id, identifier || '?copy=' || @k, current_version_id + @k * @versions, deleted_at, mime_type FROM resources WHERE id <= @base`).run(
      {
        k,
        base,
        versions,
      },
    );
    db.prepare(`INSERT INTO versions (id, resource_id, datestamp, size, sha256, mime_type, bag_id, record, harvest_id, stored_at, change, payload_files, last_modified)
      SELECT id + @k * @versions, resource_id + @k * @base, datestamp, size, sha256, mime_type, bag_id, record, harvest_id,
        strftime('%Y-%m-%dT%H:%M:%fZ', stored_at, '+' || (@k * @span / 1000) || ' seconds'), change, payload_files, last_modified
      FROM versions WHERE id <= @versions`).run({ k, base, versions, span });
    db.prepare(`INSERT INTO deletions (id, resource_id, datestamp, harvest_id, recorded_at, bag_id)
      SELECT id + @k * @deletions, resource_id + @k * @base, datestamp, harvest_id,
        strftime('%Y-%m-%dT%H:%M:%fZ', recorded_at, '+' || (@k * @span / 1000) || ' seconds'), bag_id FROM deletions WHERE id <= @deletions`).run({
      k,
      base,
      deletions,
      span,
    });
  });
  const copies = Math.ceil(size / base) - 1;
  for (let k = 1; k <= copies; k++) copy(k);
  // A catalog that keeps a served datestamp fills it when a resource's state is written; a
  // no-op write of the copied rows does that here (and nothing on a catalog that keeps none).
  db.prepare('UPDATE resources SET current_version_id = current_version_id WHERE id > ?').run(base);
  const total = db.prepare('SELECT COUNT(*) AS n FROM resources').get().n;
  db.close();
  return total;
}

// The served datestamp as the catalog defined it before issue 27, for finding the keys that
// start the last pages (set-up only, not timed).
const STAMP = `CAST(strftime('%s', CASE WHEN r.deleted_at IS NOT NULL
  THEN (SELECT MAX(d.recorded_at) FROM deletions d WHERE d.resource_id = r.id)
  ELSE (SELECT v.stored_at FROM versions v WHERE v.id = r.current_version_id) END) AS INTEGER)`;

function lastKey(file, where, back) {
  const db = new Database(file, { readonly: true });
  const row = db.prepare(`SELECT id, ${STAMP} AS stamp FROM resources r WHERE ${where} ORDER BY stamp DESC, id DESC LIMIT 1 OFFSET ?`).get(back);
  db.close();
  return { datestamp: row.stamp, id: row.id };
}

async function benchServe() {
  const { Catalog } = await import(join(DIST, 'index.js'));
  const served = await import(join(DIST, 'catalog/served-items.js'));
  const rows = [];
  const work = mkdtempSync(join(os.tmpdir(), 'oaibag-lists-'));
  try {
    const baseDir = join(work, 'base');
    log(`serve: recording the base of ${BASE} resources`);
    const start = process.cpuUsage();
    buildBase(baseDir, Catalog);
    const used = process.cpuUsage(start);
    // What recording costs per resource (a version, or a deletion), with the catalog's indexes and triggers.
    const perRecord = (used.user + used.system) / 1000 / (BASE * 1.2);
    rows.push({ part: 'serve', size: BASE * 1.2, list: 'recording', page: 'ms a version', first: round(perRecord, 4), last: '' });
    for (const size of SIZES) {
      const dir = join(work, `n${size}`);
      rmSync(dir, { recursive: true, force: true });
      cpSync(baseDir, dir, { recursive: true });
      const file = join(dir, 'catalog.sqlite');
      const total = replicate(file, size);
      log(`serve: ${total} resources`);
      const catalog = Catalog.open(dir);
      const until = Math.floor(Date.now() / 1000);
      const shapes = [
        { name: 'all', query: { until }, where: '1' },
        { name: 'source:2', query: { until, sourceId: 2 }, where: 'r.source_id = 2' },
        { name: 'mime:text', query: { until, mime: { type: 'text' } }, where: "r.mime_type LIKE 'text/%'" },
        { name: 'mime:image:png', query: { until, mime: { type: 'image', subtype: 'png' } }, where: "r.mime_type = 'image/png'" },
      ];
      for (const shape of shapes.filter(timed)) {
        for (const page of [100, 1000]) {
          const after = lastKey(file, shape.where, page);
          const first = cpu(() => served.listItems(catalog, { ...shape.query, limit: page + 1 }));
          const last = cpu(() => served.listItems(catalog, { ...shape.query, after, limit: page + 1 }));
          const got = served.listItems(catalog, { ...shape.query, after, limit: page + 1 }).length;
          if (got !== page) throw new Error(`serve ${shape.name}: the last page has ${got} items, not ${page}`);
          rows.push({ part: 'serve', size: total, list: shape.name, page, first, last });
        }
        const count = cpu(() => served.countItems(catalog, shape.query));
        rows.push({ part: 'serve', size: total, list: shape.name, page: 'count', first: count, last: '' });
      }
      rows.push({ part: 'serve', size: total, list: 'Identify', page: 'earliest', first: cpu(() => served.earliestDatestamp(catalog)), last: '' });
      catalog.close();
      rmSync(dir, { recursive: true, force: true });
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return rows;
}

async function benchRepository() {
  const { FileIndex } = await loadRepository('site/file-index.js');
  const work = mkdtempSync(join(os.tmpdir(), 'oaibag-lists-'));
  const rows = [];
  try {
    const file = join(work, 'index.sqlite');
    FileIndex.open(file).close();
    const db = new Database(file);
    const second = 1767225600;
    log(`repository: ${FILES} rows in one second`);
    const insert = db.prepare(`INSERT INTO records (path, datestamp, mime_type, set_spec, size, mtime_ns, ctime_ns, file_key, sha256)
      VALUES (?, ?, ?, ?, 1000, '0', '0', '0:0', '')`);
    db.transaction(() => {
      for (let i = 1; i <= FILES; i++) {
        const image = i % 10 === 0;
        const folder = i % 100 === 1 ? 'private' : 'site';
        insert.run(`${folder}/f${i}.${image ? 'png' : 'html'}`, second, image ? 'image/png' : 'text/html', image ? 'mime:image:png' : 'mime:text:html');
      }
    })();
    db.close();
    const index = FileIndex.open(file);
    const until = second + 10;
    const shapes = [
      { name: 'all', query: { until, hiddenPrefixes: [] } },
      { name: 'mime:image:png', query: { until, setSpec: 'mime:image:png', hiddenPrefixes: [] } },
      { name: 'mime:image', query: { until, setSpec: 'mime:image', hiddenPrefixes: [] } },
      { name: 'hidden private/', query: { until, hiddenPrefixes: ['private'] } },
    ];
    for (const shape of shapes.filter(timed)) {
      for (const page of [100, 1000]) {
        const all = lastIdBack(file, shape, page);
        const after = { datestamp: second, id: all };
        const first = cpu(() => index.list({ ...shape.query, limit: page + 1 }));
        const last = cpu(() => index.list({ ...shape.query, after, limit: page + 1 }));
        const got = index.list({ ...shape.query, after, limit: page + 1 }).length;
        if (got !== page) throw new Error(`repository ${shape.name}: the last page has ${got} items, not ${page}`);
        rows.push({ part: 'repository', size: FILES, list: shape.name, page, first, last });
      }
      rows.push({ part: 'repository', size: FILES, list: shape.name, page: 'count', first: cpu(() => index.count(shape.query)), last: '' });
    }
    rows.push({ part: 'repository', size: FILES, list: 'Identify', page: 'earliest', first: cpu(() => index.earliestDatestamp([])), last: '' });
    index.close();
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return rows;
}

/** The id after which the last `back` items of a repository list start. */
function lastIdBack(file, shape, back) {
  const db = new Database(file, { readonly: true });
  let where = '1';
  if (shape.query.setSpec) where = `(set_spec = '${shape.query.setSpec}' OR set_spec LIKE '${shape.query.setSpec}:%')`;
  for (const prefix of shape.query.hiddenPrefixes) where += ` AND path NOT LIKE '${prefix}/%'`;
  const row = db.prepare(`SELECT id FROM records WHERE ${where} ORDER BY id DESC LIMIT 1 OFFSET ?`).get(back);
  db.close();
  return row.id;
}

const rows = [];
if (ONLY.has('serve')) rows.push(...(await benchServe()));
if (ONLY.has('repository')) rows.push(...(await benchRepository()));
process.stdout.write('| part | rows | list | page | first page (ms CPU) | last page (ms CPU) |\n| --- | --- | --- | --- | --- | --- |\n');
for (const row of rows) process.stdout.write(`| ${row.part} | ${row.size} | ${row.list} | ${row.page} | ${row.first} | ${row.last} |\n`);
