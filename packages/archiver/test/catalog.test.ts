import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, type TestContext, test } from 'node:test';
import Database from 'better-sqlite3';
import { byDigestPath, type HandMadeVersion, storeVersion } from '../../../test/catalog-fixture.ts';
import { POSTGRES_SKIP, type Postgres, startPostgres } from '../../../test/postgres-server.ts';
import { ARCHIVE_FORMAT } from '../src/aip/layout-names.ts';
import { CATALOG_FILE_NAME, Catalog } from '../src/catalog/catalog.ts';
import { CATALOG_MIGRATIONS, CATALOG_SCHEMA_VERSION, migrateCatalog } from '../src/catalog/catalog-migrations.ts';
import { isArchiverError } from '../src/core/errors.ts';

const BASE = 'https://example.org/oai';
const SHA_A = 'a'.repeat(64);
const SHA_B = 'b'.repeat(64);
const SHA_C = 'c'.repeat(64);

async function archive(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'oaibag-catalog-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

type Engine = 'SQLite' | 'PostgreSQL';

let postgres: Promise<Postgres> | undefined;
let databases = 0;
after(async () => (postgres ? (await postgres).stop() : undefined));

/** The same test on a SQLite catalog and on a PostgreSQL one (a fresh database of a server started once). */
function engineTest(name: string, fn: (t: TestContext, engine: Engine) => Promise<void>): void {
  test(`${name} (SQLite)`, (t) => fn(t, 'SQLite'));
  test(`${name} (PostgreSQL)`, { skip: POSTGRES_SKIP }, (t) => fn(t, 'PostgreSQL'));
}

/** An open catalog with one source and one running harvest, closed after the test. */
async function harvesting(t: TestContext, engine: Engine = 'SQLite') {
  const dir = await archive(t);
  let options = {};
  if (engine === 'PostgreSQL') {
    postgres ??= startPostgres();
    options = { postgres: await (await postgres).createDatabase(`catalog_${++databases}`) };
  }
  const catalog = Catalog.open(dir, options);
  t.after(() => catalog.close());
  const source = catalog.upsertSource(BASE, { repositoryName: 'Example', granularity: 'YYYY-MM-DDThh:mm:ssZ' });
  const harvestId = catalog.startRun(source.id, 'harvest', { prefix: 'oai_didl' });
  const version = (identifier: string, datestamp: string, sha256: string): HandMadeVersion => ({
    sourceId: source.id,
    identifier,
    datestamp,
    sha256,
    size: 10,
    mimeType: 'text/plain',
    harvestId,
  });
  return { dir, catalog, source, harvestId, version };
}

test('a new catalog applies every migration once and records the schema version', async (t) => {
  const dir = await archive(t);
  const catalog = Catalog.open(dir);
  assert.equal(catalog.file, join(dir, CATALOG_FILE_NAME));
  assert.equal(catalog.schemaVersion(), CATALOG_SCHEMA_VERSION);
  catalog.close();
  Catalog.open(dir).close();
  const db = new Database(join(dir, CATALOG_FILE_NAME));
  t.after(() => db.close());
  const rows = db.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all();
  assert.deepEqual(
    rows,
    CATALOG_MIGRATIONS.map(({ version, name }) => ({ version, name })),
  );
  assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
});

test('a later migration is applied once, in order, on the next open', async (t) => {
  const dir = await archive(t);
  Catalog.open(dir).close();
  let runs = 0;
  const next = [
    ...CATALOG_MIGRATIONS,
    {
      version: CATALOG_SCHEMA_VERSION + 1,
      name: 'test',
      up: (db: Database.Database) => {
        runs++;
        db.exec('CREATE TABLE extra (x)');
      },
    },
  ];
  const db = new Database(join(dir, CATALOG_FILE_NAME));
  t.after(() => db.close());
  migrateCatalog(db, 'catalog', next);
  migrateCatalog(db, 'catalog', next);
  assert.equal(runs, 1);
  assert.equal((db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number }).v, CATALOG_SCHEMA_VERSION + 1);
});

test('a migration that fails leaves the catalog at the previous version', async (t) => {
  const dir = await archive(t);
  Catalog.open(dir).close();
  const db = new Database(join(dir, CATALOG_FILE_NAME));
  t.after(() => db.close());
  const broken = { version: CATALOG_SCHEMA_VERSION + 1, name: 'broken', up: (d: Database.Database) => d.exec('CREATE TABLE half (x); SELECT * FROM nowhere') };
  assert.throws(() => migrateCatalog(db, 'catalog', [...CATALOG_MIGRATIONS, broken]));
  assert.equal((db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number }).v, CATALOG_SCHEMA_VERSION);
  assert.equal(db.prepare("SELECT name FROM sqlite_master WHERE name = 'half'").get(), undefined);
});

