/**
 * Access control through a real running repository, like mod_oai's .htaccess handling: one
 * site with public files, `private/` (alice, bob), `private/alice-only/` (alice) and
 * `members/` (any valid user), harvested and fetched by the anonymous, alice, bob and carol
 * (a valid user named in no rule). Lists are filtered per request and never fail; a hidden
 * record is indistinguishable from a missing one; bad credentials are always a 401.
 *
 * All users share one password hash: every scrypt run costs ~100 ms, and what is tested
 * here is who sees what, not the hashing (password-hash has its own tests).
 */
import assert from 'node:assert/strict';
import { rmSync, symlinkSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parseAuthFile } from '../src/access/auth-file.ts';
import { hashPassword } from '../src/access/password-hash.ts';
import { identifierForPath } from '../src/index.ts';
import {
  basicAuth,
  errorCodes,
  type HttpAnswer,
  harvestAll,
  headers,
  httpRequest,
  oai,
  type RunningRepository,
  resumptionToken,
  startRepository,
  tempDir,
  writeTree,
} from './repository-helpers.ts';

const PASSWORD = 'correct horse';

/**
 * The site, in datestamp order (each file one day older than the next), so that a list's
 * pages and a resumption token's position are known exactly. Public and protected files
 * alternate, so that a token taken by one viewer has both kinds after it.
 */
const FILES: Array<[path: string, content: string]> = [
  ['index.html', '<html>home</html>'],
  ['private/report.pdf', '%PDF-1.4 report'],
  ['private/alice-only/diary.txt', 'dear diary'],
  ['notes.txt', 'public notes'],
  ['members/list.csv', 'name\nalice\nbob\ncarol\n'],
  ['private/alice-only/secret.json', '{"secret":true}'],
  // Beside `private/`, not below it: a rule for a folder must not catch a longer name.
  ['private-notes.txt', 'public, despite the name'],
];
const ORDER = FILES.map(([path]) => path);
const DAY = 86_400;
const FIRST_MTIME = Date.UTC(2020, 0, 1) / 1000;

const PUBLIC = ['index.html', 'notes.txt', 'private-notes.txt'];
const MEMBERS = ['members/list.csv'];
const PRIVATE = ['private/report.pdf'];
const ALICE_ONLY = ['private/alice-only/diary.txt', 'private/alice-only/secret.json'];

type Who = 'anonymous' | 'alice' | 'bob' | 'carol';
const EVERYONE: Who[] = ['anonymous', 'alice', 'bob', 'carol'];

/** What each viewer may see, in datestamp order. */
const VISIBLE: Record<Who, string[]> = {
  anonymous: inOrder(PUBLIC),
  carol: inOrder([...PUBLIC, ...MEMBERS]),
  bob: inOrder([...PUBLIC, ...MEMBERS, ...PRIVATE]),
  alice: inOrder([...PUBLIC, ...MEMBERS, ...PRIVATE, ...ALICE_ONLY]),
};

/** The sets each viewer's ListSets gives (public: html and plain text; members: csv; private: pdf; alice-only: json). */
const SETS: Record<Who, string[]> = {
  anonymous: ['mime', 'mime:text', 'mime:text:html', 'mime:text:plain'],
  carol: ['mime', 'mime:text', 'mime:text:csv', 'mime:text:html', 'mime:text:plain'],
  bob: ['mime', 'mime:application', 'mime:application:pdf', 'mime:text', 'mime:text:csv', 'mime:text:html', 'mime:text:plain'],
  alice: ['mime', 'mime:application', 'mime:application:json', 'mime:application:pdf', 'mime:text', 'mime:text:csv', 'mime:text:html', 'mime:text:plain'],
};

function inOrder(paths: string[]): string[] {
  return ORDER.filter((path) => paths.includes(path));
}

const PAGE = 2;

let dir: ReturnType<typeof tempDir>;
let run: RunningRepository;
let credentials: Record<Who, Record<string, string>>;

before(async () => {
  dir = tempDir();
  const site = join(dir.path, 'site');
  writeTree(site, Object.fromEntries(FILES));
  FILES.forEach(([path], i) => utimesSync(join(site, path), FIRST_MTIME + i * DAY, FIRST_MTIME + i * DAY));
  const hash = await hashPassword(PASSWORD);
  const auth = parseAuthFile(
    [
      `user alice ${hash}`,
      `user bob ${hash}`,
      `user carol ${hash}`,
      'protect /private/ alice bob',
      'protect /private/alice-only/ alice',
      'protect /members/ *   # any valid user',
    ].join('\n'),
    'auth.txt',
  );
  run = await startRepository(site, dir.path, { auth, pageIdentifiers: PAGE, pageRecords: PAGE });
  credentials = {
    anonymous: {},
    alice: basicAuth('alice', PASSWORD),
    bob: basicAuth('bob', PASSWORD),
    carol: basicAuth('carol', PASSWORD),
  };
});

