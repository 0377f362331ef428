// `oaibag serve --auth` route by route (docs/serve.md, "Access"): a payload protected by its
// /files/ path is given to nobody else by any route (/files, /memento, the TimeGate's redirect,
// the By-Value base64 of oai_didl in GetRecord and ListRecords, GET and POST); the metadata
// routes stay open as documented; the Linked Data view (/sparql, /resource, /data, /page) is
// for users refused nothing. Archived content carries a sandboxing Content-Security-Policy and
// nosniff, and a harvested page's script neither runs nor reaches the live web in Chromium.
// Identify's default adminEmail is schema-valid, and an invalid one is refused.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { type ArchiveServer, Catalog, harvest, payloadUrlPath, startArchiveServer } from '../packages/archiver/src/index.ts';
import { hashPassword, parseAuthFile } from '../packages/oai-pmh/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';
import { validateArchiveResponse } from './archive-schemas.ts';

const CHROMIUM = '/usr/bin/chromium';
const NO_CHROMIUM = existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing (install Debian's chromium package, as .ci/run does)`;

// Under 57 bytes: its base64 is one line, so a search of an answer for it is exact.
const SECRET = 'TOP-SECRET 7f3a: the vault code is 0451\n';
const OPEN = 'open notes, for anybody\n';
const SECRET_BASE64 = Buffer.from(SECRET).toString('base64');

let work: string;
let archive: string;
let repository: Repository;
/** A stand-in for the live web: an archived page must never make the reader's browser call it. */
let liveWeb: Server;
const liveRequests: string[] = [];
let wide: ArchiveServer; // protect /files/ alice
let narrow: ArchiveServer; // protect the private/ folder of the bag only
let open: ArchiveServer; // no --auth
let secretPath: string; // the /files/ URL path of the secret
let openPath: string;
let pagePath: string;

const credentials = (user: string, password = `${user}-password`) => ({ Authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });
const ALICE = credentials('alice');
const BOB = credentials('bob');
const originalOf = (sitePath: string) => `${repository.baseUrl}/${sitePath}`;

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-serve-access-'));
  liveWeb = createServer((req, res) => {
    liveRequests.push(req.url ?? '');
    res.end('live');
  });
  await new Promise<void>((resolve) => liveWeb.listen(0, '127.0.0.1', resolve));
  const live = `http://127.0.0.1:${(liveWeb.address() as AddressInfo).port}`;
  const site = join(work, 'site');
  const files: Record<string, string> = {
    'private/secret.txt': SECRET,
    'public/notes.txt': OPEN,
    // A harvested page whose script would act as the archive's origin: read what the archive
    // serves and write it into the page, and call the live web.
    'public/page.html':
      `<html><body><p>archived page</p><img src="${live}/pixel.png">` +
      `<script>document.body.setAttribute('data-ran', String(self.origin));` +
      `fetch('/oai?verb=Identify').then((r) => r.text()).then((t) => document.body.setAttribute('data-read', t.slice(0, 40)));` +
      `fetch('${live}/beacon', { mode: 'no-cors' });</script></body></html>\n`,
  };
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(site, path)), { recursive: true });
    writeFileSync(join(site, path), text);
  }
  repository = await createRepository({ root: site, index: join(work, 'index.sqlite'), watch: false, rescanSeconds: 0 });
  await repository.listen(0, '127.0.0.1');
  archive = join(work, 'archive');
  // A list ends a second before its responseDate: the files are given from the next second on.
  await new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));
  const summary = await harvest({ baseUrl: `${repository.baseUrl}/oai`, archiveDir: archive });
  assert.equal(summary.added, 3);
  // serve's lists end a second before their responseDate: what was stored in this second is
  // listed from the next one on (a quick harvest and a quick first list can share a second).
  await new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));
  const catalog = Catalog.open(archive, { create: false });
  const pathOf = (sitePath: string) => {
    const version = catalog.latestVersion(catalog.bags()[0]!.sourceId, originalOf(sitePath))!;
    const [part] = catalog.versionParts(version.id);
    return payloadUrlPath(part!.bagPath, part!.path);
  };
  try {
    secretPath = pathOf('private/secret.txt');
    openPath = pathOf('public/notes.txt');
    pagePath = pathOf('public/page.html');
  } finally {
    catalog.close();
  }
  const users = `user alice ${await hashPassword('alice-password')}\nuser bob ${await hashPassword('bob-password')}\n`;
  wide = await startArchiveServer({ archiveDir: archive, auth: parseAuthFile(`${users}protect /files/ alice\n`, 'wide') });
  const folder = decodeURIComponent(secretPath.slice(0, secretPath.lastIndexOf('/') + 1));
  narrow = await startArchiveServer({ archiveDir: archive, auth: parseAuthFile(`${users}protect "${folder}" alice\n`, 'narrow') });
  open = await startArchiveServer({ archiveDir: archive });
});

