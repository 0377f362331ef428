import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { type AuditReport, audit, Catalog, formatAudit, openAudit, writeAuditOutput } from '../packages/archiver/src/index.ts';
import { storeVersion } from './catalog-fixture.ts';

// The HTML report is checked in a real browser: Debian's `chromium`, which .ci/run installs
// when absent. Where it cannot be installed, these tests are skipped with this message.
const CHROMIUM = '/usr/bin/chromium';
const SKIP = existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is missing (install Debian's chromium package, as .ci/run does): the HTML audit is not checked in a browser`;

const BASE = 'https://example.org/oai';
const HOSTILE = `https://example.org/<img src=x onerror="document.title='pwned'">`;

let work: string;
let page: string;
let report: AuditReport;

before(async () => {
  if (SKIP) return;
  work = mkdtempSync(join(tmpdir(), 'oaibag-audit-html-'));
  const catalog = Catalog.open(work);
  try {
    const source = catalog.upsertSource(BASE, {});
    const put = (harvestId: number, name: string, datestamp: string, sha: string, size: number, mimeType = 'text/html') =>
      storeVersion(catalog, {
        sourceId: source.id,
        identifier: name.startsWith('https:') ? name : `https://example.org/${name}`,
        datestamp,
        size,
        sha256: sha.repeat(64),
        mimeType,
        harvestId,
      });
    const one = catalog.startRun(source.id, 'harvest', { prefix: 'oai_didl' });
    for (const [n, name] of ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot'].entries()) put(one, name, '2024-01-01T00:00:00Z', 'abcdef'[n]!, 100 + n);
    catalog.finishRun(one, 'complete');
    const two = catalog.startRun(source.id, 'harvest', { prefix: 'oai_didl' });
    put(two, 'alpha', '2024-02-01T00:00:00Z', '1', 500); // modified
    catalog.recordDeletion(source.id, 'https://example.org/bravo', '2024-02-01T00:00:00Z', two);
    catalog.recordDeletion(source.id, 'https://example.org/charlie', '2024-02-01T00:00:00Z', two);
    put(two, 'delta', '2024-02-01T00:00:00Z', 'd', 103, 'text/plain'); // touched, MIME changed
    catalog.finishRun(two, 'complete');
    const three = catalog.startRun(source.id, 'harvest', { prefix: 'oai_didl' });
    put(three, 'charlie', '2024-03-01T00:00:00Z', 'c', 102); // back
    put(three, HOSTILE, '2024-03-01T00:00:00Z', '2', 7); // added
    catalog.recordDeletion(source.id, 'https://example.org/echo', '2024-03-01T00:00:00Z', three);
    catalog.finishRun(three, 'complete');
    // Harvest 1 is the period's start: its additions are before it; 2 and 3 are the period.
    const since = catalog.harvest(two)!.startedAt;
    report = audit(catalog, { since });
    page = join(work, 'audit.html');
    await writeAuditOutput(formatAudit(openAudit(catalog, { since }), 'html'), page);
  } finally {
    catalog.close();
  }
});

after(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

/** The page as Chromium has it once its script ran (`--dump-dom` serialises the live DOM). */
function renderedDom(fragment = ''): string {
  const profile = mkdtempSync(join(work, 'profile-'));
  const result = spawnSync(
    CHROMIUM,
    ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', `--user-data-dir=${profile}`, '--dump-dom', `${pathToFileURL(page).href}${fragment}`],
    { encoding: 'utf8', timeout: 120_000, maxBuffer: 64 * 1024 * 1024 },
  );
  assert.equal(result.status, 0, `chromium failed: ${result.error?.message ?? ''} ${result.stderr}`);
  assert.match(result.stdout, /<html lang="en" data-ready="1">/, 'the page script ran to its end');
  return result.stdout;
}

interface RenderedRow {
  change: string;
  mime: boolean;
  identifier: string;
  cells: string[];
}

const decode = (html: string) =>
  html
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&nbsp;/g, '\u00a0')
    .replace(/&amp;/g, '&');

/** The table's rows as drawn, in DOM order. */
function rowsOf(dom: string): RenderedRow[] {
  const body = /<table id="rows">[\s\S]*?<tbody>([\s\S]*?)<\/tbody>/.exec(dom)?.[1] ?? '';
  return [...body.matchAll(/<tr data-change="(\w+)" data-mime="([01])">([\s\S]*?)<\/tr>/g)].map((match) => {
    const cells = [...match[3]!.matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((cell) => decode(cell[1]!.replace(/<[^>]+>/g, '')));
    return { change: match[1]!, mime: match[2] === '1', identifier: cells[0]!, cells };
  });
}

test('the HTML audit renders in Chromium: totals, one stacked bar per harvest, every row, hostile identifiers inert', { skip: SKIP }, () => {
  const dom = renderedDom();
  const rows = rowsOf(dom);
  assert.deepEqual(
    rows.map((row) => [row.identifier, row.change, row.mime]),
    report.rows.map((row) => [row.identifier, row.change, row.mimeChanged]),
  );
  assert.deepEqual(
    report.rows.map((row) => [row.identifier.replace('https://example.org/', ''), row.change]),
    [
      [HOSTILE.replace('https://example.org/', ''), 'added'],
      ['alpha', 'modified'],
      ['bravo', 'deleted'],
      ['charlie', 'touched'], // deleted in 2, back in 3 with its bytes: the net change is the datestamp
      ['delta', 'touched'],
      ['echo', 'deleted'],
    ],
  );
  assert.match(dom, /<output id="shown">6 of 6 rows shown<\/output>/);
  assert.match(dom, /<title>oaibag audit: https:\/\/example\.org\/oai<\/title>/, 'no identifier ran as script');
  assert.doesNotMatch(dom.replace(/<svg[\s\S]*?<\/svg>/g, ''), /<img/, 'no identifier became an element');
  assert.equal(rows[0]!.identifier, HOSTILE, 'it is shown as text');
  // The chart: one bar group per harvest of the period, each stacked from what it recorded.
  const bars = [...dom.matchAll(/<g class="bar" data-harvest="(\d+)">([\s\S]*?)<\/g>/g)];
  assert.deepEqual(
    bars.map((bar) => Number(bar[1])),
    report.totals.byHarvest.map((harvest) => harvest.harvestId),
  );
  assert.equal(bars.length, 2);
  for (const [index, bar] of bars.entries()) {
    const stacked = Object.fromEntries([...bar[2]!.matchAll(/data-kind="(\w+)" data-count="(\d+)"/g)].map((rect) => [rect[1], Number(rect[2])]));
    const harvest = report.totals.byHarvest[index]!;
    assert.deepEqual(
      stacked,
      Object.fromEntries(
        (['added', 'modified', 'touched', 'deleted', 'restored'] as const).filter((kind) => harvest[kind] > 0).map((kind) => [kind, harvest[kind]]),
      ),
    );
  }
  assert.deepEqual(
    report.totals.byHarvest.map(({ added, modified, touched, deleted, restored }) => ({ added, modified, touched, deleted, restored })),
    [
      { added: 0, modified: 1, touched: 1, deleted: 2, restored: 0 },
      { added: 1, modified: 0, touched: 0, deleted: 1, restored: 1 },
    ],
  );
  assert.match(dom, /<figcaption class="legend">(?:[\s\S]*?(added|modified|touched|deleted|restored)){5}/);
  assert.match(dom, /<td data-kind="deleted">2<\/td>/);
});

test('the page filters by change kind and sorts, from the URL fragment: #filter=deleted&sort=identifier&dir=desc', { skip: SKIP }, () => {
  const dom = renderedDom('#filter=deleted&sort=identifier&dir=desc');
  assert.deepEqual(
    rowsOf(dom).map((row) => [row.identifier, row.change]),
    [
      ['https://example.org/echo', 'deleted'],
      ['https://example.org/bravo', 'deleted'],
    ],
  );
  assert.match(dom, /<output id="shown">2 of 6 rows shown<\/output>/);
  assert.match(dom, /<th data-key="identifier" data-type="text" tabindex="0" aria-sort="descending">/);
  const all = rowsOf(renderedDom('#sort=identifier&dir=desc'));
  assert.deepEqual(
    all.map((row) => row.identifier),
    [...report.rows.map((row) => row.identifier)].sort().reverse(),
  );
});

test('the page filters by identifier text and MIME change, and sorts numbers as numbers', { skip: SKIP }, () => {
  assert.deepEqual(
    rowsOf(renderedDom('#q=ALPHA')).map((row) => row.identifier),
    ['https://example.org/alpha'],
  );
  const byMime = rowsOf(renderedDom('#filter=mime-changed'));
  assert.deepEqual(
    byMime.map((row) => [row.identifier, row.cells[9]]),
    [['https://example.org/delta', 'text/html \u2192 text/plain']],
  );
  // Size after: 7 < 102 < 103 < 500 (as text "102" < "500" < "7"); deleted rows (no size) first.
  const bySize = rowsOf(renderedDom('#sort=after-size&dir=asc'));
  assert.deepEqual(
    bySize.map((row) => row.cells[7]),
    ['', '', '7', '102', '103', '500'],
  );
});

test('a large audit is drawn 1,000 rows a page; control characters show as escapes', { skip: SKIP }, async () => {
  const dir = mkdtempSync(join(work, 'large-'));
  const catalog = Catalog.open(dir);
  try {
    const source = catalog.upsertSource(BASE, {});
    const harvestId = catalog.startRun(source.id, 'harvest', { prefix: 'oai_didl' });
    catalog.transaction(() => {
      for (let n = 0; n < 2500; n++) {
        const identifier = n === 7 ? 'https://example.org/\x1b[2Jbell\x07' : `https://example.org/file-${String(n).padStart(4, '0')}`;
        storeVersion(catalog, {
          sourceId: source.id,
          identifier,
          datestamp: '2024-01-01T00:00:00Z',
          size: n,
          sha256: n.toString(16).padStart(64, '0'),
          harvestId,
        });
      }
    });
    catalog.finishRun(harvestId, 'complete');
    await writeAuditOutput(formatAudit(openAudit(catalog), 'html'), join(dir, 'audit.html'));
  } finally {
    catalog.close();
  }
  const saved = page;
  page = join(dir, 'audit.html');
  try {
    const first = renderedDom('#sort=after-size&dir=desc');
    assert.equal(rowsOf(first).length, 1000);
    assert.deepEqual(
      rowsOf(first)
        .slice(0, 2)
        .map((row) => row.cells[7]),
      ['2499', '2498'],
    );
    assert.match(first, /<output id="shown">2500 of 2500 rows shown \(1\u20131000\)<\/output>/);
    const last = rowsOf(renderedDom('#sort=after-size&dir=desc&page=3'));
    assert.deepEqual(
      last.map((row) => row.cells[7]),
      Array.from({ length: 500 }, (_, i) => String(499 - i)),
    );
    const bell = rowsOf(renderedDom('#q=bell'));
    assert.deepEqual(
      bell.map((row) => row.identifier),
      ['https://example.org/\\u001b[2Jbell\\u0007'],
    );
  } finally {
    page = saved;
  }
});
