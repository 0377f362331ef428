/**
 * What the repository exports and what it never does (mod_oai paper, section 5), end to end:
 * a real repository over a temp site full of awkward names, hidden files, backups, files a
 * web server would run, special files and symbolic links, asked through both of its doors
 * (the OAI-PMH lists and records, and the static file server) over real HTTP on 127.0.0.1.
 * The two doors must agree on every path in the tree.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, lstatSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { encodeUrlPath, identifierForPath } from '../src/index.ts';
import { errorCodes, harvestAll, headers, httpRequest, oai, type RunningRepository, startRepository, tempDir, writeTree } from './repository-helpers.ts';

/** A day ago: the first scan dates files by mtime, and lists end one second before now. */
const PAST = Math.floor(Date.now() / 1000) - 86_400;
const SECRET = 'TOP-SECRET outside the root\n';

const LONG_ASCII = `${'n'.repeat(196)}.txt`;
const LONG_UTF8 = `${'\u00e9'.repeat(98)}.txt`;

/** Every file the site exports, by relative path. */
const EXPORTED = [
  'index.html',
  'with space.txt',
  'caf\u00e9.txt',
  '\u65e5\u672c\u8a9e.html',
  '100%.txt',
  'a+b.txt',
  'a&b.txt',
  '#hash.txt',
  "it's.txt",
  LONG_ASCII,
  LONG_UTF8,
  'empty.txt',
  'docs/oai',
  'docs/index.html',
  'docs/page.html',
  'a/visible.txt',
  'nested/deep/data.json',
  // .pl is in the default run extensions, but runExtensions replaces that list.
  'script.pl',
  'readme.php.txt',
  'link-to-normal.txt',
].sort();

/** Regular files that are never exported, and why (for the reader; the checks are the same). */
const NEVER_EXPORTED_FILES: Record<string, string> = {
  'oai/index.html': 'reserved root folder',
  'oai/record.txt': 'reserved root folder',
  '.htaccess': 'hidden',
  '.git/config': 'hidden folder',
  'a/.secret/x.txt': 'hidden folder below a folder',
  'x~': 'editor backup',
  '#x#': 'editor backup',
  'x.swp': 'editor swap file',
  'x.bak': 'backup',
  'docs/page.html~': 'editor backup',
  'page.php': 'runs on the server',
  'UPPER.PHP': 'runs on the server (any case)',
  'run.cgi': 'runs on the server',
  'inc.shtml': 'runs on the server',
  'app.jsp': 'runs on the server',
  'old.asp': 'runs on the server',
  'tool.py': 'runs on the server (runExtensions)',
  'drafts/plan.txt': '--exclude drafts',
  'sub/drafts/notes.txt': '--exclude drafts (any segment)',
  'scratch.tmp': '--exclude *.tmp',
  'docs/more.tmp': '--exclude *.tmp',
  'back\\slash.txt': 'no URL names it',
};

let dir: { path: string; cleanup: () => void };
let site: string;
let repo: RunningRepository;
let socketServer: Server;
/** The identifiers of the first full ListIdentifiers harvest. */
let firstList: string[];

