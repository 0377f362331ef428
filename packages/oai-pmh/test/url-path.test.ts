import assert from 'node:assert/strict';
import { test } from 'node:test';
import { encodeUrlPath, identifierForPath, isAddressablePath, pathForIdentifier, pathForUrlPath, SiteMappingError } from '../src/index.ts';

const BASE = 'http://example.org/site';

test('encodeUrlPath encodes each segment like encodeURIComponent, upper-case hex, slashes kept', () => {
  const cases: [string, string][] = [
    ['index.html', 'index.html'],
    ['papers/a b+c%.txt', 'papers/a%20b%2Bc%25.txt'],
    ['caf\u00e9.txt', 'caf%C3%A9.txt'],
    ['\u65e5\u672c/\u8a9e.pdf', '%E6%97%A5%E6%9C%AC/%E8%AA%9E.pdf'],
    ['q&a#1?.html', 'q%26a%231%3F.html'],
    ["keep!*'()~-_.txt", "keep!*'()~-_.txt"],
    ['semi;colon=eq,comma:colon@at$.txt', 'semi%3Bcolon%3Deq%2Ccomma%3Acolon%40at%24.txt'],
    ['emoji\u{1F600}.png', 'emoji%F0%9F%98%80.png'],
  ];
  for (const [relPath, encoded] of cases) assert.equal(encodeUrlPath(relPath), encoded, relPath);
});

test('encodeUrlPath refuses a path with a lone surrogate (it has no UTF-8 form)', () => {
  assert.throws(
    () => encodeUrlPath('bad\ud800.txt'),
    (error: unknown) => error instanceof SiteMappingError && error.code === 'ERR_SITE_MAPPING' && error.message.includes('bad'),
  );
});

test('identifierForPath joins the base URL, with or without its trailing slash', () => {
  assert.equal(identifierForPath(BASE, 'papers/a b.txt'), 'http://example.org/site/papers/a%20b.txt');
  assert.equal(identifierForPath(`${BASE}/`, 'papers/a b.txt'), 'http://example.org/site/papers/a%20b.txt');
  assert.equal(identifierForPath('http://example.org', 'x'), 'http://example.org/x');
});

test('pathForUrlPath decodes awkward but legitimate names', () => {
  const cases: [string, string][] = [
    ['papers/a%20b%2Bc%25.txt', 'papers/a b+c%.txt'],
    ['caf%C3%A9.txt', 'caf\u00e9.txt'],
    ['caf%c3%a9.txt', 'caf\u00e9.txt'],
    ['%E6%97%A5%E6%9C%AC/%E8%AA%9E.pdf', '\u65e5\u672c/\u8a9e.pdf'],
    ['q%26a%231%3F.html', 'q&a#1?.html'],
    ['%41.txt', 'A.txt'],
    ['a+b.txt', 'a+b.txt'],
    ['~user/x', '~user/x'],
    ['a&b=c;d', 'a&b=c;d'],
    ['...', '...'],
    ['..a/a..', '..a/a..'],
    ['.well-known/x', '.well-known/x'],
    ['%EF%BB%BFbom.txt', '\ufeffbom.txt'],
    ['emoji%F0%9F%98%80.png', 'emoji\u{1F600}.png'],
  ];
  for (const [encoded, relPath] of cases) assert.equal(pathForUrlPath(encoded), relPath, encoded);
});

