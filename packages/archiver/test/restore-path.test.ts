import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeSegment, findCollisions, hostFolder, INDEX_FILE_NAME, restorePathFor } from '../src/aip/restore-path.ts';

test('URLs map to their percent-decoded path, segment by segment', () => {
  const table: Array<[url: string, path: string]> = [
    ['http://h/index.html', 'index.html'],
    ['http://h/papers/a%20b.txt', 'papers/a b.txt'],
    ['https://h/caf%C3%A9/na%C3%AFve%20r%C3%A9sum%C3%A9.txt', 'café/naïve résumé.txt'],
    ['http://h/a/b/c.bin', 'a/b/c.bin'],
    ['http://h/dir/', `dir/${INDEX_FILE_NAME}`],
    ['http://h/', INDEX_FILE_NAME],
    ['http://h', INDEX_FILE_NAME],
    ['HTTP://H:8080/x', 'x'],
    ['http://h/%41.txt', 'A.txt'],
    ['http://h/a+b&c=d~e', 'a+b&c=d~e'],
    ['http://h/100%25.txt', '100%.txt'],
    ['http://h/%EF%BB%BFbom', '\ufeffbom'],
    ['http://user:pw@h/x', 'x'],
    ['http://h/..a/a..', '..a/a..'],
    ['http://h/%2e%2e%2e', '...'],
  ];
  for (const [url, path] of table) {
    const result = restorePathFor(url);
    assert.ok(result.ok, `${url}: ${result.ok ? '' : result.reason}`);
    assert.equal(result.path, path, url);
    assert.deepEqual(result.segments, path.split('/'), url);
  }
});

test('with several sources each URL goes below a folder named after its host and port', () => {
  const table: Array<[url: string, path: string]> = [
    ['http://Example.org/a.txt', 'example.org/a.txt'],
    ['http://example.org:80/a.txt', 'example.org/a.txt'],
    ['https://example.org:443/a.txt', 'example.org/a.txt'],
    ['http://127.0.0.1:8080/a/b', '127.0.0.1_8080/a/b'],
    ['http://[::1]:8080/', `__1_8080/${INDEX_FILE_NAME}`],
    ['http://bücher.example/x', 'xn--bcher-kva.example/x'],
  ];
  for (const [url, path] of table) {
    const result = restorePathFor(url, { withHost: true });
    assert.ok(result.ok, url);
    assert.equal(result.path, path, url);
  }
  assert.equal(hostFolder('http', ''), undefined);
});

test('hostile URLs are refused with a reason, never rewritten into another path', () => {
  const table: Array<[url: string, reason: RegExp]> = [
    ['http://h/../../etc/x', /"\.\." segment/],
    ['http://h/a/../b', /"\.\." segment/],
    ['http://h/./a', /"\." segment/],
    ['http://h/%2e%2e/x', /"\.\." segment/],
    ['http://h/%2E%2E/x', /"\.\." segment/],
    ['http://h/.%2e/x', /"\.\." segment/],
    ['http://h/%2e/x', /"\." segment/],
    ['http://h/a%2F..%2F..%2Fx', /encoded "\/"/],
    ['http://h/a%2fb', /encoded "\/"/],
    ['http://h/a%5C..%5Cb', /encoded "\\"/],
    ['http://h/a\\..\\b', /backslash/],
    ['http://h\\..\\x/y', /backslash/],
    ['http://h/a%00b', /NUL or control/],
    ['http://h/a%0Ab', /NUL or control/],
    ['http://h/a%7Fb', /NUL or control/],
    ['http://h/a\nb', /control character/],
    ['http://h/a//b', /empty path segment/],
    ['http://h//etc/passwd', /empty path segment/],
    ['file:///etc/passwd', /not http or https/],
    ['ftp://h/x', /not http or https/],
    ['oai:example.org:1', /not an absolute URL/],
    ['/etc/passwd', /not an absolute URL/],
    ['http://h/x?y=1', /query/],
    ['http://h/x#top', /fragment/],
    ['http://h/%zz', /malformed/],
    ['http://h/a%', /malformed/],
    ['http://h/%C3', /non-UTF-8/],
    ['http://h/%FF%FE', /non-UTF-8/],
    ['http://h/%ED%A0%80', /non-UTF-8/], // an encoded lone surrogate
    [`http://h/${'x'.repeat(256)}`, /longer than 255 bytes/],
    ['http://:80/x', /no usable host/],
  ];
  for (const [url, reason] of table) {
    const result = restorePathFor(url);
    assert.equal(result.ok, false, `${JSON.stringify(url)} must be refused`);
    if (!result.ok) assert.match(result.reason, reason, url);
  }
});

test('decodeSegment decodes UTF-8 escapes and refuses what is not UTF-8', () => {
  assert.equal(decodeSegment('a%20b'), 'a b');
  assert.equal(decodeSegment('%c3%a9'), 'é');
  assert.equal(decodeSegment('é%20'), 'é ');
  assert.equal(decodeSegment('%g0'), undefined);
  assert.equal(decodeSegment('%80'), undefined);
});

test('collisions: the same path twice, or a file where another needs a folder', () => {
  const table: Array<[paths: string[], lost: Array<[number, number]>]> = [
    [['a', 'b', 'c/d'], []],
    [['a', 'a/b'], [[1, 0]]],
    [['a/b', 'a'], [[1, 0]]],
    [['a/index.html', 'a/index.html'], [[1, 0]]],
    [
      ['x/y/z', 'x/y', 'x'],
      [
        [1, 0],
        [2, 0],
      ],
    ],
    [['ab', 'a/b', 'a'], [[2, 1]]],
    [['a/b', 'a/c', 'a/b/c'], [[2, 0]]],
  ];
  for (const [paths, lost] of table) {
    assert.deepEqual([...findCollisions(paths)], lost, JSON.stringify(paths));
  }
});
