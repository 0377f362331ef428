import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { ArchiverError, AUDIT_CSV_HEADER, type AuditReport, type AuditRow, type AuditState, audit, Catalog, harvest } from '../packages/archiver/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';
import { storeVersion } from './catalog-fixture.ts';

const OAIBAG = join(import.meta.dirname, '..', 'packages', 'archiver', 'bin', 'oaibag.js');
const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;
const FAST_RETRY = { retries: 2, baseDelayMs: 10, maxDelayMs: 100 };
const nextSecond = () => new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));

let work: string;
let site: string;
let archive: string;
let repository: Repository;
let endpoint: string;
/** The harvests: 1 (first), 2 (the site changed), 3 (a deleted file came back). */
const harvests: number[] = [];
/** What each file looked like when harvested: [harvest index] -> path -> state. */
const seen: Array<Map<string, AuditState>> = [];

const CONTENT: Record<string, string> = {
  'keep.txt': 'never changes',
  'edit.html': '<html>first</html>',
  'touch.png': '\x89PNG touched only',
  'gone.txt': 'deleted in the second harvest',
  'old-name.txt': 'renamed in the second harvest',
  'back.txt': 'deleted, then put back',
};

function write(path: string, content: string, mtime = YEAR_2000): void {
  mkdirSync(dirname(join(site, path)), { recursive: true });
  writeFileSync(join(site, path), content);
  utimesSync(join(site, path), mtime, mtime);
}

const id = (path: string) => `${endpoint.slice(0, -4)}/${path.split('/').map(encodeURIComponent).join('/')}`;
const sha = (text: string) => createHash('sha256').update(text).digest('hex');

/** The live state the catalog holds now for each path (its current version). */
function snapshot(): Map<string, AuditState> {
  const catalog = Catalog.open(archive, { create: false });
  try {
    const sourceId = catalog.source(endpoint)!.id;
    const states = new Map<string, AuditState>();
    for (const path of [...Object.keys(CONTENT), 'new-name.txt']) {
      const version = catalog.latestVersion(sourceId, id(path));
      const resource = catalog.resource(sourceId, id(path));
      if (!version || !resource) continue;
      states.set(
        path,
        resource.deletedAt === null
          ? { deleted: false, datestamp: version.datestamp, size: version.size, sha256: version.sha256, mimeType: version.mimeType }
          : { deleted: true, datestamp: resource.deletedAt, size: null, sha256: null, mimeType: null },
      );
    }
    return states;
  } finally {
    catalog.close();
  }
}

async function harvestNow(): Promise<void> {
  await repository.scan();
  await nextSecond();
  const summary = await harvest({ baseUrl: endpoint, archiveDir: archive, retry: FAST_RETRY });
  assert.equal(summary.status, 'complete');
  assert.equal(summary.failed, 0);
  harvests.push(summary.harvestId);
  seen.push(snapshot());
}

function auditOf(options: Parameters<typeof audit>[1]): AuditReport {
  const catalog = Catalog.open(archive, { create: false });
  try {
    return audit(catalog, options);
  } finally {
    catalog.close();
  }
}

function row(path: string, change: AuditRow['change'], beforeState: AuditState | null, afterState: AuditState, harvestId: number): AuditRow {
  return { source: endpoint, identifier: id(path), change, mimeChanged: false, before: beforeState, after: afterState, harvestId };
}

const byIdentifier = (rows: AuditRow[]) => [...rows].sort((a, b) => (a.identifier < b.identifier ? -1 : 1));

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-audit-'));
  site = join(work, 'site');
  archive = join(work, 'archive');
  for (const [path, content] of Object.entries(CONTENT)) write(path, content);
  repository = await createRepository({ root: site, index: join(work, 'index.sqlite'), watch: false, rescanSeconds: 0, byValueMax: 100_000, pageRecords: 2 });
  endpoint = `${await repository.listen(0, '127.0.0.1')}/oai`;

  await harvestNow(); // 1: everything added
  await nextSecond();
  write('edit.html', '<html>second, longer</html>'); // modified: other bytes
  utimesSync(join(site, 'touch.png'), new Date(), new Date()); // touched: same bytes, new datestamp
  rmSync(join(site, 'gone.txt')); // deleted
  rmSync(join(site, 'old-name.txt')); // renamed: deleted + added
  write('new-name.txt', CONTENT['old-name.txt']!);
  rmSync(join(site, 'back.txt')); // deleted now, back before harvest 3
  await harvestNow(); // 2
  await nextSecond();
  write('back.txt', CONTENT['back.txt']!, Date.now() / 1000);
  await harvestNow(); // 3: restored
});

after(async () => {
  await repository.close();
  rmSync(work, { recursive: true, force: true });
});

