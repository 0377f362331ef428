// The repository's lists over its file index (site/file-index.ts): every page is one or two
// seeks of the index its window names (EXPLAIN QUERY PLAN: a SEARCH, no SCAN of records, no
// sort), and paging gives every item of the window once, in (datestamp, id) order, also when
// thousands of files share one datestamp second, with sets, hidden folders, deletions and
// changes moving files later.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import Database from 'better-sqlite3';
import type { IndexedFile } from '../src/core/model.ts';
import { countSql, earliestSql, FileIndex, type IndexSql, type ListQuery, listSql, liveSetSpecsSql } from '../src/site/file-index.ts';
import { setSpecForMimeType } from '../src/site/set-spec.ts';

const SECOND = 1_767_225_600;
const CROWD = 5000;
const TYPES = ['text/html', 'image/png', 'image/svg+xml', 'text/css', 'application/pdf'];

let work: string;
let file: string;
let index: FileIndex;
/** Every row as the test wrote it: the reference of each window. */
const rows = new Map<string, { datestamp: number; setSpec: string; deleted: boolean }>();

function put(path: string, mimeType: string, datestamp: number): void {
  const setSpec = setSpecForMimeType(mimeType);
  index.putVersion({ path, mimeType, setSpec, size: 1, mtimeNs: 0n, ctimeNs: 0n, fileKey: '0:0', sha256: '' }, datestamp);
  rows.set(path, { datestamp, setSpec, deleted: false });
}

before(() => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-file-index-lists-'));
  file = join(work, 'index.sqlite');
  index = FileIndex.open(file);
  index.beginBatch();
  // A generated site: 5,000 files in one second, in three folders.
  for (let i = 0; i < CROWD; i++) put(`${['site', 'private', 'site/drafts'][i % 3]}/f${i}`, TYPES[i % TYPES.length]!, SECOND);
  // Later: a few more seconds, files changed (moved later) and deleted (moved later, kept).
  for (let i = 0; i < 300; i++) put(`later/g${i}`, TYPES[i % 2]!, SECOND + 1 + (i % 4));
  for (let i = 0; i < 200; i++) put(`site/f${i * 3 * 7}`, 'text/html', SECOND + 10);
  for (let i = 0; i < 100; i++) {
    index.markDeleted(`private/f${1 + i * 3 * 11}`, SECOND + 20);
    const row = rows.get(`private/f${1 + i * 3 * 11}`)!;
    rows.set(`private/f${1 + i * 3 * 11}`, { ...row, datestamp: SECOND + 20, deleted: true });
  }
  index.endBatch();
});

