// oaibag restore into a folder that is not empty (issue 25: a later restore --as-of an earlier
// date into the same folder left files of the later state, and a local edit was silently
// overwritten, exit 0). A real site served by the real repository, two real harvests, real
// restores compared tree for tree, folders included; hostile folders full of links pointing out.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { harvest, type RestoreSummary, restoreSite } from '../packages/archiver/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';
import { snapshot, type Tree } from './site-tree.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const BIN = join(ROOT, 'packages/archiver/bin/oaibag.js');
const DAY = 86_400;
const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;
const FAST_RETRY = { retries: 2, baseDelayMs: 10, maxDelayMs: 100 };
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
let firstFolders: string[];
let latestFolders: string[];
/** An instant between the two harvests' datestamps. */
let between: string;

function write(path: string, content: string, mtime: number): void {
  mkdirSync(dirname(join(site, path)), { recursive: true });
  writeFileSync(join(site, path), content);
  utimesSync(join(site, path), mtime, mtime);
}

/** Every folder below `dir` (links not followed), relative, sorted: a restore with --clean leaves no folder the state does not have. */
function folders(dir: string, prefix = ''): string[] {
  const found: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const rel = prefix === '' ? name : `${prefix}/${name}`;
    if (lstatSync(join(dir, name)).isDirectory()) found.push(rel, ...folders(join(dir, name), rel));
  }
  return found;
}

const oaibag = (...args: string[]) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8' });

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-restore-safety-'));
  site = join(work, 'site');
  archive = join(work, 'archive');
  write('index.html', '<html>home</html>', YEAR_2000);
  write('papers/a.txt', 'paper a', YEAR_2000 + DAY);
  write('old/gone.txt', 'deleted after the first harvest', YEAR_2000 + 2 * DAY);
  write('old/keep.txt', 'keeps old/ alive', YEAR_2000 + 2 * DAY);
  repository = await createRepository({ root: site, index: join(work, 'index.sqlite'), watch: false, rescanSeconds: 0 });
  endpoint = `${await repository.listen(0, '127.0.0.1')}/oai`;
  assert.equal((await harvest({ baseUrl: endpoint, archiveDir: archive, retry: FAST_RETRY })).added, 4);
  firstState = snapshot(site);
  firstFolders = folders(site);

  await nextSecond();
  between = instant(Math.floor(Date.now() / 1000) - 1);
  write('index.html', '<html>home, edited</html>', YEAR_2000 + 100 * DAY);
  rmSync(join(site, 'old/gone.txt'));
  write('added/later/new.txt', 'added after the first harvest', YEAR_2000 + 50 * DAY);
  await repository.scan();
  await nextSecond();
  const second = await harvest({ baseUrl: endpoint, archiveDir: archive, retry: FAST_RETRY });
  assert.deepEqual([second.added, second.modified, second.deleted], [1, 1, 1]);
  latestState = snapshot(site);
  latestFolders = folders(site);
});

after(async () => {
  await repository.close();
  rmSync(work, { recursive: true, force: true });
});

/** A folder holding the latest state, restored by oaibag. */
async function latestRestore(name: string): Promise<string> {
  const to = join(work, name);
  const summary = await restoreSite({ archiveDir: archive, to });
  assert.equal(summary.problems, 0);
  assert.deepEqual(snapshot(to), latestState);
  return to;
}

test('a later state, then an earlier one into the same folder: refused without --force or --clean, nothing touched', async () => {
  const to = await latestRestore('refused');
  await assert.rejects(restoreSite({ archiveDir: archive, to, asOf: between }), (error: Error & { code: string }) => {
    assert.equal(error.code, 'ERR_ARCHIVE_USAGE');
    assert.match(error.message, new RegExp(`^--to ${to} is not empty .*--force.*--clean`));
    return true;
  });
  assert.deepEqual(snapshot(to), latestState, 'nothing written');
  // A dry run says what the restore would say.
  await assert.rejects(restoreSite({ archiveDir: archive, to, asOf: between, dryRun: true }), { code: 'ERR_ARCHIVE_USAGE' });

  const cli = oaibag('restore', '--archive', archive, '--to', to, '--as-of', between);
  assert.equal(cli.status, 2, cli.stderr);
  assert.equal(cli.stdout, '');
  const lines = cli.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, cli.stderr);
  assert.match(lines[0]!, new RegExp(`^oaibag: --to ${to} is not empty \\(it holds 4 entries\\): give --force .* or --clean .*\\[ERR_ARCHIVE_USAGE\\]`));
  assert.deepEqual(snapshot(to), latestState);
});

