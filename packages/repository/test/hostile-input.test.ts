/**
 * Hostile input against a real repository on 127.0.0.1: request targets and identifiers that
 * try to leave --root, over-long arguments, forged resumption tokens, and symbolic links
 * swapped in while a response is being sent. Never a byte of a file outside the root, never
 * a crash: always a clear OAI-PMH error or a 4xx, and the server keeps answering.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, utimesSync } from 'node:fs';
import { rename, symlink, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { identifierForPath } from '../src/index.ts';
import { setSpecForMimeType } from '../src/site/set-spec.ts';
import {
  errorCodes,
  type HttpAnswer,
  headers,
  httpRequest,
  type RunningRepository,
  resumptionToken,
  startRepository,
  tempDir,
  writeTree,
} from './repository-helpers.ts';

const MARKER = 'TOP-SECRET-9c41e';
/** The file outside the root every trick aims at; a link in the site points to it too. */
const SECRET = `${MARKER} must never leave the server\n`.repeat(64);
const PASSWD_LINE = 'root:x:0:0';
const PUBLIC = 'public content\n';
const FLIP_REAL = 'flip: the real file\n';
const PAST = Math.floor(Date.now() / 1000) - 86_400;
const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };

let dir: { path: string; cleanup: () => void };
let site: string;
let repo: RunningRepository;
let port: string;
/** Requests sent to `repo`, each of which must leave one line in its log. */
let sent = 0;
const bigGet = randomBytes(6 << 20);
const bigList = randomBytes(6 << 20);

before(async () => {
  dir = tempDir('oaibag-hostile-');
  site = join(dir.path, 'site');
  writeTree(dir.path, { 'secret.txt': SECRET });
  writeTree(site, {
    'public.txt': PUBLIC,
    'docs/index.html': 'docs index\n',
    'big-get.mp4': bigGet,
    'big-list.bin': bigList,
    'later.bin': 'later: the real file\n',
    'flip.txt': FLIP_REAL,
  });
  await symlink(join(dir.path, 'secret.txt'), join(site, 'link-out.txt'));
  // Dated in the past (the first scan dates files by mtime), big-list.bin before later.bin.
  for (const entry of readdirSync(site, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) utimesSync(join(entry.parentPath, entry.name), PAST, PAST);
  }
  utimesSync(join(site, 'later.bin'), PAST + 60, PAST + 60);
  repo = await startRepository(site, dir.path, { pageIdentifiers: 2 });
  port = new URL(repo.baseUrl).port;
});

after(async () => {
  await repo?.stop();
  dir?.cleanup();
});

function send(options: Parameters<typeof httpRequest>[1]): Promise<HttpAnswer> {
  sent++;
  return httpRequest(repo.baseUrl, options);
}

function oaiGet(params: Record<string, string>): Promise<HttpAnswer> {
  return send({ path: `/oai?${new URLSearchParams(params)}` });
}

function oaiPost(body: string): Promise<HttpAnswer> {
  return send({ method: 'POST', path: '/oai', headers: FORM, body });
}

/** What must never appear in any response: the outside file, By-Value or not, or /etc/passwd. */
function leaks(text: string): boolean {
  return text.includes(MARKER) || text.includes(PASSWD_LINE) || byValueContents(text).some((bytes) => bytes.includes(MARKER));
}

/** The decoded bytes of every By-Value Resource of a (possibly cut off) response. */
function byValueContents(xml: string): Buffer[] {
  const found: Buffer[] = [];
  for (const match of xml.matchAll(/encoding="base64">([^<]*)(<|$)/g)) {
    const base64 = match[1]!.replace(/\s+/g, '');
    found.push(Buffer.from(base64.slice(0, base64.length - (base64.length % 4)), 'base64'));
  }
  return found;
}

