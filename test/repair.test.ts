// `oaibag repair` (issue 25, "No way to repair"; docs/repair.md) against a real archive: a real
// repository, a real harvest of one record per batch bag, a copy of it as a replica, then real
// damage done to the archive's payload files. Every test works on a fresh copy of the harvested
// archive. On 3553909 there is no repair at all: each test fails there.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Catalog, exportBags, formatRepairReport, harvest, type RepairReport, repairArchive, verifyArchive } from '../packages/archiver/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(ROOT, 'packages/archiver/bin/oaibag.js');
const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;
const FAST_RETRY = { retries: 1, baseDelayMs: 10, maxDelayMs: 50 };
const BY_VALUE_MAX = 1000;
/** Files of the site: the .txt ones travel By-Value, the .bin ones By-Reference (over BY_VALUE_MAX). */
const FILES: Record<string, string | Buffer> = {
  'flip.txt': 'one byte of this file will be flipped',
  'gone.txt': 'this payload file will be deleted',
  'ref.bin': Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 7) % 256)),
  'lost.txt': 'this whole bag will be removed',
  'intact.txt': 'nothing happens to this one',
};

let work: string;
let pristine: string;
let replica: string;
let repository: Repository;
let endpoint: string;
/** Per file: the batch bag holding it and its payload path there (`data/…`). */
const bags: Record<string, string> = {};
const payloads: Record<string, string> = {};
let copies = 0;

const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');
const bytesOf = (name: string): Buffer => Buffer.from(FILES[name]!);
const fileIn = (archive: string, name: string): string => join(archive, bags[name]!, payloads[name]!);
/** A fresh copy of the harvested archive. */
const freshCopy = (label: string): string => {
  const dir = join(work, `${label}-${++copies}`);
  cpSync(pristine, dir, { recursive: true });
  return dir;
};
const flip = (file: string): void => {
  const bytes = readFileSync(file);
  bytes[2] = bytes[2]! ^ 0x01;
  writeFileSync(file, bytes);
};
/** Every tag file of a bag (manifests, bag-info, metadata), by name: what a repair must never change. */
const tagFiles = (archive: string, bag: string): Record<string, string> => {
  const found: Record<string, string> = {};
  const walk = (dir: string, rel: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (path === 'data') continue;
      if (entry.isDirectory()) walk(join(dir, entry.name), path);
      else found[path] = sha256(readFileSync(join(dir, entry.name)));
    }
  };
  walk(join(archive, bag), '');
  return found;
};
const recoveryEvents = (archive: string): Array<{ outcome: string; detail: string; source_id: number | null }> => {
  const catalog = Catalog.open(archive, { create: false });
  try {
    return catalog.statement("SELECT outcome, detail, source_id FROM events WHERE type = 'recovery' ORDER BY id").all() as Array<{
      outcome: string;
      detail: string;
      source_id: number | null;
    }>;
  } finally {
    catalog.close();
  }
};
const lastVerification = (archive: string) => {
  const catalog = Catalog.open(archive, { create: false });
  try {
    return catalog.lastVerification();
  } finally {
    catalog.close();
  }
};
/** No temporary file of a repair anywhere in the archive's bags. */
const leftovers = (archive: string): string[] =>
  (readdirSync(join(archive, 'aips'), { recursive: true }) as string[]).filter((path) => /\.oaibag-repair-/.test(String(path)));
const oaibag = (...args: string[]) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8' });

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-repair-'));
  const site = join(work, 'site');
  mkdirSync(site, { recursive: true });
  for (const [name, content] of Object.entries(FILES)) {
    writeFileSync(join(site, name), content);
    utimesSync(join(site, name), YEAR_2000, YEAR_2000);
  }
  repository = await createRepository({
    root: site,
    index: join(work, 'index.sqlite'),
    watch: false,
    rescanSeconds: 0,
    byValueMax: BY_VALUE_MAX,
    pageRecords: 1,
  });
  endpoint = `${await repository.listen(0, '127.0.0.1')}/oai`;
  pristine = join(work, 'pristine');
  const summary = await harvest({ baseUrl: endpoint, archiveDir: pristine, retry: FAST_RETRY, batchBounds: { records: 1, bytes: 1 << 30 } });
  assert.equal(summary.added, Object.keys(FILES).length);
  const catalog = Catalog.open(pristine, { create: false });
  try {
    const sourceId = catalog.source(endpoint)!.id;
    for (const name of Object.keys(FILES)) {
      const version = catalog.latestVersion(sourceId, `${endpoint.slice(0, -4)}/${name}`)!;
      const [part] = catalog.versionParts(version.id);
      bags[name] = version.bagPath;
      payloads[name] = part!.path;
      assert.equal(catalog.versionFetches(version.id).length, name.endsWith('.bin') ? 1 : 0, `${name}: By-Reference iff .bin`);
    }
  } finally {
    catalog.close();
  }
  assert.equal(new Set(Object.values(bags)).size, Object.keys(FILES).length, 'one bag per record');
  replica = join(work, 'replica');
  cpSync(pristine, replica, { recursive: true });
});

