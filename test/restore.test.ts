// oaibag restore, end to end: a real site served by the real repository, real harvests into a
// real archive, then restores compared with the site byte for byte and mtime for mtime, at the
// latest state and at an earlier --as-of; damaged payload files (one shared by two versions);
// hand-made AIPs with hostile URLs.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Catalog, harvest, type RestoreSummary, restoreSite } from '../packages/archiver/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';
import { writeHandMadeBag } from './hand-made-bag.ts';
import { snapshot, type Tree } from './site-tree.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const OAIBAG = join(ROOT, 'packages/archiver/bin/oaibag.js');
const DAY = 86_400;
const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;
const FAST_RETRY = { retries: 2, baseDelayMs: 10, maxDelayMs: 100 };
/** Where restore stages a file before it takes its name (docs/restore.md: `.oaibag-restore-<pid>-<random>`). */
const RESTORE_TEMP_PREFIX = '.oaibag-restore-';
/** Seconds since the epoch as `--as-of` takes them, `YYYY-MM-DDThh:mm:ssZ`. */
const instant = (seconds: number): string => `${new Date(seconds * 1000).toISOString().slice(0, 19)}Z`;
const nextSecond = () => new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));

let work: string;
let site: string;
let archive: string;
let repository: Repository;
let endpoint: string;
let firstState: Tree;
let latestState: Tree;
/** An instant after the first harvest's datestamps and before the changes were observed. */
let between: string;

function write(path: string, content: string | Buffer, mtime: number): void {
  mkdirSync(dirname(join(site, path)), { recursive: true });
  writeFileSync(join(site, path), content);
  utimesSync(join(site, path), mtime, mtime);
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-restore-'));
  site = join(work, 'site');
  archive = join(work, 'archive');
  write('index.html', '<html>home</html>', YEAR_2000);
  write('papers/a b.txt', 'a paper with a space in its name', YEAR_2000 + 1 * DAY + 17);
  write('nested/deeper/deepest/leaf.txt', 'three folders down', YEAR_2000 + 2 * DAY + 3600);
  write('empty.txt', '', YEAR_2000 + 3 * DAY);
  write('café/naïve résumé.txt', 'non-ASCII names', YEAR_2000 + 4 * DAY + 59);
  write('img/logo.png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]), YEAR_2000 + 5 * DAY);
  write('big/large.bin', Buffer.alloc(300_000, 7), YEAR_2000 + 6 * DAY); // By-Reference
  write('old/to-delete.txt', 'deleted after the first harvest', YEAR_2000 + 7 * DAY);
  write('old/keep.txt', 'keeps old/ alive', YEAR_2000 + 7 * DAY);
  repository = await createRepository({ root: site, index: join(work, 'index.sqlite'), watch: false, rescanSeconds: 0, byValueMax: 100_000, pageRecords: 3 });
  endpoint = `${await repository.listen(0, '127.0.0.1')}/oai`;

  const first = await harvest({ baseUrl: endpoint, archiveDir: archive, retry: FAST_RETRY });
  assert.equal(first.status, 'complete');
  assert.equal(first.added, 9);
  firstState = snapshot(site);

  await nextSecond();
  between = instant(Math.floor(Date.now() / 1000) - 1);
  write('index.html', '<html>home, edited</html>', YEAR_2000 + 100 * DAY); // modified
  rmSync(join(site, 'old/to-delete.txt')); // deleted
  write('added/new file.txt', 'added after the first harvest', YEAR_2000 + 50 * DAY); // added, like cp -p
  const now = new Date();
  utimesSync(join(site, 'img/logo.png'), now, now); // touched: same bytes, new mtime
  await repository.scan();
  await nextSecond();
  const second = await harvest({ baseUrl: endpoint, archiveDir: archive, retry: FAST_RETRY });
  assert.deepEqual(
    { added: second.added, modified: second.modified, touched: second.touched, deleted: second.deleted, failed: second.failed },
    { added: 1, modified: 1, touched: 1, deleted: 1, failed: 0 },
  );
  latestState = snapshot(site);
});

after(async () => {
  await repository.close();
  rmSync(work, { recursive: true, force: true });
});

function assertClean(summary: RestoreSummary): void {
  assert.equal(summary.problems, 0, JSON.stringify({ refused: summary.refused, damaged: summary.damaged, failed: summary.failed }));
}

