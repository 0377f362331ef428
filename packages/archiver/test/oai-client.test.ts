import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { text } from 'node:stream/consumers';
import { after, test } from 'node:test';
import { deflateSync, gzipSync } from 'node:zlib';
import { OaiClient } from '../src/oai/oai-client.ts';
import { isRetryableStatus, parseRetryAfter, retryDelayMs } from '../src/oai/retry-policy.ts';

const FAST = { retries: 3, baseDelayMs: 5, maxDelayMs: 50 };
const servers: Server[] = [];
after(() => Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve)))));

/** A server that answers with `plan[i]` for the i-th request (the last one repeats). */
async function scripted(plan: Array<(req: IncomingMessage, res: ServerResponse) => void>): Promise<{ url: string; seen: IncomingMessage[] }> {
  const seen: IncomingMessage[] = [];
  const server = createServer((req, res) => {
    seen.push(req);
    plan[Math.min(seen.length - 1, plan.length - 1)]!(req, res);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/oai`, seen };
}

const ok = (body: string) => (_req: IncomingMessage, res: ServerResponse) => res.end(body);

test('503 with Retry-After, 500 and a reset connection are retried until the answer comes', async () => {
  const { url, seen } = await scripted([
    (_req, res) => {
      res.writeHead(503, { 'Retry-After': '0' });
      res.end();
    },
    (_req, res) => {
      res.writeHead(500);
      res.end();
    },
    (req) => req.socket.destroy(),
    ok('<OAI-PMH/>'),
  ]);
  const retries: string[] = [];
  const client = new OaiClient(url, { retry: FAST, onRetry: (info) => retries.push(info.reason) });
  try {
    const response = await client.oai({ verb: 'Identify' });
    assert.equal(await text(response.body), '<OAI-PMH/>');
    assert.equal(seen.length, 4);
    assert.equal(client.requests, 4);
    // Each retry names the request it repeats (the URL cut for a message) and why.
    assert.deepEqual(retries.slice(0, 2), [`Identify ${url}?verb=Identify: HTTP 503`, `Identify ${url}?verb=Identify: HTTP 500`]);
    assert.equal(new URL(seen[0]!.url!, 'http://x').searchParams.get('verb'), 'Identify');
  } finally {
    await client.close();
  }
});

test('a status that is not transient fails at once with a coded error', async () => {
  const { url, seen } = await scripted([
    (_req, res) => {
      res.writeHead(404);
      res.end();
    },
  ]);
  const client = new OaiClient(url, { retry: FAST });
  try {
    await assert.rejects(client.oai({ verb: 'Identify' }), { code: 'ERR_HARVEST_PROTOCOL', message: /HTTP 404/ });
    assert.equal(seen.length, 1);
  } finally {
    await client.close();
  }
});

test('giving up after the retries names the URL, the attempts and the last reason', async () => {
  const { url, seen } = await scripted([
    (_req, res) => {
      res.writeHead(502);
      res.end();
    },
  ]);
  const client = new OaiClient(url, { retry: FAST });
  try {
    await assert.rejects(client.oai({ verb: 'Identify' }), { code: 'ERR_HARVEST_UNREACHABLE', message: /failed after 4 attempts: HTTP 502/ });
    assert.equal(seen.length, 4);
  } finally {
    await client.close();
  }
});

const IDENTIFY =
  '<?xml version="1.0"?>\n<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><Identify><repositoryName>r</repositoryName></Identify></OAI-PMH>\n';

test('oaiText: a body reset mid-way, a document cut short and a broken gzip stream are asked for again', async () => {
  const { url, seen } = await scripted([
    (_req, res) => {
      // Headers and half the body, then the connection reset.
      res.writeHead(200, { 'Content-Type': 'text/xml' });
      res.write(IDENTIFY.slice(0, 60));
      setTimeout(() => res.socket?.resetAndDestroy(), 10);
    },
    (_req, res) => res.end(IDENTIFY.slice(0, 80)), // ends cleanly, but before </OAI-PMH>
    (_req, res) => {
      res.writeHead(200, { 'Content-Encoding': 'gzip' });
      res.end(gzipSync(IDENTIFY).subarray(0, 40)); // a gzip stream without its end
    },
    ok(IDENTIFY),
  ]);
  const retries: string[] = [];
  const client = new OaiClient(url, { retry: FAST, onRetry: (info) => retries.push(info.reason) });
  try {
    assert.equal(await client.oaiText({ verb: 'Identify' }, 1 << 20), IDENTIFY);
    assert.equal(seen.length, 4);
    assert.equal(retries.length, 3);
    assert.match(retries[1]!, /ended before <\/OAI-PMH>/);
  } finally {
    await client.close();
  }
});

test('oaiText: broken every time, a coded error naming the verb, the URL and the attempts; an HTML page is not retried', async () => {
  const broken = await scripted([(_req, res) => res.end(IDENTIFY.slice(0, 80))]);
  const client = new OaiClient(broken.url, { retry: FAST });
  try {
    await assert.rejects(client.oaiText({ verb: 'ListMetadataFormats' }, 1 << 20), {
      code: 'ERR_HARVEST_UNREACHABLE',
      message: new RegExp(`^ListMetadataFormats of ${broken.url.replace(/[.?]/g, '\\$&')} failed after 4 attempts: the response ended before </OAI-PMH>$`),
    });
    assert.equal(broken.seen.length, 4);
  } finally {
    await client.close();
  }
  const html = await scripted([ok('<html><body>not a repository</body></html>')]);
  const other = new OaiClient(html.url, { retry: FAST });
  try {
    assert.equal(await other.oaiText({ verb: 'Identify' }, 1 << 20), '<html><body>not a repository</body></html>');
    assert.equal(html.seen.length, 1, 'an answer that is not OAI-PMH is left to the caller, not asked for again');
  } finally {
    await other.close();
  }
});

test('a gzip body that breaks off before anyone reads it (a prefetched page): the reader gets the error, the process goes on', async () => {
  const thrown: unknown[] = [];
  const record = (error: unknown): void => void thrown.push(error);
  process.on('uncaughtException', record);
  try {
    const { url } = await scripted([
      (_req, res) => {
        res.writeHead(200, { 'Content-Encoding': 'gzip' });
        res.end(gzipSync(IDENTIFY.repeat(50)).subarray(0, 100));
      },
    ]);
    const client = new OaiClient(url, { retry: FAST });
    try {
      const response = await client.oai({ verb: 'ListRecords', metadataPrefix: 'oai_didl' });
      await new Promise((resolve) => setTimeout(resolve, 100)); // the inflater fails meanwhile, unread
      await assert.rejects(text(response.body), { code: 'Z_BUF_ERROR' });
    } finally {
      await client.close();
    }
    assert.deepEqual(thrown, []);
  } finally {
    process.off('uncaughtException', record);
  }
});

test('gzip and deflate bodies are decoded; credentials and Accept-Encoding are sent', async () => {
  const { url, seen } = await scripted([
    (_req, res) => {
      res.writeHead(200, { 'Content-Encoding': 'gzip' });
      res.end(gzipSync('gzipped page'));
    },
    (_req, res) => {
      res.writeHead(200, { 'Content-Encoding': 'deflate' });
      res.end(deflateSync('deflated page'));
    },
  ]);
  const client = new OaiClient(url, { retry: FAST, credentials: { user: 'alice', password: 'pässword' }, compression: 'always' });
  try {
    assert.equal(await text((await client.oai({ verb: 'ListSets' })).body), 'gzipped page');
    assert.equal(await text((await client.oai({ verb: 'ListSets' })).body), 'deflated page');
    assert.match(String(seen[0]!.headers['accept-encoding']), /gzip/);
    assert.equal(seen[0]!.headers.authorization, `Basic ${Buffer.from('alice:pässword').toString('base64')}`);
  } finally {
    await client.close();
  }
});

test('compression: auto asks a repository on this machine or its network for identity, a public one for gzip; always and never are obeyed', async () => {
  const { url, seen } = await scripted([(_req, res) => res.end('page 1'), (_req, res) => res.end('page 2')]);
  const local = new OaiClient(url, { retry: FAST });
  const never = new OaiClient(url, { retry: FAST, compression: 'never' });
  // Names resolved by the injected resolver only: no request is sent to them.
  const publicHost = new OaiClient('http://repository.example/oai', { resolveHost: async () => [{ address: '93.184.216.34', family: 4 }] });
  const privateHost = new OaiClient('http://repository.lan/oai', { resolveHost: async () => [{ address: '192.168.1.20', family: 4 }] });
  const forced = new OaiClient('http://repository.lan/oai', { resolveHost: async () => [{ address: '192.168.1.20', family: 4 }], compression: 'always' });
  try {
    assert.equal(await text((await local.oai({ verb: 'Identify' })).body), 'page 1');
    assert.equal(seen[0]!.headers['accept-encoding'], 'identity', 'loopback: not compressed');
    assert.equal(await text((await never.oai({ verb: 'Identify' })).body), 'page 2');
    assert.equal(seen[1]!.headers['accept-encoding'], 'identity');
    assert.equal(await publicHost.acceptEncoding(), 'gzip, deflate', 'a public repository: compressed');
    assert.equal(await privateHost.acceptEncoding(), 'identity', 'a repository on the local network: not compressed');
    assert.equal(await forced.acceptEncoding(), 'gzip, deflate');
  } finally {
    for (const client of [local, never, publicHost, privateHost, forced]) await client.close();
  }
});

test('retry delays: Retry-After honoured and capped, otherwise exponential backoff', () => {
  const policy = { retries: 5, baseDelayMs: 1000, maxDelayMs: 60_000 };
  assert.equal(retryDelayMs(1, policy, '7'), 7000);
  assert.equal(retryDelayMs(1, policy, '86400'), 60_000, 'a day-long Retry-After is capped');
  const now = Date.UTC(2026, 0, 1);
  assert.equal(retryDelayMs(1, policy, new Date(now + 30_000).toUTCString(), now), 30_000);
  assert.equal(
    retryDelayMs(3, policy, undefined, now, () => 0),
    4000,
  );
  assert.equal(
    retryDelayMs(20, policy, undefined, now, () => 0),
    60_000,
  );
  assert.equal(parseRetryAfter('soon'), undefined);
  assert.equal(parseRetryAfter('12345678'.slice(0, 2)), 12_000);
  assert.deepEqual([429, 500, 503, 408, 404, 400, 501].map(isRetryableStatus), [true, true, true, true, false, false, false]);
});

test('an OAI-PMH request that is redirected is not followed: the error names where to, the hint the new base URL', async () => {
  const { url } = await scripted([
    (_req, res) => {
      res.writeHead(301, { location: 'https://new.example/oai?verb=Identify' });
      res.end();
    },
  ]);
  const client = new OaiClient(url, { retry: FAST });
  try {
    await assert.rejects(client.oai({ verb: 'Identify' }), (error: Error & { code?: string; hint?: string }) => {
      assert.equal(error.code, 'ERR_HARVEST_PROTOCOL');
      assert.match(error.message, /answered HTTP 301 \(to https:\/\/new\.example\/oai\?verb=Identify\)$/);
      assert.equal(error.hint, 'if the repository moved, harvest its new base URL (https://new.example/oai)');
      return true;
    });
  } finally {
    await client.close();
  }
});

test('a datastream on another origin that asks for a password: the hint says the credentials stay with the repository', async () => {
  const files = await scripted([
    (req, res) => {
      res.writeHead(req.headers.authorization ? 200 : 401);
      res.end('secret');
    },
  ]);
  const repository = await scripted([
    (_req, res) => {
      res.writeHead(302, { location: files.url.replace('/oai', '/file') });
      res.end();
    },
  ]);
  const client = new OaiClient(repository.url, { retry: FAST, credentials: { user: 'u', password: 'p' } });
  try {
    await assert.rejects(
      client.getDatastream(new URL(repository.url.replace('/oai', '/bitstream/1')), 'the datastream'),
      (error: Error & { code?: string; hint?: string }) => {
        assert.equal(error.code, 'ERR_HARVEST_UNREACHABLE');
        assert.match(error.hint ?? '', /credentials go only to the repository's origin http:\/\/127\.0\.0\.1:\d+, not to http:\/\/127\.0\.0\.1:\d+$/);
        return true;
      },
    );
    assert.equal(repository.seen[0]!.headers.authorization, `Basic ${Buffer.from('u:p').toString('base64')}`);
    assert.equal(files.seen[0]!.headers.authorization, undefined);
  } finally {
    await client.close();
  }
});

test('a repository that never answered: a refused connection fails at once; once it answered, it is retried (issue 25)', async () => {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(probe.address() as AddressInfo).port}/oai`;
  await new Promise((resolve) => probe.close(resolve));
  const retries: string[] = [];
  const fresh = new OaiClient(url, { retry: FAST, onRetry: (info) => retries.push(info.reason) });
  try {
    await assert.rejects(fresh.oai({ verb: 'Identify' }), (error: Error & { code?: string }) => {
      assert.equal(error.code, 'ERR_HARVEST_UNREACHABLE');
      assert.match(error.message, /^Identify \S+verb=Identify: 127\.0\.0\.1:\d+ refused the connection \(ECONNREFUSED\)$/);
      return true;
    });
    assert.equal(retries.length, 0, retries.join('; '));
    assert.equal(fresh.requests, 1);
  } finally {
    await fresh.close();
  }
  const known = new OaiClient(url, { retry: FAST, answeredBefore: true, onRetry: (info) => retries.push(info.reason) });
  try {
    await assert.rejects(known.oai({ verb: 'Identify' }), /failed after 4 attempts: connect ECONNREFUSED/);
    assert.equal(retries.length, 3);
  } finally {
    await known.close();
  }
});

test('a name that does not resolve fails at once for a repository that never answered (issue 25)', async () => {
  const client = new OaiClient('http://no-such-host.invalid/oai', { retry: FAST });
  try {
    await assert.rejects(client.oai({ verb: 'ListMetadataFormats' }), (error: Error & { code?: string }) => {
      assert.equal(error.code, 'ERR_HARVEST_UNREACHABLE');
      assert.match(error.message, /^ListMetadataFormats \S+: the host name no-such-host\.invalid does not resolve \((ENOTFOUND|EAI_AGAIN)\)$/);
      return true;
    });
    assert.equal(client.requests, 1);
  } finally {
    await client.close();
  }
});

test('a base URL that is not an absolute http(s) URL is ERR_ARCHIVE_USAGE, not a TypeError (issue 25)', () => {
  for (const bad of ['127.0.0.1:8080/oai', 'ftp://example.org/oai', 'example.org', 'http://u:p@example.org/oai']) {
    assert.throws(
      () => new OaiClient(bad),
      (error: Error & { code?: string }) => error.code === 'ERR_ARCHIVE_USAGE',
      bad,
    );
  }
});