after(async () => {
  await repository.close();
  rmSync(work, { recursive: true, force: true });
});

test('repair --from a replica puts back a flipped byte and a deleted file: verify is clean, the bags unchanged in meaning, one recovery event each', async () => {
  const archive = freshCopy('replica');
  const tagsBefore = { flip: tagFiles(archive, bags['flip.txt']!), gone: tagFiles(archive, bags['gone.txt']!) };
  flip(fileIn(archive, 'flip.txt'));
  rmSync(fileIn(archive, 'gone.txt'));
  assert.equal((await verifyArchive({ archiveDir: archive, jobs: 2 })).ok, false);

  const report = await repairArchive({ archiveDir: archive, from: [replica], source: false, jobs: 2 });
  assert.deepEqual(
    report.repaired.map((file) => [file.bagPath, file.path, file.origin]),
    [
      [bags['flip.txt'], payloads['flip.txt'], `replica ${replica}: ${bags['flip.txt']}/${payloads['flip.txt']}`],
      [bags['gone.txt'], payloads['gone.txt'], `replica ${replica}: ${bags['gone.txt']}/${payloads['gone.txt']}`],
    ].sort((a, b) => (a[0]! < b[0]! ? -1 : 1)),
  );
  assert.deepEqual(report.unrepaired, []);
  assert.deepEqual(report.remaining, []);
  assert.equal(report.ok, true);
  assert.equal(report.rechecked, 2);
  assert.deepEqual(readFileSync(fileIn(archive, 'flip.txt')), bytesOf('flip.txt'));
  assert.deepEqual(readFileSync(fileIn(archive, 'gone.txt')), bytesOf('gone.txt'));
  assert.deepEqual({ flip: tagFiles(archive, bags['flip.txt']!), gone: tagFiles(archive, bags['gone.txt']!) }, tagsBefore, 'no tag file changed');
  assert.deepEqual(leftovers(archive), []);
  assert.equal((await verifyArchive({ archiveDir: archive, jobs: 2 })).ok, true, 'verify is clean afterwards');

  const events = recoveryEvents(archive);
  assert.equal(events.length, 2);
  assert.ok(events.every((event) => event.outcome === 'success' && event.source_id !== null));
  assert.match(events.find((event) => event.detail.includes(bags['flip.txt']!))!.detail, new RegExp(`sha256 ${sha256(bytesOf('flip.txt'))}.*from replica `));
  const verification = lastVerification(archive);
  assert.equal(verification?.kind, 'full', 'verify ran last; the repair recorded its own check before it');
  assert.match(formatRepairReport(report), /2 payload file\(s\) repaired.*0 problem\(s\) remain.*\narchive OK\n$/s);
});

test('the check after a repair is recorded (kind repair, damage left), and nothing is done to an intact archive', async () => {
  const archive = freshCopy('recorded');
  flip(fileIn(archive, 'flip.txt'));
  const report = await repairArchive({ archiveDir: archive, from: [replica], source: false, jobs: 1 });
  assert.equal(report.ok, true);
  const verification = lastVerification(archive)!;
  assert.equal(verification.kind, 'repair');
  assert.equal(verification.damaged, 0);
  assert.equal(verification.bags, 1);
  assert.ok(verification.bytes >= bytesOf('flip.txt').length);
  const again = await repairArchive({ archiveDir: archive, from: [replica], source: false, jobs: 1 });
  assert.equal(again.ok, true);
  assert.deepEqual([again.repaired, again.unrepaired, again.found], [[], [], 0]);
  assert.equal(recoveryEvents(archive).length, 1);
});

