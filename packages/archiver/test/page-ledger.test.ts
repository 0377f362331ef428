import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { type FlushMode, oneShotFlusher } from '../src/archive/flush-to-disk.ts';
import { verifyBag } from '../src/bag/bag-verifier.ts';
import { createBagBuilder } from '../src/bag/bag-writer.ts';
import { Catalog } from '../src/catalog/catalog.ts';
import type { NewVersion } from '../src/catalog/catalog-schema.ts';
import { PageLedger } from '../src/harvest/page-ledger.ts';

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
  const resume = (token: string) => ({
    token,
    listFrom: null,
    listUntil: null,
    set: null,
    prefix: 'oai_didl',
    listResponseDate: '2024-01-01T00:00:00Z',
    harvestId,
  });
  return { dir, catalog, source, harvestId, version, resume };
}

test("a page's versions, deletions and failures are written with its token and tallied", async (t) => {
  const { dir, catalog, source, harvestId, version, resume } = await harvesting(t);
  const first = new PageLedger(dir);
  first.stageVersion(version('oai:1', '2024-01-01T00:00:00Z', SHA_A, 100));
  first.stageVersion(version('oai:2', '2024-01-01T00:00:00Z', SHA_A, 7));
  first.stageFailure({ sourceId: source.id, harvestId, identifier: 'oai:3', stage: 'verify', code: 'ERR_HARVEST_VERIFY', message: 'wrong length' });
  assert.equal(first.size, 3);
  assert.deepEqual(await first.commit(catalog, { sourceId: source.id, state: resume('t1') }), {
    added: 2,
    modified: 0,
    touched: 0,
    deleted: 0,
    failed: 0,
    bytes: 107,
  });
  assert.equal(first.size, 0, 'a committed ledger is empty');
  assert.equal(catalog.source('https://example.org/oai')!.resume?.token, 't1');
  assert.equal(catalog.openFailures(source.id).length, 1);

  const second = new PageLedger(dir);
  second.stageVersion(version('oai:1', '2024-02-01T00:00:00Z', SHA_A, 100)); // touched
  second.stageVersion(version('oai:2', '2024-02-01T00:00:00Z', SHA_B, 9)); // modified
  second.stageVersion(version('oai:2', '2024-02-01T00:00:00Z', SHA_B, 9)); // delivered twice: counted once
  second.stageDeletion(source.id, 'oai:3', '2024-02-01T00:00:00Z', harvestId);
  assert.deepEqual(await second.commit(catalog, { sourceId: source.id, state: null }), {
    added: 0,
    modified: 1,
    touched: 1,
    deleted: 1,
    failed: 0,
    bytes: 109,
  });
  assert.equal(catalog.source('https://example.org/oai')!.resume, null, 'the end of the list clears the token');
  assert.deepEqual(catalog.openFailures(source.id), [], "the deletion resolves the record's failure");
  assert.deepEqual(
    catalog.versions(source.id, 'oai:2').map((v) => v.change),
    ['added', 'modified'],
  );
});

test('a page whose rows cannot all be written leaves neither its rows nor its token', async (t) => {
  const { dir, catalog, source, version, resume } = await harvesting(t);
  const ledger = new PageLedger(dir);
  ledger.stageVersion(version('oai:ok', '2024-01-01T00:00:00Z', SHA_A));
  ledger.stageVersion({ ...version('oai:bad', '2024-01-01T00:00:00Z', SHA_B), sourceId: 9999 }); // no such source
  await assert.rejects(ledger.commit(catalog, { sourceId: source.id, state: resume('t9') }));
  assert.deepEqual(catalog.versions(source.id, 'oai:ok'), [], 'the whole page was rolled back');
  assert.equal(catalog.source('https://example.org/oai')!.resume, null, 'the token was not saved');
});

/** A sealed bag for `version`, with one payload file holding `text`. */
async function sealedBag(dir: string, version: NewVersion, text: string) {
  const builder = await createBagBuilder(dir);
  await builder.addPayload(
    'page.html',
    (async function* () {
      yield Buffer.from(text);
    })(),
  );
  return builder.seal({ bagInfo: [['OAI-Identifier', version.identifier]], destination: version.bagPath });
}