test('a catalog newer than the program is refused with ERR_ARCHIVE_CATALOG', async (t) => {
  const dir = await archive(t);
  Catalog.open(dir).close();
  const db = new Database(join(dir, CATALOG_FILE_NAME));
  db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'future', '2099-01-01T00:00:00Z')").run(CATALOG_SCHEMA_VERSION + 5);
  db.close();
  assert.throws(
    () => Catalog.open(dir),
    (error: unknown) =>
      isArchiverError(error) &&
      error.code === 'ERR_ARCHIVE_CATALOG' &&
      error.message.includes(`schema version ${CATALOG_SCHEMA_VERSION + 5}`) &&
      error.path === join(dir, CATALOG_FILE_NAME) &&
      /upgrade/.test(error.hint ?? ''),
  );
});

test('opening without create refuses a missing catalog and never creates one', async (t) => {
  const dir = await archive(t);
  assert.throws(
    () => Catalog.open(dir, { create: false }),
    (error: unknown) => isArchiverError(error) && error.code === 'ERR_ARCHIVE_CATALOG' && /no catalog/.test(error.message),
  );
  assert.throws(() => Catalog.open(join(dir, 'missing-dir')), { code: 'ERR_ARCHIVE_CATALOG' });
  Catalog.open(dir).close();
  Catalog.open(dir, { create: false }).close();
});

test('reopening keeps sources, harvests, versions, watermark and resume state', async (t) => {
  const dir = await archive(t);
  const first = Catalog.open(dir);
  const source = first.upsertSource(BASE, {
    repositoryName: 'Example',
    granularity: 'YYYY-MM-DD',
    earliestDatestamp: '2001-01-01',
    deletedRecord: 'persistent',
    compression: ['gzip', 'deflate'],
  });
  const harvestId = first.startRun(source.id, 'harvest', { from: '2024-01-01', set: 'mime:image', prefix: 'oai_didl' });
  first.setListResponseDate(harvestId, '2024-02-01T10:00:00Z');
  const stored = storeVersion(first, { sourceId: source.id, identifier: 'oai:x:1', datestamp: '2024-01-02', size: 3, sha256: SHA_A, harvestId });
  first.setWatermark(source.id, '2024-02-01');
  first.saveResumeState(source.id, {
    token: 'tok',
    listFrom: '2024-01-01',
    listUntil: null,
    set: 'mime:image',
    prefix: 'oai_didl',
    listResponseDate: '2024-02-01T10:00:00Z',
    harvestId,
  });
  first.finishRun(harvestId, 'partial', { records: 1, added: 1, bytes: 3, requests: 2 });
  first.close();

  const again = Catalog.open(dir);
  t.after(() => again.close());
  const kept = again.source(BASE)!;
  assert.equal(kept.id, source.id);
  assert.deepEqual(kept.compression, ['gzip', 'deflate']);
  assert.equal(kept.deletedRecord, 'persistent');
  assert.equal(kept.watermark, '2024-02-01');
  assert.equal(kept.resume?.token, 'tok');
  assert.equal(kept.resume?.set, 'mime:image');
  assert.equal(kept.resume?.listResponseDate, '2024-02-01T10:00:00Z');
  assert.equal(kept.resume?.harvestId, harvestId);
  const harvest = again.lastHarvest(source.id)!;
  assert.equal(harvest.status, 'partial');
  assert.ok(harvest.endedAt);
  assert.deepEqual(harvest.arguments, { from: '2024-01-01', until: null, set: 'mime:image', prefix: 'oai_didl' });
  assert.equal(harvest.listResponseDate, '2024-02-01T10:00:00Z');
  assert.deepEqual(harvest.counts, { records: 1, added: 1, modified: 0, touched: 0, deleted: 0, failed: 0, bytes: 3, requests: 2 });
  assert.deepEqual(again.latestVersion(source.id, 'oai:x:1'), stored.version);
  assert.equal(stored.version.bagPath, 'aips/harvest-000001/batch-00001');
  assert.deepEqual(again.payload(SHA_A), { sha256: SHA_A, size: 3, bagPath: 'aips/harvest-000001/batch-00001', path: byDigestPath(SHA_A) });
});

