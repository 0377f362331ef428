/**
 * Response compression: the Accept-Encoding decision as a table, then a real node:http
 * server that negotiates and writes through encodeResponse, checked by decoding the bytes
 * a node:http client receives.
 */
import assert from 'node:assert/strict';
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { after, before, describe, test } from 'node:test';
import { gunzipSync, inflateRawSync, inflateSync } from 'node:zlib';
import { encodeResponse, negotiateContentEncoding, type ContentEncoding } from '../src/content-encoding.ts';

test('negotiateContentEncoding', () => {
  const table: Array<[string | undefined, ContentEncoding]> = [
    [undefined, 'identity'],
    ['', 'identity'],
    ['gzip', 'gzip'],
    ['deflate', 'deflate'],
    ['gzip, deflate', 'gzip'],
    ['deflate, gzip', 'gzip'],
    ['deflate;q=1.0, gzip;q=1', 'gzip'],
    ['GZIP', 'gzip'],
    ['Deflate', 'deflate'],
    ['x-gzip', 'gzip'],
    ['br', 'identity'],
    ['br, deflate', 'deflate'],
    ['gzip;q=0.5, deflate;q=0.8', 'deflate'],
    ['gzip;q=0.8, deflate;q=0.5', 'gzip'],
    ['gzip ; q=0.9 , deflate ; Q=0.3', 'gzip'],
    ['gzip;q=0, deflate', 'deflate'],
    ['gzip;q=0, deflate;q=0', 'identity'],
    ['gzip;q=0.000', 'identity'],
    ['gzip;q=0.001', 'gzip'],
    ['*', 'gzip'],
    ['*;q=0.5', 'gzip'],
    ['*;q=0', 'identity'],
    ['gzip;q=0, *', 'deflate'],
    ['*, gzip;q=0, deflate;q=0', 'identity'],
    ['identity', 'identity'],
    ['identity, gzip', 'gzip'],
    ['identity, gzip;q=0.5', 'identity'],
    ['identity;q=0.4, gzip;q=0.5', 'gzip'],
    ['gzip;q=0.5', 'gzip'],
    ['identity;q=0', 'identity'],
    ['identity;q=0, br', 'identity'],
    ['gzip;q=2, deflate', 'deflate'],
    ['gzip;q=abc, deflate', 'deflate'],
    ['gzip;q=0.5000, deflate;q=0.1', 'deflate'],
    ['gzip;q=, deflate;q=0.1', 'deflate'],
    ['gzip;level=9', 'gzip'],
    [',,gzip,,', 'gzip'],
  ];
  for (const [header, expected] of table) {
    assert.equal(negotiateContentEncoding(header), expected, JSON.stringify(header));
  }
});

/** A body long and repetitive enough to compress, with non-ASCII text to check bytes. */
const BODY = Buffer.from(
  Array.from({ length: 4000 }, (_, i) => `<record n="${i}">Café ☕ ${i % 17}</record>\n`).join(''),
  'utf8',
);

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

let server: Server;
let port: number;
const handlerErrors: unknown[] = [];
let clientLeft: Promise<void> | undefined;

function fetchRaw(path: string, headers: Record<string, string>): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

before(async () => {
  server = createServer((req, res) => {
    const encoding = negotiateContentEncoding(req.headers['accept-encoding']);
    res.setHeader('Content-Type', 'text/xml; charset=utf-8');
    // A length set before compression is chosen must not survive it.
    res.setHeader('Content-Length', String(BODY.length));
    if (req.url === '/vary') res.setHeader('Vary', 'Origin');
    const out = encodeResponse(res, encoding);
    if (req.url === '/endless') {
      // Writes until the client leaves; the pipeline must then stop instead of compressing on.
      const endless = Readable.from(
        (function* () {
          for (;;) yield BODY;
        })(),
      );
      clientLeft = pipeline(endless, out).then(
        () => assert.fail('an endless body ended'),
        () => undefined,
      );
      return;
    }
    pipeline(Readable.from([BODY.subarray(0, 1000), BODY.subarray(1000)]), out).catch((error: unknown) => handlerErrors.push(error));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  assert.deepEqual(handlerErrors, []);
});

describe('encodeResponse', { timeout: 30_000 }, () => {
  test('gzip: Content-Encoding and Vary set, Content-Length gone, the body gunzips to the original', async () => {
    const reply = await fetchRaw('/', { 'Accept-Encoding': 'gzip' });
    assert.equal(reply.status, 200);
    assert.equal(reply.headers['content-encoding'], 'gzip');
    assert.equal(reply.headers.vary, 'Accept-Encoding');
    assert.equal(reply.headers['content-length'], undefined);
    assert.equal(reply.headers['content-type'], 'text/xml; charset=utf-8');
    assert.ok(reply.body.length < BODY.length);
    assert.ok(gunzipSync(reply.body).equals(BODY));
  });

  test('deflate: the body is the zlib format (RFC 1950), not raw deflate', async () => {
    const reply = await fetchRaw('/', { 'Accept-Encoding': 'deflate' });
    assert.equal(reply.headers['content-encoding'], 'deflate');
    assert.equal(reply.headers.vary, 'Accept-Encoding');
    assert.equal(reply.headers['content-length'], undefined);
    assert.ok(inflateSync(reply.body).equals(BODY));
    assert.throws(() => inflateRawSync(reply.body));
  });

  test('identity: the body as written, its Content-Length kept, Vary still set', async () => {
    const reply = await fetchRaw('/', { 'Accept-Encoding': 'gzip;q=0, deflate;q=0' });
    assert.equal(reply.headers['content-encoding'], undefined);
    assert.equal(reply.headers.vary, 'Accept-Encoding');
    assert.equal(reply.headers['content-length'], String(BODY.length));
    assert.ok(reply.body.equals(BODY));
  });

  test('Vary: Accept-Encoding is added to a Vary already set', async () => {
    const reply = await fetchRaw('/vary', { 'Accept-Encoding': 'gzip' });
    assert.equal(reply.headers.vary, 'Origin, Accept-Encoding');
    assert.ok(gunzipSync(reply.body).equals(BODY));
  });

  test('a client leaving mid-body stops the compressing writer, and the server goes on', async () => {
    clientLeft = undefined;
    await new Promise<void>((resolve) => {
      const req = request({ host: '127.0.0.1', port, path: '/endless', headers: { 'Accept-Encoding': 'gzip' }, agent: false }, (res) => {
        assert.equal(res.headers['content-encoding'], 'gzip');
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.on('error', () => {});
      req.end();
    });
    await clientLeft;
    const reply = await fetchRaw('/', { 'Accept-Encoding': 'deflate' });
    assert.ok(inflateSync(reply.body).equals(BODY));
  });
});