test('a replica with wrong bytes too is not used: the damage stays, named, with what was tried', async () => {
  const archive = freshCopy('wrong');
  const badReplica = freshCopy('bad-replica');
  flip(fileIn(archive, 'flip.txt'));
  const damaged = readFileSync(fileIn(archive, 'flip.txt'));
  // The replica's copy is damaged otherwise: same size, other bytes.
  const other = bytesOf('flip.txt');
  other[5] = other[5]! ^ 0x40;
  writeFileSync(fileIn(badReplica, 'flip.txt'), other);

  const report = await repairArchive({ archiveDir: archive, from: [badReplica], source: false, jobs: 1 });
  assert.equal(report.ok, false);
  assert.deepEqual(report.repaired, []);
  assert.equal(report.unrepaired.length, 1);
  const [file] = report.unrepaired;
  assert.equal(file!.path, payloads['flip.txt']);
  assert.match(file!.reason, /no copy with the recorded size and digests \(1 tried\)/);
  assert.match(file!.tried[0]!, new RegExp(`^replica ${badReplica}: .*: sha256 ${sha256(other)}, the manifest says ${sha256(bytesOf('flip.txt'))}$`));
  assert.deepEqual(readFileSync(fileIn(archive, 'flip.txt')), damaged, 'the damaged file is left as it was');
  assert.deepEqual(leftovers(archive), []);
  assert.ok(report.remaining.some((problem) => problem.kind === 'checksum' && problem.path === payloads['flip.txt']));
  assert.match(formatRepairReport(report), new RegExp(`not repaired ${bags['flip.txt']}: ${payloads['flip.txt']}: .*\n  tried replica .*\nstill damaged: `));
  const events = recoveryEvents(archive);
  assert.deepEqual(
    events.map((event) => event.outcome),
    ['failure'],
  );
  assert.equal(lastVerification(archive)!.damaged, report.remaining.length);
  assert.ok(report.remaining.length > 0);
});

