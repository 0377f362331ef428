// `oaibag migrate` (issue 28): an archive kept in a folder (bags in aips/, catalog in
// catalog.sqlite) moved onto a real Ceph RADOS Gateway and a real PostgreSQL, both started by
// this test. Every bag is committed on the store byte for byte, status and audit answer as
// before, and the next harvest works on the migrated archive and adds only the changes. A
// migration killed with SIGKILL partway is finished by the same command, every bag committed
// exactly once. The refusals are one coded line each, and change nothing.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { GetObjectRetentionCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { S3Storage } from '../packages/archiver/src/index.ts';
import { CEPH_SKIP, type CephRgw } from './ceph-rgw-server.ts';
import { archiveAnswers, ended, startOaibag } from './oaibag-process.ts';
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

function migrateArgs(archive: string, catalog: string, prefix: string): string[] {
  return [
    'migrate',
    '--archive',
    archive,
    '--to-catalog',
    catalog,
    '--to-store',
    `s3://archive/${prefix}`,
    '--store-endpoint',
    rgw.endpoint,
    '--store-region',
    rgw.region,
  ];
}

async function storage(prefix: string): Promise<S3Storage> {
  return S3Storage.open({
    url: `s3://archive/${prefix}`,
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

/** Every key under `prefix` in the bucket (to count records). */
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

/** The batch bags of a folder archive, `aips/harvest-…/batch-…`. */
function folderBags(archive: string): string[] {
  const aips = join(archive, 'aips');
  return readdirSync(aips)
    .flatMap((harvest) => readdirSync(join(aips, harvest)).map((batch) => `aips/${harvest}/${batch}`))
    .sort();
}

function filesOf(dir: string, prefix = ''): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesOf(join(dir, entry.name), `${prefix}${entry.name}/`) : [`${prefix}${entry.name}`],
  );
}

async function bytesOf(store: S3Storage, path: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of store.read(path)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Every bag of the folder is committed on the store once, with every file byte for byte, and nothing else is. */
async function checkStore(archive: string, prefix: string): Promise<void> {
  const store = await storage(prefix);
  try {
    const bags = folderBags(archive);
    assert.deepEqual((await committed(store)).sort(), bags);
    assert.deepEqual((await keys(`${prefix}/claims/`)).map((key) => key.slice(`${prefix}/claims/`.length)).sort(), bags, 'one claim a bag');
    for (const bagPath of bags) {
      const record = (await store.commitOf(bagPath))!;
      const local = filesOf(join(archive, bagPath)).sort();
      assert.deepEqual(
        record.files.map((file) => file.path),
        local,
      );
      for (const file of record.files) {
        const bytes = readFileSync(join(archive, bagPath, file.path));
        assert.equal(file.sha256, createHash('sha256').update(bytes).digest('hex'), `${bagPath}/${file.path}`);
        assert.ok((await bytesOf(store, `${bagPath}/${file.path}`)).equals(bytes), `${bagPath}/${file.path} is byte-exact on the store`);
      }
    }
  } finally {
    store.close();
  }
}

const answers = (archive: string) => archiveAnswers(run, archive);

function refusedInOneLine(result: { status: number | null; stderr: string }, status: number, pattern: RegExp): void {
  assert.equal(result.status, status, result.stderr);
  assert.match(result.stderr, pattern);
  assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
}

describe('migrating an archive onto object storage and PostgreSQL', { skip: CEPH_SKIP || POSTGRES_SKIP }, () => {
  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'oaibag-migrate-'));
    engines = await startStoreEngines([{ name: 'archive' }, { name: 'locked', locked: true }]);
    ({ rgw, postgres, admin } = engines);
  });

  after(async () => {
    await engines?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  test('two harvests in a folder, migrated: every bag on the store byte for byte, the same answers, and the next harvest adds only the changes', async () => {
    const source = await site('site-a', 12);
    const archive = join(work, 'archive-a');
    try {
      await nextSecond();
      const first = await run(['harvest', source.endpoint, '--archive', archive, '--batch-records', '5']);
      assert.equal(first.status, 0, first.stderr);
      source.write('pages/page-003.html', '<html>changed</html>', YEAR_2000 + 86_400);
      source.write('pages/new.html', '<html>new</html>');
      rmSync(join(source.root, 'pages/page-007.html'));
      await source.repository.scan();
      await nextSecond();
      const second = await run(['harvest', source.endpoint, '--archive', archive]);
      assert.equal(second.status, 0, second.stderr);
      const before = await answers(archive);
      const bagsBefore = folderBags(archive);
      assert.ok(bagsBefore.length >= 4);

      const catalog = await postgres.createDatabase('archive_a');
      const migrated = await run([...migrateArgs(archive, catalog, 'site-a'), '--json']);
      assert.equal(migrated.status, 0, migrated.stderr);
      const summary = JSON.parse(migrated.stdout) as { bags: number; copied: number; present: number; rows: Record<string, number> };
      assert.deepEqual([summary.bags, summary.copied, summary.present], [bagsBefore.length, bagsBefore.length, 0]);
      assert.ok((summary.rows.versions ?? 0) >= 13);
      assert.deepEqual(JSON.parse(readFileSync(join(archive, 'locations.json'), 'utf8')), {
        catalog,
        store: { url: 's3://archive/site-a', endpoint: rgw.endpoint, region: rgw.region },
      });
      assert.equal(existsSync(join(archive, 'migration.json')), false);
      assert.ok(existsSync(join(archive, 'catalog.sqlite')) && existsSync(join(archive, 'aips')), 'the old places are left for the operator');
      await checkStore(archive, 'site-a');
      assert.deepEqual(await answers(archive), before, 'status and audit answer as before');
      // Killed after the folder switched, before its note was removed: the rerun removes the note.
      writeFileSync(
        join(archive, 'migration.json'),
        JSON.stringify({ format: 1, writer: 'oaibag migrate 00', started: new Date().toISOString(), catalog, store: { url: 's3://archive/site-a' } }),
      );
      const finished = await run(migrateArgs(archive, catalog, 'site-a'));
      assert.equal(finished.status, 0, finished.stderr);
      assert.equal(existsSync(join(archive, 'migration.json')), false);

      source.write('pages/page-005.html', '<html>changed after the move</html>', YEAR_2000 + 2 * 86_400);
      await source.repository.scan();
      await nextSecond();
      const third = await run(['harvest', source.endpoint, '--archive', archive]);
      assert.equal(third.status, 0, third.stderr);
      assert.deepEqual(folderBags(archive), bagsBefore, 'no bag is written into the folder any more');
      const store = await storage('site-a');
      try {
        const after = (await committed(store)).filter((bag) => !bagsBefore.includes(bag));
        assert.equal(after.length, 1, 'one new bag, on the store');
        const record = (await store.commitOf(after[0]!))!;
        assert.equal(record.files.filter((file) => file.path.startsWith('data/') && file.path.endsWith('.html')).length, 1, 'only the change');
      } finally {
        store.close();
      }
      const status = JSON.parse((await run(['status', '--archive', archive, '--json'])).stdout) as { sources: Array<{ versions: number }> };
      assert.equal(status.sources[0]?.versions, 15, '12 pages, one changed, one new, one changed after the move');
      const audit = await run(['audit', '--archive', archive, '--format', 'json']);
      assert.equal(audit.status, 0, audit.stderr);
      const rows = (JSON.parse(audit.stdout) as { rows: Array<{ identifier: string; change?: string }> }).rows;
      assert.equal(rows.length, 1, audit.stdout);
      assert.match(JSON.stringify(rows[0]), /page-005/);

      const again = await run(migrateArgs(archive, catalog, 'site-a'));
      refusedInOneLine(again, 2, /^oaibag: the archive .* keeps its bags on s3:\/\/archive\/site-a already: .* \[ERR_ARCHIVE_USAGE\]/);
    } finally {
      await source.repository.close();
    }
  });

  test('a migration killed with SIGKILL after some bags is finished by the same command: every bag committed once', async () => {
    const source = await site('site-b', 60);
    const archive = join(work, 'archive-b');
    try {
      await nextSecond();
      const harvest = await run(['harvest', source.endpoint, '--archive', archive, '--batch-records', '5']);
      assert.equal(harvest.status, 0, harvest.stderr);
      const before = await answers(archive);
      const bags = folderBags(archive);
      assert.equal(bags.length, 12);
      const catalog = await postgres.createDatabase('archive_b');
      const store = await storage('site-b');
      const child = oaibag(migrateArgs(archive, catalog, 'site-b'));
      let stderr = '';
      child.stderr!.setEncoding('utf8').on('data', (text: string) => (stderr += text));
      const exited = once(child, 'close');
      try {
        for (let tries = 0; (await committed(store)).length < 3; tries++) {
          assert.ok(tries < 1200, `no bag was committed: ${stderr}`);
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
      } finally {
        child.kill('SIGKILL');
        await exited;
      }
      const atKill = (await committed(store)).length;
      store.close();
      assert.ok(atKill < bags.length, `killed partway: ${atKill} of ${bags.length} bags committed`);
      assert.ok(existsSync(join(archive, 'migration.json')), 'the migration is noted as under way');
      assert.equal(existsSync(join(archive, 'locations.json')), false, 'the folder is not switched');
      // The hard case, made certain: a bag this migration claimed and began to upload, not committed.
      const { writer } = JSON.parse(readFileSync(join(archive, 'migration.json'), 'utf8')) as { writer: string };
      const begun = bags[atKill]!;
      const claimKey = `site-b/claims/${begun}`;
      if ((await keys(claimKey)).length === 0) {
        await admin.send(
          new PutObjectCommand({ Bucket: 'archive', Key: claimKey, Body: JSON.stringify({ bag: begun, claimed: new Date().toISOString(), writer }) }),
        );
      }
      await admin.send(new PutObjectCommand({ Bucket: 'archive', Key: `site-b/${begun}/bag-info.txt`, Body: 'half' }));

      const again = await run([...migrateArgs(archive, catalog, 'site-b'), '--json']);
      assert.equal(again.status, 0, again.stderr);
      const summary = JSON.parse(again.stdout) as { copied: number; present: number; resumed: boolean };
      assert.equal(summary.resumed, true);
      assert.equal(summary.copied + summary.present, bags.length);
      assert.ok(summary.present >= atKill);
      await checkStore(archive, 'site-b');
      assert.deepEqual(await answers(archive), before);

      // Killed after the catalog copy was swapped in and before the folder switched: the rerun
      // knows the copy by its migration event, and only switches the folder.
      const event = await postgres.psql('archive_b', "SELECT detail FROM events WHERE type = 'migration'");
      assert.match(event, new RegExp(writer));
      rmSync(join(archive, 'locations.json'));
      writeFileSync(
        join(archive, 'migration.json'),
        JSON.stringify({
          format: 1,
          writer,
          started: new Date().toISOString(),
          catalog,
          store: { url: 's3://archive/site-b', endpoint: rgw.endpoint, region: rgw.region },
        }),
      );
      const last = await run([...migrateArgs(archive, catalog, 'site-b'), '--json']);
      assert.equal(last.status, 0, last.stderr);
      assert.deepEqual(JSON.parse(last.stdout).rows, {}, 'the catalog is not copied again');
      assert.equal(JSON.parse(last.stdout).present, bags.length);
      assert.ok(existsSync(join(archive, 'locations.json')));
      assert.deepEqual(await answers(archive), before);
    } finally {
      await source.repository.close();
    }
  });

  test('--retain: every object migrated is locked until one date, recorded for the harvests that follow', async () => {
    const source = await site('site-d', 3);
    const archive = join(work, 'archive-d');
    try {
      await nextSecond();
      const harvest = await run(['harvest', source.endpoint, '--archive', archive]);
      assert.equal(harvest.status, 0, harvest.stderr);
    } finally {
      await source.repository.close();
    }
    const catalog = await postgres.createDatabase('archive_d');
    const migrated = await run([
      'migrate',
      '--archive',
      archive,
      '--to-catalog',
      catalog,
      '--to-store',
      's3://locked/site-d',
      '--store-endpoint',
      rgw.endpoint,
      '--retain',
      '1h',
    ]);
    assert.equal(migrated.status, 0, migrated.stderr);
    assert.deepEqual(JSON.parse(readFileSync(join(archive, 'locations.json'), 'utf8')).store, {
      url: 's3://locked/site-d',
      endpoint: rgw.endpoint,
      retainMs: 3_600_000,
    });
    const store = await S3Storage.open({
      url: 's3://locked/site-d',
      endpoint: rgw.endpoint,
      region: rgw.region,
      credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey },
    });
    try {
      const dates = new Set<number>();
      for (const bag of await committed(store)) {
        const record = (await store.commitOf(bag))!;
        const until = Date.parse(record.retainUntil!);
        dates.add(until);
        for (const file of record.files) {
          const retention = await admin.send(new GetObjectRetentionCommand({ Bucket: 'locked', Key: `site-d/${bag}/${file.path}` }));
          assert.equal(retention.Retention?.Mode, 'COMPLIANCE');
          assert.equal(retention.Retention?.RetainUntilDate?.getTime(), until, `${bag}/${file.path}`);
        }
      }
      assert.equal(dates.size, 1, 'one date for every bag');
      assert.ok([...dates][0]! > Date.now() + 50 * 60_000);
    } finally {
      store.close();
    }
  });

  test('refusals, one coded line each, nothing changed: a non-empty catalog, a store prefix with bags, a locked archive', async () => {
    const source = await site('site-c', 3);
    const archive = join(work, 'archive-c');
    try {
      await nextSecond();
      const harvest = await run(['harvest', source.endpoint, '--archive', archive]);
      assert.equal(harvest.status, 0, harvest.stderr);
    } finally {
      await source.repository.close();
    }
    const unchanged = () => {
      assert.equal(existsSync(join(archive, 'locations.json')), false);
      assert.equal(existsSync(join(archive, 'migration.json')), false);
    };
    // archive_a holds the catalog migrated by the first test; site-a holds its bags.
    const full = await run(migrateArgs(archive, `${postgres.origin}archive_a`, 'site-c'));
    refusedInOneLine(full, 2, /^oaibag: the catalog .*archive_a is not empty: .* \[ERR_ARCHIVE_USAGE\]/);
    unchanged();
    const taken = await run(migrateArgs(archive, await postgres.createDatabase('archive_c'), 'site-a'));
    refusedInOneLine(taken, 2, /^oaibag: the store s3:\/\/archive\/site-a holds bags already .* \[ERR_ARCHIVE_USAGE\]/);
    unchanged();
    assert.deepEqual(await keys('site-c/'), [], 'nothing written on the store');
    writeFileSync(
      join(archive, 'lock'),
      `${JSON.stringify({ pid: process.pid, hostname: hostname(), startedAt: new Date().toISOString(), purpose: 'harvest http://example.org/oai' })}\n`,
    );
    try {
      const locked = await run(migrateArgs(archive, `${postgres.origin}archive_c`, 'site-c'));
      refusedInOneLine(locked, 4, /^oaibag: the archive is locked by pid \d+ .*harvest .* \[ERR_ARCHIVE_LOCKED\]/);
      unchanged();
    } finally {
      rmSync(join(archive, 'lock'));
    }
  });
});
