// `oaibag verify` against a real archive: a real repository, a real harvest, then real damage
// done to the bags on disk. The CLI part needs the built command (`npx tsc -b`) and runs once
// packages/archiver/src/cli.ts wires verifyCommand.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { acquireArchiveLock } from '../packages/archiver/src/archive/archive-lock.ts';
import { Catalog } from '../packages/archiver/src/catalog/catalog.ts';
import { harvest } from '../packages/archiver/src/harvest/harvest.ts';
import { formatVerifyReport, type VerifyReport, verifyArchive } from '../packages/archiver/src/verify/verify-archive.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(ROOT, 'packages/archiver/bin/oaibag.js');
const CLI_WIRED =
  readFileSync(join(ROOT, 'packages/archiver/src/cli.ts'), 'utf8').includes('verifyCommand') &&
  existsSync(join(ROOT, 'packages/archiver/dist/commands/verify-command.js'));
const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;
const FAST_RETRY = { retries: 2, baseDelayMs: 10, maxDelayMs: 100 };
const BIG = 300_000;
const FILES: Record<string, string | Buffer> = {
  'flip.txt': 'one byte of this file will be flipped',
  'gone.txt': 'this payload file will be deleted',
  'extra.txt': 'a file will be added beside this one',
  'oxum.txt': 'the Payload-Oxum of this bag will be edited',
  'removed.txt': 'this whole bag will be removed',
  'copied.txt': 'this bag will be copied to a new version folder',
  'intact.bin': Buffer.alloc(BIG, 7),
};

let work: string;
let archive: string;
let repository: Repository;
let endpoint: string;
const bags: Record<string, string> = {};

const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');
const sha512 = (bytes: Buffer): string => createHash('sha512').update(bytes).digest('hex');
const fixityEvents = (): number => {
  const catalog = Catalog.open(archive, { create: false });
  try {
    return (catalog.statement("SELECT COUNT(*) AS n FROM events WHERE type = 'fixity check'").get() as { n: number }).n;
  } finally {
    catalog.close();
  }
};
/** The report without what depends on the run (time, jobs). */
const stable = (report: VerifyReport): Omit<VerifyReport, 'seconds' | 'jobs'> => {
  const { seconds: _seconds, jobs: _jobs, ...rest } = report;
  return rest;
};
const oaibag = (...args: string[]) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8' });

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-verify-'));
  const site = join(work, 'site');
  for (const [name, content] of Object.entries(FILES)) {
    mkdirSync(site, { recursive: true });
    writeFileSync(join(site, name), content);
    utimesSync(join(site, name), YEAR_2000, YEAR_2000);
  }
  repository = await createRepository({ root: site, index: join(work, 'index.sqlite'), watch: false, rescanSeconds: 0, byValueMax: 100_000, pageRecords: 3 });
  endpoint = `${await repository.listen(0, '127.0.0.1')}/oai`;
  archive = join(work, 'archive');
  const summary = await harvest({ baseUrl: endpoint, archiveDir: archive, retry: FAST_RETRY });
  assert.equal(summary.added, Object.keys(FILES).length);
  const catalog = Catalog.open(archive, { create: false });
  try {
    const sourceId = catalog.source(endpoint)!.id;
    for (const name of Object.keys(FILES)) bags[name] = catalog.latestVersion(sourceId, `${endpoint.slice(0, -4)}/${name}`)!.bagPath;
  } finally {
    catalog.close();
  }
});

after(async () => {
  await repository.close();
  rmSync(work, { recursive: true, force: true });
});

test('an intact archive verifies clean, with one fixity-check event per bag', async () => {
  const report = await verifyArchive({ archiveDir: archive, jobs: 2 });
  assert.deepEqual(report.problems, []);
  assert.equal(report.ok, true);
  assert.equal(report.bags, 7);
  assert.equal(report.valid, 7);
  assert.equal(report.events, 7);
  assert.equal(fixityEvents(), 7);
  assert.ok(report.hashedBytes > BIG, 'a full check hashes the payload');
  assert.equal(
    report.bytes,
    Object.values(FILES).reduce((sum, content) => sum + Buffer.byteLength(content), 0),
  );
  assert.match(formatVerifyReport(report), /7 bag\(s\) checked, 7 valid, 0 damaged.*\narchive OK\n$/);
});

test('the CLI exits 0 for an intact archive and 2 for bad options', {
  skip: !CLI_WIRED && 'cli.ts does not wire verifyCommand yet (or dist/ is not built)',
}, () => {
  const ok = oaibag('verify', '--archive', archive, '--json');
  assert.equal(ok.status, 0, ok.stderr);
  assert.equal((JSON.parse(ok.stdout) as VerifyReport).valid, 7);
  assert.equal(oaibag('verify', '--archive', archive, '--jobs', '0').status, 2);
  const none = oaibag('verify', '--archive', join(work, 'no-such-archive'));
  assert.equal(none.status, 1);
  assert.match(none.stderr, /no catalog at .*\[ERR_ARCHIVE_CATALOG\]/);
});

