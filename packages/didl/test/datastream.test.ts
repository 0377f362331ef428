// The By-Value sink's backpressure: a producer told to wait (push returned false) always gets
// going again, however the consumer's reads and the wait interleave.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { ByValueSink } from '../src/datastream.ts';

const info = { itemPath: [0], componentIndex: 0, resourceIndex: 0 };

/** A sink of 16 bytes' high-water mark, and the stream its consumer reads. */
async function sinkWithReader(): Promise<{ sink: ByValueSink; stream: NodeJS.ReadableStream }> {
  let stream: NodeJS.ReadableStream | undefined;
  const sink = new ByValueSink(
    async (datastream) => {
      stream = datastream.bytes;
    },
    info,
    16,
  );
  await nextTurn();
  assert.ok(stream);
  return { sink, stream };
}

test('the consumer drains the buffer before the producer asks to wait: demand() resolves at once', async () => {
  const { sink, stream } = await sinkWithReader();
  assert.equal(sink.write(Buffer.alloc(32, 1)), false, 'over the high-water mark');
  // The consumer reads everything (Node calls _read now, before anyone waits).
  while (stream.read() !== null);
  await nextTurn();
  const outcome = await Promise.race([sink.demand().then(() => 'resumed'), new Promise((resolve) => setTimeout(() => resolve('stuck'), 500))]);
  assert.equal(outcome, 'resumed');
});

test('the producer waits first, then the consumer reads: demand() resolves when it does', async () => {
  const { sink, stream } = await sinkWithReader();
  assert.equal(sink.write(Buffer.alloc(32, 1)), false);
  let resumed = false;
  const waiting = sink.demand().then(() => {
    resumed = true;
  });
  await nextTurn();
  assert.equal(resumed, false, 'nobody read yet');
  while (stream.read() !== null);
  await waiting;
  assert.equal(resumed, true);
});
