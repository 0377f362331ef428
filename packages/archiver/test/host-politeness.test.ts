// oai/host-politeness.ts: the gate each host's requests pass (test/politeness.test.ts measures
// harvests and mirrors through it against real servers).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HostGate } from '../src/oai/host-politeness.ts';

test('HostGate: requests enter in order, at most maxConnections at once, delayMs apart, after a Retry-After hold, and a stopped wait leaves the line', async () => {
  const gate = new HostGate(100, 2);
  const started: number[] = [];
  const t0 = performance.now();
  const first = await gate.enter();
  started.push(performance.now() - t0);
  const second = await gate.enter();
  started.push(performance.now() - t0);
  // Two are open: the third waits for a release, however long past the delay.
  let thirdIn = false;
  const third = gate.enter().then((release) => {
    thirdIn = true;
    started.push(performance.now() - t0);
    return release;
  });
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal(thirdIn, false, 'a third request waits while two are open');
  first();
  first(); // releasing twice frees one place, not two
  (await third)();
  assert.ok(started[1]! - started[0]! >= 100 - 2, `the second started ${started[1]! - started[0]!} ms after the first`);
  assert.ok(started[2]! >= 300);

  // A Retry-After holds the host: the next request waits for it.
  gate.holdUntil(Date.now() + 400);
  const held = performance.now();
  second();
  (await gate.enter())();
  assert.ok(performance.now() - held >= 400 - 2);

  // A request stopped while it waits for its turn rejects, and the one behind it still enters.
  const busy = new HostGate(0, 1);
  const holder = await busy.enter();
  const stop = new AbortController();
  const stopped = busy.enter(stop.signal);
  const behind = busy.enter();
  stop.abort(new Error('stopped'));
  await assert.rejects(stopped, /stopped/);
  holder();
  (await behind)();
});
