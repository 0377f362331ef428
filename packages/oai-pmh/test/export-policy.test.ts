import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createExportPolicy, DEFAULT_EXCLUDES, DEFAULT_RUN_EXTENSIONS, type ExclusionReason, SiteMappingError } from '../src/index.ts';
import { compileGlob } from '../src/site/glob.ts';

test('compileGlob: each construct, matched against the whole subject', () => {
  const table: [pattern: string, subject: string, matches: boolean][] = [
    ['*.txt', 'a.txt', true],
    ['*.txt', '.txt', true],
    ['*.txt', 'a.txt.bak', false],
    ['*.txt', 'dir/a.txt', false],
    ['*', '', true],
    ['*', 'a/b', false],
    ['a*b', 'ab', true],
    ['a*b', 'a-x-b', true],
    ['**', 'a/b/c', true],
    ['a/**', 'a/b/c', true],
    ['a/**', 'a', false],
    ['**/x', 'x', true],
    ['**/x', 'a/b/x', true],
    ['**/x', 'a/bx', false],
    ['a/**/b', 'a/b', true],
    ['a/**/b', 'a/x/y/b', true],
    ['a/**/b', 'ab', false],
    ['a**b', 'a/x/b', true],
    ['?.txt', 'a.txt', true],
    ['?.txt', 'ab.txt', false],
    ['?.txt', '\u65e5.txt', true],
    ['?.txt', '\u{1F600}.txt', true],
    ['a?b', 'a/b', false],
    ['[abc].txt', 'b.txt', true],
    ['[abc].txt', 'd.txt', false],
    ['[a-c].txt', 'c.txt', true],
    ['[a-c].txt', 'C.txt', false],
    ['[!a-c].txt', 'd.txt', true],
    ['[!a-c].txt', 'a.txt', false],
    ['[^a-c].txt', 'a.txt', false],
    ['[!a-c]', '/', false],
    ['a[!x]b', 'a/b', false],
    ['[!-0]', '/', false],
    ['a[--0]b', 'a/b', false],
    ['a[--0]b', 'a.b', true],
    ['a[\\/]b', 'a/b', false],
    ['[]]', ']', true],
    ['[!]]', 'a', true],
    ['[!]]', ']', false],
    ['[a-]', '-', true],
    ['[a-]', 'b', false],
    ['[\\]]', ']', true],
    ['[.]', 'x', false],
    ['[*]', '*', true],
    ['[*]', 'x', false],
    ['\\*', '*', true],
    ['\\*', 'x', false],
    ['\\?', '?', true],
    ['\\[x]', '[x]', true],
    ['a.b', 'a.b', true],
    ['a.b', 'axb', false],
    ['(a)+{1}|$^', '(a)+{1}|$^', true],
    ['a-b', 'a-b', true],
    ['#*#', '#draft#', true],
    ['*~', 'notes.txt~', true],
    ['*.swp', 'a.SWP', false],
    ['Makefile', 'makefile', false],
  ];
  for (const [pattern, subject, expected] of table) {
    assert.equal(compileGlob(pattern)(subject), expected, `${pattern} on ${subject}`);
  }
});

test('compileGlob throws SiteMappingError naming a bad pattern, with a hint', () => {
  for (const pattern of ['[abc', 'a[', '[!', '[]', 'x\\', '[z-a]', '']) {
    assert.throws(
      () => compileGlob(pattern),
      (error: unknown) =>
        error instanceof SiteMappingError && error.code === 'ERR_SITE_MAPPING' && error.message.includes(JSON.stringify(pattern)) && error.hint !== undefined,
      pattern,
    );
  }
});

test('the defaults are the documented ones', () => {
  assert.deepEqual([...DEFAULT_EXCLUDES], ['*~', '#*#', '*.swp', '*.bak']);
  for (const extension of ['php', 'phtml', 'phar', 'cgi', 'pl', 'shtml', 'jsp', 'aspx', 'cfm']) {
    assert.ok(DEFAULT_RUN_EXTENSIONS.includes(extension), extension);
  }
});

test('default policy: a table of paths and their reasons', () => {
  const policy = createExportPolicy({ reservedRootNames: ['oai'] });
  const table: [string, ExclusionReason | null][] = [
    ['index.html', null],
    ['papers/a b+c%.txt', null],
    ['\u65e5\u672c/\u8a9e.pdf', null],
    ['.htaccess', 'hidden'],
    ['.git/config', 'hidden'],
    ['a/.git/objects/ab/cdef', 'hidden'],
    ['a/b/.secret/c/d.txt', 'hidden'],
    ['a/b/.hidden.txt', 'hidden'],
    ['.oaibag/index.sqlite', 'hidden'],
    ['.well-known/security.txt', 'hidden'],
    ['a.b/c.d', null],
    ['oai', 'reserved'],
    ['oai/x.html', 'reserved'],
    ['oai.html', null],
    ['OAI', null],
    ['docs/oai', null],
    ['notes.txt~', 'excluded'],
    ['dir~/file.txt', 'excluded'],
    ['#draft#', 'excluded'],
    ['a/#draft.html#', 'excluded'],
    ['#notclosed', null],
    ['x.swp', 'excluded'],
    ['a.SWP', null],
    ['x.bak', 'excluded'],
    ['x.bak.txt', null],
    ['index.php', 'runs-on-server'],
    ['x.PHP', 'runs-on-server'],
    ['x.Php5', 'runs-on-server'],
    ['x.txt.php', 'runs-on-server'],
    ['x.php.txt', null],
    ['cgi-bin/run.cgi', 'runs-on-server'],
    ['a/b/page.aspx', 'runs-on-server'],
    ['page.shtml', 'runs-on-server'],
    ['php', null],
    ['dir.php/readme.txt', null],
    ['x.phps', null],
    ['.x.php', 'hidden'],
    ['oai/x.php', 'reserved'],
    ['x.php~', 'excluded'],
  ];
  for (const [path, reason] of table) assert.equal(policy.excludedReason(path), reason, path);
});