test('verify finds a flipped byte, a missing payload, an extra file and a bad Oxum, naming each file', async () => {
  const at = (name: string, ...rest: string[]): string => join(archive, bags[name]!, ...rest);
  // A flipped byte: same size, other checksums.
  const flipFile = at('flip.txt', 'data', 'flip.txt');
  const original = readFileSync(flipFile);
  const flipped = Buffer.from(original);
  flipped[3] = flipped[3]! ^ 0x01;
  writeFileSync(flipFile, flipped);
  // A missing payload file, an unexpected one, an edited Payload-Oxum.
  rmSync(at('gone.txt', 'data', 'gone.txt'));
  writeFileSync(at('extra.txt', 'data', 'stowaway.txt'), 'not in any manifest');
  const info = at('oxum.txt', 'bag-info.txt');
  const oxum = `${Buffer.byteLength(FILES['oxum.txt']!)}.1`;
  const infoBefore = readFileSync(info);
  writeFileSync(info, infoBefore.toString('utf8').replace(`Payload-Oxum: ${oxum}`, 'Payload-Oxum: 999.1'));
  // A catalogued bag removed, a bag copied where the catalog does not look, a stray file, tmp/ leftovers.
  rmSync(at('removed.txt'), { recursive: true });
  const copy = `${dirname(bags['copied.txt']!)}/20990101T000000Z-000000000000`;
  cpSync(at('copied.txt'), join(archive, copy), { recursive: true });
  writeFileSync(join(archive, 'aips', 'README'), 'not a bag');
  mkdirSync(join(archive, 'tmp', 'bag-0123456789abcdef'), { recursive: true });

  const eventsBefore = fixityEvents();
  const report = await verifyArchive({ archiveDir: archive, jobs: 3 });
  const lines = report.problems.map((problem) => problem.message);
  const gone = Buffer.byteLength(FILES['gone.txt']!);
  const extraSize = Buffer.byteLength(FILES['extra.txt']!);
  const expected = [
    `${bags['flip.txt']}: data/flip.txt sha256 validation failed: expected="${sha256(original)}" found="${sha256(flipped)}"`,
    `${bags['flip.txt']}: data/flip.txt sha512 validation failed: expected="${sha512(original)}" found="${sha512(flipped)}"`,
    `${bags['gone.txt']}: data/gone.txt is in manifest-sha256.txt but not on disk`,
    `${bags['gone.txt']}: data/gone.txt is in manifest-sha512.txt but not on disk`,
    `${bags['gone.txt']}: Payload-Oxum expected ${gone}.1 (bytes.files) but found 0.0`,
    `${bags['gone.txt']}: payload is 0 bytes on disk, the catalog records ${gone}`,
    `${bags['extra.txt']}: data/stowaway.txt is on disk but not in manifest-sha256.txt`,
    `${bags['extra.txt']}: data/stowaway.txt is on disk but not in manifest-sha512.txt`,
    `${bags['extra.txt']}: Payload-Oxum expected ${extraSize}.1 (bytes.files) but found ${extraSize + 19}.2`,
    `${bags['extra.txt']}: payload is ${extraSize + 19} bytes on disk, the catalog records ${extraSize}`,
    `${bags['oxum.txt']}: Payload-Oxum expected 999.1 (bytes.files) but found ${oxum}`,
    `${bags['removed.txt']}: missing-bag: the catalog lists it`,
    `${copy}: uncatalogued-bag: a bag on disk that the catalog does not list`,
    'aips/README: stray: a file where only folders belong',
  ];
  for (const line of expected)
    assert.ok(
      lines.some((found) => found.startsWith(line)),
      `not reported: ${line}\n${lines.join('\n')}`,
    );
  // Editing bag-info.txt also breaks the tag manifest: both are reported.
  assert.ok(
    lines.some((line) => line.startsWith(`${bags['oxum.txt']}: bag-info.txt sha256 validation failed: expected="${sha256(infoBefore)}"`)),
    lines.join('\n'),
  );
  assert.equal(report.problems.find((p) => p.kind === 'checksum' && p.algorithm === 'sha256')?.path, 'data/flip.txt');
  assert.equal(lines.length, expected.length + 1, lines.join('\n'));
  assert.deepEqual(report.damagedBags.map((bag) => bag.bagPath).sort(), [bags['extra.txt'], bags['flip.txt'], bags['gone.txt'], bags['oxum.txt']].sort());
  assert.deepEqual(
    lines,
    [...lines].sort((a, b) => (a.split(': ')[0]! < b.split(': ')[0]! ? -1 : a.split(': ')[0]! > b.split(': ')[0]! ? 1 : 0)),
    'sorted by bag path',
  );
  assert.deepEqual(
    {
      bags: report.bags,
      valid: report.valid,
      damaged: report.damaged,
      missing: report.missingBags,
      uncatalogued: report.uncataloguedBags,
      tmp: report.tmpLeftovers,
      ok: report.ok,
    },
    { bags: 7, valid: 3, damaged: 4, missing: 1, uncatalogued: 1, tmp: 1, ok: false },
  );
  assert.match(report.notes.join('\n'), /^tmp\/: 1 leftover/m, 'tmp/ leftovers are a note, not a problem');

  // One event per bag checked and per missing bag; the damaged bag's names the file.
  assert.equal(report.events, report.bags + report.missingBags);
  assert.equal(fixityEvents() - eventsBefore, report.events);
  const catalog = Catalog.open(archive, { create: false });
  try {
    const event = catalog
      .statement(
        "SELECT e.outcome, e.detail FROM events e JOIN versions v ON v.id = e.version_id WHERE v.bag_path = ? AND e.type = 'fixity check' ORDER BY e.id DESC",
      )
      .get(bags['flip.txt']) as { outcome: string; detail: string };
    assert.equal(event.outcome, 'failure');
    assert.match(event.detail, /data\/flip\.txt sha256 validation failed/);
  } finally {
    catalog.close();
  }

  const text = formatVerifyReport(report);
  assert.match(text, new RegExp(`^damaged bag ${bags['flip.txt']} \\(${endpoint.slice(0, -4).replace(/[.]/g, '\\.')}/flip\\.txt\\): 2 problem\\(s\\)$`, 'm'));
  assert.match(text, /archive NOT OK\n$/);

  if (CLI_WIRED) {
    const cli = oaibag('verify', '--archive', archive, '--jobs', '2');
    assert.equal(cli.status, 1, cli.stderr);
    assert.ok(cli.stdout.includes(expected[0]!), cli.stdout);
  }
});