for (const mode of ['filesystem', 'files'] as FlushMode[]) {
  test(`a page's sealed bags are placed together, then recorded, pending notes gone (flush mode ${mode})`, async (t) => {
    const { dir, catalog, source, version, resume } = await harvesting(t);
    const ledger = new PageLedger(dir, oneShotFlusher(dir, mode));
    const versions = [1, 2, 3].map((n) => version(`oai:${n}`, '2024-01-01T00:00:00Z', SHA_A, 6));
    for (const [n, v] of versions.entries()) ledger.stageVersion(v, await sealedBag(dir, v, `page ${n}`));
    assert.equal((await readdir(join(dir, 'tmp'))).length, 3, 'sealed bags wait in tmp/');
    await assert.rejects(stat(join(dir, versions[0]!.bagPath)), 'nothing is placed before the commit');

    assert.deepEqual(await ledger.commit(catalog, { sourceId: source.id, state: resume('t1') }), {
      added: 3,
      modified: 0,
      touched: 0,
      deleted: 0,
      failed: 0,
      bytes: 18,
    });
    for (const [n, v] of versions.entries()) {
      assert.equal((await verifyBag(join(dir, v.bagPath))).valid, true, v.bagPath);
      assert.equal(await readFile(join(dir, v.bagPath, 'data', 'page.html'), 'utf8'), `page ${n}`);
      assert.equal(catalog.versions(source.id, v.identifier).length, 1);
    }
    assert.deepEqual(await readdir(join(dir, 'tmp')), [], 'tmp/ is empty');
    assert.deepEqual(catalog.pendingBags(), [], 'no pending note outlives the commit');
  });
}

test('a bag refused at its destination becomes a failure of its record; the rest of the page is stored', async (t) => {
  const { dir, catalog, source, version, resume } = await harvesting(t);
  const taken = version('oai:taken', '2024-01-01T00:00:00Z', SHA_A, 6);
  const before = new PageLedger(dir);
  before.stageVersion(taken, await sealedBag(dir, taken, 'first'));
  await before.commit(catalog);
  const manifest = await readFile(join(dir, taken.bagPath, 'manifest-sha256.txt'), 'utf8');

  const ledger = new PageLedger(dir);
  const other = version('oai:other', '2024-01-01T00:00:00Z', SHA_B, 6);
  ledger.stageVersion(taken, await sealedBag(dir, taken, 'other')); // same place, other bytes
  ledger.stageVersion(other, await sealedBag(dir, other, 'second'));
  const tally = await ledger.commit(catalog, { sourceId: source.id, state: resume('t2') });
  assert.deepEqual(tally, { added: 1, modified: 0, touched: 0, deleted: 0, failed: 1, bytes: 6 });
  assert.equal(await readFile(join(dir, taken.bagPath, 'manifest-sha256.txt'), 'utf8'), manifest, 'the bag in place was not overwritten');
  const failures = catalog.openFailures(source.id);
  assert.equal(failures.length, 1);
  assert.equal(failures[0]!.identifier, 'oai:taken');
  assert.match(failures[0]!.message, /a different bag already exists/);
  assert.deepEqual(await readdir(join(dir, 'tmp')), [], 'the refused copy was removed');
  assert.deepEqual(catalog.pendingBags(), []);
});

test('when the pending notes cannot be written, no bag of the page is placed and tmp/ is emptied', async (t) => {
  const { dir, catalog, source, version, resume } = await harvesting(t);
  const ledger = new PageLedger(dir);
  const good = version('oai:good', '2024-01-01T00:00:00Z', SHA_A, 4);
  const bad = { ...version('oai:bad', '2024-01-01T00:00:00Z', SHA_B, 3), sourceId: 9999 }; // no such source
  ledger.stageVersion(good, await sealedBag(dir, good, 'good'));
  ledger.stageVersion(bad, await sealedBag(dir, bad, 'bad'));
  await assert.rejects(ledger.commit(catalog, { sourceId: source.id, state: resume('t3') }));
  await assert.rejects(stat(join(dir, good.bagPath)), 'no bag was renamed into place');
  assert.deepEqual(await readdir(join(dir, 'tmp')), []);
  assert.deepEqual(catalog.pendingBags(), [], 'the notes were rolled back together');
  assert.equal(catalog.source('https://example.org/oai')!.resume, null);
});