after(async () => {
  await wide?.close();
  await narrow?.close();
  await open?.close();
  await repository?.close();
  await new Promise((resolve) => liveWeb?.close(resolve));
  if (work) rmSync(work, { recursive: true, force: true });
});

/** The answer's status and body (redirects not followed unless asked). */
async function ask(url: string, init: RequestInit = {}): Promise<{ status: number; body: string; headers: Headers }> {
  const response = await fetch(url, { redirect: 'manual', ...init });
  return { status: response.status, body: await response.text(), headers: response.headers };
}

/** The memento URL of the (only) capture of a site file, from its TimeMap. */
async function mementoOf(server: ArchiveServer, sitePath: string): Promise<string> {
  const timemap = await ask(`${server.baseUrl}/timemap/link/${originalOf(sitePath)}`);
  assert.equal(timemap.status, 200);
  const memento = /<([^>]+)>; rel="first last memento"/.exec(timemap.body)?.[1];
  assert.ok(memento, timemap.body);
  return memento;
}

const getRecord = (server: ArchiveServer, prefix: string, sitePath: string) =>
  `${server.baseUrl}/oai?verb=GetRecord&metadataPrefix=${prefix}&identifier=${encodeURIComponent(originalOf(sitePath))}`;

/** The base64 of a record's By-Value Resources, decoded. */
function byValue(xml: string): string[] {
  return [...xml.matchAll(/<didl:Resource [^>]*encoding="base64">([^<]*)<\/didl:Resource>/g)].map((match) => Buffer.from(match[1]!, 'base64').toString('utf8'));
}

function valid(xml: string): string {
  const check = validateArchiveResponse(xml);
  assert.ok(check.ok, check.output);
  return xml;
}

test('/files: the protected payload to alice only (401 anonymous, 403 to bob, even for a range or HEAD)', async () => {
  const url = wide.baseUrl + secretPath;
  const anonymous = await ask(url);
  assert.equal(anonymous.status, 401);
  assert.match(String(anonymous.headers.get('www-authenticate')), /^Basic realm="oaibag archive"/);
  assert.ok(!anonymous.body.includes('TOP-SECRET'));
  assert.equal((await ask(url, { headers: { Range: 'bytes=0-9' } })).status, 401);
  assert.equal((await ask(url, { method: 'HEAD' })).status, 401);
  assert.equal((await ask(url, { headers: BOB })).status, 403);
  assert.equal((await ask(url, { headers: credentials('alice', 'wrong') })).status, 401);
  const alice = await ask(url, { headers: ALICE });
  assert.equal(alice.status, 200);
  assert.equal(alice.body, SECRET);
  assert.equal(alice.headers.get('vary'), 'Authorization');
});