after(async () => {
  await run?.stop();
  dir?.cleanup();
});

function id(path: string): string {
  return identifierForPath(run.baseUrl, path);
}

function ids(paths: string[]): string[] {
  return paths.map(id);
}

/** Every page of a list as `who`, checking each is a 200 without OAI-PMH errors. */
async function harvest(who: Who, params: Record<string, string>): Promise<string[]> {
  const pages = await harvestAll(run.endpoint, params, credentials[who]);
  for (const page of pages) assert.deepEqual(errorCodes(page), [], `${who} ${params.verb}: ${page}`);
  return pages;
}

function listed(pages: string[]): string[] {
  return pages.flatMap((page) => headers(page).map((header) => header.identifier));
}

function varyFields(answer: HttpAnswer): string[] {
  const vary = answer.headers.vary;
  return (Array.isArray(vary) ? vary.join(',') : (vary ?? '')).split(',').map((field) => field.trim().toLowerCase());
}

/** The <error> element with the identifier it names replaced, so two answers can be compared. */
function errorElement(xml: string, identifier: string): string {
  const element = /<error [^>]*>[^<]*<\/error>/.exec(xml)?.[0];
  assert.ok(element, `no error element in ${xml}`);
  return element.split(JSON.stringify(identifier)).join('"…"');
}

