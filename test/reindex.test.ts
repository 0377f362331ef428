// `oaibag reindex`: the catalog rebuilt from the bags alone answers as the lost one did.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { ArchiverError, audit, Catalog, harvest, reindexArchive, restoreSite } from '../packages/archiver/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';
import { batchBags } from './batch-bags.ts';

const BIN = fileURLToPath(new URL('../packages/archiver/bin/oaibag.js', import.meta.url));
const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;
const FAST_RETRY = { retries: 2, baseDelayMs: 10, maxDelayMs: 100 };
const nextSecond = () => new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));

let work: string;
let site: string;
let repository: Repository;
let endpoint: string;

function write(path: string, content: string | Buffer, mtime = YEAR_2000): void {
  mkdirSync(dirname(join(site, path)), { recursive: true });
  writeFileSync(join(site, path), content);
  utimesSync(join(site, path), mtime, mtime);
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-reindex-'));
  site = join(work, 'site');
  for (let i = 0; i < 9; i++) write(`pages/p${i}.html`, `<p>page ${i}</p>`.repeat(10 + i), YEAR_2000 + i * 60);
  write('img/logo.png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 9, 9, 9]), YEAR_2000 + 900);
  write('big.bin', Buffer.alloc(200_000, 3), YEAR_2000 + 960); // By-Reference
  repository = await createRepository({ root: site, index: join(work, 'index.sqlite'), watch: false, rescanSeconds: 0, byValueMax: 100_000, pageRecords: 2 });
  endpoint = `${await repository.listen(0, '127.0.0.1')}/oai`;
});

after(async () => {
  await repository.close();
  rmSync(work, { recursive: true, force: true });
});

/** Every file below `root` with its bytes and mtime (seconds). */
function tree(root: string): Record<string, { bytes: string; mtime: number }> {
  const found: Record<string, { bytes: string; mtime: number }> = {};
  const walk = (folder: string) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) walk(path);
      else found[relative(root, path)] = { bytes: readFileSync(path).toString('base64'), mtime: Math.floor(statSync(path).mtimeMs / 1000) };
    }
  };
  walk(root);
  return found;
}

/** What the catalog answers: the audit of every harvest, the sources' list state, the counts. */
function answers(archive: string) {
  const catalog = Catalog.open(archive, { create: false });
  try {
    const report = audit(catalog);
    const source = catalog.source(endpoint)!;
    const status = catalog.status().sources[0]!;
    return {
      rows: report.rows,
      totals: report.totals,
      watermark: source.watermark,
      resume: source.resume === null ? null : { ...source.resume, savedAt: undefined },
      counts: {
        live: status.liveResources,
        deleted: status.deletedResources,
        versions: status.versions,
        bytes: status.payloadBytes,
        stored: status.storedBytes,
      },
      // What `oaibag serve` lists by: each resource's served datestamp and MIME set columns.
      served: catalog.statement('SELECT source_id, identifier, served_at, mime_essence, mime_major FROM resources ORDER BY served_at, id').all(),
      harvests: [1, 2, 3].map((id) => {
        const row = catalog.harvest(id);
        // The politeness a harvest used is how it asked, not what it stored: the bags do not
        // carry it, so a rebuilt catalog has none (docs/operations.md, "Disaster recovery").
        const { delayMs: _delay, maxConnections: _connections, ...args } = (row?.arguments ?? {}) as Record<string, unknown>;
        return row && { id: row.id, startedAt: row.startedAt, arguments: args, listResponseDate: row.listResponseDate, added: row.counts.added };
      }),
    };
  } finally {
    catalog.close();
  }
}

async function restoreTree(archive: string, name: string, asOf?: string) {
  const to = join(work, name);
  const summary = await restoreSite({ archiveDir: archive, to, ...(asOf ? { asOf } : {}) });
  assert.equal(summary.problems, 0, JSON.stringify(summary));
  return tree(to);
}

function removeCatalog(archive: string): void {
  for (const suffix of ['', '-wal', '-shm']) rmSync(join(archive, `catalog.sqlite${suffix}`), { force: true });
}

test('a deleted catalog is rebuilt from the bags: the same audit, the same restores, and a further harvest finds nothing new', async () => {
  const archive = join(work, 'archive');
  const bounds = { records: 4, bytes: 256 * 1024 * 1024 };
  const first = await harvest({ baseUrl: endpoint, archiveDir: archive, retry: FAST_RETRY, batchBounds: bounds });
  assert.equal(first.added, 11);
  const between = new Date().toISOString();
  await nextSecond();
  write('pages/p1.html', '<p>page 1, edited</p>', Date.now() / 1000);
  utimesSync(join(site, 'img/logo.png'), new Date(), new Date()); // touched
  write('pages/p2.html', `<p>page 0</p>`.repeat(10), Date.now() / 1000); // a copy of p0's bytes
  rmSync(join(site, 'pages/p3.html'));
  write('new.txt', 'added later', Date.now() / 1000);
  await repository.scan();
  await nextSecond();
  const second = await harvest({ baseUrl: endpoint, archiveDir: archive, retry: FAST_RETRY, batchBounds: bounds });
  assert.deepEqual([second.added, second.modified, second.touched, second.deleted], [1, 2, 1, 1]);
  assert.ok(batchBags(archive).length >= 4, 'several batch bags');

  const before = answers(archive);
  const latest = await restoreTree(archive, 'before-latest');
  const earlier = await restoreTree(archive, 'before-earlier', between);
  assert.equal(before.counts.versions, 15);

  removeCatalog(archive);
  const summary = await reindexArchive({ archiveDir: archive });
  assert.equal(summary.bags, batchBags(archive).length);
  assert.equal(summary.versions, 15);
  assert.equal(summary.deletions, 1);
  assert.equal(summary.keptAs, null);

  assert.deepEqual(answers(archive), before, 'audit, watermark, counts and harvests as before');
  assert.deepEqual(await restoreTree(archive, 'after-latest'), latest);
  assert.deepEqual(await restoreTree(archive, 'after-earlier', between), earlier);
  assert.deepEqual(latest, tree(site), 'and the restore is the site');

  const bagsBefore = batchBags(archive);
  const third = await harvest({ baseUrl: endpoint, archiveDir: archive, retry: FAST_RETRY });
  assert.equal(third.status, 'complete');
  assert.equal(third.added + third.modified + third.touched + third.deleted + third.failed, 0, JSON.stringify(third));
  assert.deepEqual(batchBags(archive), bagsBefore, 'no new bag');
});