test('a run has a kind: rows of a catalog before schema 8 are imports when their arguments name a delivery', async (t) => {
  const dir = await archive(t);
  const db = new Database(join(dir, CATALOG_FILE_NAME));
  migrateCatalog(
    db,
    'catalog',
    CATALOG_MIGRATIONS.filter((migration) => migration.version < 8),
  );
  db.prepare("INSERT INTO sources (id, base_url, created_at) VALUES (1, ?, '2024-01-01T00:00:00.000Z')").run(BASE);
  const row = db.prepare("INSERT INTO harvests (id, source_id, started_at, status, arguments) VALUES (?, 1, '2024-01-01T00:00:00.000Z', 'complete', ?)");
  row.run(1, JSON.stringify({ from: null, until: null, set: null, prefix: 'oai_didl' }));
  const delivery = { name: 'site.zip', size: 10, sha256: SHA_A, kind: 'site' };
  row.run(2, JSON.stringify({ from: null, until: null, set: null, prefix: 'oai_didl', delivery }));
  db.close();

  const catalog = Catalog.open(dir);
  t.after(() => catalog.close());
  assert.equal(catalog.schemaVersion(), CATALOG_SCHEMA_VERSION);
  assert.equal(catalog.harvest(1)?.kind, 'harvest');
  assert.equal(catalog.harvest(2)?.kind, 'import');
  assert.deepEqual(catalog.harvest(2)?.arguments.delivery, delivery);
  const source = catalog.source(BASE)!;
  assert.equal(catalog.harvest(catalog.startRun(source.id, 'import', { prefix: 'oai_didl' }))?.kind, 'import');
  assert.equal(catalog.harvest(catalog.startRun(source.id, 'harvest', { prefix: 'oai_didl' }))?.kind, 'harvest');
  assert.throws(() => catalog.startRun(source.id, 'mirror' as 'harvest', { prefix: 'oai_didl' }), /CHECK constraint/);
});

engineTest('upsertSource refreshes the Identify facts of a known base URL', async (t, engine) => {
  const { catalog, source } = await harvesting(t, engine);
  const refreshed = catalog.upsertSource(BASE, { repositoryName: 'Renamed', granularity: 'YYYY-MM-DD' });
  assert.equal(refreshed.id, source.id);
  assert.equal(refreshed.repositoryName, 'Renamed');
  assert.equal(refreshed.granularity, 'YYYY-MM-DD');
  assert.equal(catalog.source('https://other.example/oai'), undefined);
});

engineTest('versions are added, touched, modified, and restored after a deletion', async (t, engine) => {
  const { catalog, source, version } = await harvesting(t, engine);
  const id = 'oai:example.org:/a.txt';
  assert.equal(storeVersion(catalog, version(id, '2024-01-01T00:00:00Z', SHA_A)).change, 'added');
  assert.equal(storeVersion(catalog, version(id, '2024-01-02T00:00:00Z', SHA_A)).change, 'touched');
  assert.equal(storeVersion(catalog, version(id, '2024-01-03T00:00:00Z', SHA_B)).change, 'modified');
  assert.equal(catalog.recordDeletion(source.id, id, '2024-01-04T00:00:00Z'), true);
  assert.equal(catalog.resource(source.id, id)?.deletedAt, '2024-01-04T00:00:00Z');
  const restored = storeVersion(catalog, version(id, '2024-01-05T00:00:00Z', SHA_B));
  assert.equal(restored.change, 'restored');
  assert.equal(restored.known, false);
  const resource = catalog.resource(source.id, id)!;
  assert.equal(resource.deletedAt, null);
  assert.equal(resource.currentVersionId, restored.version.id);
  assert.deepEqual(
    catalog.versions(source.id, id).map((v) => [v.datestamp, v.change]),
    [
      ['2024-01-01T00:00:00Z', 'added'],
      ['2024-01-02T00:00:00Z', 'touched'],
      ['2024-01-03T00:00:00Z', 'modified'],
      ['2024-01-05T00:00:00Z', 'restored'],
    ],
  );
  assert.equal(catalog.latestVersion(source.id, id)?.datestamp, '2024-01-05T00:00:00Z');
});

engineTest('a record delivered twice is recognised and costs no new version', async (t, engine) => {
  const { catalog, source, version } = await harvesting(t, engine);
  const first = storeVersion(catalog, version('oai:x:dup', '2024-01-01T00:00:00Z', SHA_A));
  assert.deepEqual(catalog.knownVersion(source.id, 'oai:x:dup', '2024-01-01T00:00:00Z', SHA_A), first.version);
  assert.equal(catalog.knownVersion(source.id, 'oai:x:dup', '2024-01-01T00:00:00Z', SHA_B), undefined);
  assert.equal(catalog.knownVersion(source.id, 'oai:x:other', '2024-01-01T00:00:00Z', SHA_A), undefined);
  // Known before its bag is looked at: a record delivered again in a later batch costs nothing.
  const second = catalog.recordVersion({ ...version('oai:x:dup', '2024-01-01T00:00:00Z', SHA_A), bagPath: 'aips/elsewhere', record: 7, parts: [SHA_A] });
  assert.equal(second.known, true);
  assert.deepEqual(second.version, first.version);
  assert.equal(catalog.versions(source.id, 'oai:x:dup').length, 1);
});

