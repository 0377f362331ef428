// The plan of a restore on disk (catalog/restore-plan-table.ts) and the streaming collision
// finder (aip/restore-path.ts, PathClaims): the same decisions and orders as the in-memory
// ones, and page reads that seek through an index rather than scan or sort.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { findCollisions, PathClaims } from '../src/aip/restore-path.ts';
import { Catalog } from '../src/catalog/catalog.ts';
import { codeUnitKey, RestorePlanTable } from '../src/catalog/restore-plan-table.ts';
import { restorePageQueryPlans, type VersionRecord } from '../src/catalog/restore-queries.ts';
import { PlannedListing } from '../src/commands/restore-command.ts';
import type { RestoreSummary } from '../src/restore/restore-summary.ts';

/** A small seeded generator (mulberry32), so a failure can be replayed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const byCodeUnit = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

test('codeUnitKey orders as JavaScript compares strings, astral characters and U+E000–U+FFFF included', () => {
  const alphabet = ['a', 'b', '/', '-', '0', '\u00e9', '\uffff', '\ue000', '\u{1f600}', '\u{10000}', 'A'];
  const next = random(27);
  const words = Array.from({ length: 400 }, () =>
    Array.from({ length: Math.floor(next() * 5) }, () => alphabet[Math.floor(next() * alphabet.length)]).join(''),
  );
  const byKey = [...words].sort((a, b) => Buffer.compare(codeUnitKey(a), codeUnitKey(b)));
  assert.deepEqual(byKey, [...words].sort(byCodeUnit));
  // UTF-8 (SQLite's text order) would put U+FFFF after U+1F600; code units put it before.
  assert.ok('\uffff' > '\u{1f600}' && Buffer.compare(codeUnitKey('\uffff'), codeUnitKey('\u{1f600}')) > 0);
});

test('PathClaims, fed paths in order, loses the same paths to the same winners as findCollisions', () => {
  const table: string[][] = [
    ['a', 'a', 'a/b'],
    ['a', 'a-b', 'a/b', 'a/b/c', 'b'],
    ['a/b', 'a/b/c', 'a/bc', 'a/b/c/d'],
    ['x/index.html', 'x/index.html/y'],
    ['p', 'p.q', 'p/q', 'p0'],
  ];
  const next = random(11);
  const segments = ['a', 'b', 'a-b', 'index.html', 'x'];
  for (let n = 0; n < 300; n++) {
    table.push(
      Array.from({ length: 1 + Math.floor(next() * 8) }, () =>
        Array.from({ length: 1 + Math.floor(next() * 3) }, () => segments[Math.floor(next() * 5)]).join('/'),
      ),
    );
  }
  for (const paths of table) {
    const sorted = [...paths].sort(byCodeUnit);
    const expected = new Map([...findCollisions(sorted)].map(([loser, winner]) => [loser, sorted[winner]]));
    const claims = new PathClaims();
    const found = new Map<number, string>();
    sorted.forEach((path, index) => {
      const winner = claims.claim(path, `#${index}`);
      if (winner !== undefined) found.set(index, sorted[Number(winner.identifier.slice(1))]!);
    });
    assert.deepEqual(found, expected, JSON.stringify(sorted));
  }
  assert.throws(() => {
    const claims = new PathClaims();
    claims.claim('b', 'x');
    claims.claim('a', 'y');
  }, /out of order/);
});

const version = (identifier: string, id: number, sourceId = 1): VersionRecord => ({
  id,
  resourceId: id,
  sourceId,
  identifier,
  datestamp: '2024-01-01T00:00:00Z',
  size: id,
  sha256: '0'.repeat(64),
  bagPath: 'aips/harvest-000001/batch-00001',
  payloadFiles: 1,
  parts: [],
});

test('the plan table reads back in code-unit order of the paths, whatever the page size; lost rows are left out', () => {
  const paths = ['b', 'a/x', '\u{1f600}', '\uffff', 'a', 'a-b', 'c/d/e'];
  const orders: string[][] = [];
  for (const pageRows of [1, 2, 3, 256]) {
    const plan = RestorePlanTable.open(pageRows);
    try {
      plan.batch(() => paths.forEach((path, n) => plan.addPlaced({ path, version: version(`http://h/${n}`, n + 1) })));
      const all = [...plan.placed(false)];
      assert.deepEqual(
        all.map((row) => row.path),
        [...paths].sort(byCodeUnit),
      );
      plan.markLost(all.find((row) => row.path === 'a/x')!.rowId);
      orders.push([...plan.placed(true)].map((row) => row.path));
      assert.equal(plan.hasFile('a'), true);
      assert.equal(plan.hasFile('a/x'), false, 'a lost path is no file of the state');
      assert.equal(plan.hasFolder('a'), false, 'its only file below it lost');
      assert.equal(plan.hasFolder('c'), true);
      assert.equal(plan.hasFolder('c/d'), true);
      assert.equal(plan.hasFolder('c/d/e'), false);
    } finally {
      plan.close();
    }
  }
  for (const order of orders) assert.deepEqual(order, ['\u{1f600}', 'a', 'a-b', 'b', 'c/d/e', '\uffff'].sort(byCodeUnit));
});

test("no page read of a restore's plan or of the catalog scans a table or sorts", () => {
  const plan = RestorePlanTable.open();
  const dir = mkdtempSync(join(tmpdir(), 'oaibag-plan-'));
  const catalog = Catalog.open(dir);
  try {
    const plans = [...plan.explainPageReads(), ...restorePageQueryPlans(catalog).map((query) => query.plan)];
    assert.equal(plans.length, 12);
    for (const line of plans) {
      assert.match(line, /^SEARCH /, line);
      // The one scan allowed: the list of a page's ids (json_each), which is the page.
      assert.doesNotMatch(line.replace(/SCAN json_each VIRTUAL TABLE[^;]*/g, ''), /\bSCAN\b|TEMP B-TREE/, line);
    }
  } finally {
    catalog.close();
    plan.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a dry run's listing written as it comes is the text and the JSON of the whole summary", () => {
  const files = [1, 2, 3].map((n) => ({ path: `p/${n}.txt`, identifier: `http://h/p/${n}.txt`, size: n, datestamp: '2024-01-01T00:00:00Z' }));
  const summary = {
    archive: 'a',
    to: 't',
    asOf: null,
    dryRun: true,
    sources: ['http://h/oai'],
    restored: 3,
    bytes: 6,
    deleted: 0,
    metadataOnly: 0,
    refused: [{ kind: 'path', identifier: 'http://h/?q', reason: 'the URL has a query' }],
    damaged: [],
    failed: [],
    extraParts: [],
    planned: [],
    folder: null,
    problems: 1,
    counts: { refused: 1, damaged: 0, failed: 0, extraParts: 0, replaced: 0, notRemoved: 0 },
  } satisfies RestoreSummary;
  for (const count of [0, 1, 3]) {
    let json = '';
    const listing = new PlannedListing(true, (text) => {
      json += text;
    });
    for (const file of files.slice(0, count)) listing.add(file, summary);
    listing.end(summary);
    assert.equal(json, `${JSON.stringify({ ...summary, planned: files.slice(0, count) }, null, 2)}\n`);
    let text = '';
    const lines = new PlannedListing(false, (chunk) => {
      text += chunk;
    });
    for (const file of files.slice(0, count)) lines.add(file, summary);
    lines.end(summary);
    assert.equal(text.split('\n').length, count + 2);
    assert.equal(text.split('\n')[0], count > 0 ? 'p/1.txt\t1\t2024-01-01T00:00:00Z' : text.split('\n')[0]);
  }
});
