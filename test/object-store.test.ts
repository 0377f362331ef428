// Harvesting onto object storage (issue 28), end to end through the `oaibag` command: the bags
// on a real Ceph RADOS Gateway (`--store s3://…`), the catalog in a real PostgreSQL
// (`--catalog`), both started by this test. Every bag a harvest makes is committed on the store,
// verifies as BagIt read back through it, and is in the catalog; the archive folder keeps only
// its working files and where its catalog and bags are. A harvest killed with SIGKILL in the
// middle is completed by the next one, with every file of the site stored exactly once.
// `repair`, which rewrites bags in place, refuses such an archive with one coded line; the
// commands that read bags on a store are tested in test/object-store-reads.test.ts.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { GetObjectRetentionCommand, type S3Client } from '@aws-sdk/client-s3';
import { Catalog, S3Storage, storedBagSource, verifyBagSource } from '../packages/archiver/src/index.ts';
import { CEPH_SKIP, type CephRgw } from './ceph-rgw-server.ts';
import { ended, startOaibag } from './oaibag-process.ts';
import { type PageSite, pageSite, YEAR_2000 } from './page-site.ts';
import { POSTGRES_SKIP, type Postgres } from './postgres-server.ts';
import { type StoreEngines, startStoreEngines } from './store-engines.ts';

const nextSecond = () => new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));

let engines: StoreEngines;
let rgw: CephRgw;
let admin: S3Client;
let postgres: Postgres;
let work: string;

const site = (name: string, files: number): Promise<PageSite> => pageSite(work, name, files);

/** The `oaibag` command with the store's credentials in its environment. */
function oaibag(args: string[]): ChildProcess {
  return startOaibag(args, { AWS_ACCESS_KEY_ID: rgw.accessKeyId, AWS_SECRET_ACCESS_KEY: rgw.secretAccessKey });
}

const run = (args: string[]) => ended(oaibag(args));

async function storage(prefix: string, bucket = 'archive'): Promise<S3Storage> {
  return S3Storage.open({
    url: `s3://${bucket}/${prefix}`,
    endpoint: rgw.endpoint,
    region: rgw.region,
    credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey },
  });
}

async function committed(store: S3Storage): Promise<string[]> {
  const bags: string[] = [];
  for await (const bag of store.committedBags()) bags.push(bag);
  return bags;
}

/** Every committed bag verifies as BagIt through the store, and the catalog records each; their versions. */
async function checkArchive(archive: string, prefix: string): Promise<{ bags: string[]; versions: Map<string, number> }> {
  const store = await storage(prefix);
  const catalog = Catalog.open(archive);
  try {
    const bags = await committed(store);
    for (const bagPath of bags) {
      const report = await verifyBagSource(storedBagSource({ storage: store, bagPath }));
      assert.deepEqual(report.problems, [], bagPath);
      assert.ok(catalog.bag(bagPath), `${bagPath} is in the catalog`);
    }
    assert.deepEqual(catalog.pendingBags(), []);
    const versions = new Map<string, number>();
    for (const source of catalog.status().sources) {
      for (const bag of catalog.bags()) if (bag.sourceId === source.source.id) assert.ok(bags.includes(bag.bagPath), `${bag.bagPath} is committed`);
      versions.set(source.source.baseUrl, source.versions);
    }
    return { bags, versions };
  } finally {
    catalog.close();
    store.close();
  }
}