test('--clean: a later state, then an earlier one, leaves exactly the earlier state (files, mtimes and folders)', async () => {
  const to = await latestRestore('clean');
  // Local additions of every kind: a file, a file deep in a folder of its own, an empty folder, a hidden file, a link.
  writeFileSync(join(to, 'notes.txt'), 'a local note');
  mkdirSync(join(to, 'local/deeper'), { recursive: true });
  writeFileSync(join(to, 'local/deeper/x.txt'), 'x');
  mkdirSync(join(to, 'papers/empty'));
  writeFileSync(join(to, 'papers/.hidden'), 'h');
  symlinkSync('index.html', join(to, 'alias.html'));

  const summary = await restoreSite({ archiveDir: archive, to, asOf: between, clean: true });
  assert.equal(summary.problems, 0, JSON.stringify(summary));
  assert.deepEqual(snapshot(to), firstState, 'exactly the earlier state, byte for byte and mtime for mtime');
  assert.deepEqual(folders(to), firstFolders, 'no folder of the later state or of the user is left');
  assert.deepEqual(summary.folder, {
    mode: 'clean',
    extra: 5,
    extraPaths: ['added/later/new.txt', 'alias.html', 'local/deeper/x.txt', 'notes.txt', 'papers/.hidden'],
    extraFolders: 5, // added, added/later, local, local/deeper, papers/empty
    replaced: [{ path: 'index.html', identifier: `${endpoint.slice(0, -4)}/index.html` }],
    unchanged: 2, // papers/a.txt, old/keep.txt
    notRemoved: [],
  });

  // And back to the latest state, from the command: the lines say what was removed and replaced.
  const cli = oaibag('restore', '--archive', archive, '--to', to, '--clean');
  assert.equal(cli.status, 0, cli.stderr);
  assert.deepEqual(snapshot(to), latestState);
  assert.deepEqual(folders(to), latestFolders);
  assert.match(cli.stdout, /^restored 4 files /m);
  assert.match(cli.stdout, /^replaced 1 file that differed from this state: index\.html$/m);
  assert.match(cli.stdout, new RegExp(`^removed 1 file not part of this state from ${to}: old/gone\\.txt$`, 'm'));
});

test('--force: a local edit is replaced and reported, an extra file is left and listed', async () => {
  const to = await latestRestore('force');
  writeFileSync(join(to, 'index.html'), 'edited by hand');
  writeFileSync(join(to, 'notes.txt'), 'a local note');
  const summary = await restoreSite({ archiveDir: archive, to, force: true });
  assert.equal(summary.problems, 0);
  assert.equal(readFileSync(join(to, 'index.html'), 'utf8'), '<html>home, edited</html>');
  assert.equal(readFileSync(join(to, 'notes.txt'), 'utf8'), 'a local note', 'left');
  assert.deepEqual(summary.folder, {
    mode: 'force',
    extra: 1,
    extraPaths: ['notes.txt'],
    extraFolders: 0,
    replaced: [{ path: 'index.html', identifier: `${endpoint.slice(0, -4)}/index.html` }],
    unchanged: latestState.size - 1,
    notRemoved: [],
  });

  // The earlier state over it: what only the later state has is left, and said so (text and --json).
  writeFileSync(join(to, 'index.html'), 'edited by hand again');
  const cli = oaibag('restore', '--archive', archive, '--to', to, '--as-of', between, '--force');
  assert.equal(cli.status, 0, cli.stderr);
  assert.equal(readFileSync(join(to, 'index.html'), 'utf8'), '<html>home</html>');
  assert.equal(readFileSync(join(to, 'old/gone.txt'), 'utf8'), 'deleted after the first harvest');
  assert.equal(readFileSync(join(to, 'added/later/new.txt'), 'utf8'), 'added after the first harvest', 'left');
  assert.match(cli.stdout, /^replaced 1 file that differed from this state: index\.html$/m);
  assert.match(cli.stdout, new RegExp(`^left 2 files and 2 folders not part of this state in ${to}: added/later/new\\.txt, notes\\.txt$`, 'm'));
  const json = oaibag('restore', '--archive', archive, '--to', to, '--as-of', between, '--force', '--json');
  const folder = (JSON.parse(json.stdout) as RestoreSummary).folder;
  assert.deepEqual([folder?.extra, folder?.extraPaths, folder?.replaced], [2, ['added/later/new.txt', 'notes.txt'], []]);
});