test('restore of the latest state equals the site byte for byte and mtime for mtime', async () => {
  const to = join(work, 'restore-latest');
  const seen: number[] = [];
  const summary = await restoreSite({ archiveDir: archive, to, progress: (done) => seen.push(done.files) });
  assertClean(summary);
  assert.equal(summary.restored, latestState.size);
  assert.equal(summary.deleted, 1, 'the deleted file is skipped');
  assert.equal(summary.asOf, null);
  assert.deepEqual(seen.at(-1), latestState.size);
  assert.deepEqual(snapshot(to), latestState);
  assert.equal(existsSync(join(to, 'old/to-delete.txt')), false);
});

test('restore --as-of between the harvests equals the first state; deleted files come back', async () => {
  const to = join(work, 'restore-first');
  const summary = await restoreSite({ archiveDir: archive, to, asOf: between });
  assertClean(summary);
  assert.equal(summary.asOf, between);
  assert.equal(summary.deleted, 0);
  assert.deepEqual(snapshot(to), firstState);
  assert.equal(readFileSync(join(to, 'old/to-delete.txt'), 'utf8'), 'deleted after the first harvest');
});

test('--as-of a bare date is the end of that day; before anything existed is a usage error naming the earliest date', async () => {
  // The first scan of a new index dates each file by its mtime.
  const day = await restoreSite({ archiveDir: archive, to: join(work, 'restore-day'), asOf: '2000-01-02' });
  assertClean(day);
  assert.equal(day.asOf, '2000-01-02T23:59:59Z');
  assert.deepEqual([...snapshot(join(work, 'restore-day')).keys()], ['index.html', 'papers/a b.txt']);
  // Nothing would be restored (and --clean would empty the folder): refused, naming what the archive holds.
  for (const dryRun of [true, false])
    await assert.rejects(restoreSite({ archiveDir: archive, to: join(work, 'restore-none'), asOf: '1999-12-31T23:59:59Z', dryRun }), {
      code: 'ERR_ARCHIVE_USAGE',
      message: 'nothing to restore as of 1999-12-31T23:59:59Z: the earliest version the archive holds is dated 2000-01-01T00:00:00Z',
      hint: 'give --as-of 2000-01-01T00:00:00Z or later; nothing was written',
    });
  assert.equal(existsSync(join(work, 'restore-none')), false, 'nothing created');
  await assert.rejects(restoreSite({ archiveDir: archive, to: join(work, 'x'), asOf: 'last tuesday' }), { code: 'ERR_ARCHIVE_USAGE' });
  await assert.rejects(restoreSite({ archiveDir: archive, to: join(work, 'x'), source: 'http://elsewhere/oai' }), { code: 'ERR_ARCHIVE_USAGE' });
});

