// `oaibag import` of serialized bags into an archive whose bags are on object storage (issue
// 28), end to end through the `oaibag` command, on a real Ceph RADOS Gateway and a real
// PostgreSQL started by this test. A site harvested twice into a folder archive is exported
// (`export --bags`) and imported onto the store: every bag is committed byte for byte, status
// and audit answer as they do for the folder archive, and verify passes. The same delivery
// imported again adopts nothing; a bag of another archive under a name the store holds, or a
// name another writer claimed, is refused with one coded line, nothing written; an import killed with SIGKILL partway (once a
// bag is claimed, once some are committed) is completed by the same command, every bag
// committed and recorded exactly once.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import yauzl from 'yauzl';
import { Catalog, S3Storage } from '../packages/archiver/src/index.ts';
import { CEPH_SKIP, type CephRgw } from './ceph-rgw-server.ts';
import { archiveAnswers, ended, startOaibag } from './oaibag-process.ts';
import { type PageSite, pageSite } from './page-site.ts';
import { POSTGRES_SKIP, type Postgres } from './postgres-server.ts';
import { type StoreEngines, startStoreEngines } from './store-engines.ts';

const nextSecond = () => new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));

let engines: StoreEngines;
let rgw: CephRgw;
let admin: S3Client;
let postgres: Postgres;
let work: string;
/** The folder archive the bags come from, and its bags exported. */
let source: string;
let delivery: string;
/** Bag path → file path → bytes, of every bag of the delivery (read from its ZIPs). */
let delivered: Map<string, Map<string, Buffer>>;

/** The `oaibag` command with the store's credentials in its environment. */
function oaibag(args: string[]): ChildProcess {
  return startOaibag(args, { AWS_ACCESS_KEY_ID: rgw.accessKeyId, AWS_SECRET_ACCESS_KEY: rgw.secretAccessKey });
}

const run = (args: string[]) => ended(oaibag(args));

async function ok(args: string[]): Promise<string> {
  const result = await run(args);
  assert.equal(result.status, 0, `oaibag ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

/** `oaibag import` of `what` into `archive`, its catalog and bags on the engines (told the first time only). */
async function importArgs(archive: string, prefix: string, what: string, first: boolean): Promise<string[]> {
  const onEngines = first
    ? ['--catalog', await postgres.createDatabase(prefix), '--store', `s3://archive/${prefix}`, '--store-endpoint', rgw.endpoint, '--store-region', rgw.region]
    : [];
  return ['import', '--archive', archive, ...onEngines, '--json', what];
}

async function storage(prefix: string): Promise<S3Storage> {
  return S3Storage.open({
    url: `s3://archive/${prefix}`,
    endpoint: rgw.endpoint,
    region: rgw.region,
    credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey },
  });
}

/** Every key under `prefix` in the bucket. */
async function keys(prefix: string): Promise<string[]> {
  const found: string[] = [];
  let token: string | undefined;
  do {
    const page = await admin.send(new ListObjectsV2Command({ Bucket: 'archive', Prefix: prefix, ...(token ? { ContinuationToken: token } : {}) }));
    for (const item of page.Contents ?? []) found.push(item.Key!);
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return found;
}

async function bytesOf(store: S3Storage, path: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of store.read(path)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The files of a bag ZIP: path in its bag → bytes. */
async function zipFiles(zip: string): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  const archive = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.open(zip, { lazyEntries: true }, (error, opened) => (error ? reject(error) : resolve(opened!))),
  );
  await new Promise<void>((resolve, reject) => {
    archive.on('entry', (entry: yauzl.Entry) => {
      if (entry.fileName.endsWith('/')) return archive.readEntry();
      archive.openReadStream(entry, (error, stream) => {
        if (error) return reject(error);
        const chunks: Buffer[] = [];
        stream!.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream!.on('end', () => {
          files.set(entry.fileName.slice(entry.fileName.indexOf('/') + 1), Buffer.concat(chunks));
          archive.readEntry();
        });
        stream!.on('error', reject);
      });
    });
    archive.on('end', resolve);
    archive.on('error', reject);
    archive.readEntry();
  });
  return files;
}

