import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ResumeState } from '../src/catalog/catalog-types.ts';
import { type HarvestPlanInput, planHarvest } from '../src/harvest/harvest-plan.ts';

const SAVED: ResumeState = {
  token: 't-42',
  listFrom: '2024-01-01',
  listUntil: null,
  set: null,
  prefix: 'oai_didl',
  listResponseDate: '2024-02-01T00:00:00Z',
  harvestId: 3,
};
const BASE: HarvestPlanInput = { prefix: 'oai_didl', watermark: null, resume: null, granularity: 'YYYY-MM-DDThh:mm:ssZ' };

test('what a harvest asks for first, from the options, the catalog and Identify', () => {
  const table: Array<[string, Partial<HarvestPlanInput>, Record<string, string>, string | null]> = [
    ['a first harvest: everything', {}, { verb: 'ListRecords', metadataPrefix: 'oai_didl' }, null],
    [
      'incremental: from the watermark',
      { watermark: '2024-02-01T10:00:00Z' },
      { verb: 'ListRecords', metadataPrefix: 'oai_didl', from: '2024-02-01T10:00:00Z' },
      '2024-02-01T10:00:00Z',
    ],
    [
      "the user's --from wins over the watermark",
      { watermark: '2024-02-01T10:00:00Z', from: '2023-01-01' },
      { verb: 'ListRecords', metadataPrefix: 'oai_didl', from: '2023-01-01' },
      '2023-01-01',
    ],
    [
      'a day-granularity repository gets days',
      { watermark: '2024-02-01T10:00:00Z', until: '2024-03-01T00:00:00Z', granularity: 'YYYY-MM-DD' },
      { verb: 'ListRecords', metadataPrefix: 'oai_didl', from: '2024-02-01', until: '2024-03-01' },
      '2024-02-01T10:00:00Z',
    ],
    ['a set', { set: 'mime:text' }, { verb: 'ListRecords', metadataPrefix: 'oai_didl', set: 'mime:text' }, null],
  ];
  for (const [what, input, firstArgs, from] of table) {
    const plan = planHarvest({ ...BASE, ...input });
    assert.deepEqual(plan.firstArgs, firstArgs, what);
    assert.deepEqual(plan.pageArgs, firstArgs, what);
    assert.equal(plan.from, from, what);
    assert.equal(plan.resume, null, what);
  }
});

test('an interrupted list continues with its saved token only when it is the same list and no --from is given', () => {
  const resumed = planHarvest({ ...BASE, resume: SAVED });
  assert.equal(resumed.resume, SAVED);
  assert.deepEqual(resumed.pageArgs, { verb: 'ListRecords', resumptionToken: 't-42' });
  assert.deepEqual(resumed.firstArgs, { verb: 'ListRecords', metadataPrefix: 'oai_didl' }, 'a restart starts the list afresh');
  const table: Array<[string, Partial<HarvestPlanInput>]> = [
    ['--from given', { from: '2024-01-01' }],
    ['another prefix', { prefix: 'oai_dc' }],
    ['another set', { set: 'mime:image' }],
  ];
  for (const [what, input] of table) {
    const plan = planHarvest({ ...BASE, resume: SAVED, ...input });
    assert.equal(plan.resume, null, what);
    assert.equal(plan.pageArgs, plan.firstArgs, what);
  }
});
