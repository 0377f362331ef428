// core/http-url.ts: which values are absolute http(s) URLs every command and the library take
// (test/fail-fast.test.ts checks the commands' usage lines and the library's coded errors).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { httpUrlProblem } from '../src/core/http-url.ts';

test('an absolute http(s) URL with a host, nothing trimmed, no credentials; no fragment where paths are appended', () => {
  const table: [string, boolean][] = [
    ['https://example.org/oai', true],
    ['HTTP://Example.org:8080/oai?x=1', true],
    ['http://[::1]:8080/oai', true],
    ['https://example.org/oai ', false],
    [' https://example.org/oai', false],
    ['https://exa mple.org/oai', false],
    ['https://example.org:99999/oai', false],
    ['https:///oai', true], // WHATWG: the host is "oai"; the name then does not resolve (exit 3)
    ['', false],
    ['//example.org/oai', false],
    ['https://user@example.org/oai', false],
  ];
  for (const [value, ok] of table) assert.equal(httpUrlProblem(value) === undefined, ok, JSON.stringify(value));
  assert.notEqual(httpUrlProblem('https://example.org/x#y', { pathOnly: true }), undefined);
});