before(async () => {
  dir = tempDir('oaibag-exports-');
  site = join(dir.path, 'site');
  const outside = join(dir.path, 'outside');
  writeTree(outside, { 'secret.txt': SECRET });

  const files: Record<string, string> = {};
  for (const path of [...EXPORTED.filter((path) => path !== 'link-to-normal.txt'), ...Object.keys(NEVER_EXPORTED_FILES)]) {
    files[path] = path === 'empty.txt' ? '' : `content of ${path}\n`;
  }
  writeTree(site, files);
  writeFileSync(join(site, 'mode000.txt'), 'nobody may read this\n');
  chmodSync(join(site, 'mode000.txt'), 0);
  // A name that is not UTF-8: no URL can carry it.
  writeFileSync(Buffer.concat([Buffer.from(`${site}/bad`), Buffer.from([0xff]), Buffer.from('.txt')]), 'not UTF-8\n');
  const fifo = spawnSync('mkfifo', [join(site, 'pipe')]);
  assert.equal(fifo.status, 0, `mkfifo failed: ${fifo.stderr}`);
  socketServer = createServer();
  await new Promise<void>((resolve) => socketServer.listen(join(site, 'sock'), resolve));

  symlinkSync(join(outside, 'secret.txt'), join(site, 'link-outside.txt'));
  symlinkSync('.htaccess', join(site, 'link-to-hidden.txt'));
  symlinkSync('page.php', join(site, 'link-to-php.txt'));
  symlinkSync('oai/record.txt', join(site, 'link-to-reserved.txt'));
  symlinkSync('drafts/plan.txt', join(site, 'link-to-excluded.txt'));
  symlinkSync('caf\u00e9.txt', join(site, 'link-to-normal.txt'));
  symlinkSync('docs', join(site, 'linked-folder'));
  symlinkSync(outside, join(site, 'linked-outside-folder'));
  symlinkSync('nowhere.txt', join(site, 'dangling.txt'));
  backdate(site);

  repo = await startRepository(site, dir.path, {
    excludes: ['drafts', '*.tmp'],
    runExtensions: ['php', 'cgi', 'shtml', 'jsp', 'asp', '.PY'],
    pageIdentifiers: 4,
    pageRecords: 4,
  });
  firstList = await listIdentifiers(repo);
});

after(async () => {
  await repo?.stop();
  await new Promise<void>((resolve) => (socketServer ? socketServer.close(() => resolve()) : resolve()));
  dir?.cleanup();
});

/** Sets the mtime of every regular file below `root` a day back (symbolic links are left alone). */
function backdate(root: string): void {
  for (const entry of readdirSync(root, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && !entry.name.includes('\uFFFD')) utimesSync(join(entry.parentPath, entry.name), PAST, PAST);
  }
}