test('--fast finds the Oxum and completeness problems without hashing the payload', async () => {
  const full = await verifyArchive({ archiveDir: archive, jobs: 2 });
  const fast = await verifyArchive({ archiveDir: archive, jobs: 2, fast: true });
  assert.equal(fast.fast, true);
  assert.ok(fast.hashedBytes < BIG && full.hashedBytes > BIG, `fast hashed ${fast.hashedBytes} bytes, full ${full.hashedBytes}`);
  assert.equal(fast.problems.filter((p) => p.kind === 'checksum').length, 0, 'a flipped byte keeps the size: fast cannot see it');
  assert.deepEqual(
    fast.problems.map((p) => p.message),
    full.problems.filter((p) => p.kind !== 'checksum').map((p) => p.message),
  );
  assert.equal(fast.damaged, 3);
});

test('--jobs 1 and --jobs 3 give the same report', async () => {
  const one = await verifyArchive({ archiveDir: archive, jobs: 1 });
  const three = await verifyArchive({ archiveDir: archive, jobs: 3 });
  assert.deepEqual(stable({ ...one, events: 0 }), stable({ ...three, events: 0 }));
  assert.ok(one.problems.length > 0);
});

test('verify changes no file of the archive, waits for the lock, and treats a pending bag as a note', async () => {
  const snapshot = (): string[] => {
    const out: string[] = [];
    const walk = (dir: string): void => {
      for (const name of readdirSync(dir).sort()) {
        const full = join(dir, name);
        const info = statSync(full);
        if (info.isDirectory()) walk(full);
        else out.push(`${full} ${info.size} ${info.mtimeMs} ${sha256(readFileSync(full))}`);
      }
    };
    walk(join(archive, 'aips'));
    walk(join(archive, 'tmp'));
    return out;
  };
  const before = snapshot();
  await verifyArchive({ archiveDir: archive, jobs: 2 });
  assert.deepEqual(snapshot(), before);

  const lock = await acquireArchiveLock(archive, 'harvest elsewhere');
  try {
    await assert.rejects(verifyArchive({ archiveDir: archive }), { code: 'ERR_ARCHIVE_LOCKED' });
  } finally {
    await lock.release();
  }

  const copy = `${dirname(bags['copied.txt']!)}/20990101T000000Z-000000000000`;
  const catalog = Catalog.open(archive, { create: false });
  try {
    const version = catalog.latestVersion(catalog.source(endpoint)!.id, `${endpoint.slice(0, -4)}/copied.txt`)!;
    catalog.addPendingBag({
      sourceId: catalog.source(endpoint)!.id,
      identifier: version.identifier,
      datestamp: '2099-01-01T00:00:00Z',
      sha256: version.sha256,
      size: version.size,
      bagPath: copy,
    });
  } finally {
    catalog.close();
  }
  const report = await verifyArchive({ archiveDir: archive, jobs: 2 });
  assert.equal(report.uncataloguedBags, 0);
  assert.equal(report.pendingBags, 1);
  assert.ok(
    report.notes.some((note) => note.startsWith(`${copy}: pending:`)),
    report.notes.join('\n'),
  );
  assert.ok(!report.problems.some((p) => p.bagPath === copy));
});
