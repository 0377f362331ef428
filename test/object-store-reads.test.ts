// The commands that read bag files, on an archive whose bags are on object storage (issue 28),
// end to end: one site harvested twice (a change, an addition, a deletion between) into an
// archive in a folder with its SQLite catalog and into one on a real Ceph RADOS Gateway with its
// catalog in a real PostgreSQL. restore (latest and as of the first harvest), audit, verify,
// serve (payloads, a byte range, OAI-PMH lists, a memento) and export (--bags, --site) answer
// the same on both. Then one
// payload object is overwritten on the store behind the archive's back (a bucket without Object
// Lock) and the same file in the folder: verify names it on both alike, with exit code 4, and on
// the store also reports an object its bag's commit record does not list.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { type ArchiveServer, S3Storage, startArchiveServer } from '../packages/archiver/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';
import { CEPH_SKIP, type CephRgw, startCephRgw } from './ceph-rgw-server.ts';
import { OAIBAG_BIN } from './oaibag-process.ts';
import { POSTGRES_SKIP, type Postgres, startPostgres } from './postgres-server.ts';
import { snapshot } from './site-tree.ts';

// The SDK's notice that its 2027 releases need Node 22 (docs/scale-out.md: a 2026 release is pinned).
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;
const nextSecond = () => new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));
const STORE = 's3://reads/site';

let rgw: CephRgw;
let admin: S3Client;
let postgres: Postgres;
let work: string;
let site: string;
let repository: Repository;
let endpoint: string;
/** The archive in a folder (SQLite), and the one on the store (PostgreSQL + S3). */
let inFolder: string;
let onStore: string;
/** An instant between the two harvests, as --as-of takes it. */
let betweenHarvests: string;

function write(path: string, content: string | Buffer, mtime = YEAR_2000): void {
  mkdirSync(dirname(join(site, path)), { recursive: true });
  writeFileSync(join(site, path), content);
  utimesSync(join(site, path), mtime, mtime);
}

async function run(...args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [OAIBAG_BIN, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, AWS_ACCESS_KEY_ID: rgw.accessKeyId, AWS_SECRET_ACCESS_KEY: rgw.secretAccessKey },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  const [status] = (await once(child, 'close')) as [number | null];
  return { status, stdout, stderr };
}

async function ok(...args: string[]): Promise<string> {
  const result = await run(...args);
  assert.equal(result.status, 0, `oaibag ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

async function harvestBoth(first: boolean): Promise<void> {
  await repository.scan();
  await nextSecond();
  await ok('harvest', endpoint, '--archive', inFolder);
  const store = first ? ['--catalog', await postgres.createDatabase('reads'), '--store', STORE, '--store-endpoint', rgw.endpoint] : [];
  await ok('harvest', endpoint, '--archive', onStore, ...store);
}

/** The store as the test reads it (through the library, with the gateway's credentials). */
function openStore(): Promise<S3Storage> {
  return S3Storage.open({
    url: STORE,
    endpoint: rgw.endpoint,
    region: rgw.region,
    credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey },
  });
}

/** Both archives served at once (in this process: the store's credentials are in its environment). */
async function withServers(use: (folder: ArchiveServer, store: ArchiveServer) => Promise<void>): Promise<void> {
  const folder = await startArchiveServer({ archiveDir: inFolder, log: () => {} });
  try {
    const store = await startArchiveServer({ archiveDir: onStore, log: () => {} });
    try {
      await use(folder, store);
    } finally {
      await store.close();
    }
  } finally {
    await folder.close();
  }
}

/** An answer with what may differ between two archives of the same site taken out: the base URL, the instants of harvest. */
async function answerOf(server: ArchiveServer, path: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${server.baseUrl}${path}`, { headers });
  const body = Buffer.from(await response.arrayBuffer());
  const keep = ['content-type', 'content-length', 'content-range', 'etag', 'last-modified'];
  return {
    status: response.status,
    headers: Object.fromEntries(keep.map((name) => [name, response.headers.get(name)])),
    body,
  };
}

function normalised(text: string, server: ArchiveServer): string {
  return text
    .replaceAll(server.baseUrl, 'BASE')
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, 'INSTANT')
    .replace(/<resumptionToken[^>]*>[^<]*<\/resumptionToken>/g, '<resumptionToken/>');
}

/** Every page of an OAI-PMH list, normalised. */
async function oaiList(server: ArchiveServer, verb: string): Promise<string[]> {
  const pages: string[] = [];
  let query = `verb=${verb}&metadataPrefix=oai_didl`;
  for (;;) {
    const body = (await answerOf(server, `/oai?${query}`)).body.toString('utf8');
    pages.push(normalised(body, server));
    const token = /<resumptionToken[^>]*>([^<]+)<\/resumptionToken>/.exec(body)?.[1];
    if (!token) return pages;
    query = `verb=${verb}&resumptionToken=${encodeURIComponent(token)}`;
  }
}

interface VerifyJson {
  ok: boolean;
  bags: number;
  bytes: number;
  problems: Array<{ kind: string; bagPath: string; path?: string; message: string }>;
  damagedPayloads: Array<{ bagPath: string; path: string | null; problem: string; versions: Array<{ identifier: string }> }>;
}

