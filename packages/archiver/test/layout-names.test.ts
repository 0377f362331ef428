import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  AIPS_DIRECTORY,
  BAG_DEPTH,
  bagFolders,
  bagPathFor,
  bagPathOfFolders,
  batchFolderName,
  findBagPathIn,
  harvestFolderName,
  isSerializedBagZipName,
  parseBagPath,
  parseBatchFolder,
  parseHarvestFolder,
  parseSerializedBagFolder,
  parseSerializedBagZipName,
  serializedBagFolder,
} from '../src/aip/layout-names.ts';
import { isArchiverError } from '../src/core/errors.ts';

test('layout names are formatted as the archive has them, and parse back', () => {
  assert.equal(harvestFolderName(1), 'harvest-000001');
  assert.equal(batchFolderName(1), 'batch-00001');
  assert.equal(bagPathFor({ harvestId: 12, batch: 3 }), 'aips/harvest-000012/batch-00003');
  assert.equal(harvestFolderName(1_234_567), 'harvest-1234567', 'a number wider than the padding keeps every digit');
  for (const n of [0, 1, 42, 99_999, 100_000, 999_999, 1_000_000, 2 ** 40]) {
    assert.equal(parseHarvestFolder(harvestFolderName(n)), n);
    assert.equal(parseBatchFolder(batchFolderName(n)), n);
    assert.deepEqual(parseBagPath(bagPathFor({ harvestId: n, batch: n + 1 })), { harvestId: n, batch: n + 1 });
  }
  const bagPath = 'aips/harvest-000001/batch-00002';
  assert.equal(bagPath.split('/')[0], AIPS_DIRECTORY);
  assert.deepEqual(bagFolders(bagPath), ['harvest-000001', 'batch-00002']);
  assert.equal(bagFolders(bagPath).length, BAG_DEPTH);
  assert.equal(bagPathOfFolders('harvest-000001', 'batch-00002'), bagPath);
  assert.equal(serializedBagFolder(bagPath), 'harvest-000001-batch-00002');
  assert.equal(parseSerializedBagFolder('harvest-000001-batch-00002'), bagPath);
  assert.equal(parseSerializedBagZipName('harvest-000001-batch-00002.zip'), 'harvest-000001-batch-00002');
  assert.equal(isSerializedBagZipName('harvest-000001-batch-00002.zip'), true);
  assert.equal(findBagPathIn(`verified ${bagPath}: 3 files`), bagPath);
  assert.equal(findBagPathIn('repaired aips/harvest-1/batch-2 from a replica'), 'aips/harvest-1/batch-2', 'events name bags with any digits');
});

test('what the layout has always read: wider numbers, and leading zeros', () => {
  assert.equal(parseHarvestFolder('harvest-0000001'), 1);
  assert.equal(parseBatchFolder('batch-000007'), 7);
  assert.deepEqual(parseBagPath('aips/harvest-1000000/batch-100000'), { harvestId: 1_000_000, batch: 100_000 });
});

test('names outside the layout are refused', () => {
  for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53]) {
    for (const format of [harvestFolderName, batchFolderName]) {
      assert.throws(
        () => format(bad),
        (error: unknown) => isArchiverError(error) && error.code === 'ERR_ARCHIVE_PATH',
        String(bad),
      );
    }
  }
  for (const name of [
    'harvest-12345',
    'harvest-',
    'harvest-00000x',
    'Harvest-000001',
    'harvest-000001 ',
    ' harvest-000001',
    'harvest-٠٠٠٠٠١',
    'batch-000001',
  ]) {
    assert.equal(parseHarvestFolder(name), undefined, name);
  }
  for (const name of ['batch-1234', 'batch-', 'batch-0000a', 'batch-00001/', 'harvest-000001']) {
    assert.equal(parseBatchFolder(name), undefined, name);
  }
  for (const path of [
    'aips/harvest-000001',
    'aips/harvest-000001/batch-00001/data',
    'other/harvest-000001/batch-00001',
    'aips/batch-00001/harvest-000001',
    '/aips/harvest-000001/batch-00001',
    'aips//harvest-000001/batch-00001',
    '',
  ]) {
    assert.equal(parseBagPath(path), undefined, path);
  }
  for (const name of [
    'harvest-000001-batch-00001.ZIP',
    'harvest-1-batch-1.zip',
    'dir/harvest-000001-batch-00001.zip',
    'harvest-000001-batch-00001',
    'harvest-000001_batch-00001.zip',
  ]) {
    assert.equal(parseSerializedBagZipName(name), undefined, name);
    assert.equal(isSerializedBagZipName(name), false, name);
  }
  for (const folder of ['harvest-000001', 'harvest-000001-batch-00001.zip', 'harvest-000001-batch-1', '../harvest-000001-batch-00001']) {
    assert.equal(parseSerializedBagFolder(folder), undefined, folder);
  }
  assert.equal(findBagPathIn('no bag named here (aips/x/y)'), undefined);
});