test('without a replica, By-Reference bytes come from the source (the URL the catalog recorded); By-Value bytes are named not repairable', async () => {
  const archive = freshCopy('source');
  rmSync(fileIn(archive, 'ref.bin'));
  flip(fileIn(archive, 'gone.txt'));
  const report = await repairArchive({ archiveDir: archive, retry: FAST_RETRY, jobs: 1 });
  assert.deepEqual(
    report.repaired.map((file) => [file.path, file.origin]),
    [[payloads['ref.bin'], `source ${endpoint.slice(0, -4)}/ref.bin`]],
  );
  assert.deepEqual(readFileSync(fileIn(archive, 'ref.bin')), bytesOf('ref.bin'));
  assert.equal(report.unrepaired.length, 1);
  assert.equal(report.unrepaired[0]!.path, payloads['gone.txt']);
  assert.match(report.unrepaired[0]!.reason, /no copy found: no --from given; no By-Reference URL recorded for these bytes \(By-Value/);
  assert.equal(report.ok, false);

  // --no-source: the source is not asked.
  rmSync(fileIn(archive, 'ref.bin'));
  const without = await repairArchive({ archiveDir: archive, source: false, jobs: 1 });
  assert.deepEqual(without.repaired, []);
  assert.match(without.unrepaired.find((file) => file.path === payloads['ref.bin'])!.reason, /the source not asked \(--no-source\)/);
});

test('the source copy is used only when its digest matches: a changed file at the source is refused', async () => {
  const archive = freshCopy('source-changed');
  rmSync(fileIn(archive, 'ref.bin'));
  const site = join(work, 'site', 'ref.bin');
  const changed = Buffer.from(bytesOf('ref.bin'));
  changed[10] = changed[10]! ^ 0xff;
  writeFileSync(site, changed);
  try {
    const report = await repairArchive({ archiveDir: archive, retry: FAST_RETRY, jobs: 1 });
    assert.deepEqual(report.repaired, []);
    const file = report.unrepaired.find((entry) => entry.path === payloads['ref.bin'])!;
    assert.match(file.tried[0]!, new RegExp(`^source .*/ref\\.bin: sha256 ${sha256(changed)}, the manifest says ${sha256(bytesOf('ref.bin'))}$`));
    assert.equal(existsSync(fileIn(archive, 'ref.bin')), false, 'nothing written under the payload name');
    assert.deepEqual(leftovers(archive), []);
  } finally {
    writeFileSync(site, bytesOf('ref.bin'));
    utimesSync(site, YEAR_2000, YEAR_2000);
  }
});

test('repair --from the ZIPs of oaibag export --bags: a folder of them, or one ZIP', async () => {
  const zips = join(work, 'zips');
  await exportBags({ archiveDir: replica, to: zips });
  const archive = freshCopy('zip');
  flip(fileIn(archive, 'flip.txt'));
  rmSync(fileIn(archive, 'gone.txt'));
  const report = await repairArchive({ archiveDir: archive, from: [zips], source: false, jobs: 1 });
  assert.equal(report.ok, true, formatRepairReport(report));
  const zipName = (name: string): string => `${bags[name]!.split('/').slice(1).join('-')}`;
  assert.deepEqual(
    report.repaired.map((file) => file.origin).sort(),
    [
      `zip ${join(zips, `${zipName('flip.txt')}.zip`)}: ${zipName('flip.txt')}/${payloads['flip.txt']}`,
      `zip ${join(zips, `${zipName('gone.txt')}.zip`)}: ${zipName('gone.txt')}/${payloads['gone.txt']}`,
    ].sort(),
  );
  assert.equal((await verifyArchive({ archiveDir: archive, jobs: 1 })).ok, true);

  const single = freshCopy('one-zip');
  flip(fileIn(single, 'flip.txt'));
  const one = await repairArchive({ archiveDir: single, from: [join(zips, `${zipName('flip.txt')}.zip`)], source: false, jobs: 1 });
  assert.equal(one.ok, true);
  assert.deepEqual(readFileSync(fileIn(single, 'flip.txt')), bytesOf('flip.txt'));
});

test('a hostile replica never leads to writing wrong bytes: a link to the right bytes, a link to wrong ones, a bigger file, a linked folder', async () => {
  const archive = freshCopy('hostile');
  const hostile = freshCopy('hostile-replica');
  for (const name of ['flip.txt', 'gone.txt', 'intact.txt']) flip(fileIn(archive, name));
  const damaged = Object.fromEntries(['flip.txt', 'gone.txt', 'intact.txt'].map((name) => [name, readFileSync(fileIn(archive, name))]));
  // flip.txt: a link to a file holding exactly the right bytes (outside the replica).
  const right = join(work, 'right-bytes.txt');
  writeFileSync(right, bytesOf('flip.txt'));
  rmSync(fileIn(hostile, 'flip.txt'));
  symlinkSync(right, fileIn(hostile, 'flip.txt'));
  // gone.txt: the right bytes followed by more.
  writeFileSync(fileIn(hostile, 'gone.txt'), Buffer.concat([bytesOf('gone.txt'), Buffer.from('and more')]));
  // intact.txt: its data/<host>/ folder replaced by a link to a folder of the right bytes.
  const folder = join(hostile, bags['intact.txt']!, ...payloads['intact.txt']!.split('/').slice(0, -1));
  const elsewhere = join(work, 'elsewhere');
  cpSync(folder, elsewhere, { recursive: true });
  rmSync(folder, { recursive: true });
  symlinkSync(elsewhere, folder);

  const report = await repairArchive({ archiveDir: archive, from: [hostile], source: false, jobs: 1 });
  assert.deepEqual(report.repaired, []);
  const tried = Object.fromEntries(report.unrepaired.map((file) => [file.path, file.tried.join(' | ')]));
  assert.match(tried[payloads['flip.txt']!]!, /a symbolic link; not followed/);
  assert.match(tried[payloads['gone.txt']!]!, /41 bytes, the catalog records 33/);
  assert.match(tried[payloads['intact.txt']!]!, /is a symbolic link; not followed/);
  for (const name of ['flip.txt', 'gone.txt', 'intact.txt']) assert.deepEqual(readFileSync(fileIn(archive, name)), damaged[name], `${name} left as it was`);
  assert.deepEqual(leftovers(archive), []);
  assert.equal(report.ok, false);

  // A file lost with its folder: the folder made for the refused bytes is removed again.
  const archive2 = freshCopy('hostile-2');
  const lostFolder = join(archive2, bags['gone.txt']!, ...payloads['gone.txt']!.split('/').slice(0, -1));
  rmSync(lostFolder, { recursive: true });
  const none = await repairArchive({ archiveDir: archive2, from: [hostile], source: false, jobs: 1 });
  assert.equal(none.ok, false);
  assert.match(none.unrepaired[0]!.tried.join(' | '), /41 bytes, the catalog records 33/);
  assert.equal(existsSync(lostFolder), false, 'nothing is left of the refused attempt');
});

test('the archive itself, or a folder that is no replica, is a usage error before anything is checked', async () => {
  const archive = freshCopy('usage');
  await assert.rejects(repairArchive({ archiveDir: archive, from: [archive] }), { code: 'ERR_ARCHIVE_USAGE', message: /is the archive being repaired/ });
  await assert.rejects(repairArchive({ archiveDir: archive, from: [join(work, 'nowhere')] }), { code: 'ERR_ARCHIVE_USAGE', message: /does not exist/ });
  await assert.rejects(repairArchive({ archiveDir: archive, from: [join(work, 'site')] }), { code: 'ERR_ARCHIVE_USAGE', message: /neither an archive/ });
});

test('a missing bag is put back whole from a replica archive, checked first', async () => {
  const archive = freshCopy('missing-bag');
  rmSync(join(archive, bags['lost.txt']!), { recursive: true });
  const report = await repairArchive({ archiveDir: archive, from: [replica], source: false, jobs: 1 });
  assert.deepEqual(report.restoredBags, [{ bagPath: bags['lost.txt'], origin: `replica ${replica}: ${bags['lost.txt']}` }]);
  assert.equal(report.ok, true, formatRepairReport(report));
  assert.deepEqual(tagFiles(archive, bags['lost.txt']!), tagFiles(replica, bags['lost.txt']!));
  assert.equal((await verifyArchive({ archiveDir: archive, jobs: 1 })).ok, true);
  assert.deepEqual(readdirSync(join(archive, 'tmp')), [], 'the staging copy is gone');

  // A replica whose copy of the bag is damaged is refused, and the bag stays missing.
  const archive2 = freshCopy('missing-bag-2');
  const damagedReplica = freshCopy('damaged-replica');
  rmSync(join(archive2, bags['lost.txt']!), { recursive: true });
  flip(fileIn(damagedReplica, 'lost.txt'));
  const refused = await repairArchive({ archiveDir: archive2, from: [damagedReplica], source: false, jobs: 1 });
  assert.equal(refused.ok, false);
  assert.match(refused.unrepaired[0]!.tried[0]!, /not a valid bag: .*sha256 validation failed/);
  assert.equal(existsSync(join(archive2, bags['lost.txt']!)), false);
});

test('--dry-run finds and checks the bytes but writes nothing and records no recovery event', async () => {
  const archive = freshCopy('dry');
  flip(fileIn(archive, 'flip.txt'));
  const damaged = readFileSync(fileIn(archive, 'flip.txt'));
  const eventCount = (): number => {
    const catalog = Catalog.open(archive, { create: false });
    try {
      return (catalog.statement('SELECT COUNT(*) AS n FROM events').get() as { n: number }).n;
    } finally {
      catalog.close();
    }
  };
  const eventsBefore = eventCount();
  const report = await repairArchive({ archiveDir: archive, from: [replica], source: false, dryRun: true, jobs: 1 });
  assert.equal(eventCount(), eventsBefore, 'a dry run records nothing, not even fixity-check events');
  assert.equal(report.repaired.length, 1);
  assert.equal(report.ok, false);
  assert.deepEqual(readFileSync(fileIn(archive, 'flip.txt')), damaged);
  assert.deepEqual(recoveryEvents(archive), []);
  assert.match(formatRepairReport(report), /would repair .*\n.*dry run: nothing written/);
});

test('the CLI: exit 0 when repaired, 4 when damage remains (named), 2 for a --from that is no replica', { skip: !existsSync(BIN) && 'not built' }, () => {
  const archive = freshCopy('cli');
  flip(fileIn(archive, 'flip.txt'));
  const left = oaibag('repair', '--archive', archive, '--no-source');
  assert.equal(left.status, 4, left.stderr);
  assert.match(left.stdout, new RegExp(`not repaired ${bags['flip.txt']}: ${payloads['flip.txt']}: no copy found`));
  const fixed = oaibag('repair', '--archive', archive, '--from', replica, '--json');
  assert.equal(fixed.status, 0, fixed.stderr);
  assert.equal((JSON.parse(fixed.stdout) as RepairReport).repaired.length, 1);
  const usage = oaibag('repair', '--archive', archive, '--from', join(work, 'site'));
  assert.equal(usage.status, 2);
  assert.match(usage.stderr, /neither an archive .*\[ERR_ARCHIVE_USAGE\]/);
});