test('/memento and the TimeGate: the same payload, the same decision', async () => {
  const memento = await mementoOf(wide, 'private/secret.txt');
  const anonymous = await ask(memento);
  assert.equal(anonymous.status, 401, 'a memento is no way around the payload rule');
  assert.ok(!anonymous.body.includes('TOP-SECRET'));
  assert.equal((await ask(memento, { headers: { Range: 'bytes=0-9' } })).status, 401);
  assert.equal((await ask(memento, { headers: BOB })).status, 403);
  const alice = await ask(memento, { headers: ALICE });
  assert.equal(alice.status, 200);
  assert.equal(alice.body, SECRET);
  assert.ok(alice.headers.get('memento-datetime'));

  // The TimeGate's redirect names the memento (metadata, open); following it asks again.
  const gate = `${wide.baseUrl}/timegate/${originalOf('private/secret.txt')}`;
  const redirect = await ask(gate);
  assert.equal(redirect.status, 302);
  assert.equal(redirect.headers.get('location'), memento);
  const followed = await fetch(gate);
  assert.equal(followed.status, 401);
  assert.ok(!(await followed.text()).includes('TOP-SECRET'));
  const followedByAlice = await fetch(gate, { headers: ALICE });
  assert.equal(await followedByAlice.text(), SECRET);
});

test('/oai oai_didl: anonymous gets the record By-Reference only, alice gets the base64 too (GetRecord, ListRecords, POST)', async () => {
  const anonymous = valid((await ask(getRecord(wide, 'oai_didl', 'private/secret.txt'))).body);
  assert.deepEqual(byValue(anonymous), [], 'no By-Value bytes of a payload the client may not read');
  assert.ok(!anonymous.includes(SECRET_BASE64));
  const ref = /<didl:Resource [^>]*ref="([^"]+)"/.exec(anonymous)?.[1];
  assert.equal(ref, wide.baseUrl + secretPath, 'the By-Reference ref is kept: it asks for credentials');
  assert.match(anonymous, /<premis:messageDigest>[0-9a-f]{64}<\/premis:messageDigest>/, 'the digest is metadata and stays');
  const alice = valid((await ask(getRecord(wide, 'oai_didl', 'private/secret.txt'), { headers: ALICE })).body);
  assert.deepEqual(byValue(alice), [SECRET]);

  const list = `${wide.baseUrl}/oai?verb=ListRecords&metadataPrefix=oai_didl`;
  const listed = valid((await ask(list)).body);
  assert.equal((listed.match(/<record>/g) ?? []).length, 3, 'every record is listed');
  assert.deepEqual(byValue(listed), [], 'with /files/ protected, no bytes at all to anonymous');
  assert.ok(!listed.includes('TOP-SECRET') && !listed.includes(SECRET_BASE64));
  assert.ok(byValue(valid((await ask(list, { headers: ALICE })).body)).includes(SECRET));
  assert.deepEqual(byValue(valid((await ask(list, { headers: BOB })).body)), [], 'bob is refused /files/ too');

  const posted = await ask(`${wide.baseUrl}/oai`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: `verb=GetRecord&metadataPrefix=oai_didl&identifier=${encodeURIComponent(originalOf('private/secret.txt'))}`,
  });
  assert.equal(posted.status, 200);
  assert.deepEqual(byValue(posted.body), []);
});

test("serve's warm-up asks as anonymous and is never logged: an archive closed to anonymous still starts, and answers alice", async () => {
  const users = `user alice ${await hashPassword('alice-password')}\n`;
  const lines: string[] = [];
  const errors: string[] = [];
  const closed = await startArchiveServer({
    archiveDir: archive,
    auth: parseAuthFile(`${users}protect / alice\n`, 'closed'),
    accessLog: (line) => lines.push(line),
    log: (line) => errors.push(line),
  });
  try {
    assert.deepEqual(lines, [], "serve's own requests are not in its access log");
    assert.deepEqual(errors, []);
    const list = `${closed.baseUrl}/oai?verb=ListRecords&metadataPrefix=oai_didl`;
    assert.equal((await ask(list)).status, 401, 'the warm-up opened nothing to anonymous');
    const listed = valid((await ask(list, { headers: ALICE })).body);
    assert.equal((listed.match(/<record>/g) ?? []).length, 3);
    assert.ok(byValue(listed).includes(SECRET));
    assert.equal(lines.length, 2, 'one line per client request');
    assert.match(lines[1]!, / - alice \[.*"GET \/oai\?verb=ListRecords&metadataPrefix=oai_didl HTTP\/1\.1" 200 /);
  } finally {
    await closed.close();
  }
});

test('/oai in the other formats and /ore: metadata, open as documented, never the bytes', async () => {
  for (const prefix of ['oai_dc', 'http_header', 'ore']) {
    const reply = await ask(getRecord(wide, prefix, 'private/secret.txt'));
    assert.equal(reply.status, 200, prefix);
    valid(reply.body);
    assert.match(reply.body, /<record>/, prefix);
    assert.ok(!reply.body.includes('TOP-SECRET') && !reply.body.includes(SECRET_BASE64), prefix);
  }
  const mapUrl = /<ore:ResourceMap rdf:about="([^"]+)"/.exec((await ask(getRecord(wide, 'ore', 'private/secret.txt'))).body)?.[1];
  assert.ok(mapUrl, 'the record names its ORE map');
  const map = await ask(mapUrl);
  assert.equal(map.status, 200);
  assert.ok(!map.body.includes('TOP-SECRET'));
  const timemap = await ask(`${wide.baseUrl}/timemap/link/${originalOf('private/secret.txt')}`);
  assert.equal(timemap.status, 200);
});

