import assert from 'node:assert/strict';
import { test } from 'node:test';
import { oaiDateOf, parseCommandLineDate, readCommandLineDate } from '../src/core/command-line-date.ts';
import { ArchiverError } from '../src/core/errors.ts';

const iso = (ms: number): string => new Date(ms).toISOString();

test('the one grammar: days, date-times with a zone, and the unit each one covers', () => {
  const table: Array<[string, string, string, string]> = [
    // value, start, end, as OAI-PMH sends it
    ['2024-01-31', '2024-01-31T00:00:00.000Z', '2024-01-31T23:59:59.999Z', '2024-01-31'],
    ['2024-01-31T12:00:00Z', '2024-01-31T12:00:00.000Z', '2024-01-31T12:00:00.999Z', '2024-01-31T12:00:00Z'],
    ['2024-01-31T12:00Z', '2024-01-31T12:00:00.000Z', '2024-01-31T12:00:59.999Z', '2024-01-31T12:00:00Z'],
    ['2024-01-31T12:00:00.5Z', '2024-01-31T12:00:00.500Z', '2024-01-31T12:00:00.500Z', '2024-01-31T12:00:00Z'],
    ['2024-01-31T13:00+01:00', '2024-01-31T12:00:00.000Z', '2024-01-31T12:00:59.999Z', '2024-01-31T12:00:00Z'],
    ['2024-01-31T00:30:00-02:30', '2024-01-31T03:00:00.000Z', '2024-01-31T03:00:00.999Z', '2024-01-31T03:00:00Z'],
    ['2024-02-29', '2024-02-29T00:00:00.000Z', '2024-02-29T23:59:59.999Z', '2024-02-29'],
    [' 2024-01-31 ', '2024-01-31T00:00:00.000Z', '2024-01-31T23:59:59.999Z', '2024-01-31'],
  ];
  for (const [value, start, end, oai] of table) {
    const date = readCommandLineDate(value);
    assert.ok(date, value);
    assert.deepEqual([iso(date.start), iso(date.end), oaiDateOf(date)], [start, end, oai], value);
  }
});

test('refused: no zone, impossible days and times, other forms; the error names the option and the grammar', () => {
  for (const bad of [
    '2024-01-31T12:00:00',
    '2024-01-31T12:00',
    '2023-02-29',
    '2024-13-01',
    '2024-01-31T24:00Z',
    '2024-01-31T12:00+25:00',
    '31/01/2024',
    'yesterday',
    '',
  ]) {
    assert.equal(readCommandLineDate(bad), undefined, bad);
  }
  assert.throws(
    () => parseCommandLineDate('2024-01-31T12:00', '--as-of'),
    (error: unknown) =>
      error instanceof ArchiverError &&
      error.code === 'ERR_ARCHIVE_USAGE' &&
      error.message === '--as-of "2024-01-31T12:00" is not a date (YYYY-MM-DD) or a date-time with a zone (YYYY-MM-DDThh:mm:ssZ)',
  );
});