engineTest('deletions are idempotent, and an unknown identifier is recorded deleted with no versions', async (t, engine) => {
  const { catalog, source, harvestId, version } = await harvesting(t, engine);
  storeVersion(catalog, version('oai:x:gone', '2024-01-01T00:00:00Z', SHA_A));
  assert.equal(catalog.recordDeletion(source.id, 'oai:x:gone', '2024-02-01T00:00:00Z', harvestId), true);
  assert.equal(catalog.recordDeletion(source.id, 'oai:x:gone', '2024-02-01T00:00:00Z', harvestId), false);
  assert.equal(catalog.recordDeletion(source.id, 'oai:x:never', '2024-02-01T00:00:00Z', harvestId), true);
  const never = catalog.resource(source.id, 'oai:x:never')!;
  assert.equal(never.deletedAt, '2024-02-01T00:00:00Z');
  assert.equal(never.currentVersionId, null);
  assert.deepEqual(catalog.versions(source.id, 'oai:x:never'), []);
  // The deleted resource keeps its version (AIPs are never deleted).
  assert.equal(catalog.latestVersion(source.id, 'oai:x:gone')?.sha256, SHA_A);
  // A first version after a deletion-only record is an addition: nothing was held before.
  assert.equal(storeVersion(catalog, version('oai:x:never', '2024-03-01T00:00:00Z', SHA_A)).change, 'added');
  const status = catalog.status().sources[0]!;
  assert.equal(status.deletedResources, 1);
  assert.equal(status.liveResources, 1);
});

engineTest('failures of a record are deduplicated, keep the latest reason, and are resolved when it is stored', async (t, engine) => {
  const { catalog, source, harvestId, version } = await harvesting(t, engine);
  const id = 'oai:x:bad';
  const first = catalog.recordFailure({
    sourceId: source.id,
    harvestId,
    identifier: id,
    datestamp: '2024-01-01T00:00:00Z',
    stage: 'verify',
    code: 'ERR_HARVEST_VERIFY',
    message: 'size mismatch\nsecond line',
    expected: '10',
    found: '9',
  });
  assert.equal(first.attempts, 1);
  assert.equal(first.message, 'size mismatch second line');
  const second = catalog.recordFailure({ sourceId: source.id, harvestId, identifier: id, stage: 'fetch', code: 'HTTP 404', message: 'not found' });
  assert.equal(second.id, first.id);
  assert.equal(second.attempts, 2);
  assert.equal(second.stage, 'fetch');
  assert.equal(second.firstSeenAt, first.firstSeenAt);
  catalog.recordFailure({ sourceId: source.id, harvestId, identifier: 'oai:x:other', stage: 'record', code: 'ERR_HARVEST_FORMAT', message: 'bad base64' });
  catalog.recordFailure({ sourceId: source.id, harvestId, stage: 'list', code: 'badResumptionToken', message: 'token refused' });
  catalog.recordFailure({ sourceId: source.id, harvestId, stage: 'list', code: 'badResumptionToken', message: 'token refused again' });
  assert.deepEqual(
    catalog.openFailures(source.id).map((f) => [f.identifier, f.code, f.attempts]),
    [
      [id, 'HTTP 404', 2],
      ['oai:x:other', 'ERR_HARVEST_FORMAT', 1],
      [null, 'badResumptionToken', 2],
    ],
  );

  storeVersion(catalog, version(id, '2024-01-01T00:00:00Z', SHA_A));
  catalog.recordDeletion(source.id, 'oai:x:other', '2024-01-02T00:00:00Z');
  assert.equal(catalog.resolveListFailures(source.id), 1);
  assert.deepEqual(catalog.openFailures(source.id), []);

  // Failing after being resolved opens a new failure, attempts counted afresh.
  const again = catalog.recordFailure({ sourceId: source.id, identifier: id, stage: 'store', code: 'ERR_ARCHIVE_IO', message: 'disk full' });
  assert.notEqual(again.id, first.id);
  assert.equal(again.attempts, 1);
});

engineTest('watermark and resume state round-trip, and clearing the resume state removes it', async (t, engine) => {
  const { catalog, source, harvestId } = await harvesting(t, engine);
  assert.equal(source.watermark, null);
  assert.equal(source.resume, null);
  catalog.setWatermark(source.id, '2024-05-01T12:00:00Z');
  const state = {
    token: 'page-2',
    listFrom: '2024-05-01T12:00:00Z',
    listUntil: '2024-06-01T00:00:00Z',
    set: null,
    prefix: 'oai_didl',
    listResponseDate: '2024-06-01T00:00:01Z',
    harvestId,
  };
  catalog.saveResumeState(source.id, state);
  const saved = catalog.source(BASE)!;
  assert.equal(saved.watermark, '2024-05-01T12:00:00Z');
  assert.deepEqual({ ...saved.resume, savedAt: undefined }, { ...state, savedAt: undefined });
  assert.ok(saved.resume?.savedAt);
  catalog.saveResumeState(source.id, null);
  assert.equal(catalog.source(BASE)?.resume, null);
  assert.equal(catalog.source(BASE)?.watermark, '2024-05-01T12:00:00Z');
});

