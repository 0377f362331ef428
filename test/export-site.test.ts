// `oaibag export --site` (docs/import-export.md, "The site as one ZIP"): a real site served by
// the real repository, two real harvests, then the site as one ZIP compared entry by entry with
// what `oaibag restore` writes (bytes and mtime to the second), at the latest state and as of a
// time before a change; two exports byte-identical (also from the command in another time
// zone); a damaged payload file stops the export and leaves no ZIP. The command runs from the
// bundle (node scripts/bundle-cli.mjs, as `npm test` does before the tests).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Catalog, exportSite, harvest, restoreSite } from '../packages/archiver/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';
import { payloadOf } from './batch-bags.ts';
import { snapshot } from './site-tree.ts';
import { readZipEntries } from './zip-entries.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const BIN = join(ROOT, 'packages/archiver/bin/oaibag.js');
const DAY = 86_400;
const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;
/** Seconds since the epoch as `--as-of` takes them, `YYYY-MM-DDThh:mm:ssZ`. */
const instant = (seconds: number): string => `${new Date(seconds * 1000).toISOString().slice(0, 19)}Z`;
const nextSecond = () => new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));
/** A file of the site (added by the second harvest) that only the ZIP refuses. */
const DRIVE_LIKE = 'C:drive-like.txt';
const sha256 = (bytes: Buffer | string): string => createHash('sha256').update(bytes).digest('hex');

/** A file as compared: its digest, size and mtime in whole seconds. */
type FileFacts = { sha256: string; size: number; mtime: number };

/** One ZIP entry as read back with yauzl. */
type ZipEntry = FileFacts & { name: string; mode: number; method: number; bytes: Buffer; localHeader: number };

/** Every entry of a ZIP, read in the order of its central directory, with its bytes. */
async function readZip(file: string): Promise<ZipEntry[]> {
  return (await readZipEntries(file)).map(({ entry, bytes }) => ({
    name: entry.fileName,
    sha256: sha256(bytes),
    size: bytes.length,
    mtime: Math.floor(entry.getLastModDate().getTime() / 1000),
    mode: entry.externalFileAttributes >>> 16,
    method: entry.compressionMethod,
    bytes,
    localHeader: entry.relativeOffsetOfLocalHeader,
  }));
}

/** The mtime the Info-ZIP extended timestamp of an entry's local header holds (what unzip reads), if it has one. */
function localTimestamp(zip: Buffer, offset: number): number | undefined {
  assert.equal(zip.readUInt32LE(offset), 0x04034b50, 'a local file header');
  const nameLength = zip.readUInt16LE(offset + 26);
  const extra = zip.subarray(offset + 30 + nameLength, offset + 30 + nameLength + zip.readUInt16LE(offset + 28));
  for (let at = 0; at + 4 <= extra.length; at += 4 + extra.readUInt16LE(at + 2)) {
    if (extra.readUInt16LE(at) === 0x5455 && (extra.readUInt8(at + 4) & 1) === 1) return extra.readUInt32LE(at + 5);
  }
  return undefined;
}

/** The URL (OAI identifier) of a file of the site. */
const identifierOf = (path: string): string => `${endpoint.slice(0, -4)}/${path.split('/').map(encodeURIComponent).join('/')}`;

/** The entries as the snapshot of a folder is: name → digest, size, mtime. */
const facts = (entries: ZipEntry[]): Map<string, FileFacts> => new Map(entries.map((e) => [e.name, { sha256: e.sha256, size: e.size, mtime: e.mtime }]));

let work: string;
let site: string;
let archive: string;
let repository: Repository;
let endpoint: string;
/** An instant after the first harvest's datestamps and before the change was observed. */
let between: string;

