/**
 * The ingest batch (ingest/ingest-batch.ts) with a real catalog in a temporary
 * archive and real flushers: a commit places one valid batch bag and records, in one
 * transaction, its bag, versions, deletions, failures and the list's resumption token; a record
 * state taken twice is known; bytes the archive holds already become revisits, not files.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { checkWellFormed } from '../../../test/xml-schema.ts';
import type { StoredRecordFacts } from '../src/aip/aip-metadata.ts';
import { readBagInfo } from '../src/aip/bag-info.ts';
import { PREMIS_FILE } from '../src/aip/batch-bag.ts';
import { readBatchRecords } from '../src/aip/batch-bag-reader.ts';
import { folderStorage } from '../src/aip/folder-storage.ts';
import { type DiskFlusher, type FlushMode, oneShotFlusher, openDiskFlusher } from '../src/archive/flush-to-disk.ts';
import { verifyBag } from '../src/bag/bag-verifier.ts';
import { Catalog } from '../src/catalog/catalog.ts';
import type { ResumeState } from '../src/catalog/catalog-types.ts';
import { adoptPendingBags } from '../src/ingest/adopt-pending-bags.ts';
import type { BatchBounds } from '../src/ingest/batch-bounds.ts';
import { type BatchTally, IngestBatch, type ListFacts, type PageEntry } from '../src/ingest/ingest-batch.ts';

const BASE = 'https://example.org/oai';
const OAI = 'http://www.openarchives.org/OAI/2.0/';

async function harvesting(t: TestContext, flusher?: (dir: string) => Promise<DiskFlusher> | DiskFlusher) {
  const dir = await mkdtemp(join(tmpdir(), 'oaibag-batch-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const catalog = Catalog.open(dir);
  t.after(() => catalog.close());
  const source = catalog.upsertSource(BASE, { repositoryName: 'Example' });
  const open = async (bounds?: BatchBounds) => {
    const harvestId = catalog.startRun(source.id, 'harvest', { prefix: 'oai_didl' });
    const disk = await (flusher ?? ((d: string) => oneShotFlusher(d, 'files')))(dir);
    t.after(() => disk.close());
    const batch = new IngestBatch({
      archiveDir: dir,
      catalog,
      flusher: disk,
      storage: folderStorage(dir),
      sourceId: source.id,
      harvestId,
      baseUrl: BASE,
      repositoryName: 'Example',
      prefix: 'oai_didl',
      from: '2024-01-01',
      until: null,
      set: null,
      ...(bounds ? { bounds } : {}),
    });
    /**
     * Places the batch and records it in one transaction, as a run commits it; `inside` runs in
     * that transaction after the records.
     */
    const commit = async (list: ListFacts, state: ResumeState | null | undefined, inside?: (tally: BatchTally) => void): Promise<BatchTally> => {
      const placed = await batch.place(list, state);
      if (placed === undefined) return { added: 0, modified: 0, touched: 0, deleted: 0, failed: 0, bytes: 0 };
      return catalog.transaction(() => {
        const tally = placed.record();
        inside?.(tally);
        return tally;
      });
    };
    return { harvestId, batch, commit };
  };
  const resume = (token: string, harvestId: number) => ({
    token,
    listFrom: '2024-01-01',
    listUntil: null,
    set: null,
    prefix: 'oai_didl',
    listResponseDate: '2024-05-01T00:00:00Z',
    harvestId,
  });
  return { dir, catalog, source, open, resume };
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const sha512 = (bytes: Buffer) => createHash('sha512').update(bytes).digest('hex');
const header = (identifier: string, datestamp: string, deleted = false) =>
  Buffer.from(`<header xmlns="${OAI}"${deleted ? ' status="deleted"' : ''}><identifier>${identifier}</identifier><datestamp>${datestamp}</datestamp></header>`);

/**
 * A record of one By-Value datastream taken into the batch as the harvester takes it: its state
 * claimed (undefined when known), its bytes placed (a new file at the URL's path, or a revisit).
 */
