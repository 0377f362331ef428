// Several workers sharing an archive's sources (issue 28): `oaibag sources add|list|remove` keep
// the sources and their schedules in the catalog, and `oaibag worker` processes claim them with
// leases. Against the real engines, started here: PostgreSQL for the catalog the workers share,
// Ceph RGW for the bags. Two workers over ten sources harvest each source exactly once and
// schedule its next run; a worker killed with SIGKILL in the middle of a harvest is taken over
// once its lease runs out, and the site ends stored with every file exactly once; a worker
// whose lease was taken over can no longer write to the catalog.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ArchiverError, Catalog, S3Storage, startArchiveServer } from '../packages/archiver/src/index.ts';
import { CEPH_SKIP, type CephRgw } from './ceph-rgw-server.ts';
import { ended, startOaibag } from './oaibag-process.ts';
import { pageSite } from './page-site.ts';
import { POSTGRES_SKIP, type Postgres } from './postgres-server.ts';
import { type StoreEngines, startStoreEngines } from './store-engines.ts';

let work: string;

const site = (name: string, files: number) => pageSite(work, name, files, 500);
const start = startOaibag;
const finish = ended;
const run = (args: string[], env: Record<string, string> = {}) => ended(startOaibag(args, env));

/** Per source of the catalog: its harvests' statuses and how many versions each resource has. */
function tally(catalog: Catalog): Map<string, { harvests: string[]; resources: number; versions: number; mostVersions: number }> {
  const rows = catalog
    .statement(`SELECT s.base_url AS base_url,
        (SELECT COUNT(*) FROM resources r WHERE r.source_id = s.id) AS resources,
        (SELECT COUNT(*) FROM versions v JOIN resources r ON r.id = v.resource_id WHERE r.source_id = s.id) AS versions,
        (SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM versions v JOIN resources r ON r.id = v.resource_id WHERE r.source_id = s.id GROUP BY r.id) AS per) AS most
      FROM sources s ORDER BY s.base_url`)
    .all() as { base_url: string; resources: number; versions: number; most: number }[];
  const result = new Map<string, { harvests: string[]; resources: number; versions: number; mostVersions: number }>();
  for (const row of rows) {
    const harvests = (
      catalog
        .statement('SELECT h.status AS status FROM harvests h JOIN sources s ON s.id = h.source_id WHERE s.base_url = ? ORDER BY h.id')
        .all(row.base_url) as {
        status: string;
      }[]
    ).map((harvest) => harvest.status);
    result.set(row.base_url, { harvests, resources: Number(row.resources), versions: Number(row.versions), mostVersions: Number(row.most) });
  }
  return result;
}