/**
 * Every bag of the delivery is committed on the store under `prefix` once, each file byte for
 * byte as in its ZIP, with one claim a bag and nothing else; and the catalog records every bag,
 * none left pending.
 */
async function checkStore(archive: string, prefix: string): Promise<void> {
  const store = await storage(prefix);
  try {
    const bags = [...delivered.keys()].sort();
    const committed: string[] = [];
    for await (const bag of store.committedBags()) committed.push(bag);
    assert.deepEqual(committed, bags, 'every bag committed, once');
    assert.deepEqual(
      (await keys(`${prefix}/claims/`)).map((key) => key.slice(`${prefix}/claims/`.length)),
      bags,
      'one claim a bag',
    );
    for (const bagPath of bags) {
      const files = delivered.get(bagPath)!;
      const record = (await store.commitOf(bagPath))!;
      assert.deepEqual(record.files.map((file) => file.path).sort(), [...files.keys()].sort(), `${bagPath}: the commit record lists the bag's files`);
      for (const file of record.files) {
        const bytes = files.get(file.path)!;
        assert.equal(file.sha256, createHash('sha256').update(bytes).digest('hex'), `${bagPath}/${file.path}`);
        assert.ok((await bytesOf(store, `${bagPath}/${file.path}`)).equals(bytes), `${bagPath}/${file.path} is byte-exact on the store`);
      }
      const objects: string[] = [];
      for await (const object of store.objectsOf(bagPath)) objects.push(object.path);
      assert.deepEqual(objects.sort(), [...files.keys()].sort(), `${bagPath}: no object besides the bag's files`);
    }
  } finally {
    store.close();
  }
  const catalog = Catalog.open(archive, { create: false });
  try {
    assert.deepEqual(catalog.pendingBags(), [], 'no bag left pending');
    assert.deepEqual(
      catalog
        .bags()
        .map((bag) => bag.bagPath)
        .sort(),
      [...delivered.keys()].sort(),
      'the catalog records every bag once',
    );
  } finally {
    catalog.close();
  }
}

const answers = (archive: string) => archiveAnswers(run, archive);

interface StatusJson {
  sources: Array<{
    source: { baseUrl: string; watermark: string | null };
    lastHarvest: { id: number; status: string; startedAt: string; counts: Record<string, number> } | null;
    liveResources: number;
    deletedResources: number;
    versions: number;
    payloadBytes: number;
    storedBytes: number;
    bags: number;
  }>;
}

/** What status says that the bags themselves carry: per source its counts, watermark and last harvest. */
function carried(status: unknown) {
  return (status as StatusJson).sources.map((one) => ({
    baseUrl: one.source.baseUrl,
    watermark: one.source.watermark,
    lastHarvest: one.lastHarvest && {
      id: one.lastHarvest.id,
      status: one.lastHarvest.status,
      startedAt: one.lastHarvest.startedAt,
      records: one.lastHarvest.counts.records,
      added: one.lastHarvest.counts.added,
      modified: one.lastHarvest.counts.modified,
      deleted: one.lastHarvest.counts.deleted,
    },
    counts: [one.liveResources, one.deletedResources, one.versions, one.payloadBytes, one.storedBytes, one.bags],
  }));
}

function versionsOf(archive: string): number {
  const catalog = Catalog.open(archive, { create: false });
  try {
    return catalog.status().sources.reduce((sum, one) => sum + one.versions, 0);
  } finally {
    catalog.close();
  }
}

/** Each run's counts, by number: what status shows of a run. */
function runCounts(archive: string): unknown[] {
  const catalog = Catalog.open(archive, { create: false });
  try {
    return catalog.statement('SELECT id, status, records, added, modified, touched, deleted, bytes FROM harvests ORDER BY id').all();
  } finally {
    catalog.close();
  }
}

/** Starts `args`, kills it with SIGKILL once `ready()` holds (polled), and resolves with how it ended. */
async function killWhen(args: string[], ready: () => Promise<boolean>): Promise<NodeJS.Signals | null> {
  const child = oaibag(args);
  const exit = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  let done = false;
  void exit.then(() => (done = true));
  while (!done && !(await ready())) await new Promise((resolve) => setTimeout(resolve, 5));
  if (!done) child.kill('SIGKILL');
  return (await exit)[1];
}