async function take(batch: IngestBatch, path: string, datestamp: string, text: string): Promise<PageEntry | undefined> {
  const bytes = Buffer.from(text);
  const identifier = `https://example.org/${path}`;
  const digest = sha256(bytes);
  if (!batch.claimState(identifier, datestamp, digest)) return undefined;
  const place = await batch.takePayload(() => ({ segments: ['example.org', ...path.split('/')], fallbackName: path.split('/').pop()! }), {
    path: null,
    bytes,
    size: bytes.length,
    sha256: digest,
    sha512: sha512(bytes),
  });
  const facts: StoredRecordFacts = {
    kind: 'version',
    identifier,
    datestamp,
    sha256: digest,
    size: bytes.length,
    mimeType: 'text/plain',
    lastModified: null,
    payloads: [
      {
        part: 1,
        path: place.path,
        ...(place.revisitOf !== undefined ? { revisitOf: place.revisitOf } : { sha512: sha512(bytes) }),
        size: bytes.length,
        sha256: digest,
        via: 'by-value',
      },
    ],
    headerXml: header(identifier, datestamp),
    didlXml: Buffer.from('<didl:DIDL xmlns:didl="urn:mpeg:mpeg21:2002:02-DIDL-NS"><didl:Item/></didl:DIDL>'),
  };
  return { kind: 'version', facts, parts: [digest], fetches: [] };
}

const deletion = (path: string, datestamp: string): PageEntry => {
  const identifier = `https://example.org/${path}`;
  return { kind: 'deletion', facts: { kind: 'deletion', identifier, datestamp, headerXml: header(identifier, datestamp, true) } };
};

const entries = (...list: Array<PageEntry | undefined>): PageEntry[] => list.filter((entry) => entry !== undefined);

for (const mode of ['filesystem', 'files'] as FlushMode[]) {
  test(`a commit places one valid bag of its pages and records its versions, deletions, failures and token together (flush mode ${mode})`, async (t) => {
    const { dir, catalog, source, open, resume } = await harvesting(t, (d) => openDiskFlusher(d, mode));
    const { harvestId, batch, commit } = await open();
    await batch.addPage(
      1,
      entries(await take(batch, 'a.txt', '2024-01-01T00:00:00Z', 'alpha'), await take(batch, 'docs/b.txt', '2024-01-01T00:00:00Z', 'bravo!'), {
        kind: 'failure',
        failure: {
          sourceId: source.id,
          harvestId,
          identifier: 'https://example.org/bad',
          stage: 'verify',
          code: 'ERR_HARVEST_VERIFY',
          message: 'wrong length',
        },
      }),
    );
    await batch.addPage(2, [deletion('gone.txt', '2024-01-02T00:00:00Z')]);
    assert.equal((await readdir(join(dir, 'tmp'))).length > 0, true, 'the bag is built in tmp/');
    assert.deepEqual(catalog.bags(), [], 'nothing is recorded before the commit');

    let inside: unknown;
    const tally = await commit({ listResponseDate: '2024-05-01T00:00:00Z' }, resume('t2', harvestId), (counts) => {
      inside = { ...counts, token: catalog.source(BASE)?.resume?.token };
    });
    assert.deepEqual(tally, { added: 2, modified: 0, touched: 0, deleted: 1, failed: 0, bytes: 11 });
    assert.deepEqual(inside, { ...tally, token: 't2' }, 'the caller writes in the same transaction, after the token');

    const bagPath = `aips/harvest-${String(harvestId).padStart(6, '0')}/batch-00001`;
    const bagDir = join(dir, bagPath);
    assert.deepEqual(await verifyBag(bagDir), { valid: true, problems: [] });
    assert.equal(await readFile(join(bagDir, 'data/example.org/a.txt'), 'utf8'), 'alpha', 'a person opening the bag sees the site');
    assert.equal(await readFile(join(bagDir, 'data/example.org/docs/b.txt'), 'utf8'), 'bravo!');
    const info = await readBagInfo(bagDir);
    assert.equal(info.get('Oaibag-Format'), '2');
    assert.equal(info.get('OAI-Base-URL'), BASE);
    assert.equal(info.get('Harvest-Id'), String(harvestId));
    assert.equal(info.get('Harvest-From'), '2024-01-01');
    assert.equal(info.get('Batch-Pages'), '1-2');
    assert.equal(info.get('Resumption-Token'), 't2');
    assert.equal(info.get('List-Response-Date'), '2024-05-01T00:00:00Z');
    assert.deepEqual(
      ['Records', 'New-Payloads', 'Revisits', 'Deletions', 'Payload-Oxum'].map((label) => info.get(label)),
      ['3', '2', '0', '1', '11.2'],
    );
    const records = await readBatchRecords(bagDir);
    assert.deepEqual(
      records.map((record) => [record.n, record.kind, record.identifier]),
      [
        [1, 'version', 'https://example.org/a.txt'],
        [2, 'version', 'https://example.org/docs/b.txt'],
        [3, 'deletion', 'https://example.org/gone.txt'],
      ],
    );
    const premis = gunzipSync(await readFile(join(bagDir, ...PREMIS_FILE.split('/'))));
    assert.ok(checkWellFormed(premis, 'premis.xml').ok, 'the PREMIS members join into one document');

    // The catalog: the bag, its payloads, the versions at their records, the tombstone, the failure, the token.
    assert.deepEqual(
      catalog.bags().map((bag) => [bag.bagPath, bag.records, bag.newPayloads, bag.revisits, bag.deletions, bag.payloadBytes]),
      [[bagPath, 3, 2, 0, 1, 11]],
    );
    const b = catalog.latestVersion(source.id, 'https://example.org/docs/b.txt')!;
    assert.deepEqual([b.bagPath, b.record, b.change, b.payloadFiles, b.harvestId], [bagPath, 2, 'added', 1, harvestId]);
    assert.equal(b.storedAt, info.get('Bagged-At'), 'stored at the instant its bag-info.txt gives');
    assert.deepEqual(catalog.versionParts(b.id), [{ sha256: sha256(Buffer.from('bravo!')), size: 6, bagPath, path: 'data/example.org/docs/b.txt' }]);
    assert.equal(catalog.resource(source.id, 'https://example.org/gone.txt')?.deletedAt, '2024-01-02T00:00:00Z');
    assert.deepEqual(
      catalog.openFailures(source.id).map((failure) => failure.identifier),
      ['https://example.org/bad'],
    );
    assert.equal(catalog.source(BASE)?.resume?.token, 't2');
    assert.deepEqual(catalog.pendingBags(), [], 'no pending note outlives the commit');
    assert.deepEqual(await readdir(join(dir, 'tmp')), [], 'tmp/ is empty');
  });
}