test('--dry-run lists path, size and datestamp of each file and writes nothing', async () => {
  const to = join(work, 'restore-dry');
  const summary = await restoreSite({ archiveDir: archive, to, dryRun: true, source: endpoint });
  assertClean(summary);
  assert.equal(existsSync(to), false);
  assert.deepEqual(
    summary.planned.map((file) => file.path),
    [...latestState.keys()].sort(),
  );
  const empty = summary.planned.find((file) => file.path === 'empty.txt')!;
  assert.equal(empty.size, 0);
  assert.match(empty.datestamp, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
});

test('the plan read a page at a time: pages of 1, 2 and 3 rows give the plan of one page, latest and --as-of', async () => {
  for (const asOf of [undefined, between, '1999-12-31']) {
    const plan = (pageRows?: number) =>
      restoreSite({ archiveDir: archive, to: join(work, 'restore-pages'), dryRun: true, ...(asOf ? { asOf } : {}), ...(pageRows ? { pageRows } : {}) }).then(
        (summary) => summary,
        (error: Error) => error.message,
      );
    const whole = await plan();
    if (asOf !== '1999-12-31') assert.ok(typeof whole !== 'string' && whole.planned.length >= 9, 'a plan of more rows than a page');
    for (const pageRows of [1, 2, 3]) assert.deepEqual(await plan(pageRows), whole, `pages of ${pageRows}, as of ${asOf ?? 'latest'}`);
  }
});

test('a previous restore is overwritten only with verified bytes, and links in it are never followed', async () => {
  const to = join(work, 'restore-again');
  const outside = join(work, 'outside');
  mkdirSync(outside);
  writeFileSync(join(outside, 'victim.html'), 'must stay');
  mkdirSync(to);
  symlinkSync(outside, join(to, 'papers')); // a folder replaced by a link
  symlinkSync(join(outside, 'victim.html'), join(to, 'index.html')); // a file replaced by a link
  writeFileSync(join(to, 'empty.txt'), 'stale content from an earlier run');
  const lines: string[] = [];
  const summary = await restoreSite({ archiveDir: archive, to, force: true, log: (line) => lines.push(line) });
  assert.deepEqual(readdirSync(outside), ['victim.html'], 'nothing written through the folder link');
  assert.deepEqual(
    summary.folder?.replaced.map((file) => file.path),
    ['empty.txt', 'index.html'],
    'the link and the stale file are replaced, and reported',
  );
  assert.deepEqual(summary.folder?.extraPaths, ['papers'], 'the folder link is not part of the state: left and listed');
  assert.equal(readFileSync(join(outside, 'victim.html'), 'utf8'), 'must stay');
  assert.equal(lstatSync(join(to, 'index.html')).isSymbolicLink(), false, 'the link itself is replaced');
  assert.equal(readFileSync(join(to, 'index.html'), 'utf8'), '<html>home, edited</html>');
  assert.equal(readFileSync(join(to, 'empty.txt'), 'utf8'), '');
  assert.deepEqual(
    summary.refused.map((r) => [r.kind, r.identifier.slice(endpoint.length - 4)]),
    [['in-the-way', '/papers/a%20b.txt']],
  );
  assert.match(lines.join('\n'), /in-the-way .*papers\/a%20b\.txt: papers is a symbolic link/);
  assert.equal(summary.problems, 1);
});

test('temporary files a killed restore left are removed by the next one, never through a link', async () => {
  const to = join(work, 'restore-after-kill');
  const outside = join(work, 'outside-kill');
  mkdirSync(join(to, 'papers'), { recursive: true });
  mkdirSync(outside);
  // What kill -9 leaves: verified bytes staged under a temporary name, not yet renamed, named
  // after a process that no longer runs (a finished child's pid).
  const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout;
  writeFileSync(join(to, `${RESTORE_TEMP_PREFIX}${dead}-0123456789abcdef`), 'staged');
  writeFileSync(join(to, 'papers', `${RESTORE_TEMP_PREFIX}${dead}-fedcba9876543210`), 'staged');
  writeFileSync(join(to, `${RESTORE_TEMP_PREFIX}00000000000000aa`), 'staged by a version without the pid');
  // A restore still running (this process) keeps its files.
  writeFileSync(join(to, `${RESTORE_TEMP_PREFIX}${process.ppid}-00000000000000bb`), 'being written');
  writeFileSync(join(outside, `${RESTORE_TEMP_PREFIX}${dead}-00000000000000ff`), 'not ours to remove');
  symlinkSync(outside, join(to, 'linked'));
  const lines: string[] = [];
  const summary = await restoreSite({ archiveDir: archive, to, force: true, log: (line) => lines.push(line) });
  assert.equal(summary.problems, 0);
  assert.ok(lines.includes('removed 3 temporary file(s) left by an interrupted restore'), lines.join('\n'));
  const left = [...snapshot(to).keys()].filter((path) => path.includes(RESTORE_TEMP_PREFIX));
  assert.deepEqual(left, [`${RESTORE_TEMP_PREFIX}${process.ppid}-00000000000000bb`]);
  assert.deepEqual(readdirSync(outside), [`${RESTORE_TEMP_PREFIX}${dead}-00000000000000ff`], 'nothing removed through the link');
});

/** Where the archive holds the bytes of the latest (or `n`th) version of a file of the site: the payload file's archive path and its bag. */
function payloadOf(archiveDir: string, path: string, n?: number): { bag: string; file: string; name: string; recordBag: string } {
  const catalog = Catalog.open(archiveDir, { create: false });
  try {
    const identifier = `${endpoint.slice(0, -4)}/${path.split('/').map(encodeURIComponent).join('/')}`;
    const sourceId = catalog.source(endpoint)!.id;
    const version = n === undefined ? catalog.latestVersion(sourceId, identifier)! : catalog.versions(sourceId, identifier)[n]!;
    const [part] = catalog.versionParts(version.id);
    assert.ok(part !== undefined, `${path} has a payload file`);
    const name = `${part.bagPath}/${part.path}`;
    return { bag: join(archiveDir, part.bagPath), file: join(archiveDir, ...name.split('/')), name, recordBag: join(archiveDir, version.bagPath) };
  } finally {
    catalog.close();
  }
}

const identifierOf = (path: string): string => `${endpoint.slice(0, -4)}/${path.split('/').map(encodeURIComponent).join('/')}`;

test('damaged payload files are reported by their path, nothing unverified is written, the rest is restored', async () => {
  const copy = join(work, 'archive-damaged');
  cpSync(archive, copy, { recursive: true }); // the original archive stays intact for the other tests
  const flipped = payloadOf(copy, 'papers/a b.txt');
  const missing = payloadOf(copy, 'empty.txt');
  const forged = payloadOf(copy, 'nested/deeper/deepest/leaf.txt');
  // One byte of a payload flipped.
  const bytes = readFileSync(flipped.file);
  bytes[0] = bytes[0]! ^ 1;
  writeFileSync(flipped.file, bytes);
  // A payload file gone.
  rmSync(missing.file);
  // Payload and manifest changed together: the catalog's digest still knows better.
  writeFileSync(forged.file, 'forged');
  const forgedDigest = createHash('sha256').update('forged').digest('hex');
  const manifest = join(forged.bag, 'manifest-sha256.txt');
  const leafLine = new RegExp(`^[0-9a-f]{64}  ${forged.name.slice(forged.name.indexOf('/data/') + 1)}$`, 'm');
  assert.match(readFileSync(manifest, 'utf8'), leafLine);
  writeFileSync(
    manifest,
    readFileSync(manifest, 'utf8').replace(leafLine, (line) => `${forgedDigest}${line.slice(64)}`),
  );

  const to = join(work, 'restore-damaged');
  const lines: string[] = [];
  const summary = await restoreSite({ archiveDir: copy, to, log: (line) => lines.push(line) });
  const damaged = new Map(summary.damaged.map((damage) => [damage.identifier, damage]));
  assert.equal(summary.damaged.length, 3);
  const expect = (path: string, where: { bag: string; name: string }, problem: string): void => {
    const damage = damaged.get(identifierOf(path));
    assert.ok(damage, `${path} is reported damaged: ${JSON.stringify(summary.damaged)}`);
    assert.equal(damage.bag, where.bag, 'the bag holding the bytes');
    assert.equal(damage.problem, `${where.name} ${problem}`);
    assert.ok(
      lines.some((line) => line === `damaged bag ${where.bag} (${identifierOf(path)}): ${where.name} ${problem}`),
      lines.join('\n'),
    );
  };
  expect('papers/a b.txt', flipped, 'does not match its sha-256');
  expect('empty.txt', missing, 'is missing');
  expect('nested/deeper/deepest/leaf.txt', forged, 'does not match its sha-256');
  const flippedDamage = damaged.get(identifierOf('papers/a b.txt'))!;
  assert.equal(flippedDamage.expected, createHash('sha256').update('a paper with a space in its name').digest('hex'));
  assert.equal(flippedDamage.found, createHash('sha256').update(bytes).digest('hex'));
  assert.equal(damaged.get(identifierOf('nested/deeper/deepest/leaf.txt'))!.found, forgedDigest);
  assert.equal(summary.problems, 3);
  const restored = snapshot(to);
  for (const path of ['papers/a b.txt', 'empty.txt', 'nested/deeper/deepest/leaf.txt'])
    assert.equal(restored.has(path), false, `no unverified byte of ${path} is written`);
  const rest = new Map([...latestState].filter(([path]) => !['papers/a b.txt', 'empty.txt', 'nested/deeper/deepest/leaf.txt'].includes(path)));
  assert.deepEqual(restored, rest, 'every other file restored as on the site');
  assert.ok(![...restored.keys()].some((path) => path.includes('.oaibag-restore-')), 'no temporary file left');

  // The command: the damaged payload files on stderr, exit code 1.
  const cli = spawnSync(process.execPath, [OAIBAG, 'restore', '--archive', copy, '--to', join(work, 'restore-damaged-cli')], { encoding: 'utf8' });
  assert.equal(cli.status, 1, cli.stderr);
  for (const where of [flipped, missing, forged])
    assert.ok(cli.stderr.includes(`oaibag: damaged bag ${where.bag} (`) && cli.stderr.includes(where.name), cli.stderr);
  assert.match(cli.stdout, new RegExp(`^restored ${latestState.size - 3} files .* 3 damaged`));
});

test('a payload file shared by two versions (a touch): damaged, both are refused, naming the file', async () => {
  // img/logo.png was touched between the harvests: same bytes, new datestamp. The second
  // version's record is in the second harvest's bag, its bytes are the first version's file.
  const first = payloadOf(archive, 'img/logo.png', 0);
  const second = payloadOf(archive, 'img/logo.png', 1);
  assert.equal(second.name, first.name, 'the touch stores no new payload: both versions rely on one file');
  assert.notEqual(second.recordBag, first.recordBag, "the second version's record is in a later bag (a revisit)");

  const copy = join(work, 'archive-shared-damaged');
  cpSync(archive, copy, { recursive: true });
  const shared = payloadOf(copy, 'img/logo.png');
  const bytes = readFileSync(shared.file);
  bytes[bytes.length - 1] = bytes[bytes.length - 1]! ^ 0xff;
  writeFileSync(shared.file, bytes);
  const expected = createHash('sha256')
    .update(Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]))
    .digest('hex');

  for (const [label, asOf, state] of [
    ['latest', undefined, latestState],
    ['as of the first state', between, firstState],
  ] as const) {
    const to = join(work, `restore-shared-${asOf === undefined ? 'latest' : 'first'}`);
    // A file of an earlier restore at that path is left as it was, never replaced by unverified bytes.
    mkdirSync(join(to, 'img'), { recursive: true });
    writeFileSync(join(to, 'img/logo.png'), 'from an earlier restore');
    const lines: string[] = [];
    const summary = await restoreSite({ archiveDir: copy, to, force: true, ...(asOf === undefined ? {} : { asOf }), log: (line) => lines.push(line) });
    assert.deepEqual(
      summary.damaged,
      [
        {
          identifier: identifierOf('img/logo.png'),
          bag: shared.bag,
          problem: `${shared.name} does not match its sha-256`,
          expected,
          found: createHash('sha256').update(bytes).digest('hex'),
        },
      ],
      label,
    );
    assert.ok(lines.includes(`damaged bag ${shared.bag} (${identifierOf('img/logo.png')}): ${shared.name} does not match its sha-256`), lines.join('\n'));
    assert.equal(summary.problems, 1, label);
    const restored = snapshot(to);
    assert.equal(readFileSync(join(to, 'img/logo.png'), 'utf8'), 'from an earlier restore', `${label}: nothing wrong written`);
    assert.deepEqual(summary.folder?.extraPaths, ['img/logo.png'], `${label}: the earlier file is not this state's, and is said so`);
    restored.delete('img/logo.png');
    const rest = new Map([...state].filter(([path]) => path !== 'img/logo.png'));
    assert.deepEqual(restored, rest, `${label}: the rest is restored`);
  }
});