describe('importing serialized bags onto object storage', { skip: CEPH_SKIP || POSTGRES_SKIP }, () => {
  let site: PageSite;

  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'oaibag-object-store-import-'));
    engines = await startStoreEngines([{ name: 'archive' }]);
    ({ rgw, postgres, admin } = engines);
    // Two harvests (a change and an addition between) of 40 pages, five records a bag.
    site = await pageSite(work, 'site', 40);
    source = join(work, 'source');
    await ok(['harvest', site.endpoint, '--archive', source, '--batch-records', '5']);
    site.write('pages/page-003.html', '<html>page 3, changed</html>', Date.UTC(2001, 0, 1) / 1000);
    site.write('pages/page-new.html', '<html>a new page</html>', Date.UTC(2001, 0, 1) / 1000);
    await site.repository.scan();
    await nextSecond();
    await ok(['harvest', site.endpoint, '--archive', source, '--batch-records', '5']);
    delivery = join(work, 'delivery');
    await ok(['export', '--archive', source, '--bags', '--to', delivery]);
    delivered = new Map();
    for (const zip of readdirSync(delivery).filter((name) => name.endsWith('.zip'))) {
      const [, harvest, batch] = /^(harvest-\d+)-(batch-\d+)\.zip$/.exec(zip)!;
      delivered.set(`aips/${harvest}/${batch}`, await zipFiles(join(delivery, zip)));
    }
    assert.ok(delivered.size >= 8, `${delivered.size} bags exported`);
  });

  after(async () => {
    await site?.repository.close();
    await engines?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  test('exported bags imported onto the store: committed byte for byte, the same answers as the folder archive, verify passes; again, nothing adopted', async () => {
    const archive = join(work, 'imported');
    const summary = JSON.parse(await ok(await importArgs(archive, 'imported', delivery, true))) as { kind: string; bags: number };
    assert.equal(summary.kind, 'bags');
    assert.equal(summary.bags, delivered.size);
    assert.deepEqual(readdirSync(archive).includes('aips'), false, 'no bag in the archive folder');
    await checkStore(archive, 'imported');
    // The same delivery imported into a folder archive (SQLite) answers exactly the same; the
    // source archive the same for all the bags carry (not how its harvests were run).
    const inFolder = join(work, 'imported-in-folder');
    await ok(['import', '--archive', inFolder, delivery]);
    const expected = await answers(inFolder);
    assert.deepEqual(await answers(archive), expected, 'status and audit answer as for the same import into a folder');
    const original = await answers(source);
    assert.deepEqual(expected.audit, original.audit, 'audit answers as for the source archive');
    assert.deepEqual(carried(expected.status), carried(original.status), 'status counts as for the source archive');
    const verify = await run(['verify', '--archive', archive]);
    assert.equal(verify.status, 0, verify.stdout + verify.stderr);

    // The same delivery again: every bag recognised as held, nothing written.
    const verified = await answers(archive);
    const commitsBefore = await keys('imported/commits/');
    const again = JSON.parse(await ok(await importArgs(archive, 'imported', delivery, false))) as { bags: number };
    assert.equal(again.bags, 0, 'bags held already are not adopted twice');
    assert.deepEqual(await keys('imported/commits/'), commitsBefore);
    await checkStore(archive, 'imported');
    assert.deepEqual(await answers(archive), verified, 'the second import changed nothing');
  });

  test('a bag of another archive under a name the store holds, or one claimed by another writer: refused with one coded line, nothing written', async () => {
    const archive = join(work, 'conflict');
    await ok(await importArgs(archive, 'conflict', delivery, true));
    // Another site's archive: its first bag has the name of one the store holds, other contents.
    const other = await pageSite(work, 'other', 3);
    try {
      const otherArchive = join(work, 'other-archive');
      await ok(['harvest', other.endpoint, '--archive', otherArchive]);
      const otherBags = join(work, 'other-bags');
      await ok(['export', '--archive', otherArchive, '--bags', '--to', otherBags]);
      const zips = readdirSync(otherBags).filter((name) => name.endsWith('.zip'));
      assert.ok(zips.includes('harvest-000001-batch-00001.zip'));
      const before = await keys('conflict/');
      const versions = versionsOf(archive);
      const refused = await run(await importArgs(archive, 'conflict', otherBags, false));
      assert.equal(refused.status, 3, refused.stderr);
      assert.match(refused.stderr, /ERR_IMPORT_CONFLICT/);
      assert.match(refused.stderr, /harvest-000001\/batch-00001/);
      assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr);
      assert.deepEqual(await keys('conflict/'), before, 'nothing written on the store');
      assert.equal(versionsOf(archive), versions, 'nothing recorded');
      // A single bag ZIP of it, as a delivery of its own: refused the same way.
      const one = await run(await importArgs(archive, 'conflict', join(otherBags, 'harvest-000001-batch-00001.zip'), false));
      assert.equal(one.status, 3, one.stderr);
      assert.match(one.stderr, /ERR_IMPORT_CONFLICT/);
      assert.equal(one.stderr.trim().split('\n').length, 1, one.stderr);
      assert.deepEqual(await keys('conflict/'), before, 'nothing written on the store');
    } finally {
      await other.repository.close();
    }

    // A name claimed by another writer (a harvest's bag under way, or one that died before its
    // commit): refused the same way, nothing written besides that claim.
    const claimedKey = 'claimed/claims/aips/harvest-000001/batch-00001';
    const claim = `${JSON.stringify({ bag: 'aips/harvest-000001/batch-00001', claimed: new Date().toISOString(), writer: 'another host pid 1 x' })}\n`;
    await admin.send(new PutObjectCommand({ Bucket: 'archive', Key: claimedKey, Body: claim }));
    const claimed = await run(await importArgs(join(work, 'claimed'), 'claimed', delivery, true));
    assert.equal(claimed.status, 3, claimed.stderr);
    assert.match(claimed.stderr, /harvest-000001\/batch-00001 is claimed by another writer.*ERR_IMPORT_CONFLICT/);
    assert.equal(claimed.stderr.trim().split('\n').length, 1, claimed.stderr);
    assert.deepEqual(await keys('claimed/'), [claimedKey], 'nothing written on the store');
  });

  test('kill -9 partway (a bag claimed, some bags committed): the same import run again commits and records every bag exactly once', async () => {
    const expected = versionsOf(source);
    const uninterrupted = join(work, 'uninterrupted-in-folder');
    await ok(['import', '--archive', uninterrupted, delivery]);
    const expectedAnswers = await answers(uninterrupted);
    const moments: Array<[string, (prefix: string) => Promise<boolean>]> = [
      ['once the first bag is claimed', async (prefix) => (await keys(`${prefix}/claims/`)).length >= 1],
      ['once three bags are committed', async (prefix) => (await keys(`${prefix}/commits/`)).length >= 3],
    ];
    for (const [index, [moment, ready]] of moments.entries()) {
      const prefix = `killed-${index}`;
      const archive = join(work, prefix);
      const args = await importArgs(archive, prefix, delivery, true);
      const signal = await killWhen(args, () => ready(prefix));
      assert.equal(signal, 'SIGKILL', `the import was killed ${moment}, before it could finish`);
      const committed = (await keys(`${prefix}/commits/`)).length;
      assert.ok(committed < delivered.size, `killed ${moment}: ${committed} of ${delivered.size} bags committed`);

      // The archive folder recorded its catalog and store: the same command, without them.
      const rerun = await run(await importArgs(archive, prefix, delivery, false));
      assert.equal(rerun.status, 0, `rerun after a kill ${moment}: ${rerun.stderr}`);
      await checkStore(archive, prefix);
      assert.equal(versionsOf(archive), expected, `killed ${moment}: every version recorded exactly once`);
      const got = await answers(archive);
      assert.deepEqual(got, expectedAnswers, `killed ${moment}: status and audit answer as for an import not interrupted`);
      assert.deepEqual(runCounts(archive), runCounts(uninterrupted), `killed ${moment}: each run counts all of its bags`);
      const verify = await run(['verify', '--archive', archive]);
      assert.equal(verify.status, 0, `killed ${moment}, rerun: ${verify.stdout}${verify.stderr}`);
      const tmp = join(archive, 'tmp');
      if (existsSync(tmp)) assert.deepEqual(readdirSync(tmp), [], `killed ${moment}: nothing left in tmp/ after the rerun`);
    }
  });
});
