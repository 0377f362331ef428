import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { AccessControl, challengeHeader, isUnderPrefix, parseBasicCredentials, type Viewer } from '../src/access/access-control.ts';
import { type AuthConfig, parseAuthFile } from '../src/access/auth-file.ts';
import { hashPassword, isPasswordHash, verifyPassword } from '../src/access/password-hash.ts';

// Three real scrypt hashes for the whole file (about 100 ms each).
const PASSWORDS = { alice: 'correct horse', bob: 'b:o:b', 'zo\u00eb': 'cr\u00e8me br\u00fbl\u00e9e' } as const;
let hashes: Record<keyof typeof PASSWORDS, string>;
let config: AuthConfig;

before(async () => {
  hashes = {
    alice: await hashPassword(PASSWORDS.alice),
    bob: await hashPassword(PASSWORDS.bob),
    'zo\u00eb': await hashPassword(PASSWORDS['zo\u00eb']),
  };
  config = parseAuthFile(
    [
      `user alice ${hashes.alice}`,
      `user bob ${hashes.bob}`,
      `user zo\u00eb ${hashes['zo\u00eb']}`,
      'protect /private/              alice bob',
      'protect /private/alice-only/   alice          # nested: narrows to alice',
      'protect /private/shared/       *              # nested *: must not widen to zoë',
      'protect /members/              *',
      'protect /staff/report.pdf      zoë',
      'protect /staff/report.pdf      zoë bob        # same prefix twice: still only zoë',
    ].join('\n'),
    'auth.conf',
  );
});