engineTest('harvests left running by a killed process are marked interrupted', async (t, engine) => {
  const { catalog, source, harvestId } = await harvesting(t, engine);
  catalog.updateRunCounts(harvestId, { records: 5, bytes: 50 });
  assert.equal(catalog.interruptRunningRuns(), 1);
  const harvest = catalog.harvest(harvestId)!;
  assert.equal(harvest.status, 'interrupted');
  assert.equal(harvest.counts.records, 5);
  const next = catalog.startRun(source.id, 'harvest', { prefix: 'oai_didl' });
  assert.equal(catalog.lastHarvest(source.id)?.id, next);
  assert.equal(catalog.lastHarvest(source.id)?.status, 'running');
});

engineTest('a transaction that throws records nothing', async (t, engine) => {
  const { catalog, source, version } = await harvesting(t, engine);
  assert.throws(() =>
    catalog.transaction(() => {
      storeVersion(catalog, version('oai:x:page', '2024-01-01T00:00:00Z', SHA_A));
      catalog.setWatermark(source.id, '2024-01-01T00:00:00Z');
      throw new Error('crash mid-page');
    }),
  );
  assert.equal(catalog.resource(source.id, 'oai:x:page'), undefined);
  assert.equal(catalog.source(BASE)?.watermark, null);
  assert.deepEqual(catalog.bags(), [], 'the batch bag is not recorded either');
  assert.equal(catalog.payload(SHA_A), undefined);
});

engineTest('status counts sources, last harvest, live and deleted resources, versions, bytes and open failures', async (t, engine) => {
  const { catalog, source, harvestId, version } = await harvesting(t, engine);
  storeVersion(catalog, version('oai:x:1', '2024-01-01T00:00:00Z', SHA_A));
  storeVersion(catalog, { ...version('oai:x:1', '2024-01-02T00:00:00Z', SHA_B), size: 32 });
  storeVersion(catalog, version('oai:x:2', '2024-01-01T00:00:00Z', SHA_A)); // a revisit: no new payload
  storeVersion(catalog, version('oai:x:3', '2024-01-01T00:00:00Z', SHA_C));
  catalog.recordDeletion(source.id, 'oai:x:3', '2024-01-03T00:00:00Z', harvestId);
  catalog.recordFailure({ sourceId: source.id, harvestId, identifier: 'oai:x:4', stage: 'verify', code: 'ERR_HARVEST_VERIFY', message: 'digest mismatch' });
  catalog.finishRun(harvestId, 'partial', { records: 5, added: 3, modified: 1, deleted: 1, failed: 1, bytes: 62, requests: 1 });
  const other = catalog.upsertSource('https://other.example/oai', {});

  const status = catalog.status();
  assert.equal(status.schemaVersion, CATALOG_SCHEMA_VERSION);
  assert.equal(status.sources.length, 2);
  const [first, second] = status.sources;
  assert.equal(first?.source.baseUrl, BASE);
  assert.equal(first?.lastHarvest?.id, harvestId);
  assert.equal(first?.lastHarvest?.status, 'partial');
  assert.equal(first?.lastHarvest?.counts.failed, 1);
  assert.equal(first?.liveResources, 2);
  assert.equal(first?.deletedResources, 1);
  assert.equal(first?.versions, 4);
  assert.equal(first?.payloadBytes, 10 + 32 + 10 + 10);
  assert.equal(first?.storedBytes, 10 + 32 + 10, 'bytes held once whatever the versions relying on them');
  assert.equal(first?.bags, 4);
  assert.equal(first?.openFailures, 1);
  assert.deepEqual(
    { ...second, source: second?.source.id },
    { source: other.id, lastHarvest: undefined, liveResources: 0, deletedResources: 0, versions: 0, payloadBytes: 0, storedBytes: 0, bags: 0, openFailures: 0 },
  );
});

