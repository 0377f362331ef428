// import/delivery-cut-off.ts: the watermark an import's --until gives its source, and the
// first harvest's plan from it (tables; test/import-then-harvest.test.ts runs import and
// harvest end to end).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planHarvest } from '../src/harvest/harvest-plan.ts';
import { deliveryCutOff } from '../src/import/delivery-cut-off.ts';

test('the cut-off: the first second after the day, minute or second named; a day-granularity repository is asked for the day', () => {
  const now = new Date('2024-06-01T00:00:00Z');
  const table: Array<[string, string, string]> = [
    ['2004-05-06', '2004-05-06', '2004-05-07T00:00:00Z'],
    ['2004-05-06T12:00Z', '2004-05-06T12:00:00Z', '2004-05-06T12:01:00Z'],
    ['2004-05-06T12:00:00Z', '2004-05-06T12:00:00Z', '2004-05-06T12:00:01Z'],
    ['2004-05-06T14:00:00+02:00', '2004-05-06T12:00:00Z', '2004-05-06T12:00:01Z'],
    // Inside a second: datestamps are whole seconds, so that second is asked again (an overlap, never a gap).
    ['2004-05-06T12:00:00.5Z', '2004-05-06T12:00:00Z', '2004-05-06T12:00:00Z'],
  ];
  for (const [value, until, watermark] of table) assert.deepEqual(deliveryCutOff(value, now), { until, watermark }, value);
  for (const bad of ['2024-06-02', '06/05/2004', '2004-05-06T12:00', '2004-02-30']) {
    assert.throws(
      () => deliveryCutOff(bad, now),
      (error: NodeJS.ErrnoException) => error.code === 'ERR_ARCHIVE_USAGE' && error.message.includes('--until'),
      bad,
    );
  }
  const plan = planHarvest({ prefix: 'oai_didl', watermark: deliveryCutOff('2004-05-06T12:00:00Z', now).watermark, resume: null, granularity: 'YYYY-MM-DD' });
  assert.equal(plan.firstArgs.from, '2004-05-06', 'the day of the cut-off again: overlap, never a gap');
});
