#!/usr/bin/env node
// Audit benchmark: `oaibag audit` over a catalog of 100,000 resources and three harvests,
// built directly through the Catalog API (startRun, recordBag, recordVersion, recordDeletion;
// the audit reads only the catalog, so no bag files are written). Times the audit in each
// format for the latest harvest and for all three (every resource is a row), writing to a file
// as --out does.
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
const size = (n, salt) => 1000 + (n % 5000) + salt;

/**
 * Harvest 1 adds every resource; harvest 2 modifies 10 %, touches 10 %, deletes 5 % and adds
 * 5 % new ones; harvest 3 restores 2 % (of those deleted), modifies 5 % and moves 1 % to
 * another MIME type (same bytes, new datestamp). As a harvest records them: a batch bag of
 * 1,000 records at a time (recordBag, with the payload files it brings), then its versions and
 * deletions naming it, in one transaction.
 */
function buildCatalog(dir) {
  const catalog = Catalog.open(dir);
  const source = catalog.upsertSource('https://www.example.org/oai', { repositoryName: 'audit bench', granularity: 'YYYY-MM-DDThh:mm:ssZ' });
  const counts = { versions: 0, deletions: 0, bags: 0 };
  const batches = new Map();
  /** A version of resource `n`: new bytes (`salt`), or the bytes of its current version. */
  const version = (n, datestamp, salt, mimeType = MIME(n)) => ({ kind: 'version', n, datestamp, sha256: hex(n, salt), size: size(n, salt), mimeType });
  const sameBytes = (n, datestamp, mimeType) => {
    const last = catalog.latestVersion(source.id, identifier(n));
    return { kind: 'version', n, datestamp, sha256: last.sha256, size: last.size, mimeType: mimeType ?? last.mimeType };
  };
  const deletion = (n, datestamp) => ({ kind: 'deletion', n, datestamp });
  /** Records what `entry` gives for each of `from`..`to`, a batch bag per 1,000. */
  const inBatches = (harvestId, from, to, entry) => {
    for (let start = from; start < to; start += 1000) {
      const entries = Array.from({ length: Math.min(to, start + 1000) - start }, (_, i) => entry(start + i));
      const batch = (batches.get(harvestId) ?? 0) + 1;
      batches.set(harvestId, batch);
      const bagPath = `aips/harvest-${String(harvestId).padStart(6, '0')}/batch-${String(batch).padStart(5, '0')}`;
      const versions = entries.filter((e) => e.kind === 'version');
      const fresh = versions.filter((e) => catalog.payload(e.sha256) === undefined);
      catalog.transaction(() => {
        catalog.recordBag({
          bagPath,
          sourceId: source.id,
          harvestId,
          records: entries.length,
          newPayloads: fresh.length,
          revisits: versions.length - fresh.length,
          deletions: entries.length - versions.length,
          payloadBytes: fresh.reduce((sum, e) => sum + e.size, 0),
          payloads: fresh.map((e) => ({ sha256: e.sha256, size: e.size, path: `data/${identifier(e.n).slice('https://'.length)}` })),
        });
        entries.forEach((e, i) => {
          if (e.kind === 'deletion') {
            catalog.recordDeletion(source.id, identifier(e.n), e.datestamp, harvestId, bagPath);
            counts.deletions++;
            return;
          }
          const { sha256, size, mimeType, datestamp } = e;
          catalog.recordVersion({
            sourceId: source.id,
            identifier: identifier(e.n),
            datestamp,
            size,
            sha256,
            mimeType,
            bagPath,
            record: i + 1,
            parts: [sha256],
            harvestId,
          });
          counts.versions++;
        });
      });
      counts.bags++;
    }
  };
  const n10 = Math.floor(RESOURCES / 10);
  const n20 = Math.floor(RESOURCES / 20);
  const n50 = Math.floor(RESOURCES / 50);
  const n100 = Math.floor(RESOURCES / 100);

  const h1 = catalog.startRun(source.id, 'harvest', { prefix: 'oai_didl' });
  inBatches(h1, 0, RESOURCES, (n) => version(n, '2024-01-01T00:00:00Z', 0));
  catalog.finishRun(h1, 'complete');

  const h2 = catalog.startRun(source.id, 'harvest', { prefix: 'oai_didl' });
  inBatches(h2, 0, n10, (n) => version(n, '2024-02-01T00:00:00Z', 1)); // modified
  inBatches(h2, n10, 2 * n10, (n) => sameBytes(n, '2024-02-01T00:00:00Z')); // touched
  inBatches(h2, 2 * n10, 2 * n10 + n20, (n) => deletion(n, '2024-02-01T00:00:00Z'));
  inBatches(h2, RESOURCES, RESOURCES + n20, (n) => version(n, '2024-02-01T00:00:00Z', 0)); // added
  catalog.finishRun(h2, 'complete');

  const h3 = catalog.startRun(source.id, 'harvest', { prefix: 'oai_didl' });
  inBatches(h3, 2 * n10, 2 * n10 + n50, (n) => version(n, '2024-03-01T00:00:00Z', 0)); // restored
  inBatches(h3, 3 * n10, 3 * n10 + n20, (n) => version(n, '2024-03-01T00:00:00Z', 2)); // modified
  inBatches(h3, 4 * n10, 4 * n10 + n100, (n) => sameBytes(n, '2024-03-01T00:00:00Z', 'text/plain')); // another MIME type
  catalog.finishRun(h3, 'complete');
  catalog.close();
  return counts;
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
