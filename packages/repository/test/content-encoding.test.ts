/**
 * Response compression: the Accept-Encoding decision as a table, then a real node:http
 * server that negotiates and writes through encodeResponse, checked by decoding the bytes
 * a node:http client receives.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { after, before, describe, test } from 'node:test';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { gunzipSync, inflateRawSync, inflateSync } from 'node:zlib';
import { createAdaptiveCompressor, isBase64Text } from '../src/http/adaptive-compressor.ts';
import { type ContentEncoding, encodeResponse, negotiateContentEncoding } from '../src/http/content-encoding.ts';

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
const BODY = Buffer.from(Array.from({ length: 4000 }, (_, i) => `<record n="${i}">Café ☕ ${i % 17}</record>\n`).join(''), 'utf8');

/** base64 lines of 76 characters, as the DIDL writer yields them. */
function base64Lines(bytes: Buffer): string {
  return `${(bytes.toString('base64').match(/.{1,76}/g) ?? []).join('\n')}\n`;
}

/** Markup and large base64 chunks in turn, as an oai_didl page is written: each switch of strategy is crossed. */
const MIXED: string[] = [];
for (let i = 0; i < 6; i++) {
  MIXED.push(`<record n="${i}"><didl:Resource mimeType="application/pdf" encoding="base64">\n`);
  MIXED.push(base64Lines(randomBytes(20_000 + i * 7_001)));
  MIXED.push('</didl:Resource></record>\n', BODY.subarray(0, 3000).toString('utf8'));
}

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
    if (req.url === '/mixed') {
      pipeline(Readable.from(MIXED, { objectMode: false }), out).catch((error: unknown) => handlerErrors.push(error));
      return;
    }
    if (req.url === '/endless' || req.url === '/endless-base64') {
      // Writes until the client leaves; the pipeline must then stop instead of compressing on.
      const chunk = req.url === '/endless' ? BODY : Buffer.from(base64Lines(randomBytes(300_000)));
      const endless = Readable.from(
        (function* () {
          for (;;) yield chunk;
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

  for (const path of ['/endless', '/endless-base64']) {
    test(`a client leaving mid-body stops the compressing writer, and the server goes on (${path})`, async () => {
      clientLeft = undefined;
      await new Promise<void>((resolve) => {
        const req = request({ host: '127.0.0.1', port, path, headers: { 'Accept-Encoding': 'gzip' }, agent: false }, (res) => {
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
  }

  test('markup and base64 in turn: both codings decode to the exact body; markup still shrinks with LZ77', async () => {
    const expected = Buffer.from(MIXED.join(''), 'utf8');
    for (const [coding, decode] of [
      ['gzip', gunzipSync],
      ['deflate', inflateSync],
    ] as const) {
      const reply = await fetchRaw('/mixed', { 'Accept-Encoding': coding });
      assert.equal(reply.headers['content-encoding'], coding);
      assert.ok(decode(reply.body).equals(expected), `${coding} round trip`);
      // Random bytes in base64 shrink to about 3/4 (6 bits a character) and no further.
      assert.ok(reply.body.length < expected.length * 0.8, `${coding}: ${reply.body.length} of ${expected.length}`);
    }
    const markup = await fetchRaw('/', { 'Accept-Encoding': 'gzip' });
    assert.ok(markup.body.length < BODY.length / 10, `repetitive markup compressed to ${markup.body.length} of ${BODY.length}: LZ77 was not used`);
  });
});

test('isBase64Text: long runs of base64 lines only, judged by both ends', () => {
  const lines = Buffer.from(base64Lines(randomBytes(6000)));
  assert.equal(isBase64Text(lines), true);
  assert.equal(isBase64Text(lines.subarray(0, 4000)), false, 'shorter than 4096 bytes: not worth a switch');
  assert.equal(isBase64Text(Buffer.concat([Buffer.from('<didl:Resource>'), lines])), false, 'markup at the start');
  assert.equal(isBase64Text(Buffer.concat([lines, Buffer.from('</didl:Resource>\n')])), false, 'markup at the end');
  assert.equal(isBase64Text(Buffer.from(BODY.subarray(0, 8000))), false);
});

test('the response closing while the strategy switches: the writer stops, nothing is thrown', async () => {
  // Node's params() asserts that the zlib handle is open when its flush completes. Destroying
  // the deflater in between threw ERR_INTERNAL_ASSERTION from a callback and killed the server.
  const thrown: unknown[] = [];
  const record = (error: unknown): void => void thrown.push(error);
  process.on('uncaughtException', record);
  try {
    const markup = BODY.subarray(0, 2000);
    const base64 = Buffer.from(base64Lines(randomBytes(30_000)));
    for (const encoding of ['gzip', 'deflate'] as const) {
      for (let turns = 0; turns < 6; turns++) {
        const { input, output } = createAdaptiveCompressor(encoding);
        const inputError = new Promise<unknown>((resolve) => input.once('error', resolve));
        output.on('error', () => {});
        output.resume();
        input.write(markup);
        input.write(base64); // the switch to Huffman coding starts once the markup is taken
        input.write(markup); // and back
        for (let i = 0; i < turns; i++) await nextTurn();
        output.destroy();
        assert.equal(((await inputError) as { code?: string }).code, 'ERR_STREAM_PREMATURE_CLOSE', `${encoding}, ${turns} turns`);
      }
    }
    await sleep(200); // every flush that was waiting has completed by now
    assert.deepEqual(thrown, []);
  } finally {
    process.off('uncaughtException', record);
  }
});
