import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { Catalog } from '../src/catalog.ts';
import type { NewVersion } from '../src/catalog-schema.ts';
import { PageLedger } from '../src/page-ledger.ts';

const SHA_A = 'a'.repeat(64);
const SHA_B = 'b'.repeat(64);

async function harvesting(t: TestContext) {
  const dir = await mkdtemp(join(tmpdir(), 'oaibag-ledger-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const catalog = Catalog.open(dir);
  t.after(() => catalog.close());
  const source = catalog.upsertSource('https://example.org/oai', { repositoryName: 'Example' });
  const harvestId = catalog.startHarvest(source.id, { prefix: 'oai_didl' });
  const version = (identifier: string, datestamp: string, sha256: string, size = 10): NewVersion => ({
    sourceId: source.id,
    identifier,
    datestamp,
    sha256,
    size,
    bagPath: `bags/${identifier}/${datestamp}`,
    harvestId,
  });
  const resume = (token: string) => ({ token, listFrom: null, listUntil: null, set: null, prefix: 'oai_didl', listResponseDate: '2024-01-01T00:00:00Z', harvestId });
  return { dir, catalog, source, harvestId, version, resume };
}

test("a page's versions, deletions and failures are written with its token and tallied", async (t) => {
  const { catalog, source, harvestId, version, resume } = await harvesting(t);
  const first = new PageLedger();
  first.stageVersion(version('oai:1', '2024-01-01T00:00:00Z', SHA_A, 100));
  first.stageVersion(version('oai:2', '2024-01-01T00:00:00Z', SHA_A, 7));
  first.stageFailure({ sourceId: source.id, harvestId, identifier: 'oai:3', stage: 'verify', code: 'ERR_HARVEST_VERIFY', message: 'wrong length' });
  assert.equal(first.size, 3);
  assert.deepEqual(first.commit(catalog, { sourceId: source.id, state: resume('t1') }), { added: 2, modified: 0, touched: 0, deleted: 0, bytes: 107 });
  assert.equal(first.size, 0, 'a committed ledger is empty');
  assert.equal(catalog.source('https://example.org/oai')!.resume?.token, 't1');
  assert.equal(catalog.openFailures(source.id).length, 1);

  const second = new PageLedger();
  second.stageVersion(version('oai:1', '2024-02-01T00:00:00Z', SHA_A, 100)); // touched
  second.stageVersion(version('oai:2', '2024-02-01T00:00:00Z', SHA_B, 9)); // modified
  second.stageVersion(version('oai:2', '2024-02-01T00:00:00Z', SHA_B, 9)); // delivered twice: counted once
  second.stageDeletion(source.id, 'oai:3', '2024-02-01T00:00:00Z', harvestId);
  assert.deepEqual(second.commit(catalog, { sourceId: source.id, state: null }), { added: 0, modified: 1, touched: 1, deleted: 1, bytes: 109 });
  assert.equal(catalog.source('https://example.org/oai')!.resume, null, 'the end of the list clears the token');
  assert.deepEqual(catalog.openFailures(source.id), [], "the deletion resolves the record's failure");
  assert.deepEqual(
    catalog.versions(source.id, 'oai:2').map((v) => v.change),
    ['added', 'modified'],
  );
});

test('a page whose rows cannot all be written leaves neither its rows nor its token', async (t) => {
  const { catalog, source, version, resume } = await harvesting(t);
  const ledger = new PageLedger();
  ledger.stageVersion(version('oai:ok', '2024-01-01T00:00:00Z', SHA_A));
  ledger.stageVersion({ ...version('oai:bad', '2024-01-01T00:00:00Z', SHA_B), sourceId: 9999 }); // no such source
  assert.throws(() => ledger.commit(catalog, { sourceId: source.id, state: resume('t9') }));
  assert.deepEqual(catalog.versions(source.id, 'oai:ok'), [], 'the whole page was rolled back');
  assert.equal(catalog.source('https://example.org/oai')!.resume, null, 'the token was not saved');
});
