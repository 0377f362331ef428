// `oaibag serve`, its first part: the archive's payload files under /files/<bag>/<path>, with
// the headers the site's own server gave them, conditional GET and ranges, and nothing else of
// the archive reachable (docs/serve.md, "Payloads").
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { type ArchiveServer, Catalog, harvest, payloadUrlPath, startArchiveServer } from '../packages/archiver/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';

const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;
const FILES: Record<string, Buffer> = {
  'pages/a.html': Buffer.from('<p>a</p>'.repeat(50)),
  'img/logo.png': Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3, 4]),
  'odd name/café %41.txt': Buffer.from('accents and a percent sign'),
  'big.bin': Buffer.alloc(300_000, 7), // By-Reference: over the repository's By-Value limit
};

let work: string;
let site: string;
let archive: string;
let repository: Repository;
let server: ArchiveServer;

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

function get(url: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (chunk: Buffer) => parts.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(parts) }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The payload file (its bag and its path in the bag) holding a site file: the latest version of its identifier. */
function payloadPart(sitePath: string): { bagPath: string; path: string } {
  const catalog = Catalog.open(archive, { create: false });
  try {
    const source = catalog.bags()[0]!.sourceId;
    const identifier = `${new URL(repository.baseUrl).origin}/${sitePath.split('/').map(encodeURIComponent).join('/')}`;
    const version = catalog.latestVersion(source, identifier);
    assert.ok(version, `no version of ${identifier}`);
    const [part] = catalog.versionParts(version.id);
    return part!;
  } finally {
    catalog.close();
  }
}

/** The archive's URL of the payload holding a site file. */
function payloadUrl(sitePath: string): string {
  const part = payloadPart(sitePath);
  return server.baseUrl + payloadUrlPath(part.bagPath, part.path);
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-serve-files-'));
  site = join(work, 'site');
  archive = join(work, 'archive');
  for (const [path, bytes] of Object.entries(FILES)) {
    mkdirSync(dirname(join(site, path)), { recursive: true });
    writeFileSync(join(site, path), bytes);
    utimesSync(join(site, path), YEAR_2000, YEAR_2000);
  }
  repository = await createRepository({ root: site, index: join(work, 'index.sqlite'), watch: false, rescanSeconds: 0, byValueMax: 100_000 });
  await repository.listen(0, '127.0.0.1');
  const summary = await harvest({ baseUrl: `${repository.baseUrl}/oai`, archiveDir: archive });
  assert.equal(summary.added, Object.keys(FILES).length);
  server = await startArchiveServer({ archiveDir: archive });
});

after(async () => {
  await server?.close();
  await repository?.close();
  rmSync(work, { recursive: true, force: true });
});

test('each payload is served with the bytes and the headers the site gave it', async () => {
  for (const [path, bytes] of Object.entries(FILES)) {
    const archived = await get(payloadUrl(path));
    assert.equal(archived.status, 200, path);
    assert.ok(archived.body.equals(bytes), path);
    const original = await get(`${repository.baseUrl}/${path.split('/').map(encodeURIComponent).join('/')}`);
    for (const name of ['content-type', 'content-length', 'etag', 'last-modified']) {
      assert.equal(archived.headers[name], original.headers[name], `${name} of ${path}`);
    }
  }
});

test('conditional GET, HEAD and a byte range', async () => {
  const url = payloadUrl('big.bin');
  const whole = await get(url);
  const etag = String(whole.headers.etag);
  assert.equal((await get(url, { 'If-None-Match': etag })).status, 304);
  assert.equal((await get(url, { 'If-Modified-Since': String(whole.headers['last-modified']) })).status, 304);
  const head = await get(url, {}, 'HEAD');
  assert.equal(head.status, 200);
  assert.equal(head.body.length, 0);
  assert.equal(head.headers['content-length'], String(FILES['big.bin']!.length));
  const range = await get(url, { Range: 'bytes=100-199' });
  assert.equal(range.status, 206);
  assert.ok(range.body.equals(FILES['big.bin']!.subarray(100, 200)));
  assert.equal((await get(url, {}, 'POST')).status, 405);
});

test('nothing but catalogued payloads: tag files, the catalog, other folders and hostile paths are 404', async () => {
  const payload = new URL(payloadUrl('pages/a.html'));
  const bag = payload.pathname.split('/').slice(2, 4).join('/');
  for (const path of [
    `/files/${bag}/bagit.txt`,
    `/files/${bag}/manifest-sha256.txt`,
    `/files/${bag}/metadata/records.xml.gz`,
    `/files/${bag}/data`,
    `/files/${bag}/data/`,
    `/files/${bag}/data/../bagit.txt`,
    `/files/${bag}/data/%2e%2e/bagit.txt`,
    `/files/${bag}/data/..%2fbagit.txt`,
    `/files/${bag}/data/nothing-here.txt`,
    '/files/../catalog.sqlite',
    '/files/%2e%2e/catalog.sqlite',
    '/catalog.sqlite',
    '/files/',
    `${payload.pathname}%00`,
  ]) {
    const reply = await get(`${server.baseUrl}${path}`);
    assert.equal(reply.status, 404, path);
  }
});

test('a payload whose file no longer has its catalogued size is not served', async () => {
  const url = payloadUrl('img/logo.png');
  const location = payloadPart('img/logo.png');
  const file = join(archive, ...location.bagPath.split('/'), ...location.path.split('/'));
  const original = readFileSync(file);
  writeFileSync(file, Buffer.concat([original, Buffer.from('!')]));
  try {
    assert.equal((await get(url)).status, 404);
  } finally {
    writeFileSync(file, original);
  }
  assert.equal((await get(url)).status, 200);
});