test('request targets that try to leave the root: a 4xx, never the file', async () => {
  const outside = `/${'../'.repeat(3_333)}etc/passwd`;
  const targets = [
    '/../secret.txt',
    '/docs/../../secret.txt',
    '/%2e%2e/secret.txt',
    '/%2E%2e/secret.txt',
    '/%2E%2E%2Fsecret.txt',
    '/.%2e/secret.txt',
    '/%2e./secret.txt',
    '/docs/%2e%2e/%2e%2e/secret.txt',
    '/..%2fsecret.txt',
    '/docs%2f..%2f..%2fsecret.txt',
    '/..%5csecret.txt',
    '/..%5Csecret.txt',
    '/..\\secret.txt',
    '/docs\\..\\..\\secret.txt',
    '/\\..\\secret.txt',
    '/..;/secret.txt',
    '/secret.txt%00',
    '/public.txt%00.html',
    '/%00',
    '/%00/../secret.txt',
    '//etc/passwd',
    '///etc/passwd',
    '//../secret.txt',
    '/etc/passwd',
    '/link-out.txt',
    `http://127.0.0.1:${port}/../secret.txt`,
    `http://127.0.0.1:${port}/%2e%2e/secret.txt`,
    `http://127.0.0.1:${port}//etc/passwd`,
    `HTTP://127.0.0.1:${port}/..%2fsecret.txt`,
    'http://evil.example/../secret.txt',
    `/${'a'.repeat(10_000)}`,
    outside,
    `/${'%2e%2e/'.repeat(1_400)}etc/passwd`,
    // Overlong and otherwise invalid UTF-8.
    '/%c0%ae%c0%ae/secret.txt',
    '/%c0%ae%c0%ae%c0%afsecret.txt',
    '/%e0%80%ae%e0%80%ae/secret.txt',
    '/%c0%2e%c0%2e/secret.txt',
    '/%f0%80%80%ae.txt',
    '/%ff.txt',
    '/%fe%ff',
    '/%e6%97.txt',
    '/%ed%a0%80.txt',
    '/%80',
    // Malformed escapes.
    '/%.txt',
    '/%2',
    '/%zz.txt',
    '/%u002e%u002e/secret.txt',
    // Dot segments and empty segments, even harmless ones.
    '/..',
    '/.',
    '/docs/..',
    '/./public.txt',
    '/docs//index.html',
  ];
  const problems: string[] = [];
  for (const path of targets) {
    const answer = await send({ path });
    const shown = path.length > 60 ? `${path.slice(0, 60)}… (${path.length} characters)` : path;
    if (answer.status < 400 || answer.status > 499) problems.push(`${shown}: ${answer.status}`);
    if (leaks(answer.text)) problems.push(`${shown}: the body leaks the secret`);
  }
  assert.deepEqual(problems, []);

  // The same server still serves what it should, also through harmless spellings.
  for (const path of ['/public.txt', '/%70ublic.txt', '/publi%63.txt', `http://127.0.0.1:${port}/public.txt`]) {
    const answer = await send({ path });
    assert.equal(answer.status, 200, path);
    assert.equal(answer.text, PUBLIC, path);
  }
});