test('pathForUrlPath returns null for every hostile or malformed form', () => {
  const hostile: [string, string][] = [
    ['', 'empty'],
    ['a%', 'truncated escape'],
    ['a%4', 'truncated escape'],
    ['a%G1', 'non-hex escape'],
    ['a%%41', 'percent before escape'],
    ['%C3', 'truncated UTF-8'],
    ['%C3%28', 'invalid continuation byte'],
    ['%FF.txt', 'byte never in UTF-8'],
    ['%C0%AF', 'overlong /'],
    ['%C0%AE%C0%AE/x', 'overlong ..'],
    ['%ED%A0%80', 'UTF-8 encoded surrogate'],
    ['%F4%90%80%80', 'beyond U+10FFFF'],
    ['a%00b', 'NUL'],
    ['a%0Ab', 'line feed'],
    ['a%0db', 'carriage return'],
    ['a%1Fb', 'unit separator'],
    ['a%7Fb', 'DEL'],
    ['a\u0000b', 'raw NUL'],
    ['a\tb', 'raw tab'],
    ['a\u007fb', 'raw DEL'],
    ['a b', 'raw space'],
    ['caf\u00e9', 'raw non-ASCII'],
    ['a\\b', 'raw backslash'],
    ['a%5Cb', 'encoded backslash'],
    ['a%5cb', 'encoded backslash, lower-case'],
    ['..%5C..%5Cetc', 'encoded backslash traversal'],
    ['a%2Fb', 'encoded slash'],
    ['a%2fb', 'encoded slash, lower-case'],
    ['..%2F..%2Fetc%2Fpasswd', 'encoded slash traversal'],
    ['a//b', 'empty segment'],
    ['/a', 'leading slash'],
    ['a/', 'trailing slash'],
    ['/', 'only a slash'],
    ['.', 'dot'],
    ['..', 'dot dot'],
    ['a/./b', 'dot segment'],
    ['a/../b', 'dot-dot segment'],
    ['../etc/passwd', 'traversal'],
    ['%2e', 'encoded dot'],
    ['%2e%2e', 'encoded dot dot'],
    ['%2E%2E/x', 'encoded dot dot, upper-case'],
    ['.%2E', 'half-encoded dot dot'],
    ['%2e.', 'half-encoded dot dot'],
    ['a/%2e%2e/b', 'encoded dot dot inside'],
    ['a?b', 'raw question mark (query not removed)'],
    ['a#b', 'raw hash (fragment)'],
    ['x'.repeat(256), 'segment of 256 bytes'],
    ['%C3%A9'.repeat(128), 'segment of 256 UTF-8 bytes'],
    [Array.from({ length: 20 }, () => 'y'.repeat(205)).join('/'), 'path of 4119 bytes'],
    ['%41'.repeat(5000), 'very long input'],
  ];
  for (const [encoded, why] of hostile) {
    assert.equal(pathForUrlPath(encoded), null, `${why}: ${JSON.stringify(encoded.slice(0, 60))}`);
  }
});

test('pathForUrlPath accepts names exactly at the length limits', () => {
  const segment255 = 'x'.repeat(255);
  assert.equal(pathForUrlPath(segment255), segment255);
  const utf8Segment254 = '%C3%A9'.repeat(127);
  assert.equal(pathForUrlPath(utf8Segment254), '\u00e9'.repeat(127));
  // 15 segments of 255 bytes, one of 254, one of 1, and 16 slashes: 4096 bytes.
  const segments = [...Array.from({ length: 15 }, () => 'z'.repeat(255)), 'z'.repeat(254), 'q'];
  const path4096 = segments.join('/');
  assert.equal(Buffer.byteLength(path4096), 4096);
  assert.equal(pathForUrlPath(path4096), path4096);
  assert.equal(pathForUrlPath(`${path4096}q`), null);
  assert.equal(pathForUrlPath(`${path4096.slice(0, -1)}%C3%A9`), null, 'one character, two bytes, over the limit');
});

test('a 200-byte name round-trips through its identifier', () => {
  const name = `${'\u00e9'.repeat(60)}${'a b+'.repeat(19)}.txt`;
  assert.equal(Buffer.byteLength(name), 200);
  const identifier = identifierForPath(BASE, `deep/dir/${name}`);
  assert.equal(pathForIdentifier(BASE, identifier), `deep/dir/${name}`);
});

