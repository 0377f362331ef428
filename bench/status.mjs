#!/usr/bin/env node
// Monitoring benchmark: `oaibag status --check` (what Icinga or Nagios runs every few minutes)
// and the metrics it shares with /metrics and --metrics-file, over a small and a large catalog
// built through the Catalog API: N resources in one harvest, then two years of nightly attempts
// (730, one in ten failed), open record failures and fixity checks. The check reads one index
// entry per source, so its time must not grow with the resources; `oaibag status` (without
// --check) counts resources and bytes and is timed beside it for comparison.
// Target: `status --check` within 2× of its time on the small catalog, and under 1 s, at every
// size. Run with `node bench/status.mjs` after the build (`npx tsc -b && node scripts/bundle-cli.mjs`).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { parseBenchArgs, wholeNumberArg } from './bench-args.mjs';
import { median, ROOT, round } from './repository-common.mjs';

const USAGE = `usage: node bench/status.mjs [--small N] [--large N] [--runs N]

  --small N   resources of the small catalog (default 1000)
  --large N   resources of the large catalog (default 1000000)
  --runs N    repetitions of each command; medians are reported (default 5)`;

const { args, usageError } = parseBenchArgs('status', USAGE, {
  small: { type: 'string', default: '1000' },
  large: { type: 'string', default: '1000000' },
  runs: { type: 'string', default: '5' },
});
const SIZES = [wholeNumberArg(args.small, '--small', usageError, 10), wholeNumberArg(args.large, '--large', usageError, 10)];
const RUNS = wholeNumberArg(args.runs, '--runs', usageError);
const NIGHTS = 730;

const DIST = join(ROOT, 'packages/archiver/dist');
const BIN = join(ROOT, 'packages/archiver/bin/oaibag.js');
if (!existsSync(join(DIST, 'index.js')) || !existsSync(join(DIST, 'bundle/oaibag.js'))) {
  process.stderr.write('build first: npx tsc -b && node scripts/bundle-cli.mjs\n');
  process.exit(2);
}
const { Catalog } = await import(join(DIST, 'index.js'));

function buildCatalog(dir, resources) {
  const catalog = Catalog.open(dir);
  const baseUrl = 'https://www.example.org/oai';
  const source = catalog.upsertSource(baseUrl, { repositoryName: 'status bench', granularity: 'YYYY-MM-DDThh:mm:ssZ' });
  const first = catalog.startRun(source.id, 'harvest', { prefix: 'oai_didl' });
  const sha = (n) => n.toString(16).padStart(64, '0');
  const size = (n) => 1000 + (n % 5000);
  for (let start = 0; start < resources; start += 1000) {
    const end = Math.min(resources, start + 1000);
    const bagPath = `aips/harvest-${first}/batch-${start / 1000 + 1}`;
    const numbers = Array.from({ length: end - start }, (_, i) => start + i);
    catalog.transaction(() => {
      catalog.recordBag({
        bagPath,
        sourceId: source.id,
        harvestId: first,
        records: numbers.length,
        newPayloads: numbers.length,
        revisits: 0,
        deletions: 0,
        payloadBytes: numbers.reduce((sum, n) => sum + size(n), 0),
        payloads: numbers.map((n) => ({ sha256: sha(n), size: size(n), path: `data/document-${n}.html` })),
      });
      numbers.forEach((n, i) =>
        catalog.recordVersion({
          sourceId: source.id,
          identifier: `https://www.example.org/site/document-${n}.html`,
          datestamp: '2024-01-01T00:00:00Z',
          size: size(n),
          sha256: sha(n),
          mimeType: 'text/html',
          bagPath,
          record: i + 1,
          parts: [sha(n)],
          harvestId: first,
        }),
      );
    });
  }
  catalog.finishRun(first, 'complete', { records: resources });
  catalog.transaction(() => {
    for (let night = 0; night < NIGHTS; night++) {
      const id = catalog.startRun(source.id, 'harvest', { prefix: 'oai_didl' });
      if (night % 10 === 3) catalog.finishRun(id, 'failed', {}, 'connect ECONNREFUSED [ERR_HARVEST_UNREACHABLE]');
      else catalog.finishRun(id, 'complete', { records: 100 });
    }
    for (let n = 0; n < 50; n++) {
      catalog.recordFailure({
        sourceId: source.id,
        harvestId: first,
        identifier: `broken-${n}`,
        stage: 'fetch',
        code: 'ERR_HARVEST_VERIFY',
        message: 'size differs',
      });
    }
    for (let week = 0; week < NIGHTS / 7; week++) {
      catalog.recordVerification({
        kind: 'full',
        startedAt: new Date().toISOString(),
        endedAt: new Date().toISOString(),
        bags: resources / 1000,
        bytes: 0,
        damaged: 0,
      });
    }
  });
  catalog.close();
}

function time(dir, args) {
  const seconds = [];
  let status;
  for (let run = 0; run < RUNS; run++) {
    const started = process.hrtime.bigint();
    const result = spawnSync(process.execPath, [BIN, 'status', '--archive', dir, ...args], { encoding: 'utf8' });
    seconds.push(Number(process.hrtime.bigint() - started) / 1e9);
    status = result.status;
  }
  return { seconds: round(median(seconds), 3), status };
}

const rows = [];
for (const resources of SIZES) {
  const dir = mkdtempSync(join(os.tmpdir(), 'oaibag-bench-status-'));
  try {
    const built = process.hrtime.bigint();
    buildCatalog(dir, resources);
    const buildSeconds = round(Number(process.hrtime.bigint() - built) / 1e9, 1);
    const check = time(dir, ['--check', '--disk-warning', '0', '--disk-critical', '0']);
    const plain = time(dir, []);
    rows.push({ resources, buildSeconds, check: check.seconds, checkExit: check.status, status: plain.seconds });
    process.stdout.write(
      `${resources} resources (built in ${buildSeconds} s): status --check ${check.seconds} s (exit ${check.status}), status ${plain.seconds} s\n`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
const [small, large] = rows;
const ratio = round(large.check / small.check, 2);
const met = ratio <= 2 && large.check < 1;
process.stdout.write(
  `status --check, ${large.resources} against ${small.resources} resources: ${ratio}× (target ≤ 2× and under 1 s): ${met ? 'met' : 'MISSED'}\n`,
);
process.exitCode = met ? 0 : 1;