test('identifiers that try to leave the root, or name another host: idDoesNotExist', async () => {
  const base = repo.baseUrl;
  const identifiers = [
    `${base}/../../etc/passwd`,
    `${base}/../secret.txt`,
    `${base}/%2e%2e/secret.txt`,
    `${base}/%2E%2E/secret.txt`,
    `${base}/docs/../../secret.txt`,
    `${base}/docs/%2e%2e/public.txt`,
    `${base}/docs/../public.txt`,
    `${base}/./public.txt`,
    `${base}//public.txt`,
    `${base}/public.txt/`,
    `${base}/..%2fsecret.txt`,
    `${base}/..%5csecret.txt`,
    `${base}\\..\\secret.txt`,
    `${base}/%c0%ae%c0%ae/secret.txt`,
    `${base}/public.txt%00`,
    `${base}/%70ublic.txt`,
    `${base}/public.txt?x=1`,
    `${base}/public.txt#top`,
    `${base}/link-out.txt`,
    `${base}/secret.txt`,
    `${base}/`,
    base,
    `http://localhost:${port}/public.txt`,
    `http://127.0.0.2:${port}/public.txt`,
    `https://127.0.0.1:${port}/public.txt`,
    `http://127.0.0.1:${Number(port) === 65535 ? 1 : Number(port) + 1}/public.txt`,
    `HTTP://127.0.0.1:${port}/public.txt`,
    `http://127.0.0.1:${port}@evil.example/public.txt`,
    'http://evil.example/public.txt',
    'file:///etc/passwd',
    `file://${join(dir.path, 'secret.txt')}`,
    '/etc/passwd',
    '../secret.txt',
    'public.txt',
    '/public.txt',
    `oai:127.0.0.1:public.txt`,
  ];
  const problems: string[] = [];
  for (const identifier of identifiers) {
    const requests: Array<Record<string, string>> = [
      { verb: 'GetRecord', metadataPrefix: 'oai_didl', identifier },
      { verb: 'ListMetadataFormats', identifier },
    ];
    for (const params of requests) {
      const answer = await oaiGet(params);
      const codes = errorCodes(answer.text);
      if (answer.status !== 200 || codes.join() !== 'idDoesNotExist') {
        problems.push(`${params.verb} ${identifier}: ${answer.status} ${codes.join()}`);
      }
      if (leaks(answer.text)) problems.push(`${params.verb} ${identifier}: the body leaks the secret`);
    }
  }
  assert.deepEqual(problems, []);

  // The canonical identifier of the same file works.
  const good = await oaiGet({ verb: 'GetRecord', metadataPrefix: 'oai_dc', identifier: identifierForPath(base, 'public.txt') });
  assert.deepEqual(errorCodes(good.text), []);
  assert.equal(headers(good.text)[0]?.identifier, `${base}/public.txt`);
});

test('over-long arguments: badArgument or a 4xx, and the server keeps working', async () => {
  const long = 'x'.repeat(5_000);
  const answers = [
    await oaiGet({ verb: 'GetRecord', metadataPrefix: 'oai_dc', identifier: `${repo.baseUrl}/${long}` }),
    await oaiGet({ verb: 'ListRecords', metadataPrefix: long }),
    await oaiGet({ verb: 'ListIdentifiers', metadataPrefix: 'oai_dc', set: long }),
    await oaiGet({ verb: long }),
    await oaiPost(new URLSearchParams({ verb: 'GetRecord', metadataPrefix: 'oai_dc', identifier: long }).toString()),
  ];
  for (const [i, answer] of answers.entries()) {
    assert.equal(answer.status, 200, `request ${i}`);
    const codes = errorCodes(answer.text);
    assert.ok(codes.length > 0 && codes.every((code) => code === 'badArgument' || code === 'badVerb'), `request ${i}: ${codes}`);
    // The value is quoted cut short: a hostile request does not buy a response its own size.
    assert.ok(answer.body.length < 4_000, `request ${i}: ${answer.body.length} bytes`);
  }
  assert.deepEqual(errorCodes(answers[3]!.text), ['badVerb']);

  const huge = new URLSearchParams({ verb: 'GetRecord', metadataPrefix: 'oai_dc', identifier: 'y'.repeat(100_000) }).toString();
  const post = await oaiPost(huge);
  assert.equal(post.status, 413);

  const identify = await oaiGet({ verb: 'Identify' });
  assert.equal(identify.status, 200);
  assert.deepEqual(errorCodes(identify.text), []);
});

