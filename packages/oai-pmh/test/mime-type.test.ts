// The MIME type by a file's name, as oaibag-repository serves it and oaibag import records it;
// that each has a valid, reversible set spec is tested with the repository's sets (set-spec.test.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mimeTypeForPath } from '../src/index.ts';

test('mimeTypeForPath: from the final extension, lower case, octet-stream otherwise', () => {
  const table: [string, string][] = [
    ['index.html', 'text/html'],
    ['old/page.htm', 'text/html'],
    ['PAGE.HTML', 'text/html'],
    ['notes.txt', 'text/plain'],
    ['papers/a b.pdf', 'application/pdf'],
    ['img/logo.png', 'image/png'],
    ['img/logo.svg', 'image/svg+xml'],
    ['dist/src.tar.gz', 'application/gzip'],
    ['README', 'application/octet-stream'],
    ['docs/Makefile', 'application/octet-stream'],
    ['pdf', 'application/octet-stream'],
    ['dir.pdf/README', 'application/octet-stream'],
    ['.profile', 'application/octet-stream'],
    ['a/.html', 'application/octet-stream'],
    ['trailing.', 'application/octet-stream'],
    ['x.no-such-extension', 'application/octet-stream'],
  ];
  for (const [path, mimeType] of table) assert.equal(mimeTypeForPath(path), mimeType, path);
});