test('user globs: without "/" per segment, with "/" on the path and its ancestors', () => {
  const policy = createExportPolicy({
    excludes: ['drafts', '*.tmp', 'papers/private', '/top.txt', 'cache/', 'logs/**/*.log', '**/secret-[0-9]*', 'v[!0-9]*.txt'],
  });
  const table: [string, ExclusionReason | null][] = [
    ['drafts', 'excluded'],
    ['drafts/a.html', 'excluded'],
    ['a/drafts/b/c.html', 'excluded'],
    ['drafts.html', null],
    ['my-drafts/a.html', null],
    ['x.tmp', 'excluded'],
    ['a/b/x.tmp', 'excluded'],
    ['x.tmp/y', 'excluded'],
    ['papers/private', 'excluded'],
    ['papers/private/a.pdf', 'excluded'],
    ['papers/private/deep/a.pdf', 'excluded'],
    ['papers/public/a.pdf', null],
    ['old/papers/private/a.pdf', null],
    ['private/a.pdf', null],
    ['top.txt', 'excluded'],
    ['a/top.txt', null],
    ['cache', 'excluded'],
    ['a/cache/x', 'excluded'],
    ['logs/a.log', 'excluded'],
    ['logs/2024/01/a.log', 'excluded'],
    ['logs/a.txt', null],
    ['other/logs/a.log', null],
    ['secret-1.txt', 'excluded'],
    ['a/b/secret-2', 'excluded'],
    ['a/b/secret-x', null],
    ['vx.txt', 'excluded'],
    ['v1.txt', null],
    // The defaults still hold next to the user's globs.
    ['notes~', 'excluded'],
    ['drafts/.hidden', 'hidden'],
    ['x.php', 'runs-on-server'],
  ];
  for (const [path, reason] of table) assert.equal(policy.excludedReason(path), reason, path);
});

test('excludedDirectoryReason prunes by name and path rules, not by extension', () => {
  const policy = createExportPolicy({ excludes: ['drafts', 'papers/private'], reservedRootNames: ['oai', 'static'] });
  const table: [string, ExclusionReason | null][] = [
    ['', null],
    ['a', null],
    ['a/b', null],
    ['.git', 'hidden'],
    ['a/.svn', 'hidden'],
    ['a/.b/c', 'hidden'],
    ['oai', 'reserved'],
    ['static', 'reserved'],
    ['static/img', 'reserved'],
    ['a/oai', null],
    ['drafts', 'excluded'],
    ['a/drafts', 'excluded'],
    ['backup~', 'excluded'],
    ['papers/private', 'excluded'],
    ['papers/private/x', 'excluded'],
    ['papers', null],
    ['site.php', null],
    ['cgi-bin', null],
  ];
  for (const [path, reason] of table) assert.equal(policy.excludedDirectoryReason(path), reason, path);
});

test('runExtensions replace the defaults; case and dot do not matter', () => {
  const policy = createExportPolicy({ runExtensions: ['.PY', 'rb'] });
  assert.equal(policy.excludedReason('x.py'), 'runs-on-server');
  assert.equal(policy.excludedReason('x.Py'), 'runs-on-server');
  assert.equal(policy.excludedReason('a/x.rb'), 'runs-on-server');
  assert.equal(policy.excludedReason('x.php'), null);
  assert.equal(createExportPolicy({ runExtensions: [] }).excludedReason('x.php'), null);
  assert.equal(createExportPolicy({ excludes: [] }).excludedReason('x.php'), 'runs-on-server');
});

test('hidden cannot be switched off', () => {
  const policy = createExportPolicy({ excludes: [], runExtensions: [], reservedRootNames: [] });
  assert.equal(policy.excludedReason('.htaccess'), 'hidden');
  assert.equal(policy.excludedReason('a/.git/HEAD'), 'hidden');
  assert.equal(policy.excludedReason('a/b'), null);
});

test('bad options throw SiteMappingError naming the value', () => {
  const cases: [Parameters<typeof createExportPolicy>[0], string][] = [
    [{ excludes: ['ok', '[unclosed'] }, '"[unclosed"'],
    [{ excludes: ['/'] }, '"/"'],
    [{ runExtensions: ['.'] }, '"."'],
    [{ runExtensions: ['tar.gz'] }, '"tar.gz"'],
    [{ reservedRootNames: ['a/b'] }, '"a/b"'],
    [{ reservedRootNames: [''] }, '""'],
  ];
  for (const [options, named] of cases) {
    assert.throws(
      () => createExportPolicy(options),
      (error: unknown) => error instanceof SiteMappingError && error.code === 'ERR_SITE_MAPPING' && error.message.includes(named),
      named,
    );
  }
});

test('describe lists one line per rule, in the order they apply', () => {
  const lines = createExportPolicy({ excludes: ['drafts', 'papers/private'], runExtensions: ['php', 'CGI'], reservedRootNames: ['oai'] }).describe();
  assert.deepEqual(lines, [
    "hidden: any path segment starting with '.' (always)",
    'reserved: root names oai',
    'excluded: *~ (any path segment)',
    'excluded: #*# (any path segment)',
    'excluded: *.swp (any path segment)',
    'excluded: *.bak (any path segment)',
    'excluded: drafts (any path segment)',
    'excluded: papers/private (path from the root)',
    'runs-on-server: extensions .php .cgi',
  ]);
  const bare = createExportPolicy({ excludes: [], runExtensions: [] }).describe();
  assert.equal(bare.length, 1 + DEFAULT_EXCLUDES.length);
});