test('a request line over the HTTP parser limit gets a 4xx, is logged, and the server keeps working', async () => {
  // A repository of its own, so its log holds only these requests.
  const other = tempDir('oaibag-hostile-parser-');
  try {
    writeTree(join(other.path, 'site'), { 'a.txt': 'a' });
    const running = await startRepository(join(other.path, 'site'), other.path);
    try {
      const target = `/oai?${new URLSearchParams({ verb: 'GetRecord', metadataPrefix: 'oai_dc', identifier: 'y'.repeat(100_000) })}`;
      const answer = await httpRequest(running.baseUrl, { path: target });
      assert.ok(answer.status >= 400 && answer.status <= 499, String(answer.status));
      const identify = await httpRequest(running.baseUrl, { path: '/oai?verb=Identify' });
      assert.equal(identify.status, 200);
      const logged = await requestLines(running, 2);
      assert.equal(logged.length, 2, `one line per request:\n${logged.join('\n')}`);
      assert.match(logged[0]!, new RegExp(`" ${answer.status} `));
    } finally {
      await running.stop();
    }
  } finally {
    other.cleanup();
  }
});

test('resumption tokens: too big, random, garbage, or tampered with: badResumptionToken', async () => {
  const megabyte = await oaiPost(`verb=ListIdentifiers&resumptionToken=${'A'.repeat(1 << 20)}`);
  assert.equal(megabyte.status, 413);

  const problems: string[] = [];
  const expectBad = async (label: string, verb: string, token: string) => {
    const answer = await oaiPost(new URLSearchParams({ verb, resumptionToken: token }).toString());
    const codes = errorCodes(answer.text);
    if (answer.status !== 200 || codes.join() !== 'badResumptionToken') problems.push(`${label}: ${answer.status} ${codes.join()}`);
    if (headers(answer.text).length > 0) problems.push(`${label}: the response lists items`);
  };

  await expectBad('a 60 KB token', 'ListIdentifiers', 'A'.repeat(60_000));
  // Random printable garbage, with characters that need escaping in a form body.
  const printable = [...randomBytes(200)].map((byte) => String.fromCharCode(0x21 + (byte % 94))).join('');
  await expectBad('random printable characters', 'ListRecords', printable);
  await expectBad('base64url of random bytes', 'ListIdentifiers', randomBytes(48).toString('base64url'));
  // Version 1, ListIdentifiers, small numbers, metadataPrefix "o", and a tag of zeros.
  const forged = Buffer.concat([Buffer.from([1, 0, 5, 0, 0, 0, 6, 1, 111]), Buffer.alloc(16)]);
  await expectBad('a well-formed token with a forged tag', 'ListIdentifiers', forged.toString('base64url'));

  // Raw random bytes (invalid UTF-8, control characters): one clear error, whichever it is.
  for (let i = 0; i < 5; i++) {
    const raw = [...randomBytes(300)].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('');
    const answer = await oaiPost(`verb=ListRecords&resumptionToken=${raw}`);
    const codes = errorCodes(answer.text);
    assert.equal(answer.status, 200);
    assert.ok(codes.length === 1 && (codes[0] === 'badResumptionToken' || codes[0] === 'badArgument'), `raw bytes ${i}: ${codes}`);
  }

  const first = await oaiGet({ verb: 'ListIdentifiers', metadataPrefix: 'oai_dc' });
  const real = resumptionToken(first.text);
  assert.ok(real && real.token !== '', 'a first page with a resumptionToken');
  const token = real.token;
  const next = await oaiGet({ verb: 'ListIdentifiers', resumptionToken: token });
  assert.deepEqual(errorCodes(next.text), []);
  assert.equal(headers(next.text).length, 2);

  for (let i = 0; i < token.length; i++) {
    const flipped = token.slice(0, i) + (token[i] === 'A' ? 'B' : 'A') + token.slice(i + 1);
    await expectBad(`flipped character ${i}`, 'ListIdentifiers', flipped);
  }
  await expectBad('a ListIdentifiers token for ListRecords', 'ListRecords', token);
  await expectBad('the token with a trailing space', 'ListIdentifiers', `${token} `);
  await expectBad('the token with padding', 'ListIdentifiers', `${token}=`);
  await expectBad('the token twice', 'ListIdentifiers', token + token);
  await expectBad('the token cut short', 'ListIdentifiers', token.slice(0, -1));
  assert.deepEqual(problems, []);
});

