import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { discardIncoming, MemoryBudget, receiveIncoming } from '../src/ingest/incoming-file.ts';

async function archive(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'oaibag-incoming-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** `total` bytes in chunks of `size`, every chunk yielded from one reused buffer (as a decoder may). */
async function* reused(total: number, size: number): AsyncIterable<Uint8Array> {
  const buffer = Buffer.alloc(size);
  for (let at = 0; at < total; at += size) {
    const length = Math.min(size, total - at);
    for (let i = 0; i < length; i++) buffer[i] = (at + i) % 251;
    yield buffer.subarray(0, length);
  }
}

const expected = (total: number) => Buffer.from(Array.from({ length: total }, (_, i) => i % 251));
const sha = (algorithm: string, bytes: Buffer) => createHash(algorithm).update(bytes).digest('hex');

test('a small datastream stays in memory, copied from a reused buffer, and its share is given back once', async (t) => {
  const dir = await archive(t);
  const budget = new MemoryBudget(10_000, 5_000);
  const file = await receiveIncoming(dir, reused(4_000, 1_000), budget);
  assert.equal(file.path, null);
  assert.ok(file.bytes?.equals(expected(4_000)), 'the bytes, not four copies of the last chunk');
  assert.equal(file.sha256, sha('sha256', expected(4_000)));
  assert.equal(file.sha512, sha('sha512', expected(4_000)));
  assert.equal(budget.take(6_001), false, '4,000 of 10,000 are held');
  await discardIncoming(file);
  await discardIncoming(file);
  assert.equal(budget.take(10_000), true, 'given back exactly once');
  assert.equal(existsSync(join(dir, 'tmp')), false, 'no file was written');
});

test('a datastream over its share, or arriving when the budget is spent, goes to a file with every byte', async (t) => {
  const dir = await archive(t);
  const budget = new MemoryBudget(10_000, 5_000);
  const large = await receiveIncoming(dir, reused(12_000, 1_000), budget);
  assert.equal(large.bytes, null);
  assert.ok(readFileSync(large.path!).equals(expected(12_000)), 'what was held before the spill is in the file too');
  assert.equal(large.sha256, sha('sha256', expected(12_000)));
  assert.equal(budget.take(10_000), true, 'what it held for a while was given back');
  budget.give(10_000);

  const held = await receiveIncoming(dir, reused(5_000, 1_000), budget);
  const second = await receiveIncoming(dir, reused(5_000, 1_000), budget);
  const third = await receiveIncoming(dir, reused(3_000, 1_000), budget);
  assert.ok(held.bytes && second.bytes, 'two of 5,000 fit in 10,000');
  assert.ok(third.path !== null && readFileSync(third.path).equals(expected(3_000)), 'the budget spent: a file');
  for (const file of [large, held, second, third]) await discardIncoming(file);
  assert.deepEqual(readdirSync(join(dir, 'tmp')), [], 'the files are removed');
  assert.equal(budget.take(10_000), true);
});

test('a datastream that fails half-way leaves no file and holds no memory', async (t) => {
  const dir = await archive(t);
  const budget = new MemoryBudget(100_000, 50_000);
  async function* failing(total: number): AsyncIterable<Uint8Array> {
    yield* reused(total, 1_000);
    throw new Error('the connection broke');
  }
  await assert.rejects(receiveIncoming(dir, failing(3_000), budget), /the connection broke/);
  await assert.rejects(receiveIncoming(dir, failing(60_000), budget), /the connection broke/);
  assert.deepEqual(readdirSync(join(dir, 'tmp')), []);
  assert.equal(budget.take(100_000), true, 'everything given back');
});

test('without a budget every datastream is a file, an empty one included', async (t) => {
  const dir = await archive(t);
  const empty = await receiveIncoming(dir, reused(0, 10));
  assert.equal(empty.bytes, null);
  assert.equal(readFileSync(empty.path!).length, 0);
  assert.equal(empty.sha256, sha('sha256', Buffer.alloc(0)));
});