describe('each viewer sees exactly its own items', () => {
  for (const who of EVERYONE) {
    test(`ListIdentifiers as ${who}`, async () => {
      const pages = await harvest(who, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc' });
      assert.deepEqual(listed(pages), ids(VISIBLE[who]));
      // Every viewer here has more than one page, so the first page carries the size.
      assert.equal(resumptionToken(pages[0]!)?.completeListSize, VISIBLE[who].length);
    });

    test(`ListRecords as ${who}`, async () => {
      const pages = await harvest(who, { verb: 'ListRecords', metadataPrefix: 'oai_dc' });
      assert.deepEqual(listed(pages), ids(VISIBLE[who]));
      assert.equal(resumptionToken(pages[0]!)?.completeListSize, VISIBLE[who].length);
      for (const page of pages) assert.equal(page.match(/<record>/g)?.length ?? 0, headers(page).length);
    });

    test(`ListSets as ${who}`, async () => {
      const answer = await oai(run.endpoint, { verb: 'ListSets' }, credentials[who]);
      assert.equal(answer.status, 200);
      assert.deepEqual(errorCodes(answer.text), []);
      const specs = [...answer.text.matchAll(/<setSpec>(.*?)<\/setSpec>/g)].map((match) => match[1]);
      assert.deepEqual(specs, SETS[who]);
    });
  }

  test('a set whose only members are hidden is an empty list (noRecordsMatch), not an access error', async () => {
    const anonymous = await oai(run.endpoint, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc', set: 'mime:application:pdf' });
    assert.equal(anonymous.status, 200);
    assert.deepEqual(errorCodes(anonymous.text), ['noRecordsMatch']);
    const bob = await oai(run.endpoint, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc', set: 'mime:application' }, credentials.bob);
    assert.deepEqual(errorCodes(bob.text), []);
    assert.deepEqual(listed([bob.text]), ids(PRIVATE));
  });
});

describe('GetRecord and ListMetadataFormats of a hidden item', () => {
  test('give idDoesNotExist, worded exactly like a missing item', async () => {
    const cases: Array<[Who, string]> = [
      ['anonymous', 'members/list.csv'],
      ['anonymous', 'private/report.pdf'],
      ['carol', 'private/report.pdf'],
      ['bob', 'private/alice-only/diary.txt'],
    ];
    const missingPath = 'private/alice-only/no-such-file.txt';
    for (const [who, path] of cases) {
      for (const params of [{ verb: 'GetRecord', metadataPrefix: 'oai_dc' }, { verb: 'ListMetadataFormats' }] as Array<Record<string, string>>) {
        const hidden = await oai(run.endpoint, { ...params, identifier: id(path) }, credentials[who]);
        const missing = await oai(run.endpoint, { ...params, identifier: id(missingPath) }, credentials[who]);
        assert.equal(hidden.status, 200, `${who} ${params.verb} ${path}`);
        assert.deepEqual(errorCodes(hidden.text), ['idDoesNotExist'], `${who} ${params.verb} ${path}`);
        assert.equal(errorElement(hidden.text, id(path)), errorElement(missing.text, id(missingPath)));
        assert.doesNotMatch(hidden.text, /<record>/);
      }
    }
  });

  test('are served to a viewer allowed to see them', async () => {
    const cases: Array<[Who, string]> = [
      ['carol', 'members/list.csv'],
      ['bob', 'private/report.pdf'],
      ['alice', 'private/alice-only/diary.txt'],
      ['anonymous', 'private-notes.txt'],
    ];
    for (const [who, path] of cases) {
      const answer = await oai(run.endpoint, { verb: 'GetRecord', metadataPrefix: 'oai_dc', identifier: id(path) }, credentials[who]);
      assert.deepEqual(errorCodes(answer.text), [], `${who} ${path}: ${answer.text}`);
      assert.deepEqual(listed([answer.text]), [id(path)]);
    }
  });
});

describe('credentials that do not verify are refused with a challenge', () => {
  const bad: Array<[string, Record<string, string>]> = [
    ['a wrong password', basicAuth('alice', 'not the password')],
    ['an unknown user', basicAuth('mallory', PASSWORD)],
    ['malformed base64', { Authorization: 'Basic !!!' }],
    ['another scheme', { Authorization: 'Bearer x' }],
    ['no colon', { Authorization: `Basic ${Buffer.from('alice').toString('base64')}` }],
  ];
  for (const [what, header] of bad) {
    test(`${what}: 401 with WWW-Authenticate on the OAI-PMH endpoint and on files`, async () => {
      // Sent together: a failed check is not cached, but parallel identical checks share one scrypt run.
      const answers = await Promise.all([
        oai(run.endpoint, { verb: 'Identify' }, header),
        httpRequest(`${run.baseUrl}/index.html`, { headers: header }),
        httpRequest(`${run.baseUrl}/private/report.pdf`, { headers: header }),
      ]);
      for (const answer of answers) {
        assert.equal(answer.status, 401);
        assert.match(String(answer.headers['www-authenticate']), /^Basic realm="[^"]+"/);
        assert.doesNotMatch(answer.text, /OAI-PMH|home|report/);
      }
    });
  }
});

describe('a protected file', () => {
  test('anonymous: 401 with the challenge, whether or not the file exists', async () => {
    const existing = await httpRequest(`${run.baseUrl}/private/report.pdf`);
    const missing = await httpRequest(`${run.baseUrl}/private/missing.pdf`);
    for (const answer of [existing, missing]) {
      assert.equal(answer.status, 401);
      assert.match(String(answer.headers['www-authenticate']), /^Basic realm="[^"]+"/);
    }
    assert.equal(existing.text, missing.text);
  });

  test('anonymous: a percent-encoded spelling of the path is protected too', async () => {
    for (const path of ['/%70rivate/report.pdf', '/private/%72eport.pdf', '/members/list%2Ecsv']) {
      const answer = await httpRequest(run.baseUrl, { path });
      assert.equal(answer.status, 401, path);
      assert.doesNotMatch(answer.text, /report|alice/);
    }
  });

  test('a valid user the rules do not allow: 403 without a challenge', async () => {
    const cases: Array<[Who, string]> = [
      ['carol', '/private/report.pdf'],
      ['bob', '/private/alice-only/diary.txt'],
    ];
    for (const [who, path] of cases) {
      const answer = await httpRequest(`${run.baseUrl}${path}`, { headers: credentials[who] });
      assert.equal(answer.status, 403, `${who} ${path}`);
      assert.equal(answer.headers['www-authenticate'], undefined);
      assert.doesNotMatch(answer.text, /report|diary/);
    }
  });

  test('an allowed user: 200 with the bytes, marked private for caches', async () => {
    const cases: Array<[Who, string]> = [
      ['alice', 'private/report.pdf'],
      ['alice', 'private/alice-only/diary.txt'],
      ['bob', 'private/report.pdf'],
      ['carol', 'members/list.csv'],
    ];
    for (const [who, path] of cases) {
      const answer = await httpRequest(`${run.baseUrl}/${path}`, { headers: credentials[who] });
      assert.equal(answer.status, 200, `${who} ${path}`);
      assert.equal(answer.text, Object.fromEntries(FILES)[path]);
      assert.match(String(answer.headers['cache-control']), /(^|,)\s*private\s*(,|$)/);
    }
  });

  test('a public file is served to everyone and not marked private', async () => {
    for (const who of EVERYONE) {
      const answer = await httpRequest(`${run.baseUrl}/private-notes.txt`, { headers: credentials[who] });
      assert.equal(answer.status, 200, who);
      assert.equal(answer.text, 'public, despite the name');
      assert.doesNotMatch(String(answer.headers['cache-control'] ?? ''), /private/);
    }
  });
});

test('OAI-PMH responses vary on Authorization (and Accept-Encoding) when paths are protected', async () => {
  for (const who of ['anonymous', 'alice'] as Who[]) {
    for (const params of [{ verb: 'Identify' }, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc' }] as Array<Record<string, string>>) {
      const answer = await oai(run.endpoint, params, credentials[who]);
      assert.equal(answer.status, 200);
      const fields = varyFields(answer);
      assert.ok(fields.includes('authorization'), `${who} ${params.verb}: Vary is ${String(answer.headers.vary)}`);
      assert.ok(fields.includes('accept-encoding'), `${who} ${params.verb}: Vary is ${String(answer.headers.vary)}`);
    }
  }
});

describe('a resumption token carries a position, not a view', () => {
  test("alice's token, used by the anonymous, continues with public items only", async () => {
    const first = await oai(run.endpoint, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc' }, credentials.alice);
    assert.deepEqual(listed([first.text]), ids(VISIBLE.alice.slice(0, PAGE)));
    const token = resumptionToken(first.text)!.token;

    const anonymousRest = await harvestAll(run.endpoint, { verb: 'ListIdentifiers', resumptionToken: token });
    for (const page of anonymousRest) assert.deepEqual(errorCodes(page), []);
    const afterFirstPage = ORDER.slice(ORDER.indexOf(VISIBLE.alice[PAGE - 1]!) + 1);
    assert.deepEqual(listed(anonymousRest), ids(afterFirstPage.filter((path) => VISIBLE.anonymous.includes(path))));

    // The same token still gives alice her own view.
    const aliceRest = await harvestAll(run.endpoint, { verb: 'ListIdentifiers', resumptionToken: token }, credentials.alice);
    assert.deepEqual(listed(aliceRest), ids(afterFirstPage));
  });

  test("alice's ListRecords token, used by bob, leaves out alice's items", async () => {
    const first = await oai(run.endpoint, { verb: 'ListRecords', metadataPrefix: 'oai_dc' }, credentials.alice);
    const token = resumptionToken(first.text)!.token;
    const bobRest = await harvestAll(run.endpoint, { verb: 'ListRecords', resumptionToken: token }, credentials.bob);
    for (const page of bobRest) assert.deepEqual(errorCodes(page), []);
    const afterFirstPage = ORDER.slice(ORDER.indexOf(VISIBLE.alice[PAGE - 1]!) + 1);
    assert.deepEqual(listed(bobRest), ids(afterFirstPage.filter((path) => VISIBLE.bob.includes(path))));
    assert.doesNotMatch(bobRest.join(''), /dear diary|secret/);
  });

  test("the anonymous's token, used by alice, shows her the private items after its position", async () => {
    const first = await oai(run.endpoint, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc' });
    assert.deepEqual(listed([first.text]), ids(VISIBLE.anonymous.slice(0, PAGE)));
    const token = resumptionToken(first.text)!.token;
    const aliceRest = await harvestAll(run.endpoint, { verb: 'ListIdentifiers', resumptionToken: token }, credentials.alice);
    assert.deepEqual(listed(aliceRest), ids(ORDER.slice(ORDER.indexOf(VISIBLE.anonymous[PAGE - 1]!) + 1)));
  });
});

// Last: it changes the site.
test('the deletion of a hidden item is hidden too', async () => {
  const path = 'private/alice-only/secret.json';
  rmSync(join(run.site, path));
  await run.repository.scan();
  for (const who of ['anonymous', 'carol', 'bob'] as Who[]) {
    const answer = await oai(run.endpoint, { verb: 'GetRecord', metadataPrefix: 'oai_dc', identifier: id(path) }, credentials[who]);
    assert.deepEqual(errorCodes(answer.text), ['idDoesNotExist'], who);
  }
  const alice = await oai(run.endpoint, { verb: 'GetRecord', metadataPrefix: 'oai_dc', identifier: id(path) }, credentials.alice);
  assert.deepEqual(errorCodes(alice.text), []);
  assert.deepEqual(
    headers(alice.text).map((header) => [header.identifier, header.deleted]),
    [[id(path), true]],
  );
});

test('a symbolic link never publishes a protected file at a less protected URL', async () => {
  const site = join(dir.path, 'site');
  symlinkSync(join(site, 'private/report.pdf'), join(site, 'report-link.pdf'));
  symlinkSync(join(site, 'private/report.pdf'), join(site, 'private/report-again.pdf'));
  try {
    // Outside the protected folder: refused to everyone, even to those who may read the target.
    assert.equal((await httpRequest(`${run.baseUrl}/report-link.pdf`)).status, 404);
    assert.equal((await httpRequest(`${run.baseUrl}/report-link.pdf`, { headers: credentials.alice })).status, 404);
    // Inside it, as protected as its target: served to those allowed.
    assert.equal((await httpRequest(`${run.baseUrl}/private/report-again.pdf`)).status, 401);
    const allowed = await httpRequest(`${run.baseUrl}/private/report-again.pdf`, { headers: credentials.bob });
    assert.equal(allowed.status, 200);
    assert.equal(allowed.text, '%PDF-1.4 report');
  } finally {
    rmSync(join(site, 'report-link.pdf'));
    rmSync(join(site, 'private/report-again.pdf'));
  }
});
