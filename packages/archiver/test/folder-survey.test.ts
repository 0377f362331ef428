// restore/folder-survey.ts: what each entry of a non-empty restore folder is to the state being
// restored (the table behind `restore --force` and `--clean`; test/restore-safety.test.ts runs
// them end to end).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { entryRole, plannedPaths } from '../src/restore/folder-survey.ts';

test('entryRole: what an entry of a non-empty restore folder is to the state (table)', () => {
  const plan = plannedPaths(['index.html', 'a/b/c.txt', 'a/d.txt', 'e']);
  assert.deepEqual([...plan.folders].sort(), ['a', 'a/b']);
  const table: Array<[path: string, isFolder: boolean, role: ReturnType<typeof entryRole>]> = [
    ['a', true, 'needed-folder'],
    ['a/b', true, 'needed-folder'],
    ['index.html', false, 'state-file'], // compared, then replaced or kept
    ['a/b/c.txt', false, 'state-file'],
    ['e', false, 'state-file'],
    ['a', false, 'extra'], // a file (or a link, even to a folder) where a folder is needed
    ['index.html', true, 'extra'], // a folder where a file of the state goes
    ['e', true, 'extra'],
    ['a/b/c.txt/x', false, 'extra'],
    ['z', true, 'extra'], // a folder nothing of the state goes into
    ['A', true, 'extra'], // names compare exactly
    ['a/b/other.txt', false, 'extra'],
    ['index.html.bak', false, 'extra'],
  ];
  for (const [path, isFolder, role] of table) assert.equal(entryRole(path, isFolder, plan), role, `${path} ${isFolder ? 'folder' : 'file'}`);
});
