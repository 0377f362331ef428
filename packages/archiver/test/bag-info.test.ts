import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { type BatchBagInfo, batchBagInfoLabels, checkBatchBagFormat, readBagInfo, readBatchBagInfo } from '../src/aip/bag-info.ts';
import { folderStorage } from '../src/aip/folder-storage.ts';
import { createBagBuilder } from '../src/bag/bag-writer.ts';
import { isArchiverError } from '../src/core/errors.ts';

const dirs: string[] = [];
after(() => Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true }))));

async function folder(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'oaibag-bag-info-'));
  dirs.push(dir);
  return dir;
}

const HARVEST: BatchBagInfo = {
  description: 'Records harvested over OAI-PMH from https://example.org/oai by harvest 7, pages 1-2 of its list',
  baseUrl: 'https://example.org/oai',
  repositoryName: 'Example\nrepository',
  harvestId: 7,
  harvestStarted: '2024-05-01T10:00:00.000Z',
  metadataPrefix: 'oai_didl',
  delivery: null,
  harvestFrom: '2024-01-01',
  harvestUntil: null,
  harvestSet: 'a:b',
  listResponseDate: '2024-05-01T10:00:01Z',
  pages: [1, 2],
  resumptionToken: 'token with\r\nbreaks',
  listEnd: null,
  baggedAt: '2024-05-01T10:00:05.123Z',
  records: 3,
  newPayloads: 2,
  revisits: 1,
  deletions: 0,
};

/** A batch bag written by the bag writer with `info`, placed in a fresh archive; its path there. */
async function bagWith(info: BatchBagInfo): Promise<{ archive: string; bagPath: string }> {
  const archive = await folder();
  const builder = await createBagBuilder(archive, { now: () => new Date('2024-05-01T10:00:06Z') });
  const bagPath = 'aips/harvest-000007/batch-00001';
  const [placement] = await folderStorage(archive).placeBags([await builder.seal({ destination: bagPath, bagInfo: batchBagInfoLabels(info) })]);
  assert.equal(placement?.error, undefined);
  return { archive, bagPath };
}

test('bag-info.txt of a batch: the labels in their order, and read back typed', async () => {
  const labels = batchBagInfoLabels(HARVEST);
  assert.deepEqual(
    labels.map(([label]) => label),
    [
      'Oaibag-Format',
      'External-Description',
      'OAI-Base-URL',
      'Source-Repository-Name',
      'Harvest-Id',
      'Harvest-Started',
      'Metadata-Prefix',
      'Harvest-From',
      'Harvest-Set',
      'List-Response-Date',
      'Batch-Pages',
      'Resumption-Token',
      'Bagged-At',
      'Records',
      'New-Payloads',
      'Revisits',
      'Deletions',
    ],
  );
  const { archive, bagPath } = await bagWith(HARVEST);
  const read = await readBatchBagInfo({ storage: folderStorage(archive), bagPath });
  assert.deepEqual(read, {
    ...HARVEST,
    format: '2',
    repositoryName: 'Example repository',
    resumptionToken: 'token with breaks',
    pages: '1-2',
    baggingDate: '2024-05-01',
  });
  assert.deepEqual(await readBatchBagInfo(join(archive, bagPath)), read, 'a bag folder on disk reads the same');
  assert.equal((await readBagInfo(join(archive, bagPath))).get('Payload-Oxum'), '0.0', "BagIt's own labels are there for a person");
});

test('an import: the delivery and the end of its list round-trip', async () => {
  const imported: BatchBagInfo = {
    ...HARVEST,
    delivery: { name: 'site.zip', kind: 'site', size: 1234, sha256: 'a'.repeat(64) },
    harvestStarted: null,
    harvestFrom: null,
    harvestSet: null,
    listResponseDate: null,
    resumptionToken: null,
    listEnd: 'partial',
    pages: null,
  };
  const { archive, bagPath } = await bagWith(imported);
  const read = await readBatchBagInfo({ storage: folderStorage(archive), bagPath });
  assert.deepEqual(read.delivery, imported.delivery);
  assert.equal(read.listEnd, 'partial');
  assert.equal(read.pages, null, 'a batch that kept no record has no Batch-Pages');
  assert.ok(!batchBagInfoLabels(imported).some(([label]) => label === 'Batch-Pages'), 'the label is left out');
  for (const absent of ['harvestStarted', 'harvestFrom', 'harvestUntil', 'harvestSet', 'listResponseDate', 'resumptionToken'] as const) {
    assert.equal(read[absent], null, absent);
  }
});

