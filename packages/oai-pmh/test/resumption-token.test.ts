import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { decodeResumptionToken, encodeResumptionToken, type ListState, MAX_RESUMPTION_TOKEN_LENGTH } from '../src/resumption-token.ts';

const key = Buffer.from('0123456789abcdef0123456789abcdef', 'utf8');
const otherKey = Buffer.from('fedcba9876543210fedcba9876543210', 'utf8');

const typical: ListState = {
  verb: 'ListRecords',
  metadataPrefix: 'oai_didl',
  set: 'mime:image:svg~2Bxml',
  from: 1_600_000_000,
  until: 1_700_000_000,
  after: { datestamp: 1_650_000_000, id: 123_456 },
  cursor: 500,
  completeListSize: 12_345,
};

const states: ListState[] = [
  typical,
  {
    verb: 'ListIdentifiers',
    metadataPrefix: 'oai_dc',
    until: 1_700_000_000,
    after: { datestamp: 1_690_000_000, id: 7 },
    cursor: 100,
    completeListSize: 101,
  },
  {
    verb: 'ListIdentifiers',
    metadataPrefix: 'http_header',
    from: 0,
    until: 0,
    after: { datestamp: 0, id: 0 },
    cursor: 0,
    // No completeListSize: the list's first page could not tell its size.
  },
  {
    verb: 'ListRecords',
    metadataPrefix: 'x',
    set: 'mime',
    until: Number.MAX_SAFE_INTEGER,
    from: Number.MAX_SAFE_INTEGER,
    after: { datestamp: Number.MAX_SAFE_INTEGER, id: Number.MAX_SAFE_INTEGER },
    cursor: Number.MAX_SAFE_INTEGER,
    completeListSize: Number.MAX_SAFE_INTEGER,
  },
  {
    verb: 'ListRecords',
    metadataPrefix: 'préfixe-😀',
    set: 'ensemble:ü',
    from: 127,
    until: 128,
    after: { datestamp: 16_383, id: 16_384 },
    cursor: 2 ** 32,
    completeListSize: 2 ** 32 + 1,
  },
];

// The documented layout (see resumption-token.ts), so that tests can sign bodies the encoder
// refuses to write and check that the decoder refuses them on its own as well.
function sign(body: number[], withKey: Buffer = key): string {
  const bytes = Buffer.from(body);
  const tag = createHmac('sha256', withKey).update(Buffer.from('oaibag resumptionToken\0', 'utf8')).update(bytes).digest().subarray(0, 16);
  return Buffer.concat([bytes, tag]).toString('base64url');
}

