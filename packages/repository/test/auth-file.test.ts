import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadAuthFile, parseAuthFile } from '../src/access/auth-file.ts';
import { isRepositoryError } from '../src/core/errors.ts';

// Syntactically valid hashes; parsing never runs scrypt, so these need no real password.
const HASH_A = '$scrypt$ln=15,r=8,p=1$c2FsdHNhbHRzYWx0c2FsdA$a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2U';
const HASH_B = '$scrypt$ln=16,r=8,p=2$YW5vdGhlcnNhbHQxMjM0NQ$b3RoZXJrZXlvdGhlcmtleW90aGVya2V5b3RoZXJrZQ';

function parseError(text: string): string {
  try {
    parseAuthFile(text, 'auth.conf');
  } catch (error) {
    assert.ok(isRepositoryError(error), `not a RepositoryError: ${String(error)}`);
    assert.equal(error.code, 'ERR_REPO_AUTH_FILE');
    return error.message;
  }
  assert.fail(`parsed without error:\n${text}`);
}

test('parses users and rules into the relative prefix form', () => {
  const config = parseAuthFile(
    [
      '\uFEFF# the staff auth file',
      `user alice ${HASH_A}`,
      `user\tbob   ${HASH_B}   # trailing comment`,
      '',
      '   ',
      'protect /private/        alice bob',
      'protect /staff/report.pdf bob',
      'protect /members/        *          # * = any valid user',
      'protect "/Annual Reports/" alice',
      'protect "/quo\\"te\\\\d/" bob',
      'protect /a#b.txt alice',
      'protect / alice',
    ].join('\r\n'),
    'auth.conf',
  );
  assert.deepEqual(
    [...config.users],
    [
      ['alice', HASH_A],
      ['bob', HASH_B],
    ],
  );
  assert.deepEqual(config.rules, [
    { prefix: 'private/', users: new Set(['alice', 'bob']) },
    { prefix: 'staff/report.pdf', users: new Set(['bob']) },
    { prefix: 'members/', users: 'any-user' },
    { prefix: 'Annual Reports/', users: new Set(['alice']) },
    { prefix: 'quo"te\\d/', users: new Set(['bob']) },
    { prefix: 'a#b.txt', users: new Set(['alice']) },
    { prefix: '', users: new Set(['alice']) },
  ]);
});

test('a protect line may name a user defined further down', () => {
  const config = parseAuthFile(`protect /x/ alice\nuser alice ${HASH_A}\n`, 'auth.conf');
  assert.deepEqual(config.rules, [{ prefix: 'x/', users: new Set(['alice']) }]);
});

test('user names are compared in NFC', () => {
  const composed = 'zo\u00eb';
  const decomposed = 'zoe\u0308';
  const config = parseAuthFile(`user ${decomposed} ${HASH_A}\nprotect /z/ ${composed}\n`, 'auth.conf');
  assert.deepEqual([...config.users.keys()], [composed]);
  assert.match(parseError(`user ${composed} ${HASH_A}\nuser ${decomposed} ${HASH_B}\n`), /^auth\.conf:2: user 'zoë' is already defined on line 1$/);
});