test('a bag that kept no record, written before Batch-Pages was left out for it, reads as one without pages', async () => {
  const dir = await folder();
  await writeFile(join(dir, 'bag-info.txt'), 'Oaibag-Format: 2\nOAI-Base-URL: https://x/oai\nHarvest-Id: 3\nBatch-Pages: undefined-undefined\nRecords: 0\n');
  const read = await readBatchBagInfo(dir);
  assert.equal(read.pages, null);
  assert.equal(read.records, 0);
});

test('bag-info.txt as RFC 8493 writes it: continued values, repeated labels, blank lines', async () => {
  const dir = await folder();
  await writeFile(
    join(dir, 'bag-info.txt'),
    'Oaibag-Format: 2\r\nExternal-Description: a long\n  description, folded\n\tonce more\nOAI-Base-URL: https://x/oai\nOAI-Base-URL: https://other/oai\n\nHarvest-Id: 3\n',
  );
  const read = await readBatchBagInfo(dir);
  assert.equal(read.description, 'a long description, folded once more');
  assert.equal(read.baseUrl, 'https://x/oai', 'the first of a repeated label');
  assert.equal(read.harvestId, 3);
  assert.equal(read.metadataPrefix, null);
  assert.equal(read.delivery, null);
});

test('a malformed bag-info.txt is ERR_ARCHIVE_DAMAGED naming the bag and the line', async () => {
  const cases: Array<[text: string, message: RegExp]> = [
    ['Oaibag-Format: 2\nno colon on this line\n', /bag-info\.txt line 2 is not "Label: value": "no colon on this line"/],
    ['Oaibag-Format: 2\n: no label\n', /line 2 is not "Label: value"/],
    ['  starts continued\nOaibag-Format: 2\n', /line 1 continues no label/],
    ['Oaibag-Format: 2\nHarvest-Id: seven\n', /bag-info\.txt line 2: Harvest-Id "seven" is not a whole number of at least 1/],
    ['Harvest-Id: 0\n', /line 1: Harvest-Id "0" is not a whole number/],
    ['Records: -1\n', /line 1: Records "-1" is not a whole number/],
    ['Oaibag-Format: 2\nBagged-At: x\nList-End: maybe\n', /line 3: List-End "maybe" is not one of complete, partial/],
    ['Delivery-Kind: parcel\n', /line 1: Delivery-Kind "parcel" is not one of site, didl, bags/],
  ];
  for (const [text, message] of cases) {
    const dir = await folder();
    const bagDir = join(dir, 'harvest-000001-batch-00001');
    await mkdir(bagDir);
    await writeFile(join(bagDir, 'bag-info.txt'), text);
    await assert.rejects(
      readBatchBagInfo(bagDir),
      (error: unknown) => isArchiverError(error) && error.code === 'ERR_ARCHIVE_DAMAGED' && message.test(error.message) && error.path === bagDir,
      text,
    );
  }
  const missing = await folder();
  await assert.rejects(
    readBatchBagInfo(missing),
    (error: unknown) => isArchiverError(error) && error.code === 'ERR_ARCHIVE_DAMAGED' && /cannot be read/.test(error.message),
  );
  const huge = await folder();
  await writeFile(join(huge, 'bag-info.txt'), `External-Description: ${'x'.repeat(1024 * 1024)}\n`);
  await assert.rejects(
    readBatchBagInfo(huge),
    (error: unknown) => isArchiverError(error) && error.code === 'ERR_ARCHIVE_DAMAGED' && /larger than/.test(error.message),
  );
});

test('checkBatchBagFormat refuses another format and a bag that names no source', async () => {
  const refusal = async (text: string): Promise<unknown> => {
    const dir = await folder();
    await writeFile(join(dir, 'bag-info.txt'), text);
    try {
      checkBatchBagFormat(await readBatchBagInfo(dir), dir);
      return undefined;
    } catch (error) {
      return error;
    }
  };
  const none = await refusal('External-Description: a bag of another tool\n');
  assert.ok(isArchiverError(none) && none.code === 'ERR_ARCHIVE_FORMAT' && /no Oaibag-Format/.test(none.message));
  const one = await refusal('Oaibag-Format: 1\n');
  assert.ok(isArchiverError(one) && one.code === 'ERR_ARCHIVE_FORMAT' && /in format 1; this oaibag reads format 2/.test(one.message));
  const nameless = await refusal('Oaibag-Format: 2\nOAI-Base-URL:\n');
  assert.ok(isArchiverError(nameless) && nameless.code === 'ERR_ARCHIVE_DAMAGED' && /has no OAI-Base-URL/.test(nameless.message));
  assert.equal(await refusal('Oaibag-Format: 2\nOAI-Base-URL: https://x/oai\n'), undefined);
});
