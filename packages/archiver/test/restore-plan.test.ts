import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ArchiverError } from '../src/core/errors.ts';
import { datestampSeconds, formatInstant, type PlanDeletion, type PlanVersion, parseAsOf, planRestore, resourceStateAt } from '../src/restore/restore-plan.ts';

const at = (iso: string): number => Date.parse(iso) / 1000;
let nextId = 1;
const version = (resourceId: number, datestamp: string, identifier = `http://h/r${resourceId}`): PlanVersion => ({
  id: nextId++,
  resourceId,
  sourceId: 1,
  identifier,
  datestamp,
  size: 1,
  sha256: '0'.repeat(64),
  bagPath: `aips/x/${nextId}`,
  payloadFiles: 1,
  parts: [],
});
const deletion = (resourceId: number, datestamp: string): PlanDeletion => ({ resourceId, datestamp });

test('datestamps of both granularities are read as instants', () => {
  const table: Array<[string, string | undefined]> = [
    ['2024-01-31T12:00:00Z', '2024-01-31T12:00:00Z'],
    ['2024-01-31', '2024-01-31T00:00:00Z'],
    ['2024-01-31T12:00:00.999Z', '2024-01-31T12:00:00Z'],
    ['2024-01-31T13:00:00+01:00', '2024-01-31T12:00:00Z'],
    ['2024-01-31T12:00Z', '2024-01-31T12:00:00Z'],
    ['2024-02-30', undefined],
    ['2024-01-31T24:00:00Z', undefined],
    ['2024-01-31T12:00:00', undefined],
    ['31/01/2024', undefined],
    ['', undefined],
  ];
  for (const [text, expected] of table) {
    const seconds = datestampSeconds(text);
    assert.equal(seconds === undefined ? undefined : formatInstant(seconds), expected, text);
  }
});

test('--as-of: a bare date is the end of that day (UTC); a time needs a zone', () => {
  assert.equal(formatInstant(parseAsOf('2024-01-31')), '2024-01-31T23:59:59Z');
  assert.equal(formatInstant(parseAsOf('2024-01-31T12:00:00Z')), '2024-01-31T12:00:00Z');
  assert.equal(formatInstant(parseAsOf('2024-01-31T12:00:00.5Z')), '2024-01-31T12:00:00Z');
  assert.equal(formatInstant(parseAsOf('2024-01-31T14:00:00+02:00')), '2024-01-31T12:00:00Z');
  for (const bad of ['2024-01-31T12:00:00', 'yesterday', '2024-13-01', '']) {
    assert.throws(
      () => parseAsOf(bad),
      (error: unknown) => error instanceof ArchiverError && error.code === 'ERR_ARCHIVE_USAGE',
      bad,
    );
  }
});

test('the version current at T is the one with the greatest datestamp <= T; deletions at or after it hide it', () => {
  const v1 = version(1, '2024-01-01T00:00:00Z');
  const v2 = version(1, '2024-02-01T00:00:00Z');
  const v3 = version(1, '2024-04-01T00:00:00Z');
  const d1 = deletion(1, '2024-03-01T00:00:00Z');
  const rows = [v3, v1, v2]; // order of rows does not matter
  const table: Array<[asOf: string | undefined, expected: string]> = [
    ['2023-12-31T23:59:59Z', 'absent'],
    ['2024-01-01T00:00:00Z', `live ${v1.id}`],
    ['2024-01-15T00:00:00Z', `live ${v1.id}`],
    ['2024-02-01T00:00:00Z', `live ${v2.id}`],
    ['2024-02-28T23:59:59Z', `live ${v2.id}`],
    ['2024-03-01T00:00:00Z', `deleted ${v2.id}`],
    ['2024-03-31T00:00:00Z', `deleted ${v2.id}`],
    ['2024-04-01T00:00:00Z', `live ${v3.id}`],
    [undefined, `live ${v3.id}`],
  ];
  for (const [asOf, expected] of table) {
    const state = resourceStateAt(rows, [d1], asOf === undefined ? undefined : at(asOf));
    assert.equal(state.state === 'absent' ? 'absent' : `${state.state} ${state.version.id}`, expected, String(asOf));
  }
});

test('ties and mixed granularities', () => {
  // A deletion with the same datestamp as the version wins (deleted "at or after").
  const v = version(1, '2024-01-01T10:00:00Z');
  assert.equal(resourceStateAt([v], [deletion(1, '2024-01-01T10:00:00Z')]).state, 'deleted');
  // Two versions with one datestamp: the later row wins.
  const a = version(2, '2024-01-01T10:00:00Z');
  const b = version(2, '2024-01-01T10:00:00Z');
  const state = resourceStateAt([b, a], []);
  assert.equal(state.state === 'live' && state.version.id, b.id);
  // A day datestamp is the first second of its day.
  const day = version(3, '2024-01-02');
  assert.equal(resourceStateAt([day], [], at('2024-01-01T23:59:59Z')).state, 'absent');
  assert.equal(resourceStateAt([day], [], at('2024-01-02T00:00:00Z')).state, 'live');
  assert.equal(resourceStateAt([day], [deletion(3, '2024-01-02T08:00:00Z')], at('2024-01-02T12:00:00Z')).state, 'deleted');
  assert.equal(resourceStateAt([day], [deletion(3, '2024-01-01')], at('2024-01-02T12:00:00Z')).state, 'live');
  // A deletion before any version, then a version: live (re-added).
  const later = version(4, '2024-05-01T00:00:00Z');
  assert.equal(resourceStateAt([later], [deletion(4, '2024-04-01T00:00:00Z')]).state, 'live');
  // Only a deletion: absent.
  assert.equal(resourceStateAt([], [deletion(5, '2024-04-01T00:00:00Z')]).state, 'absent');
});

test('planRestore sorts live versions by identifier and keeps unreadable rows out of the decision', () => {
  const rows = [
    version(1, '2024-01-01T00:00:00Z', 'http://h/b'),
    version(2, '2024-01-01T00:00:00Z', 'http://h/a'),
    version(3, '2024-01-01T00:00:00Z', 'http://h/c'),
    version(4, 'garbage', 'http://h/d'),
    version(5, '2024-06-01T00:00:00Z', 'http://h/e'),
  ];
  const plan = planRestore(rows, [deletion(3, '2024-02-01T00:00:00Z'), deletion(1, 'nonsense')], at('2024-03-01T00:00:00Z'));
  assert.deepEqual(
    plan.live.map((v) => v.identifier),
    ['http://h/a', 'http://h/b'],
  );
  assert.deepEqual(
    plan.deleted.map((d) => d.version.identifier),
    ['http://h/c'],
  );
  assert.equal(plan.absent, 1); // e: not yet
  assert.deepEqual(
    plan.unreadable.map((u) => [u.resourceId, u.kind]),
    [
      [4, 'version'],
      [1, 'deletion'],
    ],
  );
});