test('the Linked Data view (/sparql, /resource, /data, /page): for users refused nothing', async () => {
  const item = encodeURIComponent(originalOf('private/secret.txt'));
  const urls = [
    `${wide.baseUrl}/sparql?query=${encodeURIComponent('ask { ?s ?p ?o }')}`,
    `${wide.baseUrl}/resource/item/${item}`,
    `${wide.baseUrl}/data/item/${item}`,
    `${wide.baseUrl}/page/item/${item}`,
    `${wide.baseUrl}/resource/nothing-of-that-name`,
  ];
  for (const url of urls) {
    const anonymous = await ask(url);
    assert.equal(anonymous.status, 401, url);
    assert.match(String(anonymous.headers.get('www-authenticate')), /^Basic /, url);
    assert.equal((await ask(url, { headers: BOB })).status, 403, url);
  }
  const sparqlPost = await ask(`${wide.baseUrl}/sparql`, { method: 'POST', headers: { 'Content-Type': 'application/sparql-query' }, body: 'ask { ?s ?p ?o }' });
  assert.equal(sparqlPost.status, 401);
  assert.equal((await ask(urls[0]!, { headers: ALICE })).status, 200);
  assert.equal((await ask(urls[1]!, { headers: { ...ALICE, Accept: 'text/turtle' } })).status, 303);
  assert.equal((await ask(urls[2]!, { headers: ALICE })).status, 200);
  assert.equal((await ask(urls[3]!, { headers: ALICE })).status, 200);
  // Without --auth the view is open to all.
  assert.equal((await ask(`${open.baseUrl}/sparql?query=${encodeURIComponent('ask { ?s ?p ?o }')}`)).status, 200);
});

test('a rule on one folder: its payload withheld from anonymous everywhere, the rest given By-Value', async () => {
  assert.equal((await ask(narrow.baseUrl + secretPath)).status, 401);
  assert.equal((await ask(narrow.baseUrl + openPath)).body, OPEN);
  assert.equal((await ask(await mementoOf(narrow, 'private/secret.txt'))).status, 401);
  assert.equal((await ask(await mementoOf(narrow, 'public/notes.txt'))).body, OPEN);
  const listed = valid((await ask(`${narrow.baseUrl}/oai?verb=ListRecords&metadataPrefix=oai_didl`)).body);
  const bytes = byValue(listed);
  assert.ok(bytes.includes(OPEN), 'an open payload still goes By-Value');
  assert.ok(!bytes.includes(SECRET) && !listed.includes(SECRET_BASE64));
  assert.ok(byValue((await ask(`${narrow.baseUrl}/oai?verb=ListRecords&metadataPrefix=oai_didl`, { headers: ALICE })).body).includes(SECRET));
  assert.equal((await ask(`${narrow.baseUrl}/sparql?query=${encodeURIComponent('ask { ?s ?p ?o }')}`)).status, 401, 'refused something: no graph');
  assert.equal((await ask(`${narrow.baseUrl}/sparql?query=${encodeURIComponent('ask { ?s ?p ?o }')}`, { headers: ALICE })).status, 200);
});