test('events are appended with their subjects', async (t) => {
  const { dir, catalog, source, harvestId, version } = await harvesting(t);
  const stored = storeVersion(catalog, version('oai:x:1', '2024-01-01T00:00:00Z', SHA_A));
  const id = catalog.addEvent({
    sourceId: source.id,
    resourceId: stored.version.resourceId,
    versionId: stored.version.id,
    harvestId,
    type: 'ingestion',
    outcome: 'success',
    detail: 'bag stored',
  });
  const db = new Database(join(dir, CATALOG_FILE_NAME), { readonly: true });
  t.after(() => db.close());
  const row = db.prepare('SELECT * FROM events WHERE id = ?').get(id) as Record<string, unknown>;
  assert.equal(row.version_id, stored.version.id);
  assert.equal(row.type, 'ingestion');
  assert.equal(row.outcome, 'success');
  assert.equal(row.detail, 'bag stored');
  assert.ok(typeof row.at === 'string');
});

/** A batch bag of `harvestId` bringing these payload files (path `data/<name>`). */
function batch(bagPath: string, sourceId: number, harvestId: number, files: Array<[name: string, sha256: string, size: number]>, records = files.length) {
  return {
    bagPath,
    sourceId,
    harvestId,
    records,
    newPayloads: files.length,
    revisits: 0,
    deletions: 0,
    payloadBytes: files.reduce((sum, [, , size]) => sum + size, 0),
    payloads: files.map(([name, sha256, size]) => ({ sha256, size, path: `data/${name}` })),
  };
}

engineTest('a batch bag is recorded once with its payload files; bytes already held keep their first place', async (t, engine) => {
  const { catalog, source, harvestId } = await harvesting(t, engine);
  const first = 'aips/harvest-000001/batch-00001';
  const second = 'aips/harvest-000001/batch-00002';
  catalog.addPendingBag(first, harvestId);
  const id = catalog.recordBag(
    batch(first, source.id, harvestId, [
      ['example.org/a.txt', SHA_A, 3],
      ['example.org/b.txt', SHA_B, 5],
    ]),
  );
  assert.deepEqual(catalog.pendingBags(), [], 'recording the bag removes its pending note');
  assert.equal(catalog.recordBag(batch(first, source.id, harvestId, [['example.org/other', SHA_C, 1]])), id, 'a bag recorded again is the same row');
  assert.equal(catalog.payload(SHA_C), undefined, 'and brings nothing more');
  // A second bag that (wrongly) brings bytes held already: the first place stays the one.
  catalog.recordBag(
    batch(second, source.id, harvestId, [
      ['copy/a.txt', SHA_A, 3],
      ['example.org/c.txt', SHA_C, 7],
    ]),
  );
  assert.deepEqual(catalog.payload(SHA_A), { sha256: SHA_A, size: 3, bagPath: first, path: 'data/example.org/a.txt' });
  assert.deepEqual(catalog.payload(SHA_C), { sha256: SHA_C, size: 7, bagPath: second, path: 'data/example.org/c.txt' });
  assert.equal(catalog.payload('d'.repeat(64)), undefined);
  const bag = catalog.bag(first)!;
  assert.deepEqual(
    { ...bag, placedAt: undefined },
    {
      id,
      bagPath: first,
      sourceId: source.id,
      harvestId,
      records: 2,
      newPayloads: 2,
      revisits: 0,
      deletions: 0,
      payloadBytes: 8,
      placedAt: undefined,
    },
  );
  assert.ok(!Number.isNaN(Date.parse(bag.placedAt)));
  assert.deepEqual(
    catalog.bags().map((b) => b.bagPath),
    [first, second],
  );
  assert.equal(catalog.bag('aips/harvest-000001/batch-00003'), undefined);
});