test('the harvests recorded what the site did (the fixture the audit tests rely on)', () => {
  assert.equal(seen[0]!.size, 6);
  assert.equal(seen[0]!.get('edit.html')!.sha256, sha(CONTENT['edit.html']!));
  assert.equal(seen[1]!.get('back.txt')!.deleted, true);
  assert.equal(seen[2]!.get('back.txt')!.deleted, false);
});

test('the audit of one harvest has exactly its changes: added, modified, touched, deleted (a rename is both), and nothing else', () => {
  const [h1, h2] = [seen[0]!, seen[1]!];
  const report = auditOf({ harvest: harvests[1]! });
  assert.deepEqual(report.period, { selection: 'harvest', since: null, until: null, harvestIds: [harvests[1]] });
  const expected = [
    row('edit.html', 'modified', h1.get('edit.html')!, h2.get('edit.html')!, harvests[1]!),
    row('touch.png', 'touched', h1.get('touch.png')!, h2.get('touch.png')!, harvests[1]!),
    row('gone.txt', 'deleted', h1.get('gone.txt')!, h2.get('gone.txt')!, harvests[1]!),
    row('old-name.txt', 'deleted', h1.get('old-name.txt')!, h2.get('old-name.txt')!, harvests[1]!),
    row('new-name.txt', 'added', null, h2.get('new-name.txt')!, harvests[1]!),
    row('back.txt', 'deleted', h1.get('back.txt')!, h2.get('back.txt')!, harvests[1]!),
  ];
  assert.deepEqual(byIdentifier(report.rows), byIdentifier(expected));
  // The values are the files' own: bytes, sizes, types from the site.
  const edit = report.rows.find((r) => r.identifier === id('edit.html'))!;
  assert.equal(edit.before!.sha256, sha(CONTENT['edit.html']!));
  assert.equal(edit.after.sha256, sha('<html>second, longer</html>'));
  assert.equal(edit.after.size, Buffer.byteLength('<html>second, longer</html>'));
  assert.equal(edit.after.mimeType, 'text/html');
  const touched = report.rows.find((r) => r.identifier === id('touch.png'))!;
  assert.equal(touched.before!.sha256, touched.after.sha256);
  assert.notEqual(touched.before!.datestamp, touched.after.datestamp);
  assert.deepEqual(report.totals.byChange, { added: 1, modified: 1, touched: 1, deleted: 3, restored: 0, mimeChanged: 0 });
  assert.equal(report.totals.rows, 6);
  assert.deepEqual(
    report.totals.byHarvest.map(({ harvestId, added, modified, touched, deleted, restored }) => ({ harvestId, added, modified, touched, deleted, restored })),
    [{ harvestId: harvests[1], added: 1, modified: 1, touched: 1, deleted: 3, restored: 0 }],
  );
});

test('by default the audit is the latest harvest that recorded a change: the file that came back is restored', () => {
  const report = auditOf({});
  assert.equal(report.period.selection, 'latest');
  assert.deepEqual(report.period.harvestIds, [harvests[2]]);
  assert.deepEqual(report.rows, [row('back.txt', 'restored', seen[1]!.get('back.txt')!, seen[2]!.get('back.txt')!, harvests[2]!)]);
  assert.equal(report.rows[0]!.before!.deleted, true);
  assert.equal(report.rows[0]!.after.sha256, sha(CONTENT['back.txt']!));
  assert.deepEqual(report.totals.byChange, { added: 0, modified: 0, touched: 0, deleted: 0, restored: 1, mimeChanged: 0 });
});

test('a harvest that finds nothing does not hide the last changes from the default audit', async () => {
  await nextSecond();
  await harvestNow(); // 4: nothing changed
  harvests.pop();
  seen.pop();
  assert.deepEqual(auditOf({}).period.harvestIds, [harvests[2]]);
});

test('over all harvests each resource shows its net change: what appeared and went within the period is deleted with no before', () => {
  const catalog = Catalog.open(archive, { create: false });
  const first = catalog.harvest(harvests[0]!)!.startedAt;
  catalog.close();
  const report = auditOf({ since: first });
  assert.equal(report.period.selection, 'dates');
  const last = seen[2]!;
  const expected = [
    row('keep.txt', 'added', null, last.get('keep.txt')!, harvests[0]!),
    row('edit.html', 'added', null, last.get('edit.html')!, harvests[1]!),
    row('touch.png', 'added', null, last.get('touch.png')!, harvests[1]!),
    row('gone.txt', 'deleted', null, last.get('gone.txt')!, harvests[1]!),
    row('old-name.txt', 'deleted', null, last.get('old-name.txt')!, harvests[1]!),
    row('new-name.txt', 'added', null, last.get('new-name.txt')!, harvests[1]!),
    row('back.txt', 'added', null, last.get('back.txt')!, harvests[2]!),
  ];
  assert.deepEqual(byIdentifier(report.rows), byIdentifier(expected));
  assert.deepEqual(
    report.totals.byHarvest.map((h) => [h.harvestId, h.added, h.modified, h.touched, h.deleted, h.restored]),
    [
      [harvests[0], 6, 0, 0, 0, 0],
      [harvests[1], 1, 1, 1, 3, 0],
      [harvests[2], 0, 0, 0, 0, 1],
      [harvests[2]! + 1, 0, 0, 0, 0, 0], // the empty harvest of the test above is in the period too
    ],
  );
});