test('an interrupted list: reindex brings back its saved resumption token, and the next harvest resumes it', async () => {
  const archive = join(work, 'archive-interrupted');
  const stop = new AbortController();
  const interrupted = await harvest({
    baseUrl: endpoint,
    archiveDir: archive,
    retry: FAST_RETRY,
    batchBounds: { records: 2, bytes: 1 << 30 },
    signal: stop.signal,
    progress: (counts) => {
      if (counts.records >= 4) stop.abort();
    },
  });
  assert.equal(interrupted.status, 'interrupted');
  const before = answers(archive);
  assert.ok(before.resume?.token, 'a token is saved');
  removeCatalog(archive);
  await reindexArchive({ archiveDir: archive });
  const after = answers(archive);
  assert.deepEqual(after.resume, before.resume);
  assert.deepEqual(after.rows, before.rows);
  const resumed = await harvest({ baseUrl: endpoint, archiveDir: archive, retry: FAST_RETRY });
  assert.equal(resumed.status, 'complete');
  assert.equal(answers(archive).counts.live, 11, 'every live file, none twice');
  assert.equal(answers(archive).counts.versions, 11);
});

test('reindex refuses to overwrite a catalog unless --force, which keeps the old one; a damaged bag changes nothing', async () => {
  const archive = join(work, 'archive');
  await assert.rejects(reindexArchive({ archiveDir: archive }), (error: unknown) => error instanceof ArchiverError && error.code === 'ERR_ARCHIVE_USAGE');
  const before = answers(archive);
  const forced = await reindexArchive({ archiveDir: archive, force: true, now: () => new Date('2026-11-25T10:00:00Z') });
  assert.equal(forced.keptAs, join(archive, 'catalog.sqlite.20261125T100000Z'));
  assert.ok(existsSync(forced.keptAs!));
  // Harvest 3 found nothing new and wrote no bag: the rebuilt catalog does not know it, and
  // its watermark is the one of the last list that stored something (docs/aip-profile.md).
  const rebuilt = answers(archive);
  assert.equal(rebuilt.harvests[2], undefined);
  assert.equal(rebuilt.watermark, before.harvests[1]!.listResponseDate);
  assert.deepEqual({ ...rebuilt, harvests: undefined, watermark: undefined }, { ...before, harvests: undefined, watermark: undefined });
  assert.deepEqual(rebuilt.harvests.slice(0, 2), before.harvests.slice(0, 2));

  // One bag's records.xml.gz cut short: named, exit code, and the catalog left as it was.
  const bag = batchBags(archive)[1]!;
  const records = join(archive, bag, 'metadata/records.xml.gz');
  const kept = readFileSync(records);
  writeFileSync(records, gzipSync('<records xmlns="urn:oaibag:aip:2"><record n="1"'));
  try {
    const catalogBytes = readFileSync(join(archive, 'catalog.sqlite'));
    await assert.rejects(
      reindexArchive({ archiveDir: archive, force: true }),
      (error: unknown) => error instanceof ArchiverError && error.code === 'ERR_ARCHIVE_DAMAGED' && error.message.includes(bag),
    );
    assert.deepEqual(readFileSync(join(archive, 'catalog.sqlite')), catalogBytes, 'the catalog is untouched');
    assert.deepEqual(
      readdirSync(archive).filter((name) => name.includes('reindex')),
      [],
      'no temporary catalog is left',
    );
  } finally {
    writeFileSync(records, kept);
  }
});

test('oaibag reindex: a format-1 layout is refused with ERR_ARCHIVE_FORMAT; --json prints the summary', () => {
  const old = join(work, 'format-1');
  mkdirSync(join(old, 'aips', 'ab', 'cd', 'a'.repeat(64), '20000101-0123456789ab'), { recursive: true });
  const refused = spawnSync(process.execPath, [BIN, 'reindex', '--archive', old], { encoding: 'utf8' });
  assert.equal(refused.status, 4, refused.stderr);
  assert.match(refused.stderr, /ERR_ARCHIVE_FORMAT/);
  assert.match(refused.stderr, /format 2/);
  assert.doesNotMatch(refused.stderr, /\n\s+at /, 'no stack trace');

  const archive = join(work, 'archive');
  const done = spawnSync(process.execPath, [BIN, 'reindex', '--archive', archive, '--force', '--json'], { encoding: 'utf8' });
  assert.equal(done.status, 0, done.stderr);
  const summary = JSON.parse(done.stdout) as { bags: number; versions: number; keptAs: string };
  assert.equal(summary.bags, batchBags(archive).length);
  assert.equal(summary.versions, 15);
  assert.match(summary.keptAs, /catalog\.sqlite\.\d{8}T\d{6}Z$/);
});
