// urls/list-changed-urls.ts: which identifiers a crawler may take as URLs (test/urls.test.ts
// lists the changed URLs of a real repository).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isCrawlableUrl } from '../src/urls/list-changed-urls.ts';

test('only http(s) identifiers on one line count as URLs', () => {
  assert.equal(isCrawlableUrl('https://example.org/a%20b.txt'), true);
  assert.equal(isCrawlableUrl('HTTP://example.org/'), true);
  assert.equal(isCrawlableUrl('oai:example.org:123'), false);
  assert.equal(isCrawlableUrl('ftp://example.org/file'), false);
  assert.equal(isCrawlableUrl('https://example.org/a\nhttps://evil.example/'), false);
  assert.equal(isCrawlableUrl('https://example.org/a b'), false);
});
