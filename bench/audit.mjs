#!/usr/bin/env node
// Audit benchmark: `oaibag audit` over a catalog of 100,000 resources and three harvests,
// built directly through the Catalog API (startRun, recordVersion, recordDeletion; the
// audit reads only the catalog, so no bags are written). Times the audit in each format for the
// latest harvest and for all three (every resource is a row), writing to a file as --out does.
// Target: under 5 s for the audit of 100,000 resources. Run with
// `npx --yes pnpm@10.34.9 bench:audit` (builds first) or `node bench/audit.mjs` after `npx tsc -b`.
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { parseBenchArgs, wholeNumberArg } from './bench-args.mjs';
import { median, ROOT, round } from './repository-common.mjs';

const TARGET_SECONDS = 5;
const FORMATS = ['text', 'json', 'csv', 'html'];
const USAGE = `usage: node bench/audit.mjs [--resources N] [--runs N] [--out FILE] [--keep] [--strict]

  --resources N   resources in the catalog (default 100000)
  --runs N        repetitions of each measurement; medians are reported (default 3)
  --out FILE      where to write the JSON (default bench/work/results/audit.json)
  --keep          keep the catalog (its folder is printed)
  --strict        exit with status 1 when an audit takes ${TARGET_SECONDS} s or more`;

const { args, usageError } = parseBenchArgs('audit', USAGE, {
  resources: { type: 'string', default: '100000' },
  runs: { type: 'string', default: '3' },
  out: { type: 'string' },
  keep: { type: 'boolean', default: false },
  strict: { type: 'boolean', default: false },
});
const RESOURCES = wholeNumberArg(args.resources, '--resources', usageError, 10);
const RUNS = wholeNumberArg(args.runs, '--runs', usageError);

const DIST = join(ROOT, 'packages/archiver/dist');
for (const file of ['catalog/catalog.js', 'audit/audit-query.js', 'audit/audit-format.js']) {
  if (!existsSync(join(DIST, file))) {
    process.stderr.write(`packages/archiver/dist/${file} is missing: build first (npx tsc -b), or run \`npx --yes pnpm@10.34.9 bench:audit\`\n`);
    process.exit(2);
  }
}
const { Catalog } = await import(join(DIST, 'catalog/catalog.js'));
const { openAudit } = await import(join(DIST, 'audit/audit-query.js'));
const { formatAudit, writeAuditOutput } = await import(join(DIST, 'audit/audit-format.js'));

const hex = (n, salt) => `${salt.toString(16).padStart(8, '0')}${n.toString(16).padStart(56, '0')}`;
const identifier = (n) => `https://www.example.org/site/section-${n % 97}/document-${n}.${n % 5 === 0 ? 'pdf' : 'html'}`;
const MIME = (n) => (n % 5 === 0 ? 'application/pdf' : 'text/html');

/**
 * Harvest 1 adds every resource; harvest 2 modifies 10 %, touches 10 %, deletes 5 % and adds
 * 5 % new ones; harvest 3 restores 2 % (of those deleted), modifies 5 % and moves 1 % to
 * another MIME type (same bytes, new datestamp).
 */
function buildCatalog(dir) {
  const catalog = Catalog.open(dir);
  const source = catalog.upsertSource('https://www.example.org/oai', { repositoryName: 'audit bench', granularity: 'YYYY-MM-DDThh:mm:ssZ' });
  const counts = { versions: 0, deletions: 0 };
  let bag = 0;
  const version = (harvestId, n, datestamp, salt, mimeType = MIME(n)) => {
    catalog.recordVersion({
      sourceId: source.id,
      identifier: identifier(n),
      datestamp,
      size: 1000 + (n % 5000) + salt,
      sha256: hex(n, salt),
      mimeType,
      bagPath: `aips/${bag++}`,
      harvestId,
    });
    counts.versions++;
  };
  const deletion = (harvestId, n, datestamp) => {
    catalog.recordDeletion(source.id, identifier(n), datestamp, harvestId);
    counts.deletions++;
  };
  const inBatches = (from, to, fn) => {
    for (let start = from; start < to; start += 10_000)
      catalog.transaction(() => {
        for (let n = start; n < Math.min(to, start + 10_000); n++) fn(n);
      });
  };
  const n10 = Math.floor(RESOURCES / 10);
  const n20 = Math.floor(RESOURCES / 20);
  const n50 = Math.floor(RESOURCES / 50);
  const n100 = Math.floor(RESOURCES / 100);

  const h1 = catalog.startRun(source.id, 'harvest', { prefix: 'oai_didl' });
  inBatches(0, RESOURCES, (n) => version(h1, n, '2024-01-01T00:00:00Z', 0));
  catalog.finishRun(h1, 'complete');

  const h2 = catalog.startRun(source.id, 'harvest', { prefix: 'oai_didl' });
  inBatches(0, n10, (n) => version(h2, n, '2024-02-01T00:00:00Z', 1)); // modified
  inBatches(
    n10,
    2 * n10,
    (n) =>
      catalog.recordVersion({ ...sameBytes(catalog, source.id, n), datestamp: '2024-02-01T00:00:00Z', bagPath: `aips/${bag++}`, harvestId: h2 }) &&
      counts.versions++,
  ); // touched
  inBatches(2 * n10, 2 * n10 + n20, (n) => deletion(h2, n, '2024-02-01T00:00:00Z'));
  inBatches(RESOURCES, RESOURCES + n20, (n) => version(h2, n, '2024-02-01T00:00:00Z', 0)); // added
  catalog.finishRun(h2, 'complete');

  const h3 = catalog.startRun(source.id, 'harvest', { prefix: 'oai_didl' });
  inBatches(2 * n10, 2 * n10 + n50, (n) => version(h3, n, '2024-03-01T00:00:00Z', 0)); // restored
  inBatches(3 * n10, 3 * n10 + n20, (n) => version(h3, n, '2024-03-01T00:00:00Z', 2)); // modified
  inBatches(
    4 * n10,
    4 * n10 + n100,
    (n) =>
      catalog.recordVersion({
        ...sameBytes(catalog, source.id, n),
        datestamp: '2024-03-01T00:00:00Z',
        mimeType: 'text/plain',
        bagPath: `aips/${bag++}`,
        harvestId: h3,
      }) && counts.versions++,
  );
  catalog.finishRun(h3, 'complete');
  catalog.close();
  return counts;
}