test('a record state taken twice is known: in the same batch, and once committed, in the next', async (t) => {
  const { catalog, source, open, resume } = await harvesting(t);
  const { harvestId, batch, commit } = await open();
  const first = await take(batch, 'a.txt', '2024-01-01T00:00:00Z', 'alpha');
  assert.ok(first);
  assert.equal(await take(batch, 'a.txt', '2024-01-01T00:00:00Z', 'alpha'), undefined, 'delivered twice in one batch');
  // A claim given back (the record could not be taken after all) may be taken when it comes again.
  assert.equal(batch.claimState('https://example.org/c.txt', '2024-01-01T00:00:00Z', 'c'.repeat(64)), true);
  batch.releaseState('https://example.org/c.txt', '2024-01-01T00:00:00Z', 'c'.repeat(64));
  assert.equal(batch.claimState('https://example.org/c.txt', '2024-01-01T00:00:00Z', 'c'.repeat(64)), true);
  await batch.addPage(1, [first, deletion('gone.txt', '2024-01-02T00:00:00Z')]);
  await commit({ listResponseDate: null }, resume('t1', harvestId));

  // The list starts again (a crash, overlapping windows): the same states cost nothing.
  assert.equal(batch.knownDeletion('https://example.org/gone.txt', '2024-01-02T00:00:00Z'), true);
  assert.equal(batch.knownDeletion('https://example.org/gone.txt', '2024-01-03T00:00:00Z'), false);
  assert.equal(await take(batch, 'a.txt', '2024-01-01T00:00:00Z', 'alpha'), undefined, 'known from the catalog');
  const touched = await take(batch, 'a.txt', '2024-02-01T00:00:00Z', 'alpha');
  assert.ok(touched, 'a new datestamp is a new state');
  await batch.addPage(2, [touched, deletion('gone.txt', '2024-01-02T00:00:00Z')]);
  const tally = await commit({ listResponseDate: null, listEnd: 'complete' }, null);
  assert.deepEqual(tally, { added: 0, modified: 0, touched: 1, deleted: 0, failed: 0, bytes: 5 }, 'the deletion known already is not counted');
  assert.deepEqual(
    catalog.versions(source.id, 'https://example.org/a.txt').map((version) => version.change),
    ['added', 'touched'],
  );
  assert.equal(catalog.source(BASE)?.resume, null, 'the end of the list clears the token');
});