describe('reading bags on object storage', { skip: CEPH_SKIP || POSTGRES_SKIP }, () => {
  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'oaibag-object-store-reads-'));
    [rgw, postgres] = await Promise.all([startCephRgw(), startPostgres()]);
    process.env.AWS_ACCESS_KEY_ID = rgw.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = rgw.secretAccessKey;
    admin = new S3Client({
      endpoint: rgw.endpoint,
      region: rgw.region,
      forcePathStyle: true,
      credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey },
    });
    // No Object Lock: the test overwrites an object behind the archive's back.
    await admin.send(new CreateBucketCommand({ Bucket: 'reads' }));
    site = join(work, 'site');
    inFolder = join(work, 'in-folder');
    onStore = join(work, 'on-store');
    write('index.html', '<html>home</html>');
    write('papers/a.txt', 'a paper');
    write('papers/b.txt', 'b paper, to be deleted');
    // Larger than one read of a stream and than serve's base64 chunk (57 × 4600 bytes).
    write('img/large.bin', Buffer.from(Array.from({ length: 700_000 }, (_, i) => (i * 7 + (i >> 9)) & 0xff)));
    for (let i = 0; i < 6; i++) write(`pages/page-${i}.html`, `<html>page ${i} ${'x'.repeat(500 * i)}</html>`);
    repository = await createRepository({ root: site, index: join(work, 'index.sqlite'), watch: false, rescanSeconds: 0, pageRecords: 3 });
    endpoint = `${await repository.listen(0, '127.0.0.1')}/oai`;
    await harvestBoth(true);
    await nextSecond();
    betweenHarvests = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    write('papers/a.txt', 'a paper, revised', YEAR_2000 + 86_400);
    write('papers/c.txt', 'a new paper');
    rmSync(join(site, 'papers/b.txt'));
    await nextSecond();
    await harvestBoth(false);
  });

  after(async () => {
    admin?.destroy();
    await repository?.close();
    await rgw?.stop();
    await postgres?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  test('restore gives the same site, byte for byte, latest and as of the first harvest', async () => {
    for (const asOf of [[], ['--as-of', betweenHarvests]]) {
      const name = asOf.length === 0 ? 'latest' : 'first';
      await ok('restore', '--archive', inFolder, '--to', join(work, `restored-folder-${name}`), ...asOf);
      await ok('restore', '--archive', onStore, '--to', join(work, `restored-store-${name}`), ...asOf);
      const fromStore = snapshot(join(work, `restored-store-${name}`));
      assert.deepEqual(fromStore, snapshot(join(work, `restored-folder-${name}`)), name);
    }
    const latest = snapshot(join(work, 'restored-store-latest'));
    const first = snapshot(join(work, 'restored-store-first'));
    assert.ok(latest.has('papers/c.txt') && !latest.has('papers/b.txt'));
    assert.ok(first.has('papers/b.txt') && !first.has('papers/c.txt'));
    assert.equal(readFileSync(join(work, 'restored-store-first', 'papers/a.txt'), 'utf8'), 'a paper');
    assert.equal(readFileSync(join(work, 'restored-store-latest', 'papers/a.txt'), 'utf8'), 'a paper, revised');
    assert.deepEqual(readFileSync(join(work, 'restored-store-latest', 'img/large.bin')), readFileSync(join(site, 'img/large.bin')));
  });

  test('audit gives the same changes on both', async () => {
    const columns = (csv: string) =>
      csv
        .trim()
        .split('\n')
        .map((line) => line.split(',').slice(0, 4).join(','));
    const fromStore = await ok('audit', '--archive', onStore, '--format', 'csv');
    assert.deepEqual(columns(fromStore), columns(await ok('audit', '--archive', inFolder, '--format', 'csv')));
    assert.match(fromStore, /papers\/b\.txt/);
  });

  test('verify finds both archives intact, with the same bags and bytes', async () => {
    const verify = async (archive: string) => JSON.parse(await ok('verify', '--archive', archive, '--json')) as VerifyJson;
    const [store, folder] = [await verify(onStore), await verify(inFolder)];
    assert.equal(store.ok, true, JSON.stringify(store.problems));
    assert.equal(folder.ok, true);
    assert.equal(store.bags, folder.bags);
    assert.equal(store.bytes, folder.bytes);
  });

  test('serve answers the same: payloads, a byte range, OAI-PMH lists, a memento', async () => {
    await withServers(async (folder, store) => {
      for (const verb of ['ListIdentifiers', 'ListRecords']) assert.deepEqual(await oaiList(store, verb), await oaiList(folder, verb), verb);
      const records = (await oaiList(folder, 'ListRecords')).join('');
      const payloads = [...new Set([...records.matchAll(/BASE(\/files\/[^"<\s]+)/g)].map((match) => match[1]!))];
      assert.ok(payloads.length >= 9, `${payloads.length} payload URLs`);
      for (const path of payloads) assert.deepEqual(await answerOf(store, path), await answerOf(folder, path), path);
      const large = payloads.find((path) => path.endsWith('large.bin'))!;
      const range = { range: 'bytes=100000-300099' };
      const ranged = await answerOf(store, large, range);
      assert.equal(ranged.status, 206);
      assert.deepEqual(ranged.body, readFileSync(join(site, 'img/large.bin')).subarray(100_000, 300_100));
      assert.deepEqual(ranged, await answerOf(folder, large, range));
      assert.equal((await answerOf(store, `${large.slice(0, -4)}.nothing`)).status, 404);

      const original = `${endpoint.replace(/\/oai$/, '')}/papers/a.txt`;
      const timemap = async (server: ArchiveServer) => {
        const text = (await answerOf(server, `/timemap/link/${original}`)).body.toString('utf8');
        return [...text.matchAll(/<([^>]+\/memento\/[^>]+)>/g)].map((match) => match[1]!.slice(server.baseUrl.length));
      };
      const mementos = await timemap(store);
      assert.equal(mementos.length, 2, `two captures of ${original}`);
      assert.deepEqual(mementos, await timemap(folder));
      for (const memento of mementos) {
        const [a, b] = [await answerOf(store, memento), await answerOf(folder, memento)];
        assert.equal(a.status, 200);
        assert.deepEqual(a, b);
      }
      assert.equal((await answerOf(store, mementos[0]!)).body.toString('utf8'), 'a paper');
    });
  });

  test('export writes the same bags (--bags) and the same site ZIP (--site)', async () => {
    for (const archive of [inFolder, onStore]) {
      await ok('export', '--archive', archive, '--bags', '--to', join(work, `bags-${archive === onStore ? 'store' : 'folder'}`));
      await ok('export', '--archive', archive, '--site', '--to', join(work, `site-${archive === onStore ? 'store' : 'folder'}.zip`));
    }
    // The bags were written at other instants (Bagged-At), so their ZIPs differ: the same names, each a valid bag.
    const names = (folder: string) => [...readFileSync(join(work, folder, 'SHA256SUMS'), 'utf8').matchAll(/ {2}(\S+)\n/g)].map((match) => match[1]!);
    const zips = names('bags-store');
    assert.deepEqual(zips, names('bags-folder'));
    assert.ok(zips.length >= 2);
    for (const zip of zips) await ok('verify', '--bag', join(work, 'bags-store', zip));
    assert.deepEqual(readFileSync(join(work, 'site-store.zip')), readFileSync(join(work, 'site-folder.zip')));
  });

  test('a payload overwritten on the store is damage verify names as in a folder (exit 4); an object no commit lists is reported', async () => {
    const store = await openStore();
    let bagPath: string;
    let path: string;
    let other: string;
    try {
      const bags: string[] = [];
      for await (const bag of store.committedBags()) bags.push(bag);
      bagPath = bags[0]!;
      other = bags[1]!;
      const record = (await store.commitOf(bagPath))!;
      const file = record.files.find((candidate) => candidate.path.startsWith('data/') && candidate.size > 4)!;
      path = file.path;
      // The same size, other bytes: only the digests can tell.
      const damaged = Buffer.alloc(file.size, 0x2a);
      await admin.send(new PutObjectCommand({ Bucket: 'reads', Key: `site/${bagPath}/${path}`, Body: damaged }));
      writeFileSync(join(inFolder, ...bagPath.split('/'), ...path.split('/')), damaged);
      await admin.send(new PutObjectCommand({ Bucket: 'reads', Key: `site/${other}/data/slipped-in.txt`, Body: 'not committed' }));
    } finally {
      store.close();
    }
    const verify = async (archive: string) => {
      const result = await run('verify', '--archive', archive, '--json');
      assert.equal(result.status, 4, result.stderr);
      return JSON.parse(result.stdout) as VerifyJson;
    };
    const [onS3, folder] = [await verify(onStore), await verify(inFolder)];
    const damage = (report: VerifyJson) => report.damagedPayloads.map(({ bagPath, path, problem, versions }) => ({ bagPath, path, problem, versions }));
    assert.deepEqual(damage(onS3), damage(folder));
    assert.deepEqual(
      damage(onS3).map(({ bagPath, path, problem }) => ({ bagPath, path, problem })),
      [{ bagPath, path, problem: 'checksum' }],
    );
    assert.ok(damage(onS3)[0]!.versions.length >= 1);
    const sameKind = (report: VerifyJson) => report.problems.filter((problem) => problem.path === path).map(({ kind, message }) => ({ kind, message }));
    assert.deepEqual(sameKind(onS3), sameKind(folder));
    assert.deepEqual(
      onS3.problems.filter((problem) => problem.bagPath === other).map(({ kind, path }) => ({ kind, path })),
      [{ kind: 'unexpected', path: 'data/slipped-in.txt' }],
    );
    const text = await run('verify', '--archive', onStore);
    assert.equal(text.status, 4);
    assert.match(text.stdout, new RegExp(`${bagPath}: ${path.replaceAll('.', '\\.')}`));
    assert.match(text.stdout, /archive NOT OK/);
  });
});