/** Puts files in the site, each with its mtime (seconds), as `cp -p` would. */
function put(...files: Array<[path: string, content: string | Buffer, mtime: number]>): void {
  for (const [path, content, mtime] of files) {
    const file = join(site, ...path.split('/'));
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, content);
    utimesSync(file, mtime, mtime);
  }
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-export-site-'));
  site = join(work, 'site');
  archive = join(work, 'archive');
  // Odd seconds: a DOS time alone (2-second steps) would lose them.
  put(
    ['index.html', '<html>home</html>', YEAR_2000 + 1],
    ['papers/a b.txt', 'a paper with a space in its name', YEAR_2000 + DAY + 17],
    ['nested/deeper/leaf.txt', 'two folders down', YEAR_2000 + 2 * DAY + 3601],
    ['empty.txt', '', YEAR_2000 + 3 * DAY],
    ['café/naïve résumé.txt', 'non-ASCII names', YEAR_2000 + 4 * DAY + 59],
    ['big/large.bin', Buffer.alloc(2_500_000, 7), YEAR_2000 + 6 * DAY + 33], // By-Reference, read in several chunks
  );
  repository = await createRepository({ root: site, index: join(work, 'index.sqlite'), watch: false, rescanSeconds: 0, byValueMax: 100_000 });
  endpoint = `${await repository.listen(0, '127.0.0.1')}/oai`;
  // The repository lists up to a second before its responseDate: the files must be older.
  await nextSecond();
  const first = await harvest({ baseUrl: endpoint, archiveDir: archive });
  assert.equal(first.status, 'complete');

  await nextSecond();
  between = instant(Math.floor(Date.now() / 1000) - 1);
  put(
    ['index.html', '<html>home, edited</html>', YEAR_2000 + 100 * DAY + 7],
    // Restore writes it; a ZIP cannot name it (readers would take C: for a drive).
    [DRIVE_LIKE, 'a name like a drive', YEAR_2000 + 101 * DAY],
  );
  await repository.scan();
  await nextSecond();
  const second = await harvest({ baseUrl: endpoint, archiveDir: archive });
  assert.equal(second.modified, 1);
});

after(async () => {
  await repository?.close();
  rmSync(work, { recursive: true, force: true });
});

test('export --site: every file restore writes, same path, same bytes, same mtime to the second; deterministic layout', async () => {
  const file = join(work, 'out', 'site.zip');
  const seen: number[] = [];
  const lines: string[] = [];
  const exported = await exportSite({ archiveDir: archive, to: file, log: (line) => lines.push(line), progress: (done) => seen.push(done.files) });
  const restored = await restoreSite({ archiveDir: archive, to: join(work, 'restored') });
  assert.equal(restored.problems, 0);
  const refusal = `its path ${DRIVE_LIKE} starts like a drive letter, which the name of a ZIP entry must not`;
  assert.deepEqual(exported.summary.refused, [{ kind: 'path', identifier: identifierOf(DRIVE_LIKE), reason: refusal }]);
  assert.deepEqual(lines, [`refused ${identifierOf(DRIVE_LIKE)}: ${refusal}`], 'reported as restore reports its refusals');
  assert.equal(exported.summary.problems, 1);
  assert.equal(exported.summary.asOf, null);
  assert.equal(exported.file, file);
  assert.equal(existsSync(`${file}.partial`), false);
  const bytes = readFileSync(file);
  assert.equal(exported.sha256, sha256(bytes));
  assert.equal(exported.zipBytes, bytes.length);

  const entries = await readZip(file);
  const names = entries.map((entry) => entry.name);
  assert.deepEqual(names, [...names].sort(), 'entries in code-unit order of their names');
  assert.ok(
    names.every((name) => !name.endsWith('/')),
    'no folder entries',
  );
  const restoredFiles = snapshot(join(work, 'restored'));
  assert.ok(restoredFiles.delete(DRIVE_LIKE), 'restore writes it');
  assert.deepEqual(facts(entries), restoredFiles, 'what restore writes, byte for byte and mtime for mtime');
  const siteFiles = snapshot(site);
  siteFiles.delete(DRIVE_LIKE);
  assert.deepEqual(facts(entries), siteFiles, 'the site itself');
  assert.equal(entries.find((entry) => entry.name === 'index.html')!.bytes.toString(), '<html>home, edited</html>');
  assert.equal(entries.find((entry) => entry.name === 'index.html')!.mtime, YEAR_2000 + 100 * DAY + 7);
  for (const entry of entries) {
    assert.equal(entry.mode, 0o100644, `${entry.name}: mode 0644`);
    assert.equal(entry.method, 8, `${entry.name}: deflated`);
    assert.equal(localTimestamp(bytes, entry.localHeader), entry.mtime, `${entry.name}: the exact mtime in the local header too`);
  }
  // Info-ZIP's unzip reads the local header's timestamp: the mtimes to the second, in any time zone.
  if (spawnSync('unzip', ['-v']).status === 0) {
    const unpacked = join(work, 'unzipped');
    const unzip = spawnSync('unzip', ['-q', file, '-d', unpacked], { encoding: 'utf8', env: { ...process.env, TZ: 'America/New_York' } });
    assert.equal(unzip.status, 0, unzip.stderr);
    assert.deepEqual(snapshot(unpacked), restoredFiles, 'unzip gives what restore writes');
  }
  assert.equal(exported.summary.restored, entries.length);
  assert.equal(
    exported.summary.bytes,
    entries.reduce((sum, entry) => sum + entry.size, 0),
  );
  assert.deepEqual(seen.at(-1), entries.length);
  assert.ok(bytes.length < 100_000, `deflated: ${bytes.length} bytes for 2.5 MB of sevens`);
});