test('bytes already held become revisits: no new file, a pointer to the bag that holds them', async (t) => {
  const { dir, catalog, source, open } = await harvesting(t);
  const one = await open();
  await one.batch.addPage(1, entries(await take(one.batch, 'a.txt', '2024-01-01T00:00:00Z', 'alpha')));
  await one.commit({ listResponseDate: null, listEnd: 'complete' }, null);
  const held = `aips/harvest-${String(one.harvestId).padStart(6, '0')}/batch-00001`;

  const two = await open();
  const touched = await take(two.batch, 'a.txt', '2024-02-01T00:00:00Z', 'alpha'); // same bytes, new date
  const copy = await take(two.batch, 'copy/of-a.txt', '2024-02-01T00:00:00Z', 'alpha'); // same bytes, other URL
  const fresh = await take(two.batch, 'new.txt', '2024-02-01T00:00:00Z', 'brand new');
  const again = await take(two.batch, 'new-copy.txt', '2024-02-01T00:00:00Z', 'brand new'); // held by this very bag
  const here = `aips/harvest-${String(two.harvestId).padStart(6, '0')}/batch-00001`;
  const payload = (entry: PageEntry | undefined) => (entry?.kind === 'version' ? entry.facts.payloads[0] : undefined);
  assert.deepEqual([payload(touched)?.revisitOf, payload(touched)?.path], [held, 'data/example.org/a.txt']);
  assert.deepEqual([payload(copy)?.revisitOf, payload(copy)?.path], [held, 'data/example.org/a.txt']);
  assert.deepEqual([payload(fresh)?.revisitOf, payload(fresh)?.path], [undefined, 'data/example.org/new.txt']);
  assert.deepEqual([payload(again)?.revisitOf, payload(again)?.path], [here, 'data/example.org/new.txt']);
  await two.batch.addPage(1, entries(touched, copy, fresh, again));
  assert.deepEqual(await two.commit({ listResponseDate: null, listEnd: 'complete' }, null), {
    added: 3,
    modified: 0,
    touched: 1,
    deleted: 0,
    failed: 0,
    bytes: 5 + 5 + 9 + 9,
  });

  assert.deepEqual(await verifyBag(join(dir, here)), { valid: true, problems: [] });
  const files = await readdir(join(dir, here, 'data'), { recursive: true });
  assert.deepEqual(files.sort(), ['example.org', 'example.org/new.txt'], 'only the new bytes are stored');
  assert.deepEqual(
    catalog.bags().map((bag) => [bag.bagPath, bag.newPayloads, bag.revisits, bag.payloadBytes]),
    [
      [held, 1, 0, 5],
      [here, 1, 3, 9],
    ],
  );
  const records = await readBatchRecords(join(dir, here));
  assert.deepEqual(
    records.map((record) => (record.kind === 'version' ? record.payloads.map((p) => [p.revisitOf ?? here, p.path]) : [])),
    [[[held, 'data/example.org/a.txt']], [[held, 'data/example.org/a.txt']], [[here, 'data/example.org/new.txt']], [[here, 'data/example.org/new.txt']]],
  );
  const copied = catalog.latestVersion(source.id, 'https://example.org/copy/of-a.txt')!;
  assert.equal(copied.bagPath, here, "the record is in this batch's bag");
  assert.deepEqual(
    catalog.versionParts(copied.id).map((part) => [part.bagPath, part.path]),
    [[held, 'data/example.org/a.txt']],
    'its bytes are in the first',
  );
  const held1 = await stat(join(dir, held, 'data/example.org/a.txt'));
  assert.equal(held1.nlink, 1, 'no hard link either');
});

test('a batch is full at its bound of records; aborting removes what it built', async (t) => {
  const { dir, catalog, open } = await harvesting(t);
  const { batch } = await open({ records: 2, bytes: 1 << 30 });
  assert.equal(batch.full, false);
  await batch.addPage(1, entries(await take(batch, 'a.txt', '2024-01-01T00:00:00Z', 'alpha')));
  assert.equal(batch.full, false);
  await batch.addPage(2, entries(await take(batch, 'b.txt', '2024-01-01T00:00:00Z', 'bravo')));
  assert.equal(batch.full, true);
  await batch.abort();
  assert.deepEqual(await readdir(join(dir, 'tmp')), []);
  assert.deepEqual(catalog.bags(), []);
  // The states it had claimed may come again.
  assert.ok(await take(batch, 'a.txt', '2024-01-01T00:00:00Z', 'alpha'));
  await batch.abort();
});