test('oaibag restore: --dry-run lines, --json, exit codes', () => {
  const run = (...args: string[]) => spawnSync(process.execPath, [OAIBAG, 'restore', ...args], { encoding: 'utf8' });
  const to = join(work, 'restore-cli');
  const dry = run('--archive', archive, '--to', to, '--dry-run');
  assert.equal(dry.status, 0, dry.stderr);
  assert.match(dry.stdout, /^papers\/a b\.txt\t32\t\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/m);
  assert.match(dry.stdout, /^empty\.txt\t0\t/m);
  assert.match(dry.stdout, new RegExp(`^would restore ${latestState.size} files`, 'm'));
  assert.equal(existsSync(to), false);
  const json = run('--archive', archive, '--to', to, '--as-of', between, '--json');
  assert.equal(json.status, 0, json.stderr);
  assert.equal((JSON.parse(json.stdout) as RestoreSummary).restored, firstState.size);
  assert.deepEqual(snapshot(to), firstState);
  assert.equal(json.stderr, '', 'no progress display when stderr is not a terminal');
  const usage = run('--archive', archive, '--to', to, '--as-of', 'soon');
  assert.equal(usage.status, 2);
  assert.match(usage.stderr, /ERR_ARCHIVE_USAGE/);
});

test('hostile URLs in hand-made AIPs cannot escape the restore folder and are each reported', async () => {
  const sandbox = join(work, 'sandbox');
  const handMade = join(work, 'archive-hostile');
  mkdirSync(handMade);
  const catalog = Catalog.open(handMade);
  const h = catalog.upsertSource('http://h/oai', {});
  const other = catalog.upsertSource('http://other:8080/oai', {});
  const datestamp = '2024-01-01T00:00:00Z';
  const lastModified = 'Sat, 01 Jan 2000 00:00:00 GMT';
  /** A record as the harvest files it: its payload files in the record's order, each a name in data/ and its bytes. */
  type HandRecord = { identifier: string; parts: Array<[name: string, text: string]> };
  /**
   * One batch bag in aips/ (a BagIt bag written by hand) holding the records' payload files
   * (bytes already in the bag are not stored twice: later records revisit them), recorded in
   * the catalog as the harvest records a batch: recordBag, then recordVersion for each record.
   */
  const storeBatch = (sourceId: number, bagPath: string, records: HandRecord[], unsafe: Array<{ sha256: string; size: number; path: string }> = []) => {
    const bytes = new Map<string, [name: string, bytes: Buffer]>();
    const digestsOf: string[][] = [];
    for (const record of records) {
      const digests: string[] = [];
      for (const [name, text] of record.parts) {
        const sha256 = createHash('sha256').update(text).digest('hex');
        if (!bytes.has(sha256)) bytes.set(sha256, [name, Buffer.from(text)]);
        digests.push(sha256);
      }
      digestsOf.push(digests);
    }
    const held = writeHandMadeBag(handMade, bagPath, [...bytes.values()], [['Oaibag-Format', '2']]);
    const payloads = [...held, ...unsafe];
    const parts = digestsOf.flat();
    catalog.recordBag({
      bagPath,
      sourceId,
      harvestId: null,
      records: records.length,
      newPayloads: payloads.length,
      revisits: parts.length - new Set(parts).size,
      deletions: 0,
      payloadBytes: payloads.reduce((sum, file) => sum + file.size, 0),
      payloads,
    });
    records.forEach((record, n) => {
      const digests = digestsOf[n]!;
      const sha256 =
        digests.length === 1
          ? digests[0]!
          : createHash('sha256')
              .update(digests.map((d) => `${d}\n`).join(''))
              .digest('hex');
      const size = record.parts.reduce((sum, [, text]) => sum + Buffer.byteLength(text), 0);
      catalog.recordVersion({ sourceId, identifier: record.identifier, datestamp, size, sha256, bagPath, record: n + 1, parts: digests, lastModified });
    });
  };
  const hostile = [
    'http://h/../../etc/x',
    'http://h/a/../../../x',
    'http://h/a%2F..%2F..%2Fx',
    'http://h/%2e%2e/x',
    'http://h/%2e%2e%2f%2e%2e%2fx',
    'http://h/a\\..\\b',
    'http://h/a%5C..%5Cb',
    'http://h/%00x',
    'http://h//etc/passwd',
    'file:///etc/passwd',
    '/etc/passwd',
    'oai:h:1',
  ];
  const hBag = 'aips/harvest-000001/batch-00001';
  // A catalog whose payload index points out of the archive (written by hand, not by oaibag): refused as damage, never read.
  writeFileSync(join(work, 'outside-the-archive.txt'), 'never restored');
  const escaping = { sha256: createHash('sha256').update('never restored').digest('hex'), size: 14, path: 'data/../../../outside-the-archive.txt' };
  storeBatch(
    h.id,
    hBag,
    [
      ...hostile.map((identifier, n) => ({ identifier, parts: [[`_by-digest/escaped-${n}`, 'escaped!']] as Array<[string, string]> })),
      { identifier: 'http://h/ok.txt', parts: [['h/ok.txt', 'fine']] },
      { identifier: 'http://h/dir', parts: [['h/dir', 'a file named dir']] },
      { identifier: 'http://h/dir/inside.txt', parts: [['h/dir-inside.txt', 'needs dir to be a folder']] },
      {
        identifier: 'http://h/doc.pdf',
        parts: [
          ['h/doc.pdf', 'part one'],
          ['h/doc.pdf.part-2', 'part two'],
        ],
      },
    ],
    [escaping],
  );
  catalog.recordVersion({
    sourceId: h.id,
    identifier: 'http://h/escape.txt',
    datestamp,
    size: escaping.size,
    sha256: escaping.sha256,
    bagPath: hBag,
    record: 17,
    parts: [escaping.sha256],
  });
  storeBatch(other.id, 'aips/harvest-000002/batch-00001', [{ identifier: 'http://other:8080/y.txt', parts: [['other_8080/y.txt', 'from another source']] }]);
  catalog.close();

  const to = join(sandbox, 'a', 'b', 'c', 'out');
  const lines: string[] = [];
  const summary = await restoreSite({ archiveDir: handMade, to, source: 'http://h/oai', log: (line) => lines.push(line) });
  assert.deepEqual(
    summary.refused
      .filter((r) => r.kind === 'path')
      .map((r) => r.identifier)
      .sort(),
    [...hostile].sort(),
  );
  for (const identifier of hostile)
    assert.ok(
      lines.some((line) => line.startsWith('refused ') && line.includes(identifier)),
      identifier,
    );
  assert.deepEqual(
    summary.refused.filter((r) => r.kind === 'collision').map((r) => r.identifier),
    ['http://h/dir/inside.txt'],
  );
  assert.deepEqual(
    summary.damaged.map((d) => [d.identifier, d.bag, d.problem.replace(/: .*/s, '')]),
    [['http://h/escape.txt', join(handMade, hBag), `the catalog's payload path ${hBag}/data/../../../outside-the-archive.txt is unsafe`]],
  );
  assert.equal(summary.problems, hostile.length + 2);
  const files = snapshot(sandbox);
  assert.deepEqual([...files.keys()], ['a/b/c/out/dir', 'a/b/c/out/doc.pdf', 'a/b/c/out/ok.txt'], 'nothing outside the restore folder');
  const ok = files.get('a/b/c/out/ok.txt');
  assert.ok(ok !== undefined && ok !== 'symlink');
  assert.equal(ok.mtime, Date.parse(lastModified) / 1000, "mtime from the record's Last-Modified");
  // A compound object: its first part at the URL's path, the rest named in the summary by their archive paths.
  assert.equal(readFileSync(join(to, 'doc.pdf'), 'utf8'), 'part one');
  assert.deepEqual(
    summary.extraParts.map((e) => [e.identifier, e.bag, e.parts]),
    [['http://h/doc.pdf', join(handMade, hBag), [`${hBag}/data/h/doc.pdf.part-2`]]],
  );

  // Several sources: each below a folder named after its host (and port).
  const all = await restoreSite({ archiveDir: handMade, to: join(work, 'restore-all') });
  assert.deepEqual([...snapshot(join(work, 'restore-all')).keys()], ['h/dir', 'h/doc.pdf', 'h/ok.txt', 'other_8080/y.txt']);
  assert.equal(readFileSync(join(work, 'restore-all/other_8080/y.txt'), 'utf8'), 'from another source');
  assert.equal(all.refused.length, hostile.length + 1);
  assert.equal(all.damaged.length, 1);
  assert.deepEqual(all.counts, { refused: hostile.length + 1, damaged: 1, failed: 0, extraParts: 1, replaced: 0, notRemoved: 0 });

  // Read a page of one or two rows at a time, the restore is the same: refusals, the collision
  // across pages, the same report lines in the same order, the same files.
  for (const pageRows of [1, 2]) {
    const paged: string[] = [];
    const wholeLines: string[] = [];
    const to = (name: string) => join(work, `restore-all-${name}-${pageRows}`);
    const whole = await restoreSite({ archiveDir: handMade, to: to('whole'), log: (line) => wholeLines.push(line) });
    const inPages = await restoreSite({ archiveDir: handMade, to: to('pages'), pageRows, log: (line) => paged.push(line) });
    assert.deepEqual({ ...inPages, to: '' }, { ...whole, to: '' });
    assert.deepEqual(paged, wholeLines);
    assert.deepEqual(snapshot(to('pages')), snapshot(to('whole')));
  }
});
