import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { acquireArchiveLock, readArchiveLockHolder } from '../src/archive/archive-lock.ts';
import { isArchiverError } from '../src/core/errors.ts';

async function archive(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'oaibag-lock-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** The pid of a process that has surely ended. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', '']);
  assert.equal(child.status, 0);
  return child.pid;
}

test('acquire writes the holder as JSON, release removes it, and the lock can be taken again', async (t) => {
  const dir = await archive(t);
  const lock = await acquireArchiveLock(dir, 'harvest https://example.org/oai');
  const written = JSON.parse(await readFile(join(dir, 'lock'), 'utf8'));
  assert.deepEqual(written, { pid: process.pid, hostname: hostname(), startedAt: lock.holder.startedAt, purpose: 'harvest https://example.org/oai' });
  assert.deepEqual(readArchiveLockHolder(dir), written);
  await lock.release();
  assert.equal(existsSync(join(dir, 'lock')), false);
  assert.equal(readArchiveLockHolder(dir), undefined);
  const again = await acquireArchiveLock(dir, 'harvest again');
  await again.release();
  await again.release(); // idempotent
});

test('a second acquire fails with ERR_ARCHIVE_LOCKED naming the holder', async (t) => {
  const dir = await archive(t);
  const lock = await acquireArchiveLock(dir, 'harvest https://example.org/oai');
  await assert.rejects(acquireArchiveLock(dir, 'status'), (error: unknown) => {
    assert.ok(isArchiverError(error));
    assert.equal(error.code, 'ERR_ARCHIVE_LOCKED');
    assert.equal(error.path, join(dir, 'lock'));
    assert.match(error.message, new RegExp(`pid ${process.pid} on ${hostname()} since ${lock.holder.startedAt} \\(harvest https://example.org/oai\\)`));
    assert.ok(error.hint);
    return true;
  });
  // The failed attempt left the holder's lock alone.
  assert.equal(readArchiveLockHolder(dir)?.purpose, 'harvest https://example.org/oai');
  await lock.release();
});

test('a lock held by a live process on this host is respected', async (t) => {
  const dir = await archive(t);
  // Our parent (the test runner) is alive and is not us.
  const holder = { pid: process.ppid, hostname: hostname(), startedAt: '2020-01-01T00:00:00.000Z', purpose: 'harvest elsewhere' };
  await writeFile(join(dir, 'lock'), JSON.stringify(holder));
  await assert.rejects(acquireArchiveLock(dir, 'mine'), { code: 'ERR_ARCHIVE_LOCKED' });
});

test('a lock left by a dead process on this host is taken over', async (t) => {
  const dir = await archive(t);
  const pid = deadPid();
  await writeFile(join(dir, 'lock'), JSON.stringify({ pid, hostname: hostname(), startedAt: '2020-01-01T00:00:00.000Z', purpose: 'killed harvest' }));
  const lock = await acquireArchiveLock(dir, 'resumed harvest');
  assert.equal(readArchiveLockHolder(dir)?.pid, process.pid);
  assert.equal(readArchiveLockHolder(dir)?.purpose, 'resumed harvest');
  await lock.release();
});

test('of several processes taking over the same stale lock at once, exactly one wins', async (t) => {
  const dir = await archive(t);
  // Many rounds: the race between takers is rare in any one round (it let two win once in 15 runs).
  for (let round = 0; round < 30; round++) {
    await writeFile(join(dir, 'lock'), JSON.stringify({ pid: deadPid(), hostname: hostname(), startedAt: '2020-01-01T00:00:00.000Z', purpose: 'killed' }));
    const attempts = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => acquireArchiveLock(dir, `taker ${round}.${i}`)));
    const winners = attempts.filter((attempt) => attempt.status === 'fulfilled');
    assert.equal(winners.length, 1, `round ${round}`);
    for (const attempt of attempts) if (attempt.status === 'rejected') assert.equal((attempt.reason as { code?: string }).code, 'ERR_ARCHIVE_LOCKED');
    assert.equal(readArchiveLockHolder(dir)?.purpose, winners[0]?.value.holder.purpose);
    await winners[0]!.value.release();
    assert.deepEqual(readdirSync(dir), [], 'no takeover guard or lock left behind');
  }
});