after(() => {
  index?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

const WINDOWS: Array<[string, Omit<ListQuery, 'limit' | 'until' | 'hiddenPrefixes'> & { hiddenPrefixes?: string[] }]> = [
  ['all', {}],
  ['from and until', { from: SECOND + 1 }],
  ['the root set', { setSpec: 'mime' }],
  ['a major type', { setSpec: 'mime:image' }],
  ['a leaf set', { setSpec: 'mime:image:svg~2Bxml' }],
  ['a hidden folder', { hiddenPrefixes: ['private'] }],
  ['a set and hidden folders', { setSpec: 'mime:text', hiddenPrefixes: ['private/', 'site/drafts'] }],
];
const UNTIL = SECOND + 15;

/** The window by the rules of docs/repository.md, computed from what the test wrote. */
function reference(window: (typeof WINDOWS)[number][1]): Array<{ path: string; datestamp: number }> {
  const ids = new Map(index.list({ until: UNTIL + 100, hiddenPrefixes: [], limit: 1_000_000 }).map((row) => [row.path, row.id]));
  const hidden = (path: string) =>
    (window.hiddenPrefixes ?? []).some((prefix) => path === prefix || path.startsWith(prefix.endsWith('/') ? prefix : `${prefix}/`));
  const inSet = (setSpec: string) => window.setSpec === undefined || setSpec === window.setSpec || setSpec.startsWith(`${window.setSpec}:`);
  return [...rows]
    .filter(([path, row]) => row.datestamp <= UNTIL && row.datestamp >= (window.from ?? 0) && inSet(row.setSpec) && !hidden(path))
    .map(([path, row]) => ({ path, datestamp: row.datestamp, id: ids.get(path)! }))
    .sort((a, b) => a.datestamp - b.datestamp || a.id - b.id)
    .map(({ path, datestamp }) => ({ path, datestamp }));
}

function paged(query: Omit<ListQuery, 'limit'>, size: number): IndexedFile[] {
  const all: IndexedFile[] = [];
  for (;;) {
    const last = all.at(-1);
    const page = index.list({ ...query, ...(last ? { after: { datestamp: last.datestamp, id: last.id } } : {}), limit: size });
    all.push(...page);
    if (page.length < size) return all;
  }
}

test('every window, paged 100 at a time, gives its files once each, in (datestamp, id) order', () => {
  for (const [name, window] of WINDOWS) {
    const query = { ...window, until: UNTIL, hiddenPrefixes: window.hiddenPrefixes ?? [] };
    const expected = reference(window);
    assert.ok(expected.length > 100, name);
    const got = paged(query, 100);
    assert.deepEqual(
      got.map(({ path, datestamp }) => ({ path, datestamp })),
      expected,
      name,
    );
    assert.equal(index.count({ ...query, limit: -1 }), expected.length, `${name}: count`);
    // A count stops at its limit: a list's first page costs no more than that (ListSettings.countLimit).
    assert.equal(index.count({ ...query, limit: 50 }), 50, `${name}: count to a limit`);
  }
  // The whole list's estimate: every row ever indexed, one seek; other windows have none.
  assert.ok(index.estimate({ until: UNTIL, hiddenPrefixes: [] })! >= reference({}).length);
  assert.equal(index.estimate({ until: UNTIL, setSpec: 'mime', hiddenPrefixes: [] }), undefined);
  assert.equal(index.estimate({ until: UNTIL, hiddenPrefixes: ['private'] }), undefined);
  assert.equal(index.earliestDatestamp(), SECOND);
  assert.equal(index.earliestDatestamp(['private', 'site', 'later']), undefined);
  assert.deepEqual(index.liveSetSpecs(['private']), ['mime:application:pdf', 'mime:image:png', 'mime:image:svg~2Bxml', 'mime:text:css', 'mime:text:html']);
  assert.deepEqual(index.liveSetSpecs(['site', 'private']), ['mime:image:png', 'mime:text:html'], 'later/ holds only two types');
  assert.deepEqual(index.list({ until: UNTIL, setSpec: 'other', hiddenPrefixes: [], limit: 10 }), [], 'a set outside the MIME hierarchy holds nothing');
  assert.equal(index.count({ until: UNTIL, setSpec: 'mime:image:png:x', hiddenPrefixes: [], limit: 100 }), 0);
});

/** The plan of a statement, on a connection of its own. */
function plan(statement: IndexSql): string {
  const db = new Database(file, { readonly: true });
  try {
    const params = statement.sql.endsWith('LIMIT ?') ? [...statement.params, 100] : statement.params;
    return (db.prepare(`EXPLAIN QUERY PLAN ${statement.sql}`).all(...params) as Array<{ detail: string }>).map((row) => row.detail).join('\n');
  } finally {
    db.close();
  }
}

function assertSeeks(statement: IndexSql, index: RegExp, name: string): void {
  const text = plan(statement);
  assert.doesNotMatch(text, /TEMP B-TREE/, `${name}: no sort\n${text}`);
  assert.doesNotMatch(text, /^SCAN records/m, `${name}: no scan\n${text}`);
  assert.match(text, index, `${name}\n${text}`);
}

test('EXPLAIN QUERY PLAN: every page, count, ListSets and earliest datestamp seeks its index', () => {
  const indexOf: Record<string, RegExp> = {
    all: /^SEARCH records USING (COVERING )?INDEX records_by_datestamp \(datestamp/m,
    'from and until': /^SEARCH records USING (COVERING )?INDEX records_by_datestamp \(datestamp/m,
    'the root set': /^SEARCH records USING (COVERING )?INDEX records_by_datestamp \(datestamp/m,
    'a major type': /^SEARCH records USING (COVERING )?INDEX records_by_major_type \(<expr>=\? AND datestamp/m,
    'a leaf set': /^SEARCH records USING (COVERING )?INDEX records_by_set \(set_spec=\? AND datestamp/m,
    'a hidden folder': /^SEARCH records USING (COVERING )?INDEX records_by_datestamp \(datestamp/m,
    'a set and hidden folders': /^SEARCH records USING (COVERING )?INDEX records_by_major_type \(<expr>=\? AND datestamp/m,
  };
  for (const [name, window] of WINDOWS) {
    const query = { ...window, until: UNTIL, hiddenPrefixes: window.hiddenPrefixes ?? [] };
    const counted = countSql({ ...query, limit: 100 });
    assert.ok(counted);
    assertSeeks(counted, indexOf[name]!, `${name}: count`);
    const first = listSql(query);
    assert.equal(first.length, 1);
    assertSeeks(first[0]!, indexOf[name]!, `${name}: first page`);
    // After a key inside the crowded second: its later ids are a seek, not a walk from the second's start.
    const later = listSql({ ...query, from: SECOND, after: { datestamp: SECOND, id: 4000 } });
    assert.equal(later.length, 2);
    assertSeeks(later[0]!, /datestamp=\? AND id>\?/, `${name}: the rest of a second`);
    assertSeeks(later[0]!, indexOf[name]!, `${name}: the rest of a second`);
    assertSeeks(later[1]!, indexOf[name]!, `${name}: the seconds after it`);
  }
  assertSeeks(earliestSql([]), /^SEARCH records USING COVERING INDEX records_by_datestamp/m, 'earliestDatestamp');
  assertSeeks(earliestSql(['private']), /^SEARCH records USING INDEX records_by_datestamp/m, 'earliestDatestamp, hidden folder');
  assertSeeks(liveSetSpecsSql(['private']), /SEARCH records USING COVERING INDEX records_by_set \(set_spec>\?\)/, 'ListSets');
});

test('an index written before records_by_major_type gets it when opened', () => {
  const older = join(work, 'older.sqlite');
  FileIndex.open(older).close();
  const db = new Database(older);
  db.exec('DROP INDEX records_by_major_type');
  db.close();
  FileIndex.open(older).close();
  const reopened = new Database(older, { readonly: true });
  const names = (reopened.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'records'").all() as Array<{ name: string }>).map(
    (row) => row.name,
  );
  reopened.close();
  assert.ok(names.includes('records_by_major_type'), names.join(', '));
});