function varint(value: number): number[] {
  const out: number[] = [];
  let rest = value;
  while (rest >= 0x80) {
    out.push((rest % 0x80) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  out.push(rest);
  return out;
}

function text(value: string): number[] {
  const bytes = [...Buffer.from(value, 'utf8')];
  return [...varint(bytes.length), ...bytes];
}

/** A version-1 body: flags 0 (ListIdentifiers, no set, no from) unless given. */
function body(fields: { flags?: number; until?: number; numbers?: number[]; prefix?: number[]; tail?: number[] }): number[] {
  return [
    1,
    fields.flags ?? 0,
    ...varint(fields.until ?? 1000),
    ...(fields.numbers ?? [500, 1, 0, 10]).flatMap(varint),
    ...(fields.prefix ?? text('oai_dc')),
    ...(fields.tail ?? []),
  ];
}

test('round trip: every state decodes to itself', () => {
  for (const state of states) {
    const token = encodeResumptionToken(state, key);
    assert.deepEqual(decodeResumptionToken(token, key), state, JSON.stringify(state));
  }
});

test('a signed body built by hand decodes, so the forged-token tests below test what they claim', () => {
  assert.deepEqual(decodeResumptionToken(sign(body({})), key), {
    verb: 'ListIdentifiers',
    metadataPrefix: 'oai_dc',
    until: 1000,
    after: { datestamp: 500, id: 1 },
    cursor: 0,
    completeListSize: 10,
  });
});

test('tokens are compact, URL-safe ASCII and the same for the same state', () => {
  for (const state of states) {
    const token = encodeResumptionToken(state, key);
    assert.match(token, /^[A-Za-z0-9_-]+$/);
    assert.equal(encodeResumptionToken(state, key), token, 'idempotent: re-issuing gives the same token');
    assert.equal(encodeURIComponent(token), token);
  }
  assert.ok(encodeResumptionToken(typical, key).length <= 100, encodeResumptionToken(typical, key));
});

test('changing any one character of a token makes it invalid', () => {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  for (const state of states) {
    const token = encodeResumptionToken(state, key);
    for (let index = 0; index < token.length; index++) {
      for (const replacement of alphabet) {
        if (replacement === token[index]) continue;
        const changed = token.slice(0, index) + replacement + token.slice(index + 1);
        assert.equal(decodeResumptionToken(changed, key), null, `position ${index} → ${replacement}`);
      }
    }
  }
});

test('cutting or extending a token makes it invalid', () => {
  const token = encodeResumptionToken(typical, key);
  for (let length = 0; length < token.length; length++) {
    assert.equal(decodeResumptionToken(token.slice(0, length), key), null, `first ${length} characters`);
    assert.equal(decodeResumptionToken(token.slice(token.length - length), key), null, `last ${length} characters`);
  }
  for (const suffix of ['A', 'AA', 'AAA', 'AAAA', '=', '==', '.', ' ', '\n']) {
    assert.equal(decodeResumptionToken(token + suffix, key), null, JSON.stringify(suffix));
  }
  for (const prefix of ['A', 'AAAA', ' ']) assert.equal(decodeResumptionToken(prefix + token, key), null);
});

test('a token signed with another key is refused', () => {
  for (const state of states) {
    assert.equal(decodeResumptionToken(encodeResumptionToken(state, otherKey), key), null);
    assert.equal(decodeResumptionToken(encodeResumptionToken(state, key), otherKey), null);
  }
  assert.equal(decodeResumptionToken(sign(body({}), otherKey), key), null);
});

test('correctly signed bodies that break the format or the ranges are refused', () => {
  const table: Array<[string, number[]]> = [
    ['version 0', [0, ...body({}).slice(1)]],
    ['version 2', [2, ...body({}).slice(1)]],
    ['unknown flag', body({ flags: 8 })],
    ['only the version', [1]],
    ['no prefix', body({ prefix: [] })],
    ['empty prefix', body({ prefix: text('') })],
    ['prefix longer than the body', body({ prefix: [50, 0x61] })],
    ['trailing byte', body({ tail: [0] })],
    ['set flag without a set', body({ flags: 2 })],
    ['empty set', body({ flags: 2, tail: text('') })],
    ['invalid UTF-8 in the prefix', body({ prefix: [2, 0xc3, 0x28] })],
    ['an encoded surrogate in the prefix', body({ prefix: [3, 0xed, 0xa0, 0x80] })],
    ['non-canonical varint', [1, 0, 0xe8, 0x87, 0x00, ...[500, 1, 0, 10].flatMap(varint), ...text('oai_dc')]],
    ['varint past 2^53', [1, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10, ...[500, 1, 0, 10].flatMap(varint), ...text('oai_dc')]],
    ['varint of nine bytes', [1, 0, 0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, ...[500, 1, 0, 10].flatMap(varint)]],
    ['cursor beyond completeListSize', body({ numbers: [500, 1, 11, 10] })],
    ['from later than until', body({ flags: 4, until: 1000, numbers: [1001, 500, 1, 0, 10] })],
    ['varint cut short', [1, 0, 0x80]],
  ];
  for (const [name, bytes] of table) assert.equal(decodeResumptionToken(sign(bytes), key), null, name);
  // The same checks let the same bodies through once repaired.
  assert.notEqual(decodeResumptionToken(sign(body({ numbers: [500, 1, 10, 10] })), key), null);
  assert.notEqual(decodeResumptionToken(sign(body({ flags: 4, until: 1000, numbers: [1000, 500, 1, 0, 10] })), key), null);
  assert.notEqual(decodeResumptionToken(sign(body({ flags: 2, tail: text('mime') })), key), null);
});

test('garbage of any kind gives null, never an exception', () => {
  const garbage: unknown[] = [
    '',
    '%00',
    '\u0000',
    '=',
    '====',
    'A',
    'AA',
    'AAAA',
    'A'.repeat(MAX_RESUMPTION_TOKEN_LENGTH),
    'A'.repeat(MAX_RESUMPTION_TOKEN_LENGTH + 1),
    'x'.repeat(1024 * 1024),
    '😀'.repeat(10),
    'a+b/c==',
    undefined,
    null,
    42,
    {},
    ['AQ'],
    Buffer.from('AQ'),
  ];
  for (let round = 0; round < 2000; round++) garbage.push(randomBytes(round % 300).toString('latin1'));
  for (let round = 0; round < 2000; round++) garbage.push(randomBytes(round % 300).toString('base64url'));
  for (const value of garbage) {
    assert.equal(decodeResumptionToken(value as string, key), null, typeof value === 'string' ? value.slice(0, 40) : String(value));
  }
  const token = encodeResumptionToken(typical, key);
  for (const badKey of [Buffer.alloc(0), Buffer.alloc(8), undefined, null, 'secret', 7]) {
    assert.equal(decodeResumptionToken(token, badKey as unknown as Buffer), null, String(badKey));
  }
});

test('a token longer than the limit is refused even when correctly signed', () => {
  const longSet = 'a'.repeat(800);
  const signed = sign(body({ flags: 2, tail: text(longSet) }));
  assert.ok(signed.length > MAX_RESUMPTION_TOKEN_LENGTH);
  assert.equal(decodeResumptionToken(signed, key), null);
  const fits = sign(body({ flags: 2, tail: text('a'.repeat(700)) }));
  assert.ok(fits.length <= MAX_RESUMPTION_TOKEN_LENGTH);
  assert.equal(decodeResumptionToken(fits, key)?.set, 'a'.repeat(700));
});

test('encoding refuses states that could not be decoded, and short keys', () => {
  const broken: Array<[string, ListState]> = [
    ['negative cursor', { ...typical, cursor: -1 }],
    ['fractional until', { ...typical, until: 1_700_000_000.5 }],
    ['unsafe id', { ...typical, after: { datestamp: 1, id: 2 ** 53 } }],
    ['negative from', { ...typical, from: -86_400 }],
    ['NaN datestamp', { ...typical, after: { datestamp: Number.NaN, id: 1 } }],
    ['from later than until', { ...typical, from: 2_000_000_000 }],
    ['cursor beyond completeListSize', { ...typical, cursor: 12_346 }],
    ['empty metadataPrefix', { ...typical, metadataPrefix: '' }],
    ['empty set', { ...typical, set: '' }],
    ['unpaired surrogate in set', { ...typical, set: 'a\ud800' }],
    ['verb', { ...typical, verb: 'ListSets' as ListState['verb'] }],
    ['too long for a token', { ...typical, set: 'a'.repeat(800) }],
  ];
  for (const [name, state] of broken) assert.throws(() => encodeResumptionToken(state, key), RangeError, name);
  assert.throws(() => encodeResumptionToken(typical, Buffer.alloc(15)), RangeError);
  assert.doesNotThrow(() => encodeResumptionToken(typical, Buffer.alloc(16)));
});
