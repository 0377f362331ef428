import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { Base64Decoder, encodeBase64Lines } from '../src/index.ts';

function decodeAll(text: string, split: number[] = []): { bytes: Buffer; stoppedAt: number; end: string | undefined } {
  const input = Buffer.from(text, 'latin1');
  const decoder = new Base64Decoder();
  const parts: Buffer[] = [];
  let start = 0;
  for (const cut of [...split, input.length]) {
    const result = decoder.write(input, start, cut);
    parts.push(result.bytes);
    if (result.stoppedAt < cut) return { bytes: Buffer.concat(parts), stoppedAt: result.stoppedAt, end: undefined };
    start = cut;
  }
  return { bytes: Buffer.concat(parts), stoppedAt: input.length, end: decoder.end() };
}

test('decodes every length from 0 to 70 bytes, split at every position', () => {
  for (let length = 0; length <= 70; length++) {
    const bytes = randomBytes(length);
    const text = bytes.toString('base64');
    for (let cut = 0; cut <= text.length; cut++) {
      const result = decodeAll(text, [cut]);
      assert.equal(result.end, undefined, `length ${length} cut ${cut}`);
      assert.ok(result.bytes.equals(bytes), `length ${length} cut ${cut}`);
    }
  }
});

test('takes whitespace anywhere and counts line feeds', () => {
  const bytes = randomBytes(1000);
  const text = bytes.toString('base64').replace(/.{60}/g, '$&\r\n  \t');
  const decoder = new Base64Decoder();
  const input = Buffer.from(text, 'latin1');
  const result = decoder.write(input);
  assert.ok(result.bytes.equals(bytes));
  assert.equal(result.newlines, (text.match(/\n/g) ?? []).length);
  assert.equal(result.lastNewline, text.lastIndexOf('\n'));
  assert.equal(decoder.end(), undefined);
});

test('stops at the first character outside the alphabet, without throwing', () => {
  assert.equal(decodeAll('QUJD!REVG').stoppedAt, 4);
  assert.equal(decodeAll('QUJD&#65;').stoppedAt, 4);
  assert.equal(decodeAll('QUJD\u00e9').stoppedAt, 4);
});

test('padding: accepted at the end only, in the right places', () => {
  assert.equal(decodeAll('QQ==').bytes.toString(), 'A');
  assert.equal(decodeAll('QUI=').bytes.toString(), 'AB');
  assert.equal(decodeAll('QQ=\n=').bytes.toString(), 'A', 'whitespace between padding characters');
  assert.equal(decodeAll('QQ==QQ==').stoppedAt, 4, 'data after padding');
  assert.equal(decodeAll('Q===').stoppedAt, 1, 'padding after one character');
  assert.equal(decodeAll('QUI==').stoppedAt, 4, 'a third padding character');
  assert.match(decodeAll('QQ=').end!, /"=="/);
  assert.match(decodeAll('QUJ').end!, /incomplete group of 3/);
});

test('the encoder writes 76-column lines that decode to the input', async () => {
  const bytes = randomBytes(100_003);
  let text = '';
  async function* source() {
    for (let i = 0; i < bytes.length; i += 4099) yield bytes.subarray(i, i + 4099);
  }
  for await (const part of encodeBase64Lines(source())) text += part;
  const lines = text.split('\n');
  assert.equal(lines.pop(), '');
  assert.ok(lines.slice(0, -1).every((line) => line.length === 76));
  assert.ok(decodeAll(text).bytes.equals(bytes));
});