test("payload paths: the URL's segments in NFC; a name bagit-python would misread, or a path in the way, goes under _by-digest", async (t) => {
  const { open } = await harvesting(t);
  const { batch } = await open();
  const place = async (segments: string[], text: string) => {
    const bytes = Buffer.from(text);
    return batch.takePayload(() => ({ segments, fallbackName: segments.at(-1)!.replace(/%/g, '_') }), {
      path: null,
      bytes,
      size: bytes.length,
      sha256: sha256(bytes),
      sha512: sha512(bytes),
    });
  };
  const nfd = 're\u0301sume\u0301.pdf';
  assert.equal((await place(['example.org', nfd], 'nfd')).path, `data/example.org/${nfd.normalize('NFC')}`);
  const percent = await place(['example.org', '100%.txt'], 'percent');
  assert.match(percent.path, /^data\/_by-digest\/[0-9a-f]{2}\/[0-9a-f]{64}\/100_\.txt$/);
  assert.equal((await place(['example.org', 'a'], 'a file')).path, 'data/example.org/a');
  assert.match((await place(['example.org', 'a', 'b'], 'under a file')).path, /^data\/_by-digest\//, 'a file is in the way of the folder');
  assert.match((await place(['example.org', ' edge.txt'], 'edge')).path, /^data\/_by-digest\//, 'whitespace at the start of a name');
  await batch.abort();
});

test('a batch with no record commits its failures and token without a bag', async (t) => {
  const { dir, catalog, source, open, resume } = await harvesting(t);
  const { harvestId, batch, commit } = await open();
  assert.deepEqual(await commit({ listResponseDate: null }, undefined), { added: 0, modified: 0, touched: 0, deleted: 0, failed: 0, bytes: 0 });
  await batch.addPage(1, [
    { kind: 'failure', failure: { sourceId: source.id, harvestId, stage: 'record', code: 'ERR_HARVEST_FORMAT', message: 'bad', identifier: 'x' } },
  ]);
  await commit({ listResponseDate: null }, resume('t1', harvestId));
  assert.deepEqual(catalog.bags(), []);
  await assert.rejects(stat(join(dir, 'aips')), 'no bag was made');
  assert.equal(catalog.openFailures(source.id).length, 1);
  assert.equal(catalog.source(BASE)?.resume?.token, 't1');
});

test('a batch whose bag a datastream opened but that kept no record: its bag says no pages', async (t) => {
  const { dir, catalog, source, open } = await harvesting(t);
  const { harvestId, batch, commit } = await open();
  // The record's bytes are placed before its record fails (a later datastream of it, say).
  assert.ok(await take(batch, 'a.txt', '2024-01-01T00:00:00Z', 'alpha'));
  await batch.addPage(1, [
    {
      kind: 'failure',
      failure: { sourceId: source.id, harvestId, stage: 'fetch', code: 'HTTP 404', message: 'gone', identifier: 'https://example.org/a.txt' },
    },
  ]);
  await commit({ listResponseDate: null }, null);
  const [bag] = catalog.bags();
  assert.equal(bag?.records, 0);
  const info = await readBagInfo(join(dir, bag!.bagPath));
  assert.equal(info.has('Batch-Pages'), false, 'no Batch-Pages label');
  assert.equal(info.get('External-Description'), `Records harvested over OAI-PMH from ${BASE} by harvest ${harvestId}`);
  assert.deepEqual(await verifyBag(join(dir, bag!.bagPath)), { valid: true, problems: [] });
});

test('when the rows cannot be written, neither they nor the token are: the placed bag stays pending, and adopting it makes its records known', async (t) => {
  const { dir, catalog, source, open, resume } = await harvesting(t);
  const { harvestId, batch, commit } = await open();
  await batch.addPage(
    1,
    entries(await take(batch, 'a.txt', '2024-01-01T00:00:00Z', 'alpha'), {
      kind: 'failure',
      failure: { sourceId: 9999, harvestId, identifier: 'x', stage: 'verify', code: 'ERR_HARVEST_VERIFY', message: 'no such source' },
    }),
  );
  await assert.rejects(commit({ listResponseDate: null }, resume('t9', harvestId)));
  assert.deepEqual(catalog.versions(source.id, 'https://example.org/a.txt'), [], 'the whole batch was rolled back');
  assert.deepEqual(catalog.bags(), []);
  assert.equal(catalog.source(BASE)?.resume, null, 'the token was not saved');
  const bagPath = `aips/harvest-${String(harvestId).padStart(6, '0')}/batch-00001`;
  assert.deepEqual(catalog.pendingBags(), [{ bagPath, harvestId }], 'the bag renamed into place is noted');
  assert.equal((await verifyBag(join(dir, bagPath))).valid, true);

  // The next start indexes it from its own files; the page that comes again finds its records known.
  assert.equal(await adoptPendingBags(dir, catalog), 1);
  assert.deepEqual(catalog.pendingBags(), []);
  assert.equal(catalog.latestVersion(source.id, 'https://example.org/a.txt')?.bagPath, bagPath);
  const next = await open();
  assert.equal(await take(next.batch, 'a.txt', '2024-01-01T00:00:00Z', 'alpha'), undefined);
});
