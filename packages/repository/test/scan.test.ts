// The repository's scan (site/site-indexer.ts): the tree walked in the index's path order
// (site/tree-walk.ts) and merged with the index's rows a page at a time (site/scan-cursor.ts).
// Names that sort differently in UTF-16 and in SQLite, folders beside files of similar names,
// more rows than a page, and a rescan of an unchanged tree that writes nothing.
import assert from 'node:assert/strict';
import { mkdirSync, renameSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { createExportPolicy } from '@oaibag/oai-pmh';
import Database from 'better-sqlite3';
import { FileIndex, scanPageSql } from '../src/site/file-index.ts';
import { comparePaths, walkInPathOrder } from '../src/site/tree-walk.ts';
import { startRepository, tempDir, writeTree } from './repository-helpers.ts';

const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;

/** Names around the places where path orders differ: '/' against '-', '.', '0'; U+E000.. against astral. */
const TRICKY = [
  'a.txt',
  'a-b.txt',
  'a/b.txt',
  'a/c/d.txt',
  'a0.txt',
  'a.b/x.txt',
  'A.txt',
  'caf\u00e9.txt',
  '\uff21.txt', // U+FF21: above the surrogates in UTF-16, below them in code points
  '\u{1f600}.txt', // a surrogate pair in UTF-16
  'z/\u{1f600}/y.txt',
  'z/\uff21/y.txt',
  'sub.html',
  'sub/deeper/x.html',
  'sub-x.html',
];

/** Paths in SQLite's own order (BINARY collation on UTF-8), the order the scan relies on. */
function sqliteOrder(paths: string[]): string[] {
  const db = new Database(':memory:');
  try {
    db.exec('CREATE TABLE t (path TEXT PRIMARY KEY)');
    const insert = db.prepare('INSERT INTO t VALUES (?)');
    for (const path of paths) insert.run(path);
    return db.prepare('SELECT path FROM t ORDER BY path').pluck().all() as string[];
  } finally {
    db.close();
  }
}

test('the walk gives the files in SQLite path order, without hidden files or links to folders followed', () => {
  const dir = tempDir();
  try {
    const site = join(dir.path, 'site');
    writeTree(site, Object.fromEntries([...TRICKY, '.hidden/x.txt', '.env', 'a/.git/config'].map((path) => [path, path])));
    symlinkSync('a', join(site, 'link-to-a'));
    symlinkSync('a.txt', join(site, 'link-to-a.txt'));
    const counts = { directories: 0 };
    const walked = [...walkInPathOrder(site, '', createExportPolicy({}), counts)];
    const expected = sqliteOrder([...TRICKY, 'link-to-a', 'link-to-a.txt']);
    assert.deepEqual(
      walked.map((file) => file.path),
      expected,
    );
    assert.equal(walked.find((file) => file.path === 'link-to-a')?.regular, false, 'a link to a folder comes as a link, not followed');
    assert.equal(walked.find((file) => file.path === 'a.txt')?.regular, true);
    // site, a, a/c, a.b, sub, sub/deeper, z, z/😀, z/Ａ: not .hidden, not a/.git
    assert.equal(counts.directories, 9);
    assert.deepEqual(
      [...walkInPathOrder(site, 'a', createExportPolicy({}), { directories: 0 })].map((file) => file.path),
      ['a/b.txt', 'a/c/d.txt'],
    );
    assert.deepEqual([...walkInPathOrder(site, '.hidden', createExportPolicy({}), { directories: 0 })], []);
  } finally {
    dir.cleanup();
  }
});

test('comparePaths agrees with SQLite on strings mixing ASCII, BMP above the surrogates and astral characters', () => {
  const alphabet = ['a', 'b', '/', '-', '.', '0', '\u00e9', '\ue000', '\uffff', '\uff21', '\u{10000}', '\u{1f600}', '\u{10ffff}'];
  let seed = 27;
  const random = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed >>> 8;
  };
  const strings = new Set<string>();
  while (strings.size < 2000) {
    let text = '';
    for (let length = 1 + (random() % 6); length > 0; length--) text += alphabet[random() % alphabet.length];
    strings.add(text);
  }
  const ours = [...strings].sort(comparePaths);
  assert.deepEqual(ours, sqliteOrder([...strings]));
  assert.notDeepEqual([...strings].sort(), ours, 'the default UTF-16 order differs here: the test would notice a plain sort');
});