engineTest('a version names its bag, its record there, its payload files in order (revisits included) and its fetches', async (t, engine) => {
  const { catalog, source, harvestId } = await harvesting(t, engine);
  const first = 'aips/harvest-000001/batch-00001';
  const second = 'aips/harvest-000001/batch-00002';
  catalog.recordBag(batch(first, source.id, harvestId, [['example.org/a.txt', SHA_A, 3]]));
  catalog.recordBag(batch(second, source.id, harvestId, [['example.org/page.html.part-2', SHA_B, 5]], 2));
  // Record 2 of the second bag: part 1 revisits the bytes of the first bag, part 2 is new.
  const recorded = catalog.recordVersion({
    sourceId: source.id,
    identifier: 'https://example.org/page.html',
    datestamp: '2024-01-01T00:00:00Z',
    size: 8,
    sha256: SHA_C,
    mimeType: 'text/html',
    bagPath: second,
    record: 2,
    harvestId,
    parts: [SHA_A, SHA_B],
    lastModified: 'Mon, 01 Jan 2024 00:00:00 GMT',
    fetches: [{ part: 2, ref: 'http://example.org/p2', url: 'https://example.org/p2', redirects: ['https://example.org/p2'] }],
    storedAt: '2024-01-01T00:00:01.000Z',
  });
  assert.equal(recorded.known, false);
  assert.deepEqual(
    { ...recorded.version, id: undefined, resourceId: undefined },
    {
      id: undefined,
      resourceId: undefined,
      identifier: 'https://example.org/page.html',
      datestamp: '2024-01-01T00:00:00Z',
      size: 8,
      sha256: SHA_C,
      mimeType: 'text/html',
      bagPath: second,
      record: 2,
      harvestId,
      storedAt: '2024-01-01T00:00:01.000Z',
      change: 'added',
      payloadFiles: 2,
      lastModified: 'Mon, 01 Jan 2024 00:00:00 GMT',
    },
  );
  assert.deepEqual(catalog.versionParts(recorded.version.id), [
    { sha256: SHA_A, size: 3, bagPath: first, path: 'data/example.org/a.txt' },
    { sha256: SHA_B, size: 5, bagPath: second, path: 'data/example.org/page.html.part-2' },
  ]);
  assert.deepEqual(catalog.versionFetches(recorded.version.id), [
    { part: 2, ref: 'http://example.org/p2', url: 'https://example.org/p2', redirects: ['https://example.org/p2'] },
  ]);
  // A record without datastream (metadata only) has no payload file.
  const bare = catalog.recordVersion({
    sourceId: source.id,
    identifier: 'oai:x:metadata-only',
    datestamp: '2024-01-01T00:00:00Z',
    size: 0,
    sha256: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    bagPath: second,
    record: 1,
    harvestId,
    parts: [],
  });
  assert.equal(bare.version.payloadFiles, 0);
  assert.equal(bare.version.lastModified, null);
  assert.deepEqual(catalog.versionParts(bare.version.id), []);
  assert.deepEqual(catalog.versionFetches(bare.version.id), []);
});

engineTest('a version whose bag or payload file is not recorded is refused, and nothing of it is kept', async (t, engine) => {
  const { catalog, source, harvestId, version } = await harvesting(t, engine);
  assert.throws(
    () =>
      catalog.recordVersion({ ...version('oai:x:1', '2024-01-01T00:00:00Z', SHA_A), bagPath: 'aips/harvest-000001/batch-00001', record: 1, parts: [SHA_A] }),
    (error: unknown) => isArchiverError(error) && error.code === 'ERR_ARCHIVE_CATALOG' && error.message.includes('aips/harvest-000001/batch-00001'),
  );
  catalog.recordBag(batch('aips/harvest-000001/batch-00001', source.id, harvestId, [['example.org/a', SHA_A, 10]]));
  // Part 2 names bytes no bag holds: the version would point at nothing.
  assert.throws(() =>
    catalog.recordVersion({
      ...version('oai:x:1', '2024-01-01T00:00:00Z', SHA_C),
      bagPath: 'aips/harvest-000001/batch-00001',
      record: 1,
      parts: [SHA_A, SHA_B],
    }),
  );
  assert.equal(catalog.resource(source.id, 'oai:x:1'), undefined);
  assert.deepEqual(catalog.versions(source.id, 'oai:x:1'), []);
});

engineTest('pending bags are noted and listed until recorded or removed', async (t, engine) => {
  const { catalog, harvestId } = await harvesting(t, engine);
  catalog.addPendingBag('aips/harvest-000001/batch-00001', harvestId);
  catalog.addPendingBag('aips/harvest-000001/batch-00002', null);
  catalog.addPendingBag('aips/harvest-000001/batch-00001', harvestId); // noted twice: listed once
  const byPath = (a: { bagPath: string }, b: { bagPath: string }) => a.bagPath.localeCompare(b.bagPath);
  assert.deepEqual(catalog.pendingBags().sort(byPath), [
    { bagPath: 'aips/harvest-000001/batch-00001', harvestId },
    { bagPath: 'aips/harvest-000001/batch-00002', harvestId: null },
  ]);
  catalog.removePendingBag('aips/harvest-000001/batch-00002');
  assert.deepEqual(catalog.pendingBags(), [{ bagPath: 'aips/harvest-000001/batch-00001', harvestId }]);
});

test('a deletion names the bag that keeps its tombstone', async (t) => {
  const { dir, catalog, source, harvestId } = await harvesting(t);
  const bagPath = 'aips/harvest-000001/batch-00001';
  const id = catalog.recordBag({ ...batch(bagPath, source.id, harvestId, []), records: 1, deletions: 1 });
  assert.equal(catalog.recordDeletion(source.id, 'oai:x:gone', '2024-02-01T00:00:00Z', harvestId, bagPath, '2024-02-02T00:00:00.000Z'), true);
  assert.equal(catalog.knownDeletion(source.id, 'oai:x:gone', '2024-02-01T00:00:00Z'), true);
  assert.equal(catalog.knownDeletion(source.id, 'oai:x:gone', '2024-03-01T00:00:00Z'), false);
  const db = new Database(join(dir, CATALOG_FILE_NAME), { readonly: true });
  t.after(() => db.close());
  assert.deepEqual(db.prepare('SELECT datestamp, harvest_id, recorded_at, bag_id FROM deletions').all(), [
    { datestamp: '2024-02-01T00:00:00Z', harvest_id: harvestId, recorded_at: '2024-02-02T00:00:00.000Z', bag_id: id },
  ]);
});

