// `oaibag verify` against a real archive: a real repository, a real harvest, then real damage
// done to the bags on disk. The main archive is harvested one record per batch bag (one page of
// one record each), so each kind of damage lands in a bag of its own; the revisit test harvests
// a site twice with the default bounds (several records per bag), a touched file's second version
// revisiting the bytes the first bag holds. The CLI part needs the built command (`npx --yes pnpm@10.34.9 build`)
// and runs once packages/archiver/src/cli.ts wires verifyCommand.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Catalog, formatVerifyReport, harvest, type VerifyReport, verifyArchive } from '../packages/archiver/src/index.ts';
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
/** Per file of FILES: the batch bag holding its record and its bytes, and its payload file there (`data/…`). */
const bags: Record<string, string> = {};
const payloads: Record<string, string> = {};

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
const nextSecond = () => new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));
/** The newest fixity-check event naming `bagPath`. */
const lastEventOf = (archiveDir: string, bagPath: string): { outcome: string; detail: string; source_id: number | null } => {
  const catalog = Catalog.open(archiveDir, { create: false });
  try {
    return catalog
      .statement("SELECT outcome, detail, source_id FROM events WHERE type = 'fixity check' AND instr(detail, ?) > 0 ORDER BY id DESC")
      .get(`: ${bagPath}: `) as { outcome: string; detail: string; source_id: number | null };
  } finally {
    catalog.close();
  }
};

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-verify-'));
  const site = join(work, 'site');
  for (const [name, content] of Object.entries(FILES)) {
    mkdirSync(site, { recursive: true });
    writeFileSync(join(site, name), content);
    utimesSync(join(site, name), YEAR_2000, YEAR_2000);
  }
  repository = await createRepository({ root: site, index: join(work, 'index.sqlite'), watch: false, rescanSeconds: 0, byValueMax: 100_000, pageRecords: 1 });
  endpoint = `${await repository.listen(0, '127.0.0.1')}/oai`;
  archive = join(work, 'archive');
  const summary = await harvest({ baseUrl: endpoint, archiveDir: archive, retry: FAST_RETRY, batchBounds: { records: 1, bytes: 1 << 30 } });
  assert.equal(summary.added, Object.keys(FILES).length);
  const catalog = Catalog.open(archive, { create: false });
  try {
    const sourceId = catalog.source(endpoint)!.id;
    for (const name of Object.keys(FILES)) {
      const version = catalog.latestVersion(sourceId, `${endpoint.slice(0, -4)}/${name}`)!;
      const [part] = catalog.versionParts(version.id);
      assert.equal(part!.bagPath, version.bagPath, 'a first version holds its bytes in its own bag');
      bags[name] = version.bagPath;
      payloads[name] = part!.path;
    }
  } finally {
    catalog.close();
  }
  assert.equal(new Set(Object.values(bags)).size, Object.keys(FILES).length, 'one bag per record');
  for (const bag of Object.values(bags)) assert.match(bag, /^aips\/harvest-000001\/batch-\d{5}$/);
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
  assert.equal(none.status, 4);
  assert.match(none.stderr, /no catalog at .*\[ERR_ARCHIVE_CATALOG\]/);
});