describe('oaibag sources on a SQLite archive', () => {
  before(() => {
    work = mkdtempSync(join(tmpdir(), 'oaibag-workers-'));
  });

  test('add, list, remove; a bad entry adds nothing; one worker harvests what is due', async () => {
    const archive = join(work, 'local');
    const one = await site('local-site', 7);
    try {
      const added = await run(['sources', 'add', one.endpoint, '--every', '1d', '--jitter', '1h', '--archive', archive]);
      assert.equal(added.status, 0, added.stderr);
      assert.equal(added.stdout, `added ${one.endpoint}\n`);
      const again = await run(['sources', 'add', one.endpoint, '--every', '2d', '--archive', archive]);
      assert.equal(again.status, 0, again.stderr);
      assert.match(again.stdout, /is on the schedule already: left as it is/);
      const bad = await run(['sources', 'add', 'http://127.0.0.1:9/oai', '--every', 'often', '--archive', archive]);
      assert.equal(bad.status, 2);
      assert.match(bad.stderr, /^oaibag: --every "often" is not a duration \[ERR_ARCHIVE_USAGE\]/);
      assert.equal(bad.stderr.trim().split('\n').length, 1);
      const worker = await run(['worker', '--archive', archive, '--until-idle', '--name', 'w-local']);
      assert.equal(worker.status, 0, worker.stderr);
      assert.match(worker.stdout, new RegExp(`${one.endpoint.replaceAll('.', '\\.')}: .*7 records`));
      const listed = await run(['sources', 'list', '--json', '--archive', archive]);
      assert.equal(listed.status, 0, listed.stderr);
      const [entry, ...others] = listed.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      assert.deepEqual(others, []);
      assert.deepEqual(entry.settings, { baseUrl: one.endpoint, every: '1d', jitter: '1h' });
      assert.equal(entry.lastOutcome, 'complete');
      assert.equal(entry.worker, null);
      const nextIn = Date.parse(entry.nextRunAt) - Date.now();
      assert.ok(nextIn > 23 * 3600_000 && nextIn <= 25 * 3600_000, `the next run is a day (plus up to an hour) away: ${entry.nextRunAt}`);
      // Nothing is due now: a second worker finds nothing to do.
      const idle = await run(['worker', '--archive', archive, '--until-idle']);
      assert.equal(idle.status, 0, idle.stderr);
      assert.doesNotMatch(idle.stdout, /records/);
      // The schedule is not in the bags: a rebuilt catalog takes it over from the one it replaces.
      const reindexed = await run(['reindex', '--force', '--archive', archive]);
      assert.equal(reindexed.status, 0, reindexed.stderr);
      assert.equal(reindexed.stderr, '');
      const kept = JSON.parse((await run(['sources', 'list', '--json', '--archive', archive])).stdout);
      assert.deepEqual({ ...kept, leaseExpiresAt: null }, { ...entry, leaseExpiresAt: null });
      const missing = await run(['sources', 'remove', 'http://127.0.0.1:9/oai', '--archive', archive]);
      assert.equal(missing.status, 2);
      assert.match(missing.stderr, /is not on the schedule \[ERR_ARCHIVE_USAGE\]/);
      const removed = await run(['sources', 'remove', one.endpoint, '--archive', archive]);
      assert.equal(removed.status, 0, removed.stderr);
      assert.equal((await run(['sources', 'list', '--archive', archive])).stdout, '');
    } finally {
      await one.repository.close();
    }
  });
  test('a worker that cannot harvest (its folder locked) hands the source back untouched and stops with the error', async () => {
    const archive = join(work, 'locked-worker');
    const one = await site('locked-site', 3);
    try {
      const added = await run(['sources', 'add', one.endpoint, '--every', '1d', '--archive', archive]);
      assert.equal(added.status, 0, added.stderr);
      // Another live process (this test's) holds the worker's folder.
      writeFileSync(
        join(archive, 'lock'),
        `${JSON.stringify({ pid: process.pid, hostname: hostname(), startedAt: new Date().toISOString(), purpose: 'a test' })}\n`,
      );
      const worker = await run(['worker', '--name', 'stuck', '--until-idle', '--archive', archive]);
      assert.equal(worker.status, 4, worker.stderr);
      assert.match(worker.stderr, /^oaibag: the archive is locked by pid \d+ .*\[ERR_ARCHIVE_LOCKED\]/);
      assert.equal(worker.stderr.trim().split('\n').length, 1, worker.stderr);
      const [entry] = (await run(['sources', 'list', '--json', '--archive', archive])).stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      assert.equal(entry.worker, null);
      assert.ok(Date.parse(entry.nextRunAt) <= Date.now(), `still due: ${entry.nextRunAt}`);
      assert.equal(entry.lastOutcome, 'not run');
      assert.match(entry.lastError, /^the worker stuck could not run it: the archive is locked/);
      rmSync(join(archive, 'lock'));
      const next = await run(['worker', '--until-idle', '--archive', archive]);
      assert.equal(next.status, 0, next.stderr);
      assert.match(next.stdout, /harvest #1 complete/);
    } finally {
      await one.repository.close();
    }
  });

  test('SIGTERM stops a worker cleanly: the batch in flight is kept, the source is due again at once, and the next worker finishes it', async () => {
    const archive = join(work, 'stopped');
    const big = await site('stopped-site', 80);
    try {
      const added = await run(['sources', 'add', big.endpoint, '--every', '1d', '--archive', archive]);
      assert.equal(added.status, 0, added.stderr);
      const child = start(['worker', '--name', 'stopped', '--batch-records', '5', '--archive', archive]);
      const done = finish(child);
      const bags = join(archive, 'aips');
      for (let tries = 0; !existsSync(bags) || readdirSync(bags).length === 0; tries++) {
        assert.ok(tries < 1200, 'the worker placed no bag');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      child.kill('SIGTERM');
      const stopped = await done;
      assert.equal(stopped.status, 0, stopped.stderr);
      assert.match(stopped.stdout, /harvest #1 interrupted/);
      assert.match(stopped.stdout, /worker stopped stopped\n$/);
      const [entry] = (await run(['sources', 'list', '--json', '--archive', archive])).stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      assert.equal(entry.lastOutcome, 'interrupted');
      assert.equal(entry.worker, null, 'the lease is handed back');
      assert.ok(Date.parse(entry.nextRunAt) <= Date.now(), `due again at once: ${entry.nextRunAt}`);
      const next = await run(['worker', '--until-idle', '--batch-records', '5', '--archive', archive]);
      assert.equal(next.status, 0, next.stderr);
      assert.match(next.stdout, /harvest #2 complete/);
      const catalog = Catalog.open(archive);
      try {
        assert.deepEqual(tally(catalog).get(big.endpoint), { harvests: ['interrupted', 'complete'], resources: 80, versions: 80, mostVersions: 1 });
      } finally {
        catalog.close();
      }
    } finally {
      await big.repository.close();
    }
  });
});

describe('workers sharing a PostgreSQL catalog and an S3 store', { skip: CEPH_SKIP || POSTGRES_SKIP }, () => {
  let rgw: CephRgw;
  let postgres: Postgres;
  let engines: StoreEngines;
  let s3env: Record<string, string>;

  before(async () => {
    engines = await startStoreEngines([{ name: 'shared' }]);
    ({ rgw, postgres, env: s3env } = engines);
    Object.assign(process.env, s3env); // for the serve instances this process runs
  });

  after(async () => {
    await engines?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  const places = (catalog: string, prefix: string) => ['--catalog', catalog, '--store', `s3://shared/${prefix}`, '--store-endpoint', rgw.endpoint];

  test('two workers over ten sources: each source harvested once, by one worker, and scheduled again', async () => {
    const sites = await Promise.all(Array.from({ length: 10 }, (_, i) => site(`ten-${i}`, 8 + i)));
    try {
      const catalog = await postgres.createDatabase('ten');
      for (const one of sites) {
        const added = await run(['sources', 'add', one.endpoint, '--every', '6h', '--archive', join(work, 'ten-admin'), '--catalog', catalog]);
        assert.equal(added.status, 0, added.stderr);
      }
      // Each worker has a folder of its own; they share the catalog and the store.
      const workers = await Promise.all(
        ['a', 'b'].map((name) =>
          run(['worker', '--name', `worker-${name}`, '--until-idle', '--archive', join(work, `ten-worker-${name}`), ...places(catalog, 'ten')], s3env),
        ),
      );
      const harvested = new Map<string, string>();
      for (const [index, worker] of workers.entries()) {
        assert.equal(worker.status, 0, worker.stderr);
        for (const line of worker.stdout.split('\n')) {
          const match = /^\S+ (http:\/\/\S+\/oai): harvest #\d+ complete/.exec(line);
          if (!match) continue;
          assert.equal(harvested.has(match[1]!), false, `${match[1]} was harvested twice`);
          harvested.set(match[1]!, `worker-${index}`);
        }
      }
      assert.equal(harvested.size, 10, [...harvested.keys()].join(' '));
      const perWorker = [...harvested.values()].reduce((counts, name) => counts.set(name, (counts.get(name) ?? 0) + 1), new Map<string, number>());
      assert.equal(perWorker.size, 2, `both workers harvested: ${JSON.stringify([...perWorker])}`);
      const opened = Catalog.open(join(work, 'ten-worker-a'));
      try {
        const counts = tally(opened);
        for (const one of sites) {
          assert.deepEqual(counts.get(one.endpoint), { harvests: ['complete'], resources: one.files, versions: one.files, mostVersions: 1 }, one.endpoint);
        }
        for (const scheduled of opened.scheduledSources()) {
          assert.equal(scheduled.lastOutcome, 'complete');
          assert.equal(scheduled.leaseOwner, null);
          assert.equal(scheduled.dueAt - scheduled.startAt, 0);
          assert.ok(scheduled.startAt - Date.now() > 5 * 3600_000, 'next run in about six hours');
        }
        assert.deepEqual(opened.pendingBags(), []);
      } finally {
        opened.close();
      }
      // Two serve instances over the same catalog and store, as behind a proxy: a list paged by
      // turns on one and the other (the tokens carry no state of an instance) has every file once.
      const servers = await Promise.all(
        ['a', 'b'].map((name) => startArchiveServer({ archiveDir: join(work, `ten-worker-${name}`), pageIdentifiers: 20, log: () => {} })),
      );
      try {
        const identifiers: string[] = [];
        let query = 'verb=ListIdentifiers&metadataPrefix=oai_didl';
        let pages = 0;
        for (let page = 0; ; page++) {
          pages++;
          const response = await fetch(`${servers[page % 2]!.baseUrl}/oai?${query}`);
          assert.equal(response.status, 200);
          const body = await response.text();
          identifiers.push(...[...body.matchAll(/<identifier>([^<]+)<\/identifier>/g)].map((match) => match[1]!));
          const token = /<resumptionToken[^>]*>([^<]+)<\/resumptionToken>/.exec(body)?.[1];
          if (!token) break;
          query = `verb=ListIdentifiers&resumptionToken=${encodeURIComponent(token)}`;
        }
        const files = sites.reduce((sum, one) => sum + one.files, 0);
        assert.ok(pages >= 6, `paged by turns: ${pages} pages`);
        assert.equal(identifiers.length, files);
        assert.equal(new Set(identifiers).size, files);
        const page = await fetch(`${servers[0]!.baseUrl}/oai?verb=GetRecord&metadataPrefix=oai_didl&identifier=${encodeURIComponent(identifiers[0]!)}`);
        const other = await fetch(`${servers[1]!.baseUrl}/oai?verb=GetRecord&metadataPrefix=oai_didl&identifier=${encodeURIComponent(identifiers[0]!)}`);
        const text = [await page.text(), await other.text()].map((body, index) =>
          body.replaceAll(servers[index]!.baseUrl, 'BASE').replace(/<responseDate>[^<]*</, '<'),
        );
        assert.equal(text[0], text[1]);
      } finally {
        await Promise.all(servers.map((server) => server.close()));
      }
    } finally {
      await Promise.all(sites.map((one) => one.repository.close()));
    }
  });

  test('a worker killed with SIGKILL mid-harvest is taken over once its lease runs out: every file stored once', async () => {
    const big = await site('big', 80);
    try {
      const catalog = await postgres.createDatabase('takeover');
      const added = await run(['sources', 'add', big.endpoint, '--every', '1d', '--archive', join(work, 'takeover-admin'), '--catalog', catalog]);
      assert.equal(added.status, 0, added.stderr);
      const store = await S3Storage.open({
        url: 's3://shared/takeover',
        endpoint: rgw.endpoint,
        region: rgw.region,
        credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey },
      });
      const committed = async () => {
        let count = 0;
        for await (const _ of store.committedBags()) count++;
        return count;
      };
      const first = start(
        ['worker', '--name', 'doomed', '--lease', '4s', '--batch-records', '5', '--archive', join(work, 'takeover-1'), ...places(catalog, 'takeover')],
        s3env,
      );
      const firstDone = finish(first);
      try {
        for (let tries = 0; (await committed()) === 0; tries++) {
          assert.ok(tries < 1200, 'the first worker committed no bag');
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      } finally {
        first.kill('SIGKILL');
        await firstDone;
      }
      const atKill = await committed();
      assert.ok(atKill < 16, `killed in the middle: ${atKill} of 16 batches committed`);
      const second = await run(
        [
          'worker',
          '--name',
          'heir',
          '--lease',
          '4s',
          '--poll',
          '1s',
          '--until-idle',
          '--batch-records',
          '5',
          '--archive',
          join(work, 'takeover-2'),
          ...places(catalog, 'takeover'),
        ],
        s3env,
      );
      assert.equal(second.status, 0, second.stderr);
      assert.match(second.stdout, /harvest #\d+ complete/);
      const opened = Catalog.open(join(work, 'takeover-2'));
      try {
        assert.deepEqual(tally(opened).get(big.endpoint), { harvests: ['interrupted', 'complete'], resources: 80, versions: 80, mostVersions: 1 });
        const bags = opened.bags().map((bag) => bag.bagPath);
        const onStore: string[] = [];
        for await (const bag of store.committedBags()) onStore.push(bag);
        assert.deepEqual(bags.sort(), onStore.sort(), 'every committed bag is catalogued, the dead worker’s too');
        assert.deepEqual(opened.pendingBags(), []);
        assert.equal(opened.scheduledSource(big.endpoint)?.lastOutcome, 'complete');
      } finally {
        opened.close();
        store.close();
      }
      // A PostgreSQL catalog rebuilt from the store keeps the schedule, and the lease tokens.
      const before = JSON.parse((await run(['sources', 'list', '--json', '--archive', join(work, 'takeover-2')], s3env)).stdout);
      const reindexed = await run(['reindex', '--force', '--archive', join(work, 'takeover-2')], s3env);
      assert.equal(reindexed.status, 0, reindexed.stderr);
      assert.deepEqual(JSON.parse((await run(['sources', 'list', '--json', '--archive', join(work, 'takeover-2')], s3env)).stdout), before);
    } finally {
      await big.repository.close();
    }
  });

  test("a harvest on a shared catalog puts right only its own source: another process's live run is left running", async () => {
    const url = await postgres.createDatabase('scoped');
    const archive = join(work, 'scoped');
    const one = await site('scoped-site', 4);
    try {
      const other = Catalog.open(archive, { postgres: url });
      let live: number;
      try {
        // A worker elsewhere is harvesting another source right now.
        live = other.startRun(other.ensureSource('http://127.0.0.1:9/oai', null).id, 'harvest', { prefix: 'oai_didl' });
      } finally {
        other.close();
      }
      const harvested = await run(['harvest', one.endpoint, '--archive', archive, '--catalog', url]);
      assert.equal(harvested.status, 0, harvested.stderr);
      const catalog = Catalog.open(archive, { postgres: url });
      try {
        assert.equal(catalog.harvest(live)?.status, 'running');
      } finally {
        catalog.close();
      }
    } finally {
      await one.repository.close();
    }
  });

  test('a worker whose lease was taken over writes nothing: its check and its write commit together', async () => {
    const url = await postgres.createDatabase('fenced');
    const archive = join(work, 'fenced');
    const first = Catalog.open(archive, { postgres: url });
    const second = Catalog.open(archive, { postgres: url });
    try {
      assert.equal(
        first.addScheduledSource({
          baseUrl: 'http://127.0.0.1:9/oai',
          settings: '{"baseUrl":"http://127.0.0.1:9/oai","every":"1h"}',
          everyMs: 3600_000,
          jitterMs: 0,
        }),
        true,
      );
      const lease = first.claimDueSource('slow', 50);
      assert.ok(lease);
      assert.equal(second.claimDueSource('eager', 60_000), undefined, 'a live lease is not claimed');
      first.holdLease(lease, 50);
      // A write under the lease passes and renews it.
      first.ensureSource('http://127.0.0.1:9/oai', null);
      assert.ok((first.scheduledSource('http://127.0.0.1:9/oai')?.leaseExpiresAt ?? 0) > lease.source.leaseExpiresAt!);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const taken = second.claimDueSource('eager', 60_000);
      assert.equal(taken?.token, lease.token + 1, 'the expired lease is taken over');
      assert.throws(
        () => first.transaction(() => first.ensureSource('http://127.0.0.1:8/oai', null)),
        (error: unknown) => error instanceof ArchiverError && error.code === 'ERR_ARCHIVE_LEASE',
      );
      assert.equal(first.source('http://127.0.0.1:8/oai'), undefined, 'nothing of the refused transaction was written');
      assert.equal(first.renewLease(lease, 60_000), false, 'a lost lease is not renewed');
      assert.equal(second.scheduledSource('http://127.0.0.1:9/oai')?.leaseOwner, 'eager');
    } finally {
      first.close();
      second.close();
    }
  });
});