async function listIdentifiers(running: RunningRepository): Promise<string[]> {
  const pages = await harvestAll(running.endpoint, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc' });
  const items = pages.flatMap(headers);
  for (const page of pages) assert.deepEqual(errorCodes(page), []);
  return items.map((item) => `${item.identifier}${item.deleted ? ' (deleted)' : ''}`).sort();
}

/** The request target of an identifier, exactly as spelled (the client must not re-encode it). */
function targetOf(running: RunningRepository, identifier: string): string {
  assert.ok(identifier.startsWith(`${running.baseUrl}/`), identifier);
  return identifier.slice(running.baseUrl.length);
}

/** 'live', 'deleted', or the error codes of a GetRecord. */
async function recordState(running: RunningRepository, identifier: string): Promise<string> {
  const answer = await oai(running.endpoint, { verb: 'GetRecord', metadataPrefix: 'oai_dc', identifier });
  assert.equal(answer.status, 200);
  const codes = errorCodes(answer.text);
  if (codes.length > 0) return codes.join(' ');
  const found = headers(answer.text);
  assert.equal(found.length, 1, answer.text);
  assert.equal(found[0]!.identifier, identifier);
  return found[0]!.deleted ? 'deleted' : 'live';
}

/** Every path below the site, directories included, also the paths through a link to a folder inside it. */
function everyPath(root: string): Array<{ path: string; directory: boolean }> {
  const found: Array<{ path: string; directory: boolean }> = [];
  const walk = (relDir: string) => {
    for (const name of readdirSync(join(root, relDir))) {
      if (name.includes('\uFFFD')) continue; // the non-UTF-8 name has a test of its own
      const path = relDir === '' ? name : `${relDir}/${name}`;
      const stats = lstatSync(join(root, path));
      let directory = stats.isDirectory();
      if (stats.isSymbolicLink()) {
        // Follow links to folders inside the site only, so their paths are asked for too.
        const target = statSync(join(root, path), { throwIfNoEntry: false });
        directory = target?.isDirectory() === true && path !== 'linked-outside-folder';
      }
      found.push({ path, directory });
      if (directory) walk(path);
    }
  };
  walk('');
  return found;
}

test('ListIdentifiers lists exactly the exported files, under their canonical URLs', () => {
  const expected = EXPORTED.map((path) => identifierForPath(repo.baseUrl, path)).sort();
  assert.deepEqual(firstList, expected);
  // Spot checks of the one canonical spelling, independent of identifierForPath.
  const spellings = ['with%20space.txt', 'caf%C3%A9.txt', '%E6%97%A5%E6%9C%AC%E8%AA%9E.html', '100%25.txt', 'a%2Bb.txt'];
  for (const spelled of [...spellings, 'a%26b.txt', '%23hash.txt', "it's.txt", 'docs/oai']) {
    assert.ok(firstList.includes(`${repo.baseUrl}/${spelled}`), spelled);
  }
});

test('ListRecords carries the same items as ListIdentifiers', async () => {
  const pages = await harvestAll(repo.endpoint, { verb: 'ListRecords', metadataPrefix: 'oai_dc' });
  const identifiers = pages
    .flatMap(headers)
    .map((item) => item.identifier)
    .sort();
  assert.deepEqual(identifiers, firstList);
});

test('every exported identifier GETs the bytes of its file', async () => {
  for (const path of EXPORTED) {
    const identifier = identifierForPath(repo.baseUrl, path);
    const answer = await httpRequest(repo.baseUrl, { path: targetOf(repo, identifier) });
    assert.equal(answer.status, 200, path);
    assert.deepEqual(answer.body, readFileSync(join(site, path)), path);
  }
  // The link is exported under its own name, with its target's bytes.
  const link = await httpRequest(repo.baseUrl, { path: '/link-to-normal.txt' });
  assert.equal(link.text, 'content of caf\u00e9.txt\n');
});

test('never-exported paths answer 404 (or 400) on GET and idDoesNotExist on GetRecord', async () => {
  const never = [
    ...Object.keys(NEVER_EXPORTED_FILES),
    'mode000.txt',
    'pipe',
    'sock',
    'link-outside.txt',
    'link-to-hidden.txt',
    'link-to-php.txt',
    'link-to-reserved.txt',
    'link-to-excluded.txt',
    'linked-folder',
    'linked-folder/page.html',
    'linked-folder/index.html',
    'linked-folder/oai',
    'linked-outside-folder/secret.txt',
    'dangling.txt',
    'a/.secret',
    '.git',
  ];
  const problems: string[] = [];
  for (const path of never) {
    const identifier = identifierForPath(repo.baseUrl, path);
    const answer = await httpRequest(repo.baseUrl, { path: targetOf(repo, identifier) });
    if (answer.status !== 404 && answer.status !== 400) problems.push(`${path}: GET ${answer.status}`);
    if (answer.text.includes('TOP-SECRET') || answer.text.includes('content of')) problems.push(`${path}: GET body leaks a file`);
    const state = await recordState(repo, identifier);
    if (state !== 'idDoesNotExist') problems.push(`${path}: GetRecord ${state}`);
  }
  assert.deepEqual(problems, []);
});

test('a name that is not UTF-8 is neither listed nor served', async () => {
  assert.ok(
    readdirSync(site).some((name) => name.includes('\uFFFD')),
    'the fixture exists',
  );
  assert.ok(!firstList.some((identifier) => identifier.includes('bad')));
  for (const target of ['/bad%FF.txt', '/bad%ff.txt', '/bad%EF%BF%BD.txt']) {
    const answer = await httpRequest(repo.baseUrl, { path: target });
    assert.ok(answer.status === 400 || answer.status === 404, `${target}: ${answer.status}`);
    assert.ok(!answer.text.includes('not UTF-8'), target);
  }
});

test('both doors agree on every path in the tree', async () => {
  const listed = new Set(firstList);
  const exported = new Set(EXPORTED);
  const problems: string[] = [];
  for (const { path, directory } of everyPath(site)) {
    const identifier = identifierForPath(repo.baseUrl, path);
    const inList = listed.has(identifier);
    if (inList !== exported.has(path)) problems.push(`${path}: listed ${inList}, expected ${exported.has(path)}`);
    const state = await recordState(repo, identifier);
    if (state !== (inList ? 'live' : 'idDoesNotExist')) problems.push(`${path}: listed ${inList} but GetRecord ${state}`);
    if (path === 'oai') continue; // GET /oai is the OAI-PMH endpoint (the next test)
    const answer = await httpRequest(repo.baseUrl, { path: targetOf(repo, identifier) });
    if (inList) {
      if (answer.status !== 200) problems.push(`${path}: listed but GET ${answer.status}`);
      else if (!answer.body.equals(readFileSync(join(site, path)))) problems.push(`${path}: GET body differs from the file`);
    } else if (answer.status !== 404 && answer.status !== 400) {
      problems.push(`${path}: not listed but GET ${answer.status}`);
    }
    if (directory) {
      // A folder URL serves its index.html exactly when that file is exported.
      const index = await httpRequest(repo.baseUrl, { path: `/${encodeUrlPath(path)}/` });
      const indexListed = listed.has(identifierForPath(repo.baseUrl, `${path}/index.html`));
      if ((index.status === 200) !== indexListed) problems.push(`${path}/: index.html listed ${indexListed} but GET ${index.status}`);
      if (index.status !== 200 && index.status !== 404) problems.push(`${path}/: GET ${index.status}`);
    }
  }
  assert.deepEqual(problems, []);
});

test('GET /oai is the OAI-PMH endpoint, never the reserved folder', async () => {
  const answer = await httpRequest(repo.baseUrl, { path: '/oai' });
  assert.equal(answer.status, 200);
  assert.match(answer.headers['content-type'] as string, /^text\/xml/);
  assert.deepEqual(errorCodes(answer.text), ['badVerb']);
  for (const target of ['/oai/', '/oai/index.html', '/oai/record.txt']) {
    assert.equal((await httpRequest(repo.baseUrl, { path: target })).status, 404, target);
  }
});

test('folder URLs serve index.html when there is one, 404 otherwise', async () => {
  const root = await httpRequest(repo.baseUrl, { path: '/' });
  assert.equal(root.status, 200);
  assert.equal(root.text, 'content of index.html\n');
  const docs = await httpRequest(repo.baseUrl, { path: '/docs/' });
  assert.equal(docs.status, 200);
  assert.equal(docs.text, 'content of docs/index.html\n');
  const noIndex = ['/nested/', '/nested/deep/', '/a/', '/missing/', '/.git/', '/drafts/', '/linked-folder/'];
  for (const target of [...noIndex, '/docs', '/nested']) {
    assert.equal((await httpRequest(repo.baseUrl, { path: target })).status, 404, target);
  }
  // A folder URL is not a second identifier of its index.html.
  for (const identifier of [`${repo.baseUrl}/`, `${repo.baseUrl}/docs/`, `${repo.baseUrl}/docs`]) {
    assert.equal(await recordState(repo, identifier), 'idDoesNotExist', identifier);
  }

  // A site whose root has no index.html.
  const other = tempDir('oaibag-exports-noindex-');
  try {
    writeTree(join(other.path, 'site'), { 'page.html': 'page', 'folder/index.html': 'folder index' });
    backdate(join(other.path, 'site'));
    const running = await startRepository(join(other.path, 'site'), other.path);
    try {
      assert.equal((await httpRequest(running.baseUrl, { path: '/' })).status, 404);
      assert.equal((await httpRequest(running.baseUrl, { path: '/folder/' })).text, 'folder index');
    } finally {
      await running.stop();
    }
  } finally {
    other.cleanup();
  }
});

test('asking through either door adds nothing to the lists', async () => {
  // Everything above asked for every path; anything those requests indexed would be dated
  // this second, which a list only shows from the next one.
  await nextSecond();
  assert.deepEqual(await listIdentifiers(repo), firstList);
});

test('a file made unreadable or swapped for a link out of the root: refused at once, deleted after a scan', async () => {
  const other = tempDir('oaibag-exports-change-');
  try {
    const changing = join(other.path, 'site');
    writeTree(other.path, { 'secret.txt': SECRET });
    writeTree(changing, {
      'keep.txt': 'keep\n',
      'chmod-get.txt': 'chmod-get\n',
      'chmod-scan.txt': 'chmod-scan\n',
      'swap-get.txt': 'swap-get\n',
      'swap-scan.txt': 'swap-scan\n',
    });
    backdate(changing);
    const running = await startRepository(changing, other.path);
    try {
      const id = (path: string) => identifierForPath(running.baseUrl, path);
      const names = ['chmod-get.txt', 'chmod-scan.txt', 'keep.txt', 'swap-get.txt', 'swap-scan.txt'];
      assert.deepEqual(await listIdentifiers(running), names.map(id));

      for (const name of ['chmod-get.txt', 'chmod-scan.txt']) chmodSync(join(changing, name), 0);
      for (const name of ['swap-get.txt', 'swap-scan.txt']) {
        // Atomically, as an attacker with write access to the tree would.
        symlinkSync(join(other.path, 'secret.txt'), join(changing, '.staged-link'));
        renameSync(join(changing, '.staged-link'), join(changing, name));
      }

      // The static server checks before it serves, without waiting for a scan.
      for (const name of ['chmod-get.txt', 'swap-get.txt']) {
        const answer = await httpRequest(running.baseUrl, { path: `/${name}` });
        assert.equal(answer.status, 404, name);
        assert.ok(!answer.text.includes('TOP-SECRET'), name);
      }

      await running.repository.scan();
      await nextSecond();
      const expected = names.map((name) => `${id(name)}${name === 'keep.txt' ? '' : ' (deleted)'}`).sort();
      assert.deepEqual(await listIdentifiers(running), expected);

      for (const name of names.filter((name) => name !== 'keep.txt')) {
        const answer = await httpRequest(running.baseUrl, { path: `/${name}` });
        assert.equal(answer.status, 404, name);
        assert.ok(!answer.text.includes('TOP-SECRET'), name);
        assert.equal(await recordState(running, id(name)), 'deleted', name);
        const didl = await oai(running.endpoint, { verb: 'GetRecord', metadataPrefix: 'oai_didl', identifier: id(name) });
        assert.ok(!didl.text.includes('<metadata>'), name);
      }
      assert.equal((await httpRequest(running.baseUrl, { path: '/keep.txt' })).text, 'keep\n');
    } finally {
      await running.stop();
    }
  } finally {
    other.cleanup();
  }
});

test('a scan counts every file it finds deleted, gone or no longer exported', async () => {
  const other = tempDir('oaibag-exports-count-');
  try {
    const counting = join(other.path, 'site');
    writeTree(other.path, { 'secret.txt': SECRET });
    writeTree(counting, { 'keep.txt': 'k', 'removed.txt': 'r', 'unreadable.txt': 'u', 'swapped.txt': 's', 'hidden-now.txt': 'h' });
    backdate(counting);
    const running = await startRepository(counting, other.path);
    try {
      rmSync(join(counting, 'removed.txt'));
      chmodSync(join(counting, 'unreadable.txt'), 0);
      rmSync(join(counting, 'swapped.txt'));
      symlinkSync(join(other.path, 'secret.txt'), join(counting, 'swapped.txt'));
      renameSync(join(counting, 'hidden-now.txt'), join(counting, '.hidden-now.txt'));
      const summary = await running.repository.scan();
      const { deleted, added, changed } = summary;
      assert.deepEqual({ deleted, added, changed }, { deleted: 4, added: 0, changed: 0 });
    } finally {
      await running.stop();
    }
  } finally {
    other.cleanup();
  }
});

test('a file restored after its deletion is live again through GetRecord, as through GET', async () => {
  const other = tempDir('oaibag-exports-restore-');
  try {
    const restoring = join(other.path, 'site');
    writeTree(restoring, { 'back.txt': 'first\n', 'other.txt': 'other\n' });
    backdate(restoring);
    const running = await startRepository(restoring, other.path);
    try {
      const identifier = identifierForPath(running.baseUrl, 'back.txt');
      chmodSync(join(restoring, 'back.txt'), 0);
      await running.repository.scan();
      assert.equal(await recordState(running, identifier), 'deleted');

      writeFileSync(join(restoring, '.staged'), 'second\n');
      renameSync(join(restoring, '.staged'), join(restoring, 'back.txt'));
      // GetRecord first: neither a scan nor a GET has looked at the file since it came back.
      assert.equal(await recordState(running, identifier), 'live');
      assert.equal((await httpRequest(running.baseUrl, { path: '/back.txt' })).text, 'second\n');
    } finally {
      await running.stop();
    }
  } finally {
    other.cleanup();
  }
});

/** Resolves once the wall clock is in a later whole second than when called. */
async function nextSecond(): Promise<void> {
  const second = Math.floor(Date.now() / 1000);
  while (Math.floor(Date.now() / 1000) === second) {
    await new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000) + 5));
  }
}
