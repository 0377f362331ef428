// audit/audit-query.ts: the change kind of a resource from its states before and after the
// period, and the dates --since and --until take (tables; test/audit.test.ts runs the audit on
// real harvests).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type AuditRow, type AuditState, classifyChange, parseAuditDate } from '../src/audit/audit-query.ts';
import { ArchiverError } from '../src/core/errors.ts';

test('the change kind compares the states before and after the period', () => {
  const live = (datestamp: string, sha: string, mimeType = 'text/plain'): AuditState => ({
    deleted: false,
    datestamp,
    size: 1,
    sha256: sha.repeat(64),
    mimeType,
  });
  const gone = (datestamp: string): AuditState => ({ deleted: true, datestamp, size: null, sha256: null, mimeType: null });
  const cases: Array<[AuditState | null, AuditState, boolean, AuditRow['change']]> = [
    [null, live('2', 'a'), false, 'added'],
    [gone('1'), live('2', 'a'), false, 'added'], // first known from a deletion, as the catalog says
    [gone('1'), live('2', 'a'), true, 'restored'],
    [live('1', 'a'), live('2', 'b'), true, 'modified'],
    [live('1', 'a'), live('2', 'a'), true, 'touched'],
    [live('1', 'a'), gone('2'), true, 'deleted'],
    [null, gone('2'), false, 'deleted'],
    [gone('1'), gone('2'), true, 'deleted'],
  ];
  for (const [beforeState, afterState, hadVersion, change] of cases) {
    assert.equal(classifyChange(beforeState, afterState, hadVersion), change, JSON.stringify([beforeState, afterState, hadVersion]));
  }
});

test('dates: a day, a date-time in any zone (a zone is required), its end covering the unit given', () => {
  const cases: Array<[string, 'start' | 'end', string]> = [
    ['2024-03-01', 'start', '2024-03-01T00:00:00.000Z'],
    ['2024-03-01', 'end', '2024-03-01T23:59:59.999Z'],
    ['2024-03-01T10:20:30Z', 'start', '2024-03-01T10:20:30.000Z'],
    ['2024-03-01T10:20:30Z', 'end', '2024-03-01T10:20:30.999Z'],
    ['2024-03-01T10:20Z', 'end', '2024-03-01T10:20:59.999Z'],
    ['2024-03-01T10:20:30.123456Z', 'end', '2024-03-01T10:20:30.123Z'],
    ['2024-03-01T12:00:00+02:00', 'start', '2024-03-01T10:00:00.000Z'],
  ];
  for (const [value, bound, expected] of cases) assert.equal(parseAuditDate(value, bound), expected, value);
  for (const bad of ['2024-02-30', '2024-13-01', '01/03/2024', '2024-03-01T25:00Z', '2024-03-01T10:20', '']) {
    assert.throws(
      () => parseAuditDate(bad, 'start'),
      (error: unknown) => error instanceof ArchiverError && error.code === 'ERR_ARCHIVE_USAGE',
      bad,
    );
  }
});
