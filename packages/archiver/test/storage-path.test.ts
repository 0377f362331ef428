import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compactDatestamp, resolveArchivePath } from '../src/archive/storage-path.ts';
import { ArchiverError } from '../src/core/errors.ts';

test('compactDatestamp takes the two OAI-PMH granularities and refuses anything else', () => {
  assert.equal(compactDatestamp('2024-01-31'), '20240131');
  assert.equal(compactDatestamp('2024-01-31T12:00:00Z'), '20240131T120000Z');
  for (const bad of ['2024-01-31T12:00:00', '../2024-01-31', '2024-01-31T12:00:00Z/..', '', '20240131']) {
    assert.throws(
      () => compactDatestamp(bad),
      (e: unknown) => e instanceof ArchiverError && e.code === 'ERR_ARCHIVE_PATH',
      bad,
    );
  }
});

test('resolveArchivePath keeps every path inside the archive', () => {
  assert.equal(resolveArchivePath('/srv/archive', 'aips/ab/cd/x'), '/srv/archive/aips/ab/cd/x');
  for (const bad of ['../x', 'aips/../../x', '/etc', 'a//b', 'a/./b', '', 'a\\..\\b', 'a\0b', '..']) {
    assert.throws(
      () => resolveArchivePath('/srv/archive', bad),
      (e: unknown) => e instanceof ArchiverError && e.code === 'ERR_ARCHIVE_PATH',
      bad,
    );
  }
});