test('pathForIdentifier maps back only the canonical identifier', () => {
  assert.equal(pathForIdentifier(BASE, `${BASE}/papers/a%20b%2Bc%25.txt`), 'papers/a b+c%.txt');
  assert.equal(pathForIdentifier(`${BASE}/`, `${BASE}/x.txt`), 'x.txt');
  const refused: [string, string][] = [
    [`${BASE}/%41.txt`, 'needless escape'],
    [`${BASE}/caf%c3%a9.txt`, 'lower-case hex'],
    [`${BASE}/a+b.txt`, 'raw plus'],
    [`${BASE}/a&b.txt`, 'raw ampersand'],
    [`${BASE}/%7Euser`, 'escaped tilde'],
    [`${BASE}/x.txt?a=1`, 'query'],
    [`${BASE}/x.txt#top`, 'fragment'],
    [`${BASE}/x%3F.txt?`, 'empty query'],
    [`${BASE}/`, 'no path'],
    [`${BASE}`, 'the base itself'],
    [`${BASE}x/y.txt`, 'base is only a prefix of a segment'],
    [`${BASE}//x.txt`, 'double slash'],
    [`${BASE}/../x.txt`, 'traversal'],
    [`${BASE}/a%2Fb`, 'encoded slash'],
    ['https://example.org/site/x.txt', 'other scheme'],
    ['http://EXAMPLE.org/site/x.txt', 'other host spelling'],
    ['x.txt', 'relative'],
  ];
  for (const [identifier, why] of refused) assert.equal(pathForIdentifier(BASE, identifier), null, `${why}: ${identifier}`);
});

test('isAddressablePath tells which names can be reached by URL', () => {
  assert.equal(isAddressablePath('papers/a b+c%.txt'), true);
  assert.equal(isAddressablePath('\u65e5\u672c.txt'), true);
  assert.equal(isAddressablePath('line\nbreak.txt'), false);
  assert.equal(isAddressablePath('back\\slash.txt'), false);
  assert.equal(isAddressablePath('x'.repeat(256)), false);
  assert.equal(isAddressablePath('lone\ud800'), false);
  assert.equal(isAddressablePath('a/../b'), false);
});

/** A deterministic generator (xorshift32), so a failure reproduces. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 0x1_0000_0000;
  };
}

const ALPHABET = Array.from('aZ09 -_.!~*\'()+%&#?;=,:@$[]{}|^`"<>\u00e9\u00df\u00ff\u0100\u2013\u65e5\u672c\u8a9e\ufeff\u{1F600}\u{10FFFF}');

test('every generated name round-trips: path -> identifier -> path, and identifier is a fixed point', () => {
  const next = random(0x5eed);
  for (let n = 0; n < 3000; n++) {
    const segmentCount = 1 + Math.floor(next() * 4);
    const segments: string[] = [];
    for (let s = 0; s < segmentCount; s++) {
      let segment = '';
      const length = 1 + Math.floor(next() * 12);
      for (let c = 0; c < length; c++) segment += ALPHABET[Math.floor(next() * ALPHABET.length)];
      if (segment === '.' || segment === '..') segment += 'x';
      segments.push(segment);
    }
    const relPath = segments.join('/');
    const encoded = encodeUrlPath(relPath);
    assert.match(encoded, /^[A-Za-z0-9\-_.!~*'()%/]+$/, relPath);
    assert.equal(pathForUrlPath(encoded), relPath, relPath);
    const identifier = identifierForPath(BASE, relPath);
    assert.equal(pathForIdentifier(BASE, identifier), relPath, relPath);
    assert.equal(identifierForPath(BASE, pathForIdentifier(BASE, identifier) ?? ''), identifier);
    assert.equal(isAddressablePath(relPath), true, relPath);
  }
});

test('every single byte, escaped, either decodes to itself or is refused', () => {
  for (let byte = 0; byte < 256; byte++) {
    const hex = byte.toString(16).toUpperCase().padStart(2, '0');
    const result = pathForUrlPath(`a%${hex}b`);
    const forbidden = byte < 0x20 || byte === 0x7f || byte === 0x2f || byte === 0x5c || byte >= 0x80;
    assert.equal(result, forbidden ? null : `a${String.fromCharCode(byte)}b`, `%${hex}`);
  }
});