test("EXPLAIN QUERY PLAN: a scan's page of rows is a seek of the path index, in its order", () => {
  const dir = tempDir();
  const file = join(dir.path, 'index.sqlite');
  try {
    FileIndex.open(file).close();
    const db = new Database(file, { readonly: true });
    try {
      for (const [after, folder] of [
        ['', ''],
        ['s000/d00001/p0001000.html', ''],
        ['', 's000'],
        ['s000/d00001/p0001000.html', 's000'],
      ] as const) {
        const { sql, params } = scanPageSql(after, folder);
        const text = (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params, 1000) as Array<{ detail: string }>).map((row) => row.detail).join('\n');
        assert.match(text, /^SEARCH records USING INDEX sqlite_autoindex_records_1 \(path>\?( AND path<\?)?\)$/, text);
      }
    } finally {
      db.close();
    }
  } finally {
    dir.cleanup();
  }
});

test('a rescan finds every change among names that sort apart, across pages of rows, and an unchanged tree costs no write', async () => {
  const dir = tempDir();
  try {
    const site = join(dir.path, 'site');
    const many: Record<string, string> = {};
    // More rows than a page of the cursor (1,000), in one folder, between tricky neighbours.
    for (let i = 0; i < 2500; i++) many[`m/f${String(i).padStart(4, '0')}.txt`] = `file ${i}`;
    const files = { ...Object.fromEntries(TRICKY.map((path) => [path, path])), ...many, 'm.txt': 'm', 'm-.txt': 'm-', 'x/only.txt': 'x' };
    writeTree(site, files);
    // Old mtimes: the first scan dates the files by them, so every change gets a later datestamp.
    for (const path of Object.keys(files)) utimesSync(join(site, path), YEAR_2000, YEAR_2000);
    const run = await startRepository(site, dir.path);
    try {
      const unchanged = await run.repository.scan();
      assert.deepEqual({ ...unchanged, milliseconds: 0 }, { files: TRICKY.length + 2500 + 3, added: 0, changed: 0, deleted: 0, milliseconds: 0 });

      // An unchanged tree: the rescan commits nothing (another connection's data_version stays).
      const watcher = new Database(join(dir.path, 'index.sqlite'), { readonly: true });
      try {
        const version = watcher.pragma('data_version', { simple: true });
        await run.repository.scan();
        assert.equal(watcher.pragma('data_version', { simple: true }), version, 'an unchanged rescan writes nothing to the index');
      } finally {
        watcher.close();
      }

      const later = Date.now() / 1000;
      for (const path of ['a.txt', '\u{1f600}.txt', 'm/f0997.txt', 'm/f1002.txt', 'sub/deeper/x.html']) utimesSync(join(site, path), later, later);
      for (const i of [0, 998, 999, 1000, 1001, 1999, 2000, 2499]) rmSync(join(site, `m/f${String(i).padStart(4, '0')}.txt`));
      rmSync(join(site, 'a/c'), { recursive: true }); // a/c/d.txt
      rmSync(join(site, 'x'), { recursive: true });
      writeFileSync(join(site, 'x'), 'a file where a folder was'); // x/only.txt gone, x added
      writeTree(site, { 'a.a.txt': 'new', 'a/b0.txt': 'new', 'm/f0999a.txt': 'new', 'z/\uff21/z.txt': 'new', 'new/folder/n.txt': 'new' });
      renameSync(join(site, '\uff21.txt'), join(site, '.hidden-now.txt')); // no longer exported
      mkdirSync(join(site, 'empty'));

      const summary = await run.repository.scan();
      assert.deepEqual(
        { ...summary, milliseconds: 0 },
        { files: TRICKY.length + 2500 + 3 - 8 - 1 - 1 + 6 - 1, added: 6, changed: 5, deleted: 8 + 1 + 1 + 1, milliseconds: 0 },
      );
      const { added, changed, deleted } = await run.repository.scan();
      assert.deepEqual({ added, changed, deleted }, { added: 0, changed: 0, deleted: 0 }, 'the next rescan finds nothing more');
    } finally {
      await run.stop();
    }
  } finally {
    dir.cleanup();
  }
});
