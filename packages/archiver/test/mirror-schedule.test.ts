import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { formatDuration, parseDuration } from '../src/core/duration.ts';
import { isArchiverError } from '../src/core/errors.ts';
import { readMirrorConfig } from '../src/mirror/mirror-config.ts';
import { nextRun } from '../src/mirror/mirror-schedule.ts';

const MINUTE = 60_000;

test('durations: s, m, h, d and combinations; anything else is a usage error naming the option', () => {
  const table: Array<[string, number]> = [
    ['90s', 90_000],
    ['30m', 30 * MINUTE],
    ['6h', 360 * MINUTE],
    ['1d', 1440 * MINUTE],
    ['1h30m', 90 * MINUTE],
    [' 2H ', 120 * MINUTE],
  ];
  for (const [text, ms] of table) assert.equal(parseDuration(text), ms, text);
  for (const bad of ['', '0m', '30', 'm', '1.5h', '-1h', '1w', '1h 30m', 'soon']) {
    assert.throws(
      () => parseDuration(bad, '--every'),
      (error: unknown) => isArchiverError(error) && error.code === 'ERR_ARCHIVE_USAGE' && error.message.startsWith('--every '),
      bad,
    );
  }
  assert.equal(formatDuration(90 * MINUTE), '1h30m');
  assert.equal(formatDuration(1440 * MINUTE), '1d');
});

test('the schedule keeps to its grid: overruns and downtime skip missed ticks, jitter delays only the start', () => {
  const every = { everyMs: 30 * MINUTE, jitterMs: 0 };
  // A quick run: the next tick.
  assert.deepEqual(nextRun(0, 2 * MINUTE, every, 0), { dueAt: 30 * MINUTE, startAt: 30 * MINUTE });
  // A run that started late (jitter) and ended after its own tick: still the grid, never drift.
  assert.deepEqual(nextRun(30 * MINUTE, 45 * MINUTE, every, 0), { dueAt: 60 * MINUTE, startAt: 60 * MINUTE });
  // A run that took 70 minutes: the ticks at 30 and 60 are skipped, not run back to back.
  assert.deepEqual(nextRun(0, 70 * MINUTE, every, 0), { dueAt: 90 * MINUTE, startAt: 90 * MINUTE });
  // Jitter: up to jitterMs after the tick, and the tick itself does not move.
  const jittered = nextRun(0, MINUTE, { everyMs: 30 * MINUTE, jitterMs: 10 * MINUTE }, 0.5);
  assert.deepEqual(jittered, { dueAt: 30 * MINUTE, startAt: 35 * MINUTE });
  assert.equal(nextRun(jittered.dueAt, 36 * MINUTE, every, 0).dueAt, 60 * MINUTE);
});

test('a mirror configuration: sources with their own schedules, paths from the file, every mistake named', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'oaibag-mirror-config-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'mirror.json');
  await writeFile(join(dir, 'secret'), 's3cret\nignored\n');
  await writeFile(
    file,
    JSON.stringify({
      archive: 'arch',
      sources: [
        { baseUrl: 'https://a.example/oai', every: '6h', jitter: '10m', set: 'mime:text', concurrency: 2 },
        { baseUrl: 'https://b.example/oai', every: '1d', user: 'harvester', passwordFile: 'secret', allowPrivateRefs: true },
      ],
    }),
  );
  const config = await readMirrorConfig(file);
  assert.equal(config.archiveDir, join(dir, 'arch'));
  assert.deepEqual(config.sources, [
    { baseUrl: 'https://a.example/oai', schedule: { everyMs: 360 * MINUTE, jitterMs: 10 * MINUTE }, set: 'mime:text', concurrency: 2 },
    {
      baseUrl: 'https://b.example/oai',
      schedule: { everyMs: 1440 * MINUTE, jitterMs: 0 },
      allowPrivateRefs: true,
      credentials: { user: 'harvester', password: 's3cret' },
    },
  ]);

  const refused: Array<[unknown, RegExp]> = [
    [[], /the top level: expected an object/],
    [{ sources: [] }, /sources: expected a non-empty list/],
    [{ sources: [{ baseUrl: 'https://a.example/oai', every: '6h' }], archives: 'x' }, /archives: unknown field/],
    [{ sources: [{ baseUrl: 'https://a.example/oai' }] }, /sources\[0\]\.every: expected a non-empty string/],
    [{ sources: [{ baseUrl: 'ftp://a.example/oai', every: '6h' }] }, /sources\[0\]\.baseUrl: "ftp:\/\/a\.example\/oai" has the scheme ftp, not http or https/],
    [{ sources: [{ baseUrl: 'a.example/oai', every: '6h' }] }, /sources\[0\]\.baseUrl: "a\.example\/oai" is not an http\(s\) URL/],
    [{ sources: [{ baseUrl: 'https://a.example/oai', every: 'often' }] }, /sources\[0\]\.every "often" is not a duration/],
    [
      {
        sources: [
          { baseUrl: 'https://a.example/oai', every: '1h' },
          { baseUrl: 'https://a.example/oai', every: '2h' },
        ],
      },
      /sources\[1\]\.baseUrl: .* is listed twice/,
    ],
    [{ sources: [{ baseUrl: 'https://a.example/oai', every: '1h', user: 'x' }] }, /sources\[0\]: "user" and "passwordFile" go together/],
    [{ sources: [{ baseUrl: 'https://a.example/oai', every: '1h', concurrency: 0 }] }, /sources\[0\]\.concurrency: expected a whole number/],
    [{ sources: [{ baseUrl: 'https://a.example/oai', every: '1h', allowPrivateRefs: 'yes' }] }, /sources\[0\]\.allowPrivateRefs: expected true or false/],
  ];
  for (const [content, message] of refused) {
    await writeFile(file, JSON.stringify(content));
    await assert.rejects(
      readMirrorConfig(file),
      (error: unknown) => isArchiverError(error) && error.code === 'ERR_ARCHIVE_USAGE' && message.test(error.message),
      String(message),
    );
  }
  await writeFile(file, '{ not json');
  await assert.rejects(readMirrorConfig(file), /mirror\.json is not JSON/);
  await assert.rejects(readMirrorConfig(join(dir, 'absent.json')), /cannot read the mirror configuration .*absent\.json: ENOENT/);
});
