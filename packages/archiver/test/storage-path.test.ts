import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { bagDirectoryFor, compactDatestamp, resolveArchivePath, resourceDirectoryFor } from '../src/archive/storage-path.ts';
import { decodeManifestPath, encodeManifestPath, normalizePayloadPath, safeFileName, uniqueFileName, utf8Length } from '../src/bag/bag-paths.ts';
import { ArchiverError } from '../src/core/errors.ts';

const SHA = '9b74c9897bac770ffc029102a200c5de3f6e1b9ef3f5b1b1e1b7d6a8e2c4f0a1';
const SHAPE = /^aips\/[0-9a-f]{2}\/[0-9a-f]{2}\/[0-9a-f]{64}\/\d{8}(T\d{6}Z)?-[0-9a-f]{12}$/;

test('bag directories have one fixed shape whatever the identifier', () => {
  const hostile = [
    'oai:example.org:1',
    '../../etc/passwd',
    '/etc/passwd',
    'C:\\Windows\\system32',
    'a\0b',
    'line\nbreak',
    '~root/.ssh',
    '.',
    '..',
    'x'.repeat(10 * 1024),
    'http://host/a/b?c=d#e',
    'Nu\u0301n\u0303ez',
  ];
  const seen = new Set<string>();
  for (const id of hostile) {
    const dir = bagDirectoryFor(id, '2024-01-31T12:00:00Z', SHA);
    assert.match(dir, SHAPE, id.slice(0, 40));
    const h = createHash('sha256').update(id, 'utf8').digest('hex');
    assert.equal(dir, `aips/${h.slice(0, 2)}/${h.slice(2, 4)}/${h}/20240131T120000Z-9b74c9897bac`);
    seen.add(dir);
  }
  assert.equal(seen.size, hostile.length, 'distinct identifiers give distinct directories');
  assert.equal(resourceDirectoryFor('oai:x:1'), bagDirectoryFor('oai:x:1', '2024-01-31', SHA).split('/').slice(0, 4).join('/'));
});

test('day granularity, uppercase digests, and refused datestamps, digests and identifiers', () => {
  assert.match(bagDirectoryFor('oai:x:1', '2024-01-31', SHA.toUpperCase()), /\/20240131-9b74c9897bac$/);
  assert.equal(compactDatestamp('2024-01-31'), '20240131');
  for (const bad of ['2024-01-31T12:00:00', '../2024-01-31', '2024-01-31T12:00:00Z/..', '', '20240131']) {
    assert.throws(
      () => bagDirectoryFor('oai:x:1', bad, SHA),
      (e: unknown) => e instanceof ArchiverError && e.code === 'ERR_ARCHIVE_PATH',
      bad,
    );
  }
  for (const bad of ['abc', `${SHA}00`, `../${SHA.slice(3)}`, 'g'.repeat(64)]) {
    assert.throws(
      () => bagDirectoryFor('oai:x:1', '2024-01-31', bad),
      (e: unknown) => e instanceof ArchiverError && e.code === 'ERR_ARCHIVE_PATH',
      bad,
    );
  }
  assert.throws(() => bagDirectoryFor('', '2024-01-31', SHA), /identifier is empty/);
  assert.throws(() => bagDirectoryFor('a\ud800b', '2024-01-31', SHA), /well-formed/);
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

test('safeFileName turns URL segments into recognisable, safe names', () => {
  const cases: Array<[string, string]> = [
    ['report.pdf', 'report.pdf'],
    ['annual%20report%202023.pdf', 'annual report 2023.pdf'],
    ['caf%C3%A9.txt', 'café.txt'],
    ['cafe%CC%81.txt', 'café.txt'], // NFD input becomes NFC
    ['a%2Fb%5Cc.txt', 'a_b_c.txt'],
    ['100%25.txt', '100_.txt'],
    ['bad%00name%0A.txt', 'bad_name_.txt'],
    ['%2E%2E', 'index'],
    ['..', 'index'],
    ['.', 'index'],
    ['', 'index'],
    ['%20%20', 'index'],
    ['%20padded%20', 'padded'],
    ['%FF%FE.bin', '\ufffd\ufffd.bin'],
    ['50%-off.html', '50_-off.html'],
  ];
  for (const [input, expected] of cases) assert.equal(safeFileName(input), expected, input);
  assert.equal(safeFileName('', 'item'), 'item');
  assert.equal(safeFileName('caf%C3%A9.txt'), 'café.txt'.normalize('NFC'));
  assert.ok(safeFileName('cafe%CC%81.txt') === safeFileName('cafe%CC%81.txt').normalize('NFC'));
});

test('safeFileName caps names at 255 UTF-8 bytes and keeps the extension', () => {
  const long = safeFileName(`${'é'.repeat(300)}.pdf`);
  assert.ok(utf8Length(long) <= 255, `${utf8Length(long)} bytes`);
  assert.ok(long.endsWith('.pdf'));
  assert.equal(long, `${'é'.repeat(125)}.pdf`);
  const emoji = safeFileName(`${'😀'.repeat(100)}`);
  assert.ok(utf8Length(emoji) <= 255 && !/\p{Cs}/u.test(emoji), 'never splits a code point');
  const noExt = safeFileName('x'.repeat(400));
  assert.equal(noExt, 'x'.repeat(255));
});

test('uniqueFileName numbers repeated names before the extension', () => {
  const taken = new Set(['a.pdf', 'a-2.pdf']);
  assert.equal(uniqueFileName('a.pdf', taken), 'a-3.pdf');
  assert.equal(uniqueFileName('b.pdf', taken), 'b.pdf');
  const long = `${'y'.repeat(251)}.pdf`;
  const second = uniqueFileName(long, new Set([long]));
  assert.ok(second.endsWith('-2.pdf') && utf8Length(second) <= 255);
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
