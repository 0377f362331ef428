import assert from 'node:assert/strict';
import { test } from 'node:test';
import { safeFileName, uniqueFileName } from '../src/aip/payload-names.ts';
import { utf8Length } from '../src/bag/bag-paths.ts';

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