test('--since harvest 2 to --until its start: a deletion undone within the period is the net change (same bytes, new datestamp: touched)', () => {
  const catalog = Catalog.open(archive, { create: false });
  const second = catalog.harvest(harvests[1]!)!.startedAt;
  const third = catalog.harvest(harvests[2]!)!.startedAt;
  catalog.close();
  const report = auditOf({ since: second, until: third });
  assert.deepEqual(report.period.harvestIds, [harvests[1], harvests[2]]);
  const back = report.rows.find((r) => r.identifier === id('back.txt'))!;
  assert.deepEqual(back, row('back.txt', 'touched', seen[0]!.get('back.txt')!, seen[2]!.get('back.txt')!, harvests[2]!));
  assert.equal(report.rows.length, 6);
  // A day given as YYYY-MM-DD covers all of it.
  const day = auditOf({ since: second.slice(0, 10), until: third.slice(0, 10) });
  assert.ok(day.period.harvestIds.includes(harvests[1]!) && day.period.harvestIds.includes(harvests[2]!));
});

test('bad periods are usage errors', () => {
  const usage = (options: Parameters<typeof audit>[1]) =>
    assert.throws(
      () => auditOf(options),
      (error: unknown) => error instanceof ArchiverError && error.code === 'ERR_ARCHIVE_USAGE',
    );
  usage({ harvest: 999 });
  usage({ harvest: harvests[0]!, since: '2020-01-01' });
  usage({ since: '2020-02-30' });
  usage({ since: 'yesterday' });
  usage({ since: '2021-01-01', until: '2020-01-01' });
  usage({ source: 'http://elsewhere.example/oai' });
  assert.deepEqual(auditOf({ source: endpoint, harvest: harvests[1]! }).rows.length, 6);
});

test('the command writes each format to --out: CSV has one header line and a line per row, JSON equals the library audit', () => {
  const run = (...args: string[]) => {
    const child = spawnSync(process.execPath, [OAIBAG, 'audit', '--archive', archive, ...args], { encoding: 'utf8' });
    assert.equal(child.status, 0, child.stderr);
  };
  const csvFile = join(work, 'audit.csv');
  run('--harvest', String(harvests[1]), '--format', 'csv', '--out', csvFile);
  const lines = readFileSync(csvFile, 'utf8').split('\r\n');
  assert.equal(lines.pop(), '');
  assert.equal(lines[0], AUDIT_CSV_HEADER);
  assert.equal(lines.length, 7);
  const edit = seen[1]!.get('edit.html')!;
  const before = seen[0]!.get('edit.html')!;
  assert.ok(
    lines.includes(
      `${id('edit.html')},modified,false,${before.datestamp},${before.size},${before.sha256},text/html,${edit.datestamp},${edit.size},${edit.sha256},text/html,${harvests[1]}`,
    ),
  );
  assert.ok(
    lines.includes(
      `${id('new-name.txt')},added,false,,,,,${seen[1]!.get('new-name.txt')!.datestamp},${CONTENT['old-name.txt']!.length},${sha(CONTENT['old-name.txt']!)},text/plain,${harvests[1]}`,
    ),
  );
  assert.ok(
    lines.includes(
      `${id('gone.txt')},deleted,false,${seen[0]!.get('gone.txt')!.datestamp},${CONTENT['gone.txt']!.length},${sha(CONTENT['gone.txt']!)},text/plain,${seen[1]!.get('gone.txt')!.datestamp},,,,${harvests[1]}`,
    ),
  );

  const jsonFile = join(work, 'audit.json');
  run('--harvest', String(harvests[1]), '--format', 'json', '--out', jsonFile);
  assert.deepEqual(JSON.parse(readFileSync(jsonFile, 'utf8')), JSON.parse(JSON.stringify(auditOf({ harvest: harvests[1]! }))));

  const textFile = join(work, 'audit.txt');
  run('--format', 'text', '--out', textFile);
  const text = readFileSync(textFile, 'utf8');
  assert.match(text, new RegExp(`^restored .* ${id('back.txt').replace(/[.?*+()]/g, '\\$&')}$`, 'm'));
  assert.match(text, /^1 resource changed: 0 added, 0 modified, 0 touched, 0 deleted, 1 restored; 0 MIME type changes$/m);

  const pdf = spawnSync(process.execPath, [OAIBAG, 'audit', '--archive', archive, '--format', 'pdf'], { encoding: 'utf8' });
  assert.equal(pdf.status, 2);
  assert.match(pdf.stderr, /Allowed choices/);
});