test('export --site --as-of before the change gives the old bytes, as restore --as-of does', async () => {
  const file = join(work, 'before.zip');
  const exported = await exportSite({ archiveDir: archive, to: file, asOf: between });
  assert.equal(exported.summary.asOf, between);
  await restoreSite({ archiveDir: archive, to: join(work, 'restored-before'), asOf: between });
  const entries = await readZip(file);
  assert.deepEqual(facts(entries), snapshot(join(work, 'restored-before')));
  const index = entries.find((entry) => entry.name === 'index.html')!;
  assert.equal(index.bytes.toString(), '<html>home</html>');
  assert.equal(index.mtime, YEAR_2000 + 1);
  // Before anything was harvested: an empty ZIP.
  const none = await exportSite({ archiveDir: archive, to: join(work, 'none.zip'), asOf: '1999-12-31' });
  assert.equal(none.summary.restored, 0);
  assert.deepEqual(await readZip(join(work, 'none.zip')), []);
});

test('two exports of the same archive and as-of are byte-identical, from the command too, in another time zone', async () => {
  const one = await exportSite({ archiveDir: archive, to: join(work, 'one.zip'), asOf: between });
  const two = await exportSite({ archiveDir: archive, to: join(work, 'two.zip'), asOf: between });
  assert.equal(two.sha256, one.sha256);
  assert.deepEqual(readFileSync(join(work, 'two.zip')), readFileSync(join(work, 'one.zip')));

  const cli = spawnSync(process.execPath, [BIN, 'export', '--archive', archive, '--to', join(work, 'cli.zip'), '--site', '--as-of', between], {
    encoding: 'utf8',
    env: { ...process.env, TZ: 'Pacific/Chatham' },
  });
  assert.equal(cli.status, 0, cli.stderr);
  assert.equal(cli.stdout, `${one.sha256}  cli.zip\n`, 'the same bytes, whatever the time zone');
  assert.match(
    cli.stderr,
    new RegExp(`^exported ${one.summary.restored} files \\(${one.summary.bytes} bytes\\) of the state as of ${between} to .*cli\\.zip \\(\\d+ bytes\\); `),
  );
  assert.equal(cli.stderr.split('\n').length, 2, 'one summary line, no progress when stderr is not a terminal');
  assert.deepEqual(readFileSync(join(work, 'cli.zip')), readFileSync(join(work, 'one.zip')));

  // The latest state has a resource the ZIP refuses: reported as restore does, the ZIP written, exit 1.
  const latest = spawnSync(process.execPath, [BIN, 'export', '--archive', archive, '--to', join(work, 'latest.zip'), '--site'], { encoding: 'utf8' });
  assert.equal(latest.status, 1, latest.stderr);
  assert.equal(latest.stdout, `${sha256(readFileSync(join(work, 'latest.zip')))}  latest.zip\n`);
  assert.match(
    latest.stderr,
    /^oaibag: refused .*\/C%3Adrive-like\.txt: its path C:drive-like\.txt starts like a drive letter.*\nexported \d+ files .* of the latest state .*; 1 refused; 0 damaged; 0 failed\n$/,
  );
});

test('export --site read a page of one row at a time writes the same ZIP as with whole pages', async () => {
  const whole = await exportSite({ archiveDir: archive, to: join(work, 'whole-pages.zip') });
  const paged = await exportSite({ archiveDir: archive, to: join(work, 'one-row-pages.zip'), pageRows: 1 });
  assert.ok(whole.summary.restored > 1);
  assert.equal(paged.sha256, whole.sha256);
  assert.deepEqual({ ...paged.summary, to: '' }, { ...whole.summary, to: '' });
});