test('each mistake is reported with file and line', () => {
  const users = `user alice ${HASH_A}\nuser bob ${HASH_B}\n`;
  const cases: Array<[string, string]> = [
    [`${users}allow /x/ alice`, `auth.conf:3: unknown directive 'allow' (expected 'user' or 'protect')`],
    [`${users}User carol ${HASH_A}`, `auth.conf:3: unknown directive 'User' (expected 'user' or 'protect')`],
    [`\n\nuser carol secret`, `auth.conf:3: user 'carol' has no valid password hash (expected $scrypt$ln=…,r=…,p=…$salt$key)`],
    [`user carol`, `auth.conf:1: 'user' takes a name and a password hash, found 1 field(s)`],
    [`user carol ${HASH_A} extra`, `auth.conf:1: 'user' takes a name and a password hash, found 3 field(s)`],
    [`user carol ${HASH_A.replace('ln=15', 'ln=9')}`, `auth.conf:1: user 'carol' has no valid password hash (expected $scrypt$ln=…,r=…,p=…$salt$key)`],
    [`${users}# again\nuser alice ${HASH_B}`, `auth.conf:4: user 'alice' is already defined on line 1`],
    [`${users}protect /x/ alice carol`, `auth.conf:3: 'protect' names user 'carol', who has no 'user' line`],
    [`${users}protect x/ alice`, `auth.conf:3: prefix 'x/' must start with '/'`],
    [`${users}protect /a/../b/ alice`, `auth.conf:3: prefix '/a/../b/' contains a '..' segment`],
    [`${users}protect /a/.. alice`, `auth.conf:3: prefix '/a/..' contains a '..' segment`],
    [`${users}protect /./a alice`, `auth.conf:3: prefix '/./a' contains a '.' segment`],
    [`${users}protect /a//b alice`, `auth.conf:3: prefix '/a//b' contains an empty segment ('//')`],
    [`${users}protect /a\u0000b alice`, `auth.conf:3: prefix "/a\\u0000b" contains a NUL character`],
    [
      `${users}protect /Annual%20Reports/ alice`,
      `auth.conf:3: prefix '/Annual%20Reports/' looks percent-encoded; write the decoded path (quote it if it contains spaces)`,
    ],
    [`${users}protect /private/`, `auth.conf:3: 'protect /private/' names no users (use * for any valid user)`],
    [`${users}protect /private/ # alice`, `auth.conf:3: 'protect /private/' names no users (use * for any valid user)`],
    [`${users}protect`, `auth.conf:3: 'protect' needs a path prefix and the users allowed`],
    [`${users}protect /x/ alice *`, `auth.conf:3: '*' already allows every valid user; do not list names beside it`],
    [`user a:b ${HASH_A}`, `auth.conf:1: user name 'a:b' contains ':', which HTTP Basic credentials cannot carry`],
    [`user * ${HASH_A}`, `auth.conf:1: '*' is not a user name; it means any valid user in a 'protect' line`],
    [`${users}protect "/open alice`, `auth.conf:3: a quoted field has no closing quote`],
    [`${users}protect "/a"b alice`, `auth.conf:3: a closing quote must end its field`],
    [`${users}protect "/a\\n" alice`, `auth.conf:3: in a quoted field only \\" and \\\\ are escapes`],
  ];
  for (const [text, message] of cases) assert.equal(parseError(text), message, text);
});

test('loadAuthFile reads a real file and names it in errors', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'oaibag-auth-'));
  try {
    const good = join(dir, 'good.conf');
    await writeFile(good, `user alice ${HASH_A}\nprotect /private/ alice\n`);
    const config = await loadAuthFile(good);
    assert.deepEqual(config.rules, [{ prefix: 'private/', users: new Set(['alice']) }]);

    const bad = join(dir, 'bad.conf');
    await writeFile(bad, `user alice ${HASH_A}\nprotect private/ alice\n`);
    await assert.rejects(loadAuthFile(bad), { code: 'ERR_REPO_AUTH_FILE', message: `${bad}:2: prefix 'private/' must start with '/'` });

    const latin1 = join(dir, 'latin1.conf');
    await writeFile(latin1, Buffer.from(`user jos\u00e9 ${HASH_A}\n`, 'latin1'));
    await assert.rejects(loadAuthFile(latin1), { code: 'ERR_REPO_AUTH_FILE', message: `${latin1}: the auth file is not valid UTF-8` });

    const missing = join(dir, 'missing.conf');
    await assert.rejects(loadAuthFile(missing), { code: 'ERR_REPO_AUTH_FILE', message: `${missing}: cannot read the auth file (ENOENT)` });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
