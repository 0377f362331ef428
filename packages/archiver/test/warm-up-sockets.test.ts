// The requests serve sends itself before it listens (serve/warm-up-sockets.ts): answered by the
// server's own handler over in-process connections, known to it by their socket (a client's
// request never is), bounded in time, the end of a long answer kept for its token.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { WarmUpSockets } from '../src/serve/warm-up-sockets.ts';

test('a warm-up request reaches the handler as one, with its grant; a client request over TCP does not', async () => {
  const warmUps = new WarmUpSockets<string>();
  const seen: Array<{ url: string | undefined; warmUp: boolean; grant: string | undefined }> = [];
  const server = createServer((req: IncomingMessage, res) => {
    seen.push({ url: req.url, warmUp: warmUps.isWarmUp(req), grant: warmUps.grantOf(req) });
    res.writeHead(200, { 'Content-Type': 'text/xml' });
    // A long answer in many writes (chunked), its token at the very end.
    for (let n = 0; n < 200; n++) res.write(`<record>${'x'.repeat(10_000)}</record>\n`);
    res.end('<resumptionToken cursor="0">AQ-_z9</resumptionToken></ListRecords>');
  });
  try {
    const answer = await warmUps.get(server, '/oai?verb=ListRecords&metadataPrefix=oai_didl', 'the budget');
    assert.equal(answer.status, 200);
    assert.ok(answer.tail.length <= 64 * 1024, 'only the end of a 2 MB answer is kept');
    assert.match(answer.tail, /<resumptionToken cursor="0">AQ-_z9<\/resumptionToken><\/ListRecords>$/);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const response = await fetch(`http://127.0.0.1:${port}/oai?verb=Identify`, { headers: { host: 'warm-up' } });
    await response.arrayBuffer();
    assert.deepEqual(seen, [
      { url: '/oai?verb=ListRecords&metadataPrefix=oai_didl', warmUp: true, grant: 'the budget' },
      { url: '/oai?verb=Identify', warmUp: false, grant: undefined },
    ]);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test('a warm-up request the server never answers gives up after its time, and its connection is closed', async () => {
  const warmUps = new WarmUpSockets<null>();
  let closed = false;
  const server = createServer((req, res) => {
    res.writeHead(200);
    res.write('started, never ended');
    req.socket.on('close', () => {
      closed = true;
    });
  });
  const started = Date.now();
  await assert.rejects(warmUps.get(server, '/oai?verb=ListRecords', null, 200), /the warm-up request took too long/);
  assert.ok(Date.now() - started < 5000);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(closed, true, "the server's side of the connection is closed");
});

test('a server that refuses the warm-up: its status is told, not thrown', async () => {
  const warmUps = new WarmUpSockets<null>();
  const server = createServer((_req, res) => {
    res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="archive"' });
    res.end('who are you?\n');
  });
  assert.deepEqual(await warmUps.get(server, '/oai?verb=ListRecords', null), { status: 401, tail: 'who are you?\n' });
});
