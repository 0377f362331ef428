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

/** Decodes `text` cut at `cuts` with writeInPlace, each chunk a copy the decoder may overwrite. */
function decodeInPlace(text: string, cuts: number[]): { bytes: Buffer; stoppedAt: number; newlines: number; end: string | undefined } {
  const whole = Buffer.from(text, 'latin1');
  const decoder = new Base64Decoder();
  const parts: Buffer[] = [];
  let newlines = 0;
  let start = 0;
  for (const cut of [...cuts, whole.length]) {
    // Each chunk sits inside a larger buffer (markup before and after), as the reader's do.
    const chunk = Buffer.concat([Buffer.from('<a>'), whole.subarray(start, cut), Buffer.from('</a>')]);
    const result = decoder.writeInPlace(chunk, 3, 3 + cut - start);
    if (result.head) parts.push(Buffer.from(result.head));
    parts.push(Buffer.from(result.bytes));
    newlines += result.newlines;
    assert.equal(chunk.subarray(chunk.length - 4).toString(), '</a>', 'nothing after the run is touched');
    assert.equal(chunk.subarray(0, 3).toString(), '<a>', 'nothing before the run is touched');
    if (result.stoppedAt < 3 + cut - start) return { bytes: Buffer.concat(parts), stoppedAt: start + result.stoppedAt - 3, newlines, end: undefined };
    start = cut;
  }
  return { bytes: Buffer.concat(parts), stoppedAt: whole.length, newlines, end: decoder.end() };
}

test('writeInPlace decodes exactly what write does, in the input itself, whatever the cuts, whitespace, padding or junk', () => {
  let seed = 7;
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  for (let trial = 0; trial < 400; trial++) {
    const bytes = randomBytes(Math.floor(random() * 300));
    let text = bytes.toString('base64');
    if (random() < 0.5) text = text.replace(/.{76}/g, '$&\n');
    if (random() < 0.2) text = text.replace(/(.{7})/g, '$1 \r\n\t');
    if (random() < 0.1 && text.length > 4) text = `${text.slice(0, text.length >> 1)}!${text.slice(text.length >> 1)}`;
    if (random() < 0.05) text += 'QQ==';
    const cuts = [...new Set(Array.from({ length: Math.floor(random() * 6) }, () => Math.floor(random() * (text.length + 1))))].sort((a, b) => a - b);
    const expected = decodeAll(text, cuts);
    const found = decodeInPlace(text, cuts);
    assert.equal(found.stoppedAt, expected.stoppedAt, `trial ${trial}: ${JSON.stringify(text)} cut at ${cuts}`);
    assert.ok(found.bytes.equals(expected.bytes), `trial ${trial}: the same bytes`);
    assert.equal(found.end, expected.end, `trial ${trial}: the same end`);
    if (found.stoppedAt === text.length) assert.equal(found.newlines, (text.match(/\n/g) ?? []).length, `trial ${trial}: line feeds`);
  }
});