function sameBytes(catalog, sourceId, n) {
  const last = catalog.latestVersion(sourceId, identifier(n));
  return { sourceId, identifier: identifier(n), size: last.size, sha256: last.sha256, mimeType: last.mimeType };
}

/** One audit as the command runs it: open the catalog, read, format, write --out, close. */
async function timeAudit(dir, options, format) {
  const out = join(dir, `audit.${format}`);
  const started = process.hrtime.bigint();
  const catalog = Catalog.open(dir, { create: false });
  let rows;
  try {
    const run = openAudit(catalog, options);
    await writeAuditOutput(formatAudit(run, format), out);
    rows = run.totals().rows;
  } finally {
    catalog.close();
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { seconds, rows, bytes: statSync(out).size, rss: process.memoryUsage().rss };
}

const dir = mkdtempSync(join(os.tmpdir(), 'oaibag-bench-audit-'));
try {
  process.stderr.write(`building a catalog of ${RESOURCES} resources in ${dir}...\n`);
  const buildStarted = Date.now();
  const built = buildCatalog(dir);
  const buildSeconds = (Date.now() - buildStarted) / 1000;
  process.stderr.write(`built in ${buildSeconds.toFixed(1)} s: ${built.versions} versions, ${built.deletions} deletions\n`);

  const scopes = [
    { name: 'latest harvest', options: {} },
    { name: 'harvest 2', options: { harvest: 2 } },
    { name: 'all harvests', options: { since: '2000-01-01' } },
  ];
  const results = [];
  for (const scope of scopes) {
    for (const format of FORMATS) {
      const runs = [];
      for (let i = 0; i < RUNS; i++) runs.push(await timeAudit(dir, scope.options, format));
      const seconds = median(runs.map((run) => run.seconds));
      results.push({
        scope: scope.name,
        format,
        rows: runs[0].rows,
        seconds: round(seconds, 3),
        bytes: runs[0].bytes,
        rssMB: round(Math.max(...runs.map((run) => run.rss)) / 1e6, 1),
        met: seconds < TARGET_SECONDS,
      });
    }
  }

  const lines = [
    `audit of ${RESOURCES} resources (${built.versions} versions, ${built.deletions} deletions, 3 harvests); median of ${RUNS}; target < ${TARGET_SECONDS} s`,
    '',
    '| scope | format | rows | seconds | output MB | process RSS MB |',
    '| --- | --- | ---: | ---: | ---: | ---: |',
    ...results.map((r) => `| ${r.scope} | ${r.format} | ${r.rows} | ${r.seconds.toFixed(3)} | ${(r.bytes / 1e6).toFixed(1)} | ${r.rssMB} |`),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);

  const report = {
    benchmark: 'audit',
    date: new Date().toISOString(),
    machine: { cpus: os.cpus().length, cpu: os.cpus()[0]?.model, node: process.version, platform: `${os.platform()} ${os.release()}` },
    resources: RESOURCES,
    runs: RUNS,
    build: { seconds: round(buildSeconds, 1), ...built },
    targetSeconds: TARGET_SECONDS,
    results,
  };
  const out = args.out ?? join(ROOT, 'bench/work/results/audit.json');
  await mkdir(dirname(out), { recursive: true });
  await writeFile(out, `${JSON.stringify(report, null, 2)}\n`);
  process.stderr.write(`results in ${out}\n`);
  const missed = results.filter((r) => !r.met);
  if (missed.length > 0) {
    process.stderr.write(`target missed: ${missed.map((r) => `${r.scope} ${r.format} ${r.seconds} s`).join('; ')}\n`);
    if (args.strict) process.exitCode = 1;
  }
} finally {
  if (args.keep) process.stderr.write(`catalog kept in ${dir}\n`);
  else rmSync(dir, { recursive: true, force: true });
}