test('verify finds a flipped byte, a missing payload, an extra file and a bad Oxum, naming each file', async () => {
  const at = (name: string, ...rest: string[]): string => join(archive, bags[name]!, ...rest);
  // A flipped byte: same size, other checksums.
  const flipFile = at('flip.txt', payloads['flip.txt']!);
  const original = readFileSync(flipFile);
  const flipped = Buffer.from(original);
  flipped[3] = flipped[3]! ^ 0x01;
  writeFileSync(flipFile, flipped);
  // A missing payload file, an unexpected one, an edited Payload-Oxum.
  rmSync(at('gone.txt', payloads['gone.txt']!));
  writeFileSync(at('extra.txt', 'data', 'stowaway.txt'), 'not in any manifest');
  const info = at('oxum.txt', 'bag-info.txt');
  const oxum = `${Buffer.byteLength(FILES['oxum.txt']!)}.1`;
  const infoBefore = readFileSync(info);
  writeFileSync(info, infoBefore.toString('utf8').replace(`Payload-Oxum: ${oxum}`, 'Payload-Oxum: 999.1'));
  // A catalogued bag removed, a bag copied where the catalog does not look, a stray file and a
  // stray folder (of the format-1 layout), tmp/ leftovers.
  rmSync(at('removed.txt'), { recursive: true });
  const copy = `${dirname(bags['copied.txt']!)}/batch-09999`;
  cpSync(at('copied.txt'), join(archive, copy), { recursive: true });
  writeFileSync(join(archive, 'aips', 'README'), 'not a bag');
  mkdirSync(join(archive, 'aips', 'ab', 'cd'), { recursive: true });
  mkdirSync(join(archive, 'tmp', 'bag-0123456789abcdef'), { recursive: true });

  const eventsBefore = fixityEvents();
  const report = await verifyArchive({ archiveDir: archive, jobs: 3 });
  const lines = report.problems.map((problem) => problem.message);
  const gone = Buffer.byteLength(FILES['gone.txt']!);
  const extraSize = Buffer.byteLength(FILES['extra.txt']!);
  const expected = [
    `${bags['flip.txt']}: ${payloads['flip.txt']} sha256 validation failed: expected="${sha256(original)}" found="${sha256(flipped)}"`,
    `${bags['flip.txt']}: ${payloads['flip.txt']} sha512 validation failed: expected="${sha512(original)}" found="${sha512(flipped)}"`,
    `${bags['gone.txt']}: ${payloads['gone.txt']} is in manifest-sha256.txt but not on disk`,
    `${bags['gone.txt']}: ${payloads['gone.txt']} is in manifest-sha512.txt but not on disk`,
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
    'aips/ab: stray: a folder whose name is not part of the aips/harvest-<n>/batch-<n> layout',
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
  assert.equal(report.problems.find((p) => p.kind === 'checksum' && p.algorithm === 'sha256')?.path, payloads['flip.txt']);
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

  // Each damaged payload file, and the missing bag, with the version relying on it.
  const site = endpoint.slice(0, -4);
  const reliant = (name: string) => [
    { source: endpoint, identifier: `${site}/${name}`, datestamp: '2000-01-01T00:00:00Z', bagPath: bags[name]!, revisit: false },
  ];
  assert.deepEqual(
    report.damagedPayloads,
    [
      { bagPath: bags['flip.txt']!, path: payloads['flip.txt']!, problem: 'checksum', versions: reliant('flip.txt') },
      { bagPath: bags['gone.txt']!, path: payloads['gone.txt']!, problem: 'missing', versions: reliant('gone.txt') },
      { bagPath: bags['removed.txt']!, path: null, problem: 'missing-bag', versions: reliant('removed.txt') },
    ].sort((a, b) => (a.bagPath < b.bagPath ? -1 : 1)),
  );
  assert.equal(report.affectedVersions, 3);

  // One event per bag checked and per missing bag; the damaged bag's names the file.
  assert.equal(report.events, report.bags + report.missingBags);
  assert.equal(fixityEvents() - eventsBefore, report.events);
  const event = lastEventOf(archive, bags['flip.txt']!);
  assert.equal(event.outcome, 'failure');
  assert.equal(typeof event.source_id, 'number', "the event is tied to the bag's source");
  assert.ok(event.detail.includes(`${payloads['flip.txt']} sha256 validation failed`), event.detail);
  assert.match(event.detail, /1 damaged payload file\(s\), 1 version\(s\) rely on them/);
  assert.equal(lastEventOf(archive, bags['removed.txt']!).outcome, 'failure');
  assert.equal(lastEventOf(archive, bags['intact.bin']!).outcome, 'success');

  const text = formatVerifyReport(report);
  const textLines = text.split('\n');
  const after = (line: string, count: number): string[] => textLines.slice(textLines.indexOf(line) + 1, textLines.indexOf(line) + 1 + count);
  assert.ok(textLines.includes(`damaged bag ${bags['flip.txt']}: 2 problem(s)`), text);
  // The versions relying on a damaged file (or a missing bag) are named under its first problem line.
  assert.deepEqual(after(`  ${expected[0]}`, 2), [`    relied on by ${site}/flip.txt (datestamp 2000-01-01T00:00:00Z)`, `  ${expected[1]}`], text);
  const missingLine = textLines.find((line) => line.startsWith(expected[11]!))!;
  assert.deepEqual(after(missingLine, 1), [`  relied on by ${site}/removed.txt (datestamp 2000-01-01T00:00:00Z)`], text);
  assert.match(text, /; 3 version\(s\) rely on a damaged payload or missing bag; /);
  assert.match(text, /archive NOT OK\n$/);

  if (CLI_WIRED) {
    const cli = oaibag('verify', '--archive', archive, '--jobs', '2');
    assert.equal(cli.status, 4, cli.stderr);
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
  assert.deepEqual(
    fast.damagedPayloads.map((damage) => damage.problem).sort(),
    ['missing', 'missing-bag'],
    'the flipped file is not named in --fast; the missing one and the missing bag are',
  );
});

test("--fast names a payload file whose size is not the catalog's, and the version relying on it", async () => {
  const file = join(archive, bags['intact.bin']!, payloads['intact.bin']!);
  const before = readFileSync(file);
  try {
    writeFileSync(file, before.subarray(0, BIG - 1000));
    const fast = await verifyArchive({ archiveDir: archive, jobs: 2, fast: true });
    const lines = fast.problems.filter((problem) => problem.bagPath === bags['intact.bin']).map((problem) => problem.message);
    assert.ok(lines.includes(`${bags['intact.bin']}: ${payloads['intact.bin']} is ${BIG - 1000} bytes on disk, the catalog records ${BIG}`), lines.join('\n'));
    assert.deepEqual(
      fast.damagedPayloads.find((damage) => damage.bagPath === bags['intact.bin']),
      {
        bagPath: bags['intact.bin'],
        path: payloads['intact.bin'],
        problem: 'size',
        versions: [
          {
            source: endpoint,
            identifier: `${endpoint.slice(0, -4)}/intact.bin`,
            datestamp: '2000-01-01T00:00:00Z',
            bagPath: bags['intact.bin'],
            revisit: false,
          },
        ],
      },
    );
  } finally {
    writeFileSync(file, before);
    utimesSync(file, YEAR_2000, YEAR_2000);
  }
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

  // The lock a harvest running here holds: `<archive>/lock` naming a live process of this host.
  const lock = join(archive, 'lock');
  writeFileSync(lock, `${JSON.stringify({ pid: process.pid, hostname: hostname(), startedAt: new Date().toISOString(), purpose: 'harvest elsewhere' })}\n`);
  try {
    await assert.rejects(verifyArchive({ archiveDir: archive }), { code: 'ERR_ARCHIVE_LOCKED' });
  } finally {
    rmSync(lock);
  }

  const copy = `${dirname(bags['copied.txt']!)}/batch-09999`;
  const catalog = Catalog.open(archive, { create: false });
  try {
    catalog.addPendingBag(copy, catalog.bag(bags['copied.txt']!)!.harvestId);
  } finally {
    catalog.close();
  }
  const report = await verifyArchive({ archiveDir: archive, jobs: 2 });
  assert.equal(report.uncataloguedBags, 0);
  assert.equal(report.pendingBags, 1);
  assert.ok(
    report.notes.some((note) => note.startsWith(`${copy}: pending: noted by an interrupted harvest (harvest 1)`)),
    report.notes.join('\n'),
  );
  assert.ok(!report.problems.some((p) => p.bagPath === copy));
});

test('a damaged payload is named with its bag and every version relying on it: the first one and a revisit recorded in a later bag', async () => {
  const dir = join(work, 'revisit');
  const site = join(dir, 'site');
  mkdirSync(site, { recursive: true });
  const logo = Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 31) % 251));
  writeFileSync(join(site, 'logo.png'), logo);
  writeFileSync(join(site, 'page.html'), '<html>a page that does not change</html>');
  for (const name of ['logo.png', 'page.html']) utimesSync(join(site, name), YEAR_2000, YEAR_2000);
  const repo = await createRepository({ root: site, index: join(dir, 'index.sqlite'), watch: false, rescanSeconds: 0, byValueMax: 100_000, pageRecords: 3 });
  try {
    const base = `${await repo.listen(0, '127.0.0.1')}/oai`;
    const url = `${base.slice(0, -4)}/logo.png`;
    const store = join(dir, 'archive');
    assert.equal((await harvest({ baseUrl: base, archiveDir: store, retry: FAST_RETRY })).added, 2);
    // A touch: same bytes, new mtime, so a new datestamp and a second version whose record, in a
    // bag of the second harvest, revisits the bytes the first bag holds.
    await nextSecond();
    const now = new Date();
    utimesSync(join(site, 'logo.png'), now, now);
    await repo.scan();
    await nextSecond();
    assert.equal((await harvest({ baseUrl: base, archiveDir: store, retry: FAST_RETRY })).touched, 1);

    const catalog = Catalog.open(store, { create: false });
    let first: { datestamp: string; bagPath: string };
    let second: { datestamp: string; bagPath: string };
    let held: { bagPath: string; path: string };
    let page: { datestamp: string; bagPath: string };
    try {
      const sourceId = catalog.source(base)!.id;
      const versions = catalog.versions(sourceId, url);
      assert.equal(versions.length, 2);
      [first, second] = versions as [(typeof versions)[0], (typeof versions)[0]];
      page = catalog.latestVersion(sourceId, `${base.slice(0, -4)}/page.html`)!;
      assert.equal(first.bagPath, page.bagPath, 'the first harvest made one bag of both records');
      assert.notEqual(second.bagPath, first.bagPath);
      held = catalog.versionParts(versions[0]!.id)[0]!;
      assert.deepEqual(catalog.versionParts(versions[1]!.id), [{ ...held }], 'the revisit points at the bytes the first bag holds');
      assert.equal(held.bagPath, first.bagPath);
    } finally {
      catalog.close();
    }
    assert.equal((await verifyArchive({ archiveDir: store, jobs: 2 })).ok, true);

    // Corrupt the one copy of the bytes, in the first bag.
    const file = join(store, held.bagPath, held.path);
    const corrupt = Buffer.from(logo);
    corrupt[100] = corrupt[100]! ^ 0xff;
    writeFileSync(file, corrupt);
    const relying = [
      { source: base, identifier: url, datestamp: first.datestamp, bagPath: first.bagPath, revisit: false },
      { source: base, identifier: url, datestamp: second.datestamp, bagPath: second.bagPath, revisit: true },
    ];
    const report = await verifyArchive({ archiveDir: store, jobs: 2 });
    assert.deepEqual(report.damagedPayloads, [{ bagPath: held.bagPath, path: held.path, problem: 'checksum', versions: relying }]);
    assert.equal(report.affectedVersions, 2);
    assert.deepEqual(
      report.damagedBags.map((bag) => bag.bagPath),
      [held.bagPath],
      "the revisit's own bag is intact: only the bag holding the bytes is damaged",
    );
    const text = formatVerifyReport(report);
    const problemLine = `  ${held.bagPath}: ${held.path} sha256 validation failed: expected="${sha256(logo)}" found="${sha256(corrupt)}"`;
    const named = [
      `    relied on by ${url} (datestamp ${first.datestamp})`,
      `    relied on by ${url} (datestamp ${second.datestamp}), a revisit recorded in ${second.bagPath}`,
    ];
    const lines = text.split('\n');
    assert.deepEqual(lines.slice(lines.indexOf(problemLine) + 1, lines.indexOf(problemLine) + 3), named, text);
    assert.match(lastEventOf(store, held.bagPath).detail, /1 damaged payload file\(s\), 2 version\(s\) rely on them/);

    if (CLI_WIRED) {
      const cli = oaibag('verify', '--archive', store, '--jobs', '1');
      assert.equal(cli.status, 4, cli.stderr);
      const cliLines = cli.stdout.split('\n');
      assert.deepEqual(cliLines.slice(cliLines.indexOf(problemLine) + 1, cliLines.indexOf(problemLine) + 3), named, cli.stdout);
      const json = oaibag('verify', '--archive', store, '--json');
      assert.equal(json.status, 4, json.stderr);
      const parsed = JSON.parse(json.stdout) as VerifyReport;
      assert.deepEqual(parsed.damagedPayloads, report.damagedPayloads);
      assert.equal(parsed.affectedVersions, 2);
      assert.equal(parsed.ok, false);
    }

    // The whole first bag gone: every version whose record or bytes were in it is named, the
    // revisit (its record is safe in the second bag, its bytes were not) included.
    rmSync(join(store, held.bagPath), { recursive: true });
    const lost = await verifyArchive({ archiveDir: store, jobs: 2 });
    assert.equal(lost.missingBags, 1);
    const pageVersion = { source: base, identifier: `${base.slice(0, -4)}/page.html`, datestamp: page.datestamp, bagPath: page.bagPath, revisit: false };
    const byName = (x: { identifier: string; datestamp: string }, y: { identifier: string; datestamp: string }): number =>
      `${x.identifier} ${x.datestamp}` < `${y.identifier} ${y.datestamp}` ? -1 : 1;
    assert.equal(lost.damagedPayloads.length, 1);
    const [gone] = lost.damagedPayloads;
    assert.deepEqual(
      { ...gone, versions: [...gone!.versions].sort(byName) },
      { bagPath: held.bagPath, path: null, problem: 'missing-bag', versions: [...relying, pageVersion].sort(byName) },
    );
    assert.deepEqual(gone!.versions.at(-1), relying[1], 'oldest first: the revisit last');
    assert.match(
      formatVerifyReport(lost),
      new RegExp(`\\n  relied on by ${url.replace(/[.]/g, '\\.')} \\(datestamp ${second.datestamp}\\), a revisit recorded in ${second.bagPath}\\n`),
    );
  } finally {
    await repo.close();
  }
});