test('--clean never removes or writes outside --to: links are removed as links, never followed', async () => {
  const outside = join(work, 'outside');
  mkdirSync(join(outside, 'inner'), { recursive: true });
  writeFileSync(join(outside, 'victim.html'), 'must stay');
  writeFileSync(join(outside, 'inner/deep.txt'), 'must stay too');
  const before = snapshot(outside);
  const to = join(work, 'clean-links');
  mkdirSync(join(to, 'junk'), { recursive: true });
  symlinkSync(outside, join(to, 'escape')); // a link to a folder outside
  symlinkSync(outside, join(to, 'papers')); // a link where the state needs a folder
  symlinkSync(join(outside, 'victim.html'), join(to, 'index.html')); // a link where the state has a file
  symlinkSync(join(outside, 'inner'), join(to, 'junk/inner')); // a link inside a folder that is removed
  symlinkSync('../../..', join(to, 'junk/up')); // a link up and out
  symlinkSync(join(work, 'nothing-there'), join(to, 'dangling'));

  const summary = await restoreSite({ archiveDir: archive, to, clean: true });
  assert.equal(summary.problems, 0, JSON.stringify(summary));
  assert.deepEqual(snapshot(outside), before, 'nothing outside removed, changed or added');
  assert.deepEqual(snapshot(to), latestState, 'the links are gone, the state is there');
  assert.deepEqual(folders(to), latestFolders);
  assert.ok(lstatSync(join(work, 'archive/catalog.sqlite')).isFile());

  // --to itself a link to a folder: that folder is restored into, the link stays.
  const real = join(work, 'clean-real');
  mkdirSync(real);
  writeFileSync(join(real, 'stray.txt'), 'stray');
  symlinkSync(real, join(work, 'clean-via-link'));
  const viaLink = await restoreSite({ archiveDir: archive, to: join(work, 'clean-via-link'), clean: true });
  assert.deepEqual(viaLink.folder?.extraPaths, ['stray.txt']);
  assert.ok(lstatSync(join(work, 'clean-via-link')).isSymbolicLink());
  assert.deepEqual(snapshot(real), latestState);
});

/** The files below `dir` whose bytes are `content` (links not followed). */
function filesHolding(dir: string, content: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((name) => join(dir, name))
    .filter((path) => lstatSync(path).isFile() && readFileSync(path, 'utf8') === content);
}

test('--clean with a damaged payload: an earlier file with the right bytes is kept, one with other bytes is removed', async () => {
  const copy = join(work, 'archive-damaged');
  cpSync(archive, copy, { recursive: true });
  const [payload, ...more] = filesHolding(join(copy, 'aips'), 'paper a');
  assert.ok(payload !== undefined && more.length === 0, 'one payload file holds papers/a.txt');
  writeFileSync(payload, 'paper A'); // one byte changed

  const good = await latestRestore('damaged-good'); // papers/a.txt has the state's bytes
  const kept = await restoreSite({ archiveDir: copy, to: good, clean: true });
  assert.deepEqual([kept.damaged.length, kept.problems], [1, 1], 'still reported damaged (exit 1)');
  assert.equal(readFileSync(join(good, 'papers/a.txt'), 'utf8'), 'paper a', 'the earlier file is the state: kept');
  assert.deepEqual([kept.folder?.extra, kept.folder?.unchanged], [0, latestState.size]);

  const stale = await latestRestore('damaged-stale');
  writeFileSync(join(stale, 'papers/a.txt'), 'edited by hand');
  const removed = await restoreSite({ archiveDir: copy, to: stale, clean: true });
  assert.deepEqual([removed.damaged.length, removed.problems], [1, 1]);
  assert.deepEqual(removed.folder?.extraPaths, ['papers/a.txt'], 'not the state: said so');
  assert.throws(() => lstatSync(join(stale, 'papers/a.txt')), { code: 'ENOENT' }, 'and removed by --clean');
  const expected = new Map(latestState);
  expected.delete('papers/a.txt');
  assert.deepEqual(snapshot(stale), expected);
});