interface Streamed {
  status: number;
  body: Buffer;
  /** The whole message arrived (not cut off). */
  complete: boolean;
}

/**
 * GETs `path` and, once `afterBytes` of the body have arrived, pauses reading, runs `swap`,
 * and reads on: the server is then in the middle of the response.
 */
function streamWithSwap(path: string, afterBytes: number, swap: () => Promise<void>): Promise<Streamed> {
  sent++;
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path }, (res) => {
      const parts: Buffer[] = [];
      let received = 0;
      let swapped = false;
      res.on('data', (part: Buffer) => {
        parts.push(part);
        received += part.length;
        if (!swapped && received >= afterBytes) {
          swapped = true;
          res.pause();
          swap().then(() => res.resume(), reject);
        }
      });
      const finish = () => {
        if (!swapped) reject(new Error(`the response ended after ${received} bytes, before the swap`));
        else resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts), complete: res.complete });
      };
      res.on('end', finish);
      res.on('error', finish);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Replaces `relPath` by a link to the secret in one rename, as an attacker who can write the tree would. */
async function swapForSecretLink(relPath: string): Promise<void> {
  const staged = join(site, `.staged-${relPath}`);
  await symlink(join(dir.path, 'secret.txt'), staged);
  await rename(staged, join(site, relPath));
}

test('a file GET while the file is swapped for a link to a secret: the old bytes, never the secret', async () => {
  const answer = await streamWithSwap('/big-get.mp4', 256 * 1024, () => swapForSecretLink('big-get.mp4'));
  assert.equal(answer.status, 200);
  assert.ok(!answer.body.includes(MARKER));
  // The descriptor opened before the swap is the one read to the end.
  assert.ok(answer.complete, 'the response is complete');
  assert.ok(answer.body.equals(bigGet), 'the body is the file as it was when the request came');

  const after = await send({ path: '/big-get.mp4' });
  assert.equal(after.status, 404);
  assert.ok(!leaks(after.text));
});

test('a By-Value ListRecords while its files are swapped for links to a secret: never the secret', async () => {
  const set = setSpecForMimeType('application/octet-stream');
  const target = `/oai?verb=ListRecords&metadataPrefix=oai_didl&set=${encodeURIComponent(set)}`;
  const answer = await streamWithSwap(target, 256 * 1024, async () => {
    await swapForSecretLink('big-list.bin');
    await swapForSecretLink('later.bin');
  });
  assert.equal(answer.status, 200);
  const xml = answer.body.toString('utf8');
  assert.ok(!leaks(xml), 'no record carries the secret');
  assert.ok(answer.complete && xml.endsWith('</OAI-PMH>\n'), 'the response is complete');

  const records = xml.split('<record>').slice(1);
  const byPath = new Map(records.map((record) => [headers(record)[0]!.identifier.slice(repo.baseUrl.length + 1), record]));
  assert.deepEqual([...byPath.keys()], ['big-list.bin', 'later.bin']);
  // big-list.bin was open when the swap came: its record carries the old bytes in full.
  const big = byPath.get('big-list.bin')!;
  assert.ok(byValueContents(big)[0]?.equals(bigList), 'big-list.bin By-Value is the file as it was');
  assert.ok(big.includes(createHash('sha256').update(bigList).digest('hex')), 'with its digest');
  // later.bin came after the swap: a deleted header, or (had it been opened first) its old bytes.
  const later = byPath.get('later.bin')!;
  if (!headers(later)[0]!.deleted) assert.equal(byValueContents(later)[0]?.toString(), 'later: the real file\n');

  const identifier = identifierForPath(repo.baseUrl, 'later.bin');
  const record = await oaiGet({ verb: 'GetRecord', metadataPrefix: 'oai_didl', identifier });
  assert.ok(!leaks(record.text));
  assert.equal(headers(record.text)[0]?.deleted, true, 'later.bin is now deleted');
});

