import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeManifestPath, encodeManifestPath, normalizePayloadPath } from '../src/bag/bag-paths.ts';
import { ArchiverError } from '../src/core/errors.ts';

test('manifest paths encode exactly %, CR and LF, and decode back', () => {
  const name = 'data/100% done\r\nnow %0A.txt';
  const encoded = encodeManifestPath(name);
  assert.equal(encoded, 'data/100%25 done%0D%0Anow %250A.txt');
  assert.equal(decodeManifestPath(encoded), name);
  assert.equal(decodeManifestPath('data/a%0d%0a'), 'data/a\r\n', 'hex digits in either case');
  assert.equal(decodeManifestPath('data/a b é'), 'data/a b é');
  assert.equal(decodeManifestPath('data/100%'), undefined, 'a bare % is malformed');
  assert.equal(decodeManifestPath('data/%20'), undefined, 'only three escapes exist');
});

test('normalizePayloadPath accepts awkward names and refuses escapes', () => {
  assert.equal(normalizePayloadPath('dir/cafe\u0301 100_.txt'), 'dir/café 100_.txt'.normalize('NFC'));
  assert.equal(normalizePayloadPath('line\nbreak.txt'), 'line\nbreak.txt');
  for (const bad of [
    '',
    '/abs',
    '../x',
    'a/../b',
    'a//b',
    './a',
    'a\0b',
    'a\\b',
    'trailing ',
    'unit\u001f',
    'nel\u0085',
    '100%.txt',
    `${'z'.repeat(256)}`,
    'a\udc00',
  ]) {
    assert.throws(
      () => normalizePayloadPath(bad),
      (e: unknown) => e instanceof ArchiverError && e.code === 'ERR_ARCHIVE_PATH',
      JSON.stringify(bad),
    );
  }
});
