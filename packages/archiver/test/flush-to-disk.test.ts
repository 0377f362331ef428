import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { defaultFlushMode, type FlushMode, flushToDisk, openDiskFlusher } from '../src/archive/flush-to-disk.ts';
import { isArchiverError } from '../src/core/errors.ts';

async function tree(t: { after: (fn: () => Promise<void>) => void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'oaibag-flush-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await mkdir(join(dir, 'bag', 'data', 'deep'), { recursive: true });
  await writeFile(join(dir, 'bag', 'bagit.txt'), 'BagIt-Version: 1.0\n');
  await writeFile(join(dir, 'bag', 'data', 'deep', 'file.bin'), Buffer.alloc(5000, 7));
  return dir;
}

for (const mode of ['filesystem', 'files'] as FlushMode[]) {
  test(`flushes a tree and folders (${mode})`, async (t) => {
    const dir = await tree(t);
    await flushToDisk(dir, { trees: [join(dir, 'bag')], folders: [dir] }, mode);
    await flushToDisk(dir, {}, mode); // nothing asked: nothing to do
  });
}

test('a tree that cannot be read is an ERR_ARCHIVE_IO naming it (files mode)', async (t) => {
  const dir = await tree(t);
  const missing = join(dir, 'no-such-bag');
  await assert.rejects(flushToDisk(dir, { trees: [missing] }, 'files'), (error: unknown) => {
    assert.ok(isArchiverError(error));
    assert.equal(error.code, 'ERR_ARCHIVE_IO');
    assert.equal(error.path, missing);
    assert.match(error.message, /ENOENT/);
    return true;
  });
});

test('syncfs of a folder that does not exist is an ERR_ARCHIVE_IO, not a silent success', {
  skip: process.platform !== 'linux' && 'syncfs is Linux only',
}, async (t) => {
  const dir = await tree(t);
  await assert.rejects(flushToDisk(join(dir, 'gone'), { folders: [dir] }, 'filesystem'), (error: unknown) => {
    assert.ok(isArchiverError(error));
    assert.equal(error.code, 'ERR_ARCHIVE_IO');
    assert.match(error.message, /sync -f .*gone.* failed \(exit 1\)/);
    return true;
  });
});

test('OAIBAG_SYNC chooses the mode; unset or empty is the platform default; anything else is refused', () => {
  const saved = process.env.OAIBAG_SYNC;
  try {
    process.env.OAIBAG_SYNC = 'files';
    assert.equal(defaultFlushMode(), 'files');
    process.env.OAIBAG_SYNC = 'filesystem';
    assert.equal(defaultFlushMode(), 'filesystem');
    process.env.OAIBAG_SYNC = '';
    assert.equal(defaultFlushMode(), process.platform === 'linux' ? 'filesystem' : 'files');
    process.env.OAIBAG_SYNC = 'fsync';
    assert.throws(
      () => defaultFlushMode(),
      (error: unknown) => isArchiverError(error) && error.code === 'ERR_ARCHIVE_USAGE' && /OAIBAG_SYNC is "fsync"/.test(error.message),
    );
  } finally {
    if (saved === undefined) delete process.env.OAIBAG_SYNC;
    else process.env.OAIBAG_SYNC = saved;
  }
});

test("a harvest's flusher runs syncfs through one helper, one request at a time, and closes", {
  skip: process.platform !== 'linux' && 'syncfs is Linux only',
}, async (t) => {
  const dir = await tree(t);
  const flusher = await openDiskFlusher(dir, 'filesystem');
  assert.equal(flusher.mode, 'filesystem');
  await Promise.all(Array.from({ length: 5 }, () => flusher.flush({ trees: [join(dir, 'bag')] })));
  await flusher.flush({}); // nothing asked
  await flusher.close();
  await flusher.close(); // twice is harmless
  // Its helper gone, a flusher still flushes (file by file), and still reports what it cannot.
  await flusher.flush({ trees: [join(dir, 'bag')], folders: [dir] });
  await assert.rejects(
    flusher.flush({ trees: [join(dir, 'no-such-bag')] }),
    (error: unknown) => isArchiverError(error) && error.code === 'ERR_ARCHIVE_IO' && /no-such-bag/.test(error.message),
  );
});

test('a flusher asked for files mode, or whose syncfs check fails, fsyncs file by file', async (t) => {
  const dir = await tree(t);
  const files = await openDiskFlusher(dir, 'files');
  assert.equal(files.mode, 'files');
  await files.flush({ trees: [join(dir, 'bag')], folders: [dir] });
  await files.close();
  const gone = await openDiskFlusher(join(dir, 'no-such-archive'), 'filesystem'); // sync -f fails on its check
  assert.equal(gone.mode, 'files');
  await gone.close();
});

// Last in this file: it marks `sync -f` as missing for the rest of the process.
test('a `sync` without -f (old coreutils) is not an error: the flush fsyncs file by file from then on', {
  skip: process.platform !== 'linux' && 'syncfs is Linux only',
}, async (t) => {
  const dir = await tree(t);
  const fakeBin = join(dir, 'bin');
  await mkdir(fakeBin);
  await writeFile(join(fakeBin, 'sync'), '#!/bin/sh\necho "sync: invalid option -- \'f\'" >&2\nexit 1\n', { mode: 0o755 });
  const savedPath = process.env.PATH;
  process.env.PATH = `${fakeBin}:${savedPath ?? ''}`;
  try {
    const flusher = await openDiskFlusher(dir, 'filesystem');
    assert.equal(flusher.mode, 'files', 'the helper checked sync -f once and fell back');
    await flusher.close();
    await flushToDisk(dir, { trees: [join(dir, 'bag')] }, 'filesystem');
    assert.equal(defaultFlushMode(), 'files');
  } finally {
    process.env.PATH = savedPath;
  }
});