test('a new catalog is of archive format 2; a catalog holding format-1 versions is refused with ERR_ARCHIVE_FORMAT and left as it was', async (t) => {
  const fresh = await archive(t);
  Catalog.open(fresh).close();
  const check = new Database(join(fresh, CATALOG_FILE_NAME), { readonly: true });
  assert.deepEqual(check.prepare('SELECT format FROM archive').all(), [{ format: ARCHIVE_FORMAT }]);
  check.close();
  assert.equal(ARCHIVE_FORMAT, 2);

  // A format-1 catalog: the schema before migration 5, with a version in its own bag.
  const dir = await archive(t);
  const file = join(dir, CATALOG_FILE_NAME);
  const before = CATALOG_MIGRATIONS.filter((migration) => migration.version < 5);
  const old = new Database(file);
  migrateCatalog(old, file, before);
  old.prepare("INSERT INTO sources (base_url, created_at) VALUES (?, '2024-01-01T00:00:00Z')").run(BASE);
  old.prepare("INSERT INTO resources (source_id, identifier) VALUES (1, 'oai:x:1')").run();
  old
    .prepare(`INSERT INTO versions (resource_id, datestamp, size, sha256, bag_path, stored_at, change, payload_files)
      VALUES (1, '2024-01-01', 3, ?, 'aips/ab/cd/x/20240101-aaaaaaaaaaaa', '2024-01-01T00:00:00Z', 'added', 1)`)
    .run(SHA_A);
  old.close();
  assert.throws(
    () => Catalog.open(dir),
    (error: unknown) =>
      isArchiverError(error) &&
      error.code === 'ERR_ARCHIVE_FORMAT' &&
      /format 1/.test(error.message) &&
      error.message.includes(`format ${ARCHIVE_FORMAT}`) &&
      error.path === file,
  );
  const after = new Database(file, { readonly: true });
  t.after(() => after.close());
  assert.equal((after.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number }).v, 4, 'not migrated');
  assert.equal((after.prepare('SELECT COUNT(*) AS n FROM versions').get() as { n: number }).n, 1, 'its versions are kept');

  // A catalog of that schema that holds no version yet has nothing of format 1: it is migrated.
  const empty = await archive(t);
  const emptyFile = join(empty, CATALOG_FILE_NAME);
  const blank = new Database(emptyFile);
  migrateCatalog(blank, emptyFile, before);
  blank.close();
  const migrated = Catalog.open(empty);
  assert.equal(migrated.schemaVersion(), CATALOG_SCHEMA_VERSION);
  migrated.close();
});

test('a read session: lookups in one transaction, a durable write inside it committed at once, nothing left open', async (t) => {
  const { dir, catalog, source, version } = await harvesting(t);
  storeVersion(catalog, version('oai:x:1', '2024-01-01T00:00:00Z', SHA_A));
  const other = new Database(join(dir, CATALOG_FILE_NAME), { readonly: true });
  t.after(() => other.close());
  const versionsSeenElsewhere = () => Number((other.prepare('SELECT count(*) AS n FROM versions').get() as { n: number }).n);

  const seen = await catalog.readSession(async () => {
    assert.equal(catalog.hasVersion(source.id, 'oai:x:1', '2024-01-01T00:00:00Z', SHA_A), true);
    await new Promise((resolve) => setImmediate(resolve));
    // A durable write inside the session is its own transaction: another reader sees it now,
    // not when the session ends; lookups after it see it too.
    storeVersion(catalog, version('oai:x:2', '2024-01-01T00:00:00Z', SHA_B));
    assert.equal(versionsSeenElsewhere(), 2);
    return catalog.payload(SHA_B) !== undefined;
  });
  assert.equal(seen, true);

  // Nothing is left open: a durable write after the session is not nested in anything.
  storeVersion(catalog, version('oai:x:3', '2024-01-01T00:00:00Z', SHA_C));
  assert.equal(versionsSeenElsewhere(), 3);
  await assert.rejects(
    catalog.readSession(async () => {
      throw new Error('the page failed');
    }),
    /the page failed/,
  );
  storeVersion(catalog, version('oai:x:4', '2024-01-02T00:00:00Z', SHA_C));
  assert.equal(versionsSeenElsewhere(), 4);
});
