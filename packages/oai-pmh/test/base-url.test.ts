// A site's base URL, the one form identifiers are made from by oaibag-repository and oaibag import alike.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { identifierForPath, normalizeBaseUrl, SiteMappingError } from '../src/index.ts';

test('normalizeBaseUrl: lower-case scheme and host, no default port, no trailing slash', () => {
  const cases: [string, string][] = [
    ['https://example.org/site/', 'https://example.org/site'],
    ['HTTPS://Example.ORG:443/site', 'https://example.org/site'],
    ['http://example.org:80/', 'http://example.org'],
    ['http://example.org:8080//', 'http://example.org:8080'],
    ['http://127.0.0.1:1234', 'http://127.0.0.1:1234'],
    ['http://[::1]:8080/a/b/', 'http://[::1]:8080/a/b'],
    ['https://example.org/Caf%C3%A9/', 'https://example.org/Caf%C3%A9'],
  ];
  for (const [value, normalized] of cases) assert.equal(normalizeBaseUrl(value), normalized, value);
  assert.equal(identifierForPath(normalizeBaseUrl('HTTP://Example.org:80/'), 'a b.txt'), 'http://example.org/a%20b.txt');
});

test('normalizeBaseUrl refuses what is not an http(s) URL without query, fragment or credentials, quoting it', () => {
  for (const value of [
    '',
    'example.org',
    '/site',
    'ftp://example.org/',
    'file:///srv/www',
    'https://example.org/?a=1',
    'https://example.org/#top',
    'https://u:p@example.org/',
    'https://u@example.org/',
  ]) {
    assert.throws(
      () => normalizeBaseUrl(value),
      (error: unknown) => error instanceof SiteMappingError && error.code === 'ERR_SITE_MAPPING' && error.message.startsWith(JSON.stringify(value)),
      value,
    );
  }
});
