// serve/payload-files.ts: the `/files/…` URL of a payload and back (test/serve-files.test.ts
// serves payloads at those URLs).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { payloadLocationOf, payloadUrlPath } from '../src/serve/payload-files.ts';

test('payload URLs: the bag and path round-trip, and only data/ paths two levels under aips/ parse', () => {
  const path = payloadUrlPath('aips/harvest-000001/batch-00001', 'data/host/odd name/café %41.txt');
  assert.equal(path, '/files/harvest-000001/batch-00001/data/host/odd%20name/caf%C3%A9%20%2541.txt');
  assert.deepEqual(payloadLocationOf(path), { bagPath: 'aips/harvest-000001/batch-00001', path: 'data/host/odd name/café %41.txt' });
  for (const bad of ['/files/harvest-000001/data/x', '/files/a/b/metadata/x', '/files/a/b/data/%E0%A4', '/other/a/b/data/x']) {
    assert.equal(payloadLocationOf(bad), undefined, bad);
  }
});