test('a takeover guard left by a taker that died is removed once old, and the stale lock taken over', async (t) => {
  const dir = await archive(t);
  await writeFile(join(dir, 'lock'), JSON.stringify({ pid: deadPid(), hostname: hostname(), startedAt: '2020-01-01T00:00:00.000Z', purpose: 'killed' }));
  await writeFile(join(dir, 'lock.takeover'), '');
  await assert.rejects(acquireArchiveLock(dir, 'too early'), { code: 'ERR_ARCHIVE_LOCKED' });
  const old = new Date(Date.now() - 60_000);
  await utimes(join(dir, 'lock.takeover'), old, old);
  const lock = await acquireArchiveLock(dir, 'after the guard aged');
  assert.equal(readArchiveLockHolder(dir)?.purpose, 'after the guard aged');
  await lock.release();
});

test('a lock of a dead pid on another host is not taken over (its liveness cannot be checked)', async (t) => {
  const dir = await archive(t);
  await writeFile(
    join(dir, 'lock'),
    JSON.stringify({ pid: deadPid(), hostname: `not-${hostname()}`, startedAt: '2020-01-01T00:00:00.000Z', purpose: 'remote' }),
  );
  await assert.rejects(
    acquireArchiveLock(dir, 'mine'),
    (error: unknown) => isArchiverError(error) && error.code === 'ERR_ARCHIVE_LOCKED' && error.message.includes(`on not-${hostname()}`),
  );
});

test('an unreadable lock counts as held while young and is taken over once old', async (t) => {
  const dir = await archive(t);
  const file = join(dir, 'lock');
  await writeFile(file, '{"pid": 12');
  await assert.rejects(acquireArchiveLock(dir, 'mine'), { code: 'ERR_ARCHIVE_LOCKED' });
  const old = new Date(Date.now() - 10 * 60_000);
  await utimes(file, old, old);
  const lock = await acquireArchiveLock(dir, 'mine');
  assert.equal(readArchiveLockHolder(dir)?.purpose, 'mine');
  await lock.release();
});

test('release leaves alone a lock that is no longer ours', async (t) => {
  const dir = await archive(t);
  const lock = await acquireArchiveLock(dir, 'first');
  const other = { pid: process.ppid, hostname: hostname(), startedAt: '2030-01-01T00:00:00.000Z', purpose: 'someone else' };
  await writeFile(join(dir, 'lock'), JSON.stringify(other));
  await lock.release();
  assert.deepEqual(readArchiveLockHolder(dir), other);
  lock.releaseSync();
  assert.deepEqual(readArchiveLockHolder(dir), other);
});

test('a missing archive directory is an ERR_ARCHIVE_IO naming the lock file', async (t) => {
  const dir = join(await archive(t), 'absent');
  await assert.rejects(
    acquireArchiveLock(dir, 'mine'),
    (error: unknown) => isArchiverError(error) && error.code === 'ERR_ARCHIVE_IO' && error.path === join(dir, 'lock'),
  );
});

test('a holder killed while writing its lock leaves only a pending file: the next acquire takes the lock at once and removes it', async (t) => {
  const dir = await archive(t);
  // What a kill -9 between the write and the link leaves: the lock's name is free, the
  // pending file half-written. (An older oaibag left an empty `lock`, held for a minute.)
  await writeFile(join(dir, `lock.pending-${deadPid()}-0badf00d`), '{"pid":');
  const lock = await acquireArchiveLock(dir, 'resumed at once');
  assert.equal(readArchiveLockHolder(dir)?.purpose, 'resumed at once');
  assert.deepEqual(readdirSync(dir), ['lock'], 'the leftover is removed by the new holder');
  await lock.release();
  assert.deepEqual(readdirSync(dir), []);
});

test('the lock file appears whole: a reader racing the writer never sees it empty or half-written', async (t) => {
  const dir = await archive(t);
  for (let round = 0; round < 50; round++) {
    let reading = true;
    const reader = (async () => {
      while (reading) {
        const text = await readFile(join(dir, 'lock'), 'utf8').catch(() => undefined);
        if (text !== undefined) {
          assert.doesNotThrow(() => JSON.parse(text), `round ${round}: a lock read as ${JSON.stringify(text)}`);
        }
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    const lock = await acquireArchiveLock(dir, `round ${round}`);
    await new Promise((resolve) => setImmediate(resolve));
    reading = false;
    await reader;
    await lock.release();
  }
});
