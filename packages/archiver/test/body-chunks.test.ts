// bodyChunks: a response body's chunks as they were pushed, however slow the reader.
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { bodyChunks } from '../src/oai/body-chunks.ts';

function pushing(chunks: Buffer[], end: 'end' | Error | 'close'): Readable {
  const body = new Readable({ read() {} });
  void (async () => {
    for (const chunk of chunks) {
      body.push(chunk);
      await sleep(1);
    }
    if (end === 'end') body.push(null);
    else if (end === 'close') body.destroy();
    else body.destroy(end);
  })();
  return body;
}

test('a slow reader gets each chunk as pushed, never several joined into a new buffer', async () => {
  const chunks = Array.from({ length: 20 }, (_, i) => Buffer.alloc(1000, i));
  const got: Buffer[] = [];
  for await (const chunk of bodyChunks(pushing(chunks, 'end'))) {
    got.push(chunk);
    await sleep(5); // several chunks arrive meanwhile
  }
  assert.equal(got.length, chunks.length);
  got.forEach((chunk, i) => assert.equal(chunk, chunks[i], `chunk ${i} is the pushed buffer itself`));
});

test('the body is paused while chunks wait, and resumed when they are taken', async () => {
  const body = pushing(
    Array.from({ length: 12 }, () => Buffer.alloc(10)),
    'end',
  );
  const iterator = bodyChunks(body)[Symbol.asyncIterator]();
  await iterator.next();
  await sleep(40);
  assert.equal(body.isPaused(), true);
  let n = 1;
  while (!(await iterator.next()).done) n++;
  assert.equal(n, 12);
});

test('an error of the body is thrown to the reader, after the chunks before it', async () => {
  const failure = new Error('connection reset');
  const got: Buffer[] = [];
  await assert.rejects(async () => {
    for await (const chunk of bodyChunks(pushing([Buffer.from('a'), Buffer.from('b')], failure))) got.push(chunk);
  }, failure);
  assert.equal(Buffer.concat(got).toString(), 'ab');
});

test('a body closed before its end is an error, not a short read', async () => {
  await assert.rejects(async () => {
    for await (const _ of bodyChunks(pushing([Buffer.from('a')], 'close'))) {
      // read on
    }
  }, /closed before its end/);
});

test('a reader that stops early destroys the body', async () => {
  const body = pushing(
    Array.from({ length: 10 }, () => Buffer.alloc(10)),
    'end',
  );
  for await (const _ of bodyChunks(body)) break;
  assert.equal(body.destroyed, true);
});

test('a body that failed or was destroyed before its reader came rejects at once rather than waiting forever', async () => {
  const failed = new Readable({ read() {} });
  failed.on('error', () => undefined);
  failed.destroy(new Error('reset while the page before was committed'));
  await new Promise((resolve) => setImmediate(resolve)); // 'error' and 'close' are emitted before the reader comes
  await assert.rejects(async () => {
    for await (const _ of bodyChunks(failed)) assert.fail('no chunk');
  }, /reset while the page before was committed/);

  const closed = new Readable({ read() {} });
  closed.destroy();
  await new Promise((resolve) => setImmediate(resolve));
  await assert.rejects(async () => {
    for await (const _ of bodyChunks(closed)) assert.fail('no chunk');
  }, /closed before its end/);
});