function basic(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`;
}

/** The rule written out the long way, independent of isUnderPrefix. */
function ruleCovers(prefix: string, path: string): boolean {
  if (prefix.endsWith('/')) return path.slice(0, prefix.length) === prefix;
  return path === prefix || path.slice(0, prefix.length + 1) === `${prefix}/`;
}

/** Visible iff every rule covering the path allows the user (the documented intersection). */
function expectedVisible(user: string | null, path: string): boolean {
  return config.rules.filter((rule) => ruleCovers(rule.prefix, path)).every((rule) => user !== null && (rule.users === 'any-user' || rule.users.has(user)));
}

/** What an SQL filter built from hiddenPrefixes would keep. */
function keptByHiddenPrefixes(viewer: Viewer, path: string): boolean {
  return !viewer.hiddenPrefixes.some((prefix) => ruleCovers(prefix, path));
}

const PATHS = [
  'index.html',
  'private',
  'private/a.txt',
  'private-notes.txt',
  'private/alice-only/x.pdf',
  'private/alice-only',
  'private/alice-onlyish.txt',
  'private/shared/doc.txt',
  'members/list.csv',
  'members',
  'staff/report.pdf',
  'staff/report.pdf/extra',
  'staff/report.pdf.bak',
  'staff/report.pdfx',
  'staff/other.pdf',
];

test('isUnderPrefix: folder prefixes, file prefixes and the root', () => {
  const table: Array<[string, string, boolean]> = [
    ['private/a.txt', 'private/', true],
    ['private', 'private/', false],
    ['private-notes.txt', 'private/', false],
    ['private', 'private', true],
    ['private/a.txt', 'private', true],
    ['private-notes.txt', 'private', false],
    ['privately.txt', 'private', false],
    ['staff/report.pdf', 'staff/report.pdf', true],
    ['staff/report.pdf.bak', 'staff/report.pdf', false],
    ['anything/at/all', '', true],
    ['', '', true],
  ];
  for (const [path, prefix, expected] of table) assert.equal(isUnderPrefix(path, prefix), expected, `${path} under ${prefix}`);
});

test('hiddenPrefixes of each viewer: intersection of rules, minimal and sorted', () => {
  const control = new AccessControl(config);
  assert.deepEqual(control.anonymous.hiddenPrefixes, ['members/', 'private/', 'staff/report.pdf']);
  assert.deepEqual(control.viewerFor('alice')?.hiddenPrefixes, ['staff/report.pdf']);
  assert.deepEqual(control.viewerFor('bob')?.hiddenPrefixes, ['private/alice-only/', 'staff/report.pdf']);
  assert.deepEqual(control.viewerFor('zo\u00eb')?.hiddenPrefixes, ['private/']);
  assert.equal(control.viewerFor('mallory'), undefined);
  assert.equal(control.protectsAnything, true);
});

test('canSee agrees with hiddenPrefixes and with the rules on a table of paths', () => {
  const control = new AccessControl(config);
  const expected: Record<string, string[]> = {
    // 'private' and 'members' are files beside the protected folders, not inside them
    anonymous: ['index.html', 'private', 'private-notes.txt', 'members', 'staff/report.pdf.bak', 'staff/report.pdfx', 'staff/other.pdf'],
    alice: PATHS.filter((path) => !path.startsWith('staff/report.pdf') || path === 'staff/report.pdf.bak' || path === 'staff/report.pdfx'),
    bob: PATHS.filter((path) => !path.startsWith('private/alice-only/') && path !== 'staff/report.pdf' && path !== 'staff/report.pdf/extra'),
    'zo\u00eb': PATHS.filter((path) => !path.startsWith('private/')),
  };
  for (const [name, visible] of Object.entries(expected)) {
    const user = name === 'anonymous' ? null : name;
    const viewer = control.viewerFor(user);
    assert.ok(viewer);
    assert.equal(viewer.user, user);
    for (const path of PATHS) {
      const label = `${name} / ${path}`;
      assert.equal(viewer.canSee(path), visible.includes(path), label);
      assert.equal(keptByHiddenPrefixes(viewer, path), viewer.canSee(path), label);
      assert.equal(expectedVisible(user, path), viewer.canSee(path), label);
    }
  }
});

test('protecting the root hides everything from everyone but the allowed users', () => {
  const root = new AccessControl(parseAuthFile(`user alice ${hashes.alice}\nprotect / alice\n`, 'auth.conf'));
  assert.deepEqual(root.anonymous.hiddenPrefixes, ['']);
  assert.equal(root.anonymous.canSee('index.html'), false);
  assert.deepEqual(root.viewerFor('alice')?.hiddenPrefixes, []);
});

test('authenticate: no header is anonymous, right credentials are the user', async () => {
  const control = new AccessControl(config);
  assert.equal(await control.authenticate(undefined), control.anonymous);
  const alice = await control.authenticate(basic('alice', PASSWORDS.alice));
  assert.equal(alice?.user, 'alice');
  assert.equal(alice?.canSee('private/alice-only/x.pdf'), true);
  // a password with ':' (only the first ':' separates), and a lower-case scheme
  const bob = await control.authenticate(`basic  ${Buffer.from(`bob:${PASSWORDS.bob}`).toString('base64')}`);
  assert.equal(bob?.user, 'bob');
  // name and password sent decomposed (NFD) still match the NFC entries
  const zoe = await control.authenticate(basic('zoe\u0308', PASSWORDS['zo\u00eb'].normalize('NFD')));
  assert.equal(zoe?.user, 'zo\u00eb');
});

test('authenticate: wrong or malformed credentials are null (the server answers 401)', async () => {
  const control = new AccessControl(config);
  const refused = [
    basic('alice', 'wrong horse'),
    basic('alice', ''),
    basic('mallory', PASSWORDS.alice),
    basic('', PASSWORDS.alice),
    `Bearer ${Buffer.from(`alice:${PASSWORDS.alice}`).toString('base64')}`,
    'Basic',
    'Basic !!!not-base64!!!',
    `Basic ${Buffer.from('alice-without-colon').toString('base64')}`,
    `Basic ${Buffer.from(`alice:${PASSWORDS.alice}`, 'latin1').toString('base64').slice(0, -1)}x`,
    `Basic ${Buffer.from('jos\u00e9:secret', 'latin1').toString('base64')}`,
    '',
  ];
  for (const header of refused) assert.equal(await control.authenticate(header), null, header);
});

test('a cached success does not let a wrong password for the same user through', async () => {
  const control = new AccessControl(config);
  assert.equal((await control.authenticate(basic('alice', PASSWORDS.alice)))?.user, 'alice');
  assert.equal(await control.authenticate(basic('alice', 'correct horse ')), null);
  assert.equal((await control.authenticate(basic('alice', PASSWORDS.alice)))?.user, 'alice');
  assert.equal(await control.authenticate(basic('alice', 'Correct horse')), null);
});

test('parallel requests with the same credentials all get the viewer', async () => {
  const control = new AccessControl(config);
  const header = basic('bob', PASSWORDS.bob);
  const viewers = await Promise.all(Array.from({ length: 5 }, () => control.authenticate(header)));
  for (const viewer of viewers) assert.equal(viewer?.user, 'bob');
  assert.equal(await control.authenticate(basic('bob', 'b:o:b:')), null);
});

test('without an auth file everything is visible and any credentials are refused', async () => {
  const control = new AccessControl();
  const anonymous = await control.authenticate(undefined);
  assert.deepEqual(anonymous?.hiddenPrefixes, []);
  assert.equal(anonymous?.canSee('private/a.txt'), true);
  assert.equal(control.protectsAnything, false);
  assert.equal(await control.authenticate(basic('alice', PASSWORDS.alice)), null);
});

test('parseBasicCredentials splits at the first colon and checks the encoding', () => {
  assert.deepEqual(parseBasicCredentials(basic('bob', 'a:b')), { user: 'bob', password: 'a:b' });
  assert.deepEqual(parseBasicCredentials(`Basic ${Buffer.from('u:p').toString('base64').replace(/=+$/, '')}`), { user: 'u', password: 'p' });
  assert.equal(parseBasicCredentials('Basic dTpw='), null);
  assert.equal(challengeHeader, 'Basic realm="oaibag-repository", charset="UTF-8"');
});

test('password hashes: format, round trip, and tampering', async () => {
  const hash = hashes.alice;
  assert.match(hash, /^\$scrypt\$ln=15,r=8,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/);
  assert.notEqual(hashes.alice, await hashPassword(PASSWORDS.alice), 'a fresh salt each time');
  assert.equal(isPasswordHash(hash), true);
  assert.equal(await verifyPassword(PASSWORDS.alice, hash), true);
  assert.equal(await verifyPassword('correct horsE', hash), false);

  const [, , params, salt, key] = hash.split('$') as [string, string, string, string, string];
  const flip = (text: string): string => (text[0] === 'A' ? 'B' : 'A') + text.slice(1);
  const tampered = [
    ['key', `$scrypt$${params}$${salt}$${flip(key)}`],
    ['salt', `$scrypt$${params}$${flip(salt)}$${key}`],
    ['cost', `$scrypt$ln=14,r=8,p=1$${salt}$${key}`],
  ] as const;
  for (const [what, value] of tampered) {
    assert.equal(isPasswordHash(value), true, what);
    assert.equal(await verifyPassword(PASSWORDS.alice, value), false, what);
  }

  const malformed = [
    `$scrypt$ln=9,r=8,p=1$${salt}$${key}`,
    `$scrypt$ln=21,r=8,p=1$${salt}$${key}`,
    `$scrypt$ln=15,r=33,p=1$${salt}$${key}`,
    `$scrypt$ln=15,r=8,p=17$${salt}$${key}`,
    `$scrypt$ln=15,r=8,p=0$${salt}$${key}`,
    `$scrypt$ln=015,r=8,p=1$${salt}$${key}`,
    `$scrypt$r=8,ln=15,p=1$${salt}$${key}`,
    `$scrypt$${params}$${salt}$${key}=`,
    // 41 characters: no whole number of bytes. (Dropping one character would be a valid
    // 31-byte key whenever the dropped bits happen to be zero: 1 hash in 16.)
    `$scrypt$${params}$${salt}$${key.slice(0, -2)}`,
    `$scrypt$${params}$${salt}`,
    `$argon2id$${params}$${salt}$${key}`,
    `${hash} `,
    '',
  ];
  for (const value of malformed) {
    assert.equal(isPasswordHash(value), false, value);
    assert.equal(await verifyPassword(PASSWORDS.alice, value), false, value);
  }
});
