import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { streamFileDurably, writeFileDurably } from '../src/archive/durable-file.ts';
import { ArchiverError } from '../src/core/errors.ts';

async function folder(t: { after: (fn: () => Promise<void>) => void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'oaibag-durable-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

test('writes a string, bytes or chunks whole, replacing an earlier file, and leaves nothing beside it', async (t) => {
  const dir = await folder(t);
  const target = join(dir, 'out.txt');
  assert.equal(await writeFileDurably(target, 'héllo\n'), 7);
  assert.equal(await readFile(target, 'utf8'), 'héllo\n');
  await writeFileDurably(target, new Uint8Array([1, 2, 3]));
  assert.deepEqual([...(await readFile(target))], [1, 2, 3]);
  async function* chunks(): AsyncGenerator<string | Uint8Array> {
    yield 'a';
    yield Buffer.from('b');
    yield '';
  }
  assert.equal(await writeFileDurably(target, chunks()), 2);
  assert.equal(await readFile(target, 'utf8'), 'ab');
  assert.equal(await writeFileDurably(target, []), 0, 'an empty file is a file');
  assert.equal(await readFile(target, 'utf8'), '');
  assert.deepEqual(await readdir(dir), ['out.txt']);
});

test('small and large chunks interleaved land in order; a buffer the producer reuses after write is not corrupted', async (t) => {
  const dir = await folder(t);
  const target = join(dir, 'mixed.bin');
  const expected: Buffer[] = [];
  const reused = Buffer.alloc(10);
  await streamFileDurably(target, async (file) => {
    for (let i = 0; i < 40; i++) {
      const piece = i % 7 === 3 ? Buffer.alloc(100_000 + i, i) : Buffer.from(`line ${i}\n`);
      expected.push(piece);
      await file.write(piece);
      reused.fill(i);
      expected.push(Buffer.from(reused));
      await file.write(reused);
      reused.fill(255); // after write resolved: must not change what was written
    }
    assert.equal(file.bytes, Buffer.concat(expected).length);
  });
  assert.ok((await readFile(target)).equals(Buffer.concat(expected)));
});

test('a producer that throws midway: the earlier file is kept whole, its error passed on as it is, no temporary file left', async (t) => {
  const dir = await folder(t);
  const target = join(dir, 'report.csv');
  await writeFile(target, 'the earlier report\n');
  const stop = new Error('the catalog went away');
  let seenMidway: { final: string; beside: string[] } | undefined;
  await assert.rejects(
    streamFileDurably(target, async (file) => {
      for (let i = 0; i < 50; i++) await file.write(Buffer.alloc(10_000, 65)); // 500 kB: past any gathering, on disk
      seenMidway = { final: await readFile(target, 'utf8'), beside: await readdir(dir) };
      throw stop;
    }),
    (error: unknown) => error === stop,
  );
  assert.equal(seenMidway?.final, 'the earlier report\n', 'while written, the final name holds the earlier file');
  assert.equal(seenMidway?.beside.length, 2);
  assert.match(seenMidway!.beside.find((name) => name !== 'report.csv')!, /^report\.csv\.[0-9a-f]{8}\.partial$/);
  assert.equal(await readFile(target, 'utf8'), 'the earlier report\n');
  assert.deepEqual(await readdir(dir), ['report.csv']);
});

test('two writers of the same file at once never share a temporary file: the result is one of them whole', async (t) => {
  const dir = await folder(t);
  const target = join(dir, 'SHA256SUMS');
  const content = (letter: string): string[] => Array.from({ length: 40 }, () => letter.repeat(10_000));
  await Promise.all([writeFileDurably(target, content('a')), writeFileDurably(target, content('b'))]);
  const text = await readFile(target, 'utf8');
  assert.ok(text === 'a'.repeat(400_000) || text === 'b'.repeat(400_000), `mixed: ${text.length} bytes, ${new Set(text).size} letters`);
  assert.deepEqual(await readdir(dir), ['SHA256SUMS']);
});

test('a folder that does not exist is ERR_ARCHIVE_IO naming the file, with the hint asked for', async (t) => {
  const dir = await folder(t);
  const target = join(dir, 'no-such-folder', 'audit.csv');
  await assert.rejects(writeFileDurably(target, 'x', { ioHint: 'check --out' }), (error: unknown) => {
    assert.ok(error instanceof ArchiverError);
    assert.equal(error.code, 'ERR_ARCHIVE_IO');
    assert.equal(error.message, `cannot write ${target}: ENOENT`);
    assert.equal(error.path, target);
    assert.equal(error.hint, 'check --out');
    return true;
  });
  assert.equal(existsSync(join(dir, 'no-such-folder')), false);
});

test('a full file system is ERR_ARCHIVE_FULL; the earlier file is kept and the temporary file removed (small tmpfs)', async (t) => {
  const dir = await folder(t);
  const small = join(dir, 'small');
  await mkdir(small);
  if (spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', small]).status !== 0) {
    t.skip('cannot mount a tmpfs here');
    return;
  }
  try {
    await fillUp(small);
  } finally {
    spawnSync('umount', [small]);
  }
});

async function fillUp(small: string): Promise<void> {
  const target = join(small, 'graph.nq');
  await writeFile(target, 'the earlier graph\n');
  let produced = 0;
  await assert.rejects(
    streamFileDurably(
      target,
      async (file) => {
        for (let i = 0; i < 100; i++) {
          await file.write(Buffer.alloc(10_000, 66)); // 1 MB for 256 kB of room
          produced++;
        }
      },
      { fullHint: 'free space there' },
    ),
    (error: unknown) => {
      assert.ok(error instanceof ArchiverError);
      assert.equal(error.code, 'ERR_ARCHIVE_FULL');
      assert.match(error.message, new RegExp(`^no room left on the file system of the folder of ${target}: .*ENOSPC`));
      assert.equal(error.hint, 'free space there');
      return true;
    },
  );
  assert.ok(produced < 100, 'the producer was stopped by the first write that failed');
  assert.equal(await readFile(target, 'utf8'), 'the earlier graph\n');
  assert.deepEqual(await readdir(small), ['graph.nq']);
  await writeFileDurably(target, 'room again\n'); // the space the temporary file took is back
  assert.equal(await readFile(target, 'utf8'), 'room again\n');
}