test('--clean and --force refuse a --to around the archive, / and the home folder; --to a file is a usage error', async () => {
  const refused = async (options: Partial<Parameters<typeof restoreSite>[0]>, message: RegExp) =>
    assert.rejects(restoreSite({ archiveDir: archive, to: work, ...options }), (error: Error & { code: string }) => {
      assert.equal(error.code, 'ERR_ARCHIVE_USAGE', error.message);
      assert.match(error.message, message);
      return true;
    });
  const workBefore = readdirSync(work).sort();
  await refused({ clean: true }, new RegExp(`^--to ${work} holds the archive ${archive}: --clean would remove it$`));
  await refused({ force: true }, /holds the archive .*: a restore over it could overwrite it$/);
  await refused({ clean: true, dryRun: true }, /holds the archive/);
  symlinkSync(work, join(work, 'link-to-work'));
  await refused({ clean: true, to: join(work, 'link-to-work') }, /holds the archive/);
  await refused({ to: archive }, /is the archive folder: a restore never writes among the bags$/);
  await refused({ force: true, to: join(archive, 'aips') }, /is inside the archive/);
  await refused({ to: join(archive, 'not-yet/there') }, /is inside the archive/);
  assert.deepEqual(readdirSync(work).sort(), [...workBefore, 'link-to-work'].sort(), 'nothing removed');
  assert.ok(lstatSync(join(archive, 'catalog.sqlite')).isFile());

  // Dry runs, so that a broken check could not remove anything.
  await refused({ clean: true, dryRun: true, to: '/' }, /^--clean refuses --to \/: it is the root of the file system$/);
  const home = join(work, 'home');
  mkdirSync(home);
  writeFileSync(join(home, '.profile'), 'mine');
  const saved = process.env.HOME;
  process.env.HOME = home;
  try {
    await refused({ clean: true, dryRun: true, to: home }, /it is the home folder/);
    await refused({ clean: true, dryRun: true, to: work }, /it holds the home folder/);
    const forced = await restoreSite({ archiveDir: archive, to: join(home, 'site'), clean: true });
    assert.equal(forced.restored, latestState.size, 'a folder inside home is fine');
  } finally {
    process.env.HOME = saved;
  }

  writeFileSync(join(work, 'a-file'), 'not a folder');
  await refused({ to: join(work, 'a-file') }, /is a file, not a folder/);
  await refused({ to: join(work, 'a-file/below') }, /is below a file/);
  symlinkSync(join(work, 'nowhere'), join(work, 'dangling-to'));
  await refused({ to: join(work, 'dangling-to') }, /is a symbolic link to nothing/);
  await refused({ force: true, clean: true, to: join(work, 'fresh') }, /--force and --clean exclude each other/);
  const cli = oaibag('restore', '--archive', archive, '--to', work, '--clean');
  assert.equal(cli.status, 2, cli.stderr);
  assert.match(cli.stderr, /^oaibag: --to .* holds the archive .*--clean would remove it \[ERR_ARCHIVE_USAGE\]/);
});

test('--dry-run tells what --force and --clean would do, and changes nothing', async () => {
  const to = await latestRestore('dry');
  writeFileSync(join(to, 'notes.txt'), 'a local note');
  const before = snapshot(to);
  const summary = await restoreSite({ archiveDir: archive, to, asOf: between, clean: true, dryRun: true });
  assert.deepEqual(snapshot(to), before, 'nothing changed');
  assert.deepEqual(summary.folder, {
    mode: 'clean',
    extra: 2,
    extraPaths: ['added/later/new.txt', 'notes.txt'],
    extraFolders: 2,
    replaced: [{ path: 'index.html', identifier: `${endpoint.slice(0, -4)}/index.html` }],
    unchanged: 2,
    notRemoved: [],
  });
  const cli = oaibag('restore', '--archive', archive, '--to', to, '--as-of', between, '--force', '--dry-run');
  assert.equal(cli.status, 0, cli.stderr);
  assert.match(cli.stdout, /^would restore 4 files /m);
  assert.match(cli.stdout, /^would replace 1 file that differed from this state: index\.html$/m);
  assert.match(cli.stdout, /^would leave 2 files and 2 folders not part of this state in .*: added\/later\/new\.txt, notes\.txt$/m);
  assert.deepEqual(snapshot(to), before);
});

test('--as-of before the first harvest: one line naming the earliest date the archive holds, exit 2, nothing written', () => {
  const to = join(work, 'too-early');
  const cli = oaibag('restore', '--archive', archive, '--to', to, '--as-of', '1999-06-30');
  assert.equal(cli.status, 2, cli.stderr);
  assert.equal(
    cli.stderr,
    'oaibag: nothing to restore as of 1999-06-30T23:59:59Z: the earliest version the archive holds is dated 2000-01-01T00:00:00Z [ERR_ARCHIVE_USAGE] (hint: give --as-of 2000-01-01T00:00:00Z or later; nothing was written)\n',
  );
  assert.throws(() => lstatSync(to), { code: 'ENOENT' });
});
