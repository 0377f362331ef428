// The mapping of a site's files to records is @oaibag/oai-pmh's (tested there); what it refuses
// reaches the repository's callers with the repository's codes (docs/repository.md):
// ERR_REPO_OPTIONS for an option, before anything is written; ERR_REPO_PATH for a path.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { createRepository, encodeUrlPath, identifierForPath, isRepositoryError, type RepositoryOptions } from '../src/index.ts';
import { tempDir } from './repository-helpers.ts';

test('encodeUrlPath and identifierForPath refuse a path with a lone surrogate as ERR_REPO_PATH', () => {
  for (const map of [() => encodeUrlPath('bad\ud800.txt'), () => identifierForPath('http://example.org/site', 'bad\ud800.txt')]) {
    assert.throws(map, (error: unknown) => isRepositoryError(error) && error.code === 'ERR_REPO_PATH' && error.message.includes('bad'));
  }
  assert.equal(identifierForPath('http://example.org/site/', 'papers/a b.txt'), 'http://example.org/site/papers/a%20b.txt');
});

test('a bad --exclude, --run-extensions or --base-url is ERR_REPO_OPTIONS naming the value, and leaves no index', async () => {
  const dir = tempDir();
  try {
    const root = join(dir.path, 'site');
    mkdirSync(root);
    const index = join(dir.path, 'index.sqlite');
    const cases: [Partial<RepositoryOptions>, string, hint: boolean][] = [
      ...['[abc', 'a[', '[!', '[]', 'x\\', '[z-a]'].map((pattern): [Partial<RepositoryOptions>, string, boolean] => [
        { excludes: ['ok', pattern] },
        `invalid glob pattern ${JSON.stringify(pattern)}`,
        true,
      ]),
      [{ excludes: [''] }, 'invalid exclude pattern "": it names no file', false],
      [{ excludes: ['/'] }, 'invalid exclude pattern "/": it names no file', false],
      [{ runExtensions: ['.'] }, 'invalid run extension "."', false],
      [{ runExtensions: ['tar.gz'] }, 'invalid run extension "tar.gz"', false],
      [{ baseUrl: 'example.org/site' }, '--base-url "example.org/site" is not a URL', false],
      [{ baseUrl: 'ftp://example.org/' }, '--base-url "ftp://example.org/" must be an http or https URL without query, fragment or credentials', false],
      [{ baseUrl: 'https://user:pw@example.org/' }, '--base-url "https://user:pw@example.org/" must be an http or https URL', false],
    ];
    for (const [options, message, hint] of cases) {
      await assert.rejects(
        createRepository({ root, index, watch: false, rescanSeconds: 0, ...options }),
        (error: unknown) =>
          isRepositoryError(error) && error.code === 'ERR_REPO_OPTIONS' && error.message.startsWith(message) && (error.hint !== undefined) === hint,
        message,
      );
      assert.equal(existsSync(index), false, message);
    }
  } finally {
    dir.cleanup();
  }
});