describe('harvesting onto object storage', { skip: CEPH_SKIP || POSTGRES_SKIP }, () => {
  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'oaibag-object-store-'));
    engines = await startStoreEngines([{ name: 'archive' }, { name: 'locked', locked: true }]);
    ({ rgw, postgres, admin } = engines);
  });

  after(async () => {
    await engines?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  test('two harvests: every bag committed, verifiable through the store and catalogued; the folder keeps no bag', async () => {
    const source = await site('site-a', 12);
    const archive = join(work, 'archive-a');
    try {
      const catalog = await postgres.createDatabase('archive_a');
      await nextSecond();
      const first = await run([
        'harvest',
        source.endpoint,
        '--archive',
        archive,
        '--catalog',
        catalog,
        '--store',
        's3://archive/site-a',
        '--store-endpoint',
        rgw.endpoint,
        '--store-region',
        rgw.region,
      ]);
      assert.equal(first.status, 0, first.stderr);
      assert.deepEqual(JSON.parse(readFileSync(join(archive, 'locations.json'), 'utf8')), {
        catalog,
        store: { url: 's3://archive/site-a', endpoint: rgw.endpoint, region: rgw.region },
      });
      assert.equal(existsSync(join(archive, 'aips')), false, 'no bag in the folder');
      assert.equal(existsSync(join(archive, 'catalog.sqlite')), false);
      source.write('pages/page-003.html', '<html>changed</html>', YEAR_2000 + 86_400);
      source.write('pages/new.html', '<html>new</html>');
      await source.repository.scan();
      await nextSecond();
      // The folder remembers both places: no option needed.
      const second = await run(['harvest', source.endpoint, '--archive', archive]);
      assert.equal(second.status, 0, second.stderr);
      const { bags, versions } = await checkArchive(archive, 'site-a');
      assert.ok(bags.length >= 2);
      assert.deepEqual([...versions.values()], [14], '12 pages, one changed, one new');
      const refused = await run(['repair', '--archive', archive]);
      assert.equal(refused.status, 2);
      assert.match(refused.stderr, /^oaibag: oaibag repair does not work on bags on object storage, .*never rewritten .*\[ERR_ARCHIVE_USAGE\]/);
      assert.equal(refused.stderr.trim().split('\n').length, 1);
    } finally {
      await source.repository.close();
    }
  });

  test('reindex rebuilds a PostgreSQL catalog from the store alone, in a new folder, as it was', async () => {
    const counts = async (archive: string) => {
      const result = await run(['status', '--archive', archive, '--json']);
      assert.equal(result.status, 0, result.stderr);
      return (JSON.parse(result.stdout) as { sources: Array<{ liveResources: number; deletedResources: number; versions: number; bags: number }> }).sources.map(
        ({ liveResources, deletedResources, versions, bags }) => ({ liveResources, deletedResources, versions, bags }),
      );
    };
    const fresh = join(work, 'archive-a-again');
    const rebuilt = await run([
      'reindex',
      '--archive',
      fresh,
      '--catalog',
      await postgres.createDatabase('archive_a_again'),
      '--store',
      's3://archive/site-a',
      '--store-endpoint',
      rgw.endpoint,
    ]);
    assert.equal(rebuilt.status, 0, rebuilt.stderr);
    const expected = await counts(join(work, 'archive-a'));
    assert.equal(expected[0]?.versions, 14);
    assert.deepEqual(await counts(fresh), expected);
    await checkArchive(fresh, 'site-a');
  });

  test('a harvest killed with SIGKILL after its first commit is completed by the next: every file stored once', async () => {
    const source = await site('site-b', 60);
    const archive = join(work, 'archive-b');
    try {
      const args = [
        '--archive',
        archive,
        '--catalog',
        await postgres.createDatabase('archive_b'),
        '--store',
        's3://archive/site-b',
        '--store-endpoint',
        rgw.endpoint,
      ];
      await nextSecond();
      const store = await storage('site-b');
      const child = oaibag(['harvest', source.endpoint, ...args, '--batch-records', '5']);
      let stderr = '';
      child.stderr!.setEncoding('utf8').on('data', (text: string) => (stderr += text));
      const exited = once(child, 'close');
      try {
        for (let tries = 0; (await committed(store)).length === 0; tries++) {
          assert.ok(tries < 600, `no bag was committed: ${stderr}`);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      } finally {
        child.kill('SIGKILL');
        await exited;
      }
      const atKill = (await committed(store)).length;
      store.close();
      assert.ok(atKill < 12, `killed in the middle: ${atKill} of the 12 batches were committed`);
      const again = await run(['harvest', source.endpoint, '--archive', archive]);
      assert.equal(again.status, 0, again.stderr);
      const { versions } = await checkArchive(archive, 'site-b');
      assert.deepEqual([...versions.values()], [60], 'every page once');
    } finally {
      await source.repository.close();
    }
  });

  test('--retain: every object locked at commit, and a bag a later version revisits is kept as long as that version', async () => {
    const source = await site('site-c', 3);
    const archive = join(work, 'archive-c');
    try {
      const args = [
        '--archive',
        archive,
        '--catalog',
        await postgres.createDatabase('archive_c'),
        '--store',
        's3://locked/site-c',
        '--store-endpoint',
        rgw.endpoint,
      ];
      await nextSecond();
      const first = await run(['harvest', source.endpoint, ...args, '--retain', '1h']);
      assert.equal(first.status, 0, first.stderr);
      // Same bytes, a new datestamp: the second harvest's version revisits the first bag's file.
      source.write('pages/page-001.html', readFileSync(join(source.root, 'pages/page-001.html'), 'utf8'), YEAR_2000 + 86_400);
      await source.repository.scan();
      await new Promise((resolve) => setTimeout(resolve, 2000));
      const second = await run(['harvest', source.endpoint, '--archive', archive]);
      assert.equal(second.status, 0, second.stderr);
      const store = await storage('site-c', 'locked');
      try {
        const [older, newer] = await committed(store);
        assert.ok(older && newer);
        const retention = async (key: string): Promise<number> =>
          (await admin.send(new GetObjectRetentionCommand({ Bucket: 'locked', Key: `site-c/${key}` }))).Retention!.RetainUntilDate!.getTime();
        const newerUntil = Date.parse((await store.commitOf(newer))!.retainUntil!);
        const olderUntil = Date.parse((await store.commitOf(older))!.retainUntil!);
        assert.ok(newerUntil > olderUntil);
        const olderFiles = (await store.commitOf(older))!.files.map((file) => file.path);
        const revisited = olderFiles.find((path) => path.endsWith('page-001.html'))!;
        const untouched = olderFiles.find((path) => path.endsWith('page-002.html'))!;
        assert.ok((await retention(`${older}/${revisited}`)) >= newerUntil, 'the revisited file lives as long as the version relying on it');
        assert.ok((await retention(`${older}/manifest-sha512.txt`)) >= newerUntil, 'and the bag stays whole');
        assert.ok((await retention(`commits/${older}`)) >= newerUntil, 'and committed');
        assert.equal(await retention(`${older}/${untouched}`), olderUntil, 'a file nothing newer relies on keeps its own date');
      } finally {
        store.close();
      }
    } finally {
      await source.repository.close();
    }
  });
});