test('archived content is served sandboxed (Content-Security-Policy) and never sniffed', async () => {
  const memento = await mementoOf(open, 'public/page.html');
  for (const url of [open.baseUrl + pagePath, memento, wide.baseUrl + secretPath]) {
    const reply = await ask(url, url.startsWith(wide.baseUrl) ? { headers: ALICE } : {});
    assert.equal(reply.status, 200, url);
    const policy = String(reply.headers.get('content-security-policy'));
    assert.match(policy, /^sandbox;/, `${url}: sandbox without allow-scripts or allow-same-origin`);
    assert.doesNotMatch(policy, /allow-/);
    assert.match(policy, /default-src 'none'/);
    assert.equal(reply.headers.get('x-content-type-options'), 'nosniff', url);
  }
  assert.equal((await ask(`${open.baseUrl}/oai?verb=Identify`)).headers.get('x-content-type-options'), 'nosniff');
});

test("in Chromium a harvested page's script does not run as the archive, and the page never calls the live web", { skip: NO_CHROMIUM }, async () => {
  for (const url of [open.baseUrl + pagePath, await mementoOf(open, 'public/page.html')]) {
    const dom = await rendered(url);
    assert.match(dom, /archived page/, 'the page itself is shown');
    assert.match(dom, /<body>/);
    assert.doesNotMatch(dom, /<body[^>]*data-(ran|read)/, `${url}: its script ran`);
  }
  assert.deepEqual(liveRequests, [], 'no request reached the live web');
});

test("Identify's default adminEmail is valid against the OAI-PMH schema; an invalid one is refused with a coded usage error", async () => {
  const identify = valid((await ask(`${open.baseUrl}/oai?verb=Identify`)).body);
  assert.match(identify, /<adminEmail>nobody@oaibag\.invalid<\/adminEmail>/);
  for (const bad of ['nobody@localhost', 'no at sign', 'a b@example.org', '@example.org', 'me@example.', 'me@.org', `me@ex\u0001ample.org`]) {
    await assert.rejects(startArchiveServer({ archiveDir: archive, adminEmails: [bad] }), (error: Error & { code?: string }) => {
      assert.equal(error.code, 'ERR_ARCHIVE_USAGE', bad);
      assert.ok(!error.message.includes('\n'));
      return true;
    });
  }
  const given = await startArchiveServer({ archiveDir: archive, adminEmails: ['me@example.org', 'x@y.z'] });
  try {
    valid((await ask(`${given.baseUrl}/oai?verb=Identify`)).body);
  } finally {
    await given.close();
  }
});

/** The page as Chromium renders it, scripts given time to run; asynchronous, since the server runs in this process. */
async function rendered(url: string): Promise<string> {
  const profile = mkdtempSync(join(work, 'profile-'));
  const args = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', `--user-data-dir=${profile}`, '--virtual-time-budget=3000', '--dump-dom', url];
  const child = spawn(CHROMIUM, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  clearTimeout(timer);
  assert.equal(code, 0, `chromium failed: ${stderr}`);
  return stdout;
}

test('/metrics names every source and its failures: under --auth for those refused nothing; GET and HEAD only', async () => {
  const anonymous = await ask(`${wide.baseUrl}/metrics`);
  assert.equal(anonymous.status, 401);
  assert.doesNotMatch(anonymous.body, /oaibag_source/);
  assert.equal((await ask(`${wide.baseUrl}/metrics`, { headers: BOB })).status, 403);
  const alice = await ask(`${wide.baseUrl}/metrics`, { headers: ALICE });
  assert.equal(alice.status, 200);
  assert.match(alice.body, /^oaibag_source_last_attempt_status\{source="[^"]+",status="complete"\} 1$/m);
  assert.equal((await ask(`${open.baseUrl}/metrics`)).status, 200);
  const post = await ask(`${open.baseUrl}/metrics`, { method: 'POST', body: 'x' });
  assert.equal(post.status, 405);
  assert.equal(post.headers.get('allow'), 'GET, HEAD');
});