test('GETs and GetRecords racing a loop that swaps a file and a link to a secret: never the secret', async () => {
  const flip = join(site, 'flip.txt');
  const identifier = identifierForPath(repo.baseUrl, 'flip.txt');
  let running = true;
  let swaps = 0;
  // Each state lasts a moment (0 to 8 ms), so requests meet both, and the moments between.
  const pause = () => new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 9)));
  const swapper = (async () => {
    const stop = Date.now() + 1000;
    while (Date.now() < stop) {
      await symlink(join(dir.path, 'secret.txt'), join(site, '.staged-link'));
      await rename(join(site, '.staged-link'), flip);
      await pause();
      await writeFile(join(site, '.staged-real'), FLIP_REAL);
      await rename(join(site, '.staged-real'), flip);
      await pause();
      swaps++;
    }
    running = false;
  })();

  const problems: string[] = [];
  const outcomes = new Map<string, number>();
  const count = (outcome: string) => outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
  const getter = async () => {
    while (running) {
      const answer = await send({ path: '/flip.txt' });
      count(`GET ${answer.status}`);
      if (leaks(answer.text)) problems.push(`GET ${answer.status}: the secret`);
      else if (answer.status !== 200 && answer.status !== 404) problems.push(`GET ${answer.status}`);
      else if (answer.status === 200 && answer.text !== FLIP_REAL) problems.push(`GET 200: ${answer.text.slice(0, 40)}`);
    }
  };
  const recordGetter = async () => {
    while (running) {
      const answer = await oaiGet({ verb: 'GetRecord', metadataPrefix: 'oai_didl', identifier });
      const found = headers(answer.text)[0];
      count(`GetRecord ${errorCodes(answer.text).join() || (found?.deleted ? 'deleted' : 'live')}`);
      if (leaks(answer.text)) problems.push('GetRecord: the secret');
      else if (!found) problems.push(`GetRecord: ${errorCodes(answer.text).join()}`);
      else if (!found.deleted && byValueContents(answer.text)[0]?.toString() !== FLIP_REAL) problems.push('GetRecord: other bytes');
    }
  };
  await Promise.all([swapper, getter(), getter(), getter(), recordGetter()]);
  assert.deepEqual(problems, [], JSON.stringify(Object.fromEntries(outcomes)));
  assert.ok(swaps > 0);

  // The loop ended with the real file in place: it is served again.
  const answer = await send({ path: '/flip.txt' });
  assert.equal(answer.status, 200);
  assert.equal(answer.text, FLIP_REAL);
});

/** The request lines of a repository's log (its notices left out), once `expected` are there or 2 s have passed. */
async function requestLines(running: RunningRepository, expected: number): Promise<string[]> {
  const lines = () => running.lines.filter((line) => /^\S+ - \S+ \[[^\]]+\] "/.test(line));
  // A line is written when the server finishes the response, which may come just after the client has it all.
  for (const deadline = Date.now() + 2000; lines().length < expected && Date.now() < deadline; ) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return lines();
}

test('after all of this the server still answers, and logged one line per request', async () => {
  const identify = await oaiGet({ verb: 'Identify' });
  assert.equal(identify.status, 200);
  assert.deepEqual(errorCodes(identify.text), []);
  assert.match(identify.text, /<Identify>/);

  const logged = await requestLines(repo, sent);
  assert.equal(logged.length, sent, 'one log line per request');
  for (const line of repo.lines) assert.ok(!line.includes('\n'), 'every log entry is one line');
  assert.deepEqual(
    repo.lines.filter((line) => line.startsWith('error')),
    [],
    'no request failed inside the server',
  );
});
