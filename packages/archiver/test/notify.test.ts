// Notifications never stop what sends them, whatever the command or the URL does: a command that
// hangs is killed with what it started, one that fails or ignores its input is one log line, a
// URL that never answers or answers 500 is one log line.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { type Notice, sendNotice } from '../src/health/notify.ts';

const NOTICE: Notice = {
  event: 'harvest',
  archive: '/srv/archive',
  source: 'https://www.example.org/oai',
  outcome: 'failed',
  reason: 'it did not answer [ERR_HARVEST_UNREACHABLE]',
  at: '2026-11-26T02:00:00.000Z',
};

test('the command gets the notice as JSON on its input and in OAIBAG_* variables', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'oaibag-notify-'));
  try {
    const lines: string[] = [];
    await sendNotice(NOTICE, {
      onFailure: `cat > '${dir}/in.json'; printf '%s|%s|%s' "$OAIBAG_SOURCE" "$OAIBAG_OUTCOME" "$OAIBAG_REASON" > '${dir}/env'`,
      log: (line) => lines.push(line),
    });
    assert.deepEqual(JSON.parse(readFileSync(join(dir, 'in.json'), 'utf8')), NOTICE);
    assert.equal(readFileSync(join(dir, 'env'), 'utf8'), `${NOTICE.source}|failed|${NOTICE.reason}`);
    assert.deepEqual(lines, []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a command that hangs is killed at the timeout with what it started; one that fails is one line with its output', async () => {
  const lines: string[] = [];
  const started = Date.now();
  // The shell starts a child that would outlive it: the whole process group is ended.
  await sendNotice(NOTICE, { onFailure: 'sleep 30 & sleep 30', timeoutMs: 500, log: (line) => lines.push(line) });
  assert.ok(Date.now() - started < 10_000, 'not waited for');
  assert.deepEqual(lines, ['--on-failure: the command took longer than 0.5 s; stopped']);
  lines.length = 0;
  await sendNotice(NOTICE, { onFailure: 'echo "no mail server" >&2; exit 3', log: (line) => lines.push(line) });
  assert.deepEqual(lines, ['--on-failure: the command exited with 3: no mail server']);
});

test('a command that never reads its input, given a large notice, is no error', async () => {
  const lines: string[] = [];
  await sendNotice({ ...NOTICE, reason: 'x'.repeat(1_000_000) }, { onFailure: 'exit 0', log: (line) => lines.push(line) });
  assert.deepEqual(lines, []);
});

test('a URL that never answers is abandoned at the timeout; a 500 is one line; the body is POSTed as JSON', async () => {
  const received: Array<{ type: string | undefined; body: string }> = [];
  let mode: 'hang' | 'fail' | 'ok' = 'hang';
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      received.push({ type: req.headers['content-type'], body });
      if (mode === 'hang') return;
      res.writeHead(mode === 'fail' ? 500 : 204).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  try {
    const lines: string[] = [];
    await sendNotice(NOTICE, { notifyUrl: url, timeoutMs: 500, log: (line) => lines.push(line) });
    assert.equal(lines.length, 1);
    assert.match(lines[0]!, /^--notify: cannot POST to http:\/\/127\.0\.0\.1:\d+\/hook: /);
    mode = 'fail';
    lines.length = 0;
    await sendNotice(NOTICE, { notifyUrl: url, log: (line) => lines.push(line) });
    assert.deepEqual(lines, [`--notify: ${url} answered HTTP 500`]);
    mode = 'ok';
    lines.length = 0;
    await sendNotice(NOTICE, { notifyUrl: url, log: (line) => lines.push(line) });
    assert.deepEqual(lines, []);
    assert.deepEqual(JSON.parse(received.at(-1)!.body), NOTICE);
    assert.equal(received.at(-1)!.type, 'application/json');
  } finally {
    server.closeAllConnections();
    server.close();
  }
});