test('usage: --to an existing folder, --bags with --site, a bad --as-of, an unknown --source', async () => {
  mkdirSync(join(work, 'a-folder'), { recursive: true });
  await assert.rejects(exportSite({ archiveDir: archive, to: join(work, 'a-folder') }), { code: 'ERR_ARCHIVE_USAGE' });
  await assert.rejects(exportSite({ archiveDir: archive, to: join(work, 'x.zip'), asOf: 'last tuesday' }), { code: 'ERR_ARCHIVE_USAGE' });
  await assert.rejects(exportSite({ archiveDir: archive, to: join(work, 'x.zip'), source: 'http://elsewhere/oai' }), { code: 'ERR_ARCHIVE_USAGE' });
  assert.equal(existsSync(join(work, 'x.zip')), false);
  const exported = await exportSite({ archiveDir: archive, to: join(work, 'one-source.zip'), source: endpoint, asOf: between });
  assert.equal(exported.summary.problems, 0);
  for (const args of [
    ['--to', join(work, 'a-folder'), '--site'],
    ['--to', join(work, 'y.zip'), '--site', '--bags'],
    ['--to', join(work, 'y'), '--bags', '--as-of', '2020-01-01'],
  ]) {
    const cli = spawnSync(process.execPath, [BIN, 'export', '--archive', archive, ...args], { encoding: 'utf8' });
    assert.equal(cli.status, 2, `${args.join(' ')}: ${cli.stderr}`);
    assert.match(cli.stderr, /\[ERR_ARCHIVE_USAGE\]/);
  }
  const help = spawnSync(process.execPath, [BIN, 'export', '--help'], { encoding: 'utf8' });
  assert.equal(help.status, 0);
  assert.match(help.stdout, /--site/);
  assert.match(help.stdout, /Exit codes: 0 written; 1 /);
});

/** The payload file holding the latest version of a site's file: its absolute path, its archive path (`<bag>/data/…`) and its bag. */
function latestPayload(archiveDir: string, path: string): { file: string; name: string; bag: string } {
  const catalog = Catalog.open(archiveDir, { create: false });
  try {
    const version = catalog.latestVersion(catalog.source(endpoint)!.id, identifierOf(path))!;
    const file = payloadOf(archiveDir, catalog, version.id);
    const name = relative(archiveDir, file).split(sep).join('/');
    return { file, name, bag: join(archiveDir, ...name.split('/').slice(0, 3)) };
  } finally {
    catalog.close();
  }
}

test('a damaged payload file stops the export: one line naming the resource and the bag, no ZIP left', async () => {
  const copy = join(work, 'archive-damaged');
  cpSync(archive, copy, { recursive: true });
  const damaged = latestPayload(copy, 'papers/a b.txt');
  assert.match(damaged.name, /^aips\/.*\/data\//);
  const bytes = readFileSync(damaged.file);
  bytes[0] = bytes[0]! ^ 1;
  writeFileSync(damaged.file, bytes); // same size, other bytes
  const line = `damaged bag ${damaged.bag} (${identifierOf('papers/a b.txt')}): ${damaged.name} does not match its sha-256`;

  const file = join(work, 'damaged.zip');
  await assert.rejects(exportSite({ archiveDir: copy, to: file }), (error: Error & { code?: string; path?: string }) => {
    assert.equal(error.code, 'ERR_ARCHIVE_DAMAGED');
    assert.equal(error.message, line);
    assert.equal(error.path, damaged.bag);
    return true;
  });
  assert.equal(existsSync(file), false, 'no ZIP under its name');
  assert.equal(existsSync(`${file}.partial`), false, 'no partial ZIP');
  assert.deepEqual(
    readdirSync(work).filter((name) => name.startsWith('damaged.zip')),
    [],
    'nothing beside it either (no partial ZIP, no spill file of central records)',
  );

  // A missing payload file too; and an earlier good ZIP under that name is left as it was.
  const missing = latestPayload(copy, 'empty.txt');
  rmSync(missing.file);
  writeFileSync(file, 'an earlier export');
  await assert.rejects(exportSite({ archiveDir: copy, to: file }), { code: 'ERR_ARCHIVE_DAMAGED', message: /empty\.txt is missing$/ });
  assert.equal(readFileSync(file, 'utf8'), 'an earlier export');
  assert.equal(existsSync(`${file}.partial`), false);
  rmSync(file);

  const cli = spawnSync(process.execPath, [BIN, 'export', '--archive', copy, '--to', file, '--site', '--as-of', between], { encoding: 'utf8' });
  assert.equal(cli.status, 4, cli.stderr);
  assert.equal(cli.stdout, '');
  const lines = cli.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, cli.stderr);
  assert.match(lines[0]!, /^oaibag: damaged bag .* \[ERR_ARCHIVE_DAMAGED\] \(hint: .*\)$/);
  assert.ok(lines[0]!.includes(`(${endpoint.slice(0, -4)}/`) && lines[0]!.includes(join(copy, 'aips')), lines[0]);
  assert.equal(existsSync(file), false);
  assert.equal(existsSync(`${file}.partial`), false);
});
