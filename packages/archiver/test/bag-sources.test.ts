// One bag verifier whatever the bytes come from (issue 26): the same damaged bag checked as a
// folder (verifyBag) and as a ZIP read in place (the ZIP source of `oaibag verify --bag`) is
// found damaged in the same way, problem for problem, with the same tally.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { DAMAGES, damagedBag, type PristineBag, pristineBag } from '../../../test/damaged-bags.ts';
import { type BagTally, verifyBag, verifyBagSource } from '../src/bag/bag-verifier.ts';
import { openZipBag } from '../src/bag/zip-bag-source.ts';

let work: string;
let bag: PristineBag;

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-bag-sources-unit-'));
  bag = await pristineBag(work);
});

after(() => rmSync(work, { recursive: true, force: true }));

for (const [name, damage] of Object.entries(DAMAGES)) {
  test(`${name}: found the same as a folder and as a ZIP`, async () => {
    const { folder, zip } = await damagedBag(bag, name.replace(/ /g, '-'), damage);
    const folderTally: BagTally = { payloadBytes: 0, payloadFiles: 0, hashedBytes: 0 };
    const fromFolder = await verifyBag(folder, { tally: folderTally });
    const zipBag = await openZipBag(zip);
    const zipTally: BagTally = { payloadBytes: 0, payloadFiles: 0, hashedBytes: 0 };
    const fromZip = await verifyBagSource(zipBag.source, { tally: zipTally }).finally(() => zipBag.close());
    assert.equal(fromFolder.valid, false);
    assert.ok(fromFolder.problems.length > 0);
    assert.deepEqual(fromZip, fromFolder, 'problem for problem');
    assert.deepEqual(zipTally, folderTally);
    assert.deepEqual(zipBag.problems, [], 'a sound container');
  });
}