test('a MIME type change of the same identifier is flagged (hand-made catalog: the repository derives types from names)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'oaibag-audit-mime-'));
  const catalog = Catalog.open(dir);
  try {
    const source = catalog.upsertSource('http://mime.example/oai', {});
    const one = catalog.startRun(source.id, 'harvest', { prefix: 'oai_didl' });
    storeVersion(catalog, {
      sourceId: source.id,
      identifier: 'x',
      datestamp: '2024-01-01T00:00:00Z',
      size: 3,
      sha256: 'a'.repeat(64),
      mimeType: 'text/plain',
      harvestId: one,
    });
    storeVersion(catalog, {
      sourceId: source.id,
      identifier: 'y',
      datestamp: '2024-01-01T00:00:00Z',
      size: 3,
      sha256: 'c'.repeat(64),
      mimeType: 'text/plain',
      harvestId: one,
    });
    catalog.finishRun(one, 'complete');
    const two = catalog.startRun(source.id, 'harvest', { prefix: 'oai_didl' });
    storeVersion(catalog, {
      sourceId: source.id,
      identifier: 'x',
      datestamp: '2024-02-01T00:00:00Z',
      size: 3,
      sha256: 'a'.repeat(64),
      mimeType: 'text/html',
      harvestId: two,
    });
    storeVersion(catalog, {
      sourceId: source.id,
      identifier: 'y',
      datestamp: '2024-02-01T00:00:00Z',
      size: 4,
      sha256: 'd'.repeat(64),
      mimeType: 'text/plain',
      harvestId: two,
    });
    catalog.finishRun(two, 'complete');
    const report = audit(catalog);
    assert.deepEqual(
      report.rows.map((r) => [r.identifier, r.change, r.mimeChanged, r.before?.mimeType, r.after.mimeType]),
      [
        ['x', 'touched', true, 'text/plain', 'text/html'],
        ['y', 'modified', false, 'text/plain', 'text/plain'],
      ],
    );
    assert.equal(report.totals.byChange.mimeChanged, 1);
  } finally {
    catalog.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a version and a deletion of one resource in one harvest are ordered by datestamp, whatever order they were recorded in', () => {
  const dir = mkdtempSync(join(tmpdir(), 'oaibag-audit-order-'));
  const catalog = Catalog.open(dir);
  try {
    const source = catalog.upsertSource('http://order.example/oai', {});
    const one = catalog.startRun(source.id, 'harvest', { prefix: 'oai_didl' });
    storeVersion(catalog, {
      sourceId: source.id,
      identifier: 'late-deletion',
      datestamp: '2024-01-01T00:00:00Z',
      size: 1,
      sha256: 'a'.repeat(64),
      harvestId: one,
    });
    storeVersion(catalog, {
      sourceId: source.id,
      identifier: 'early-deletion',
      datestamp: '2024-01-01T00:00:00Z',
      size: 1,
      sha256: 'b'.repeat(64),
      harvestId: one,
    });
    catalog.finishRun(one, 'complete');
    const two = catalog.startRun(source.id, 'harvest', { prefix: 'oai_didl' });
    // Recorded out of order (a concurrent harvest stores records as they complete).
    catalog.recordDeletion(source.id, 'late-deletion', '2024-02-02T00:00:00Z', two);
    storeVersion(catalog, {
      sourceId: source.id,
      identifier: 'late-deletion',
      datestamp: '2024-02-01T00:00:00Z',
      size: 2,
      sha256: 'c'.repeat(64),
      harvestId: two,
    });
    storeVersion(catalog, {
      sourceId: source.id,
      identifier: 'early-deletion',
      datestamp: '2024-02-02T00:00:00Z',
      size: 2,
      sha256: 'd'.repeat(64),
      harvestId: two,
    });
    catalog.recordDeletion(source.id, 'early-deletion', '2024-02-01T00:00:00Z', two);
    catalog.finishRun(two, 'complete');
    assert.deepEqual(
      audit(catalog).rows.map((r) => [r.identifier, r.change, r.after.datestamp]),
      [
        ['early-deletion', 'modified', '2024-02-02T00:00:00Z'],
        ['late-deletion', 'deleted', '2024-02-02T00:00:00Z'],
      ],
    );
  } finally {
    catalog.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
