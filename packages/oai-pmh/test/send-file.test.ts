/**
 * The static file response: a real node:http server on 127.0.0.1 serves real temp files
 * through sendFile, and node:http requests (not fetch, so every header is exactly what the
 * test sends) check status, headers and bytes. Then the pure parts (range, HTTP-date) as tables.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { type FileHandle, mkdtemp, open, rm, truncate, utimes, writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileHeaders } from '../src/file-headers.ts';
import { parseHttpDate, parseRange, planFileResponse, type SendableFile, sendFile } from '../src/send-file.ts';

/** Last-Modified of every fixture: a fraction, so whole-second comparison is exercised. */
const MTIME = 1_700_000_000.75;
const MTIME_SECONDS = 1_700_000_000;
const LAST_MODIFIED = new Date(MTIME_SECONDS * 1000).toUTCString();

const SMALL = Buffer.from(Array.from({ length: 1000 }, (_, i) => (i * 7 + 3) % 256));
const PATTERN = createHash('sha256').update('seed').digest().subarray(0, 16);

interface Fixture {
  path: string;
  sha256: string;
}

interface Served {
  /** How sendFile ended: resolved, or the error it rejected with. */
  outcome: 'resolved' | Error;
  /** Whether the response was finished (false when the client left or the body was cut). */
  finished: boolean;
  /** Bytes read from the handle during the request. */
  bytesRead: number;
  /** The most the response held unsent when a read began. */
  maxBuffered: number;
  highWaterMark: number;
}

interface Reply {
  status?: number | undefined;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** True only when the whole message arrived (IncomingMessage.complete). */
  complete: boolean;
  error?: Error;
}

let dir: string;
let server: Server;
let port: number;
const fixtures = new Map<string, Fixture>();
/** Per path: something to do to the file after it was opened, before sendFile runs. */
const beforeSend = new Map<string, (handle: FileHandle) => Promise<void>>();
const served: Served[] = [];
const servedWaiters: Array<(served: Served) => void> = [];

async function addFixture(name: string, content: Buffer): Promise<Fixture> {
  const path = join(dir, name);
  await writeFile(path, content);
  await utimes(path, MTIME, MTIME);
  const fixture = { path, sha256: createHash('sha256').update(content).digest('hex') };
  fixtures.set(`/${name}`, fixture);
  return fixture;
}

/** The facts the lead's server derives from the index and fstat, here from the real file. */
async function sendable(handle: FileHandle, fixture: Fixture): Promise<SendableFile> {
  const stat = await handle.stat({ bigint: true });
  const headers = fileHeaders({ mimeType: 'application/octet-stream', size: Number(stat.size), mtimeNs: stat.mtimeNs, sha256: fixture.sha256 });
  return {
    handle,
    size: Number(stat.size),
    headers,
    etag: headers.find((field) => field.name === 'ETag')!.value,
    lastModifiedSeconds: Number(stat.mtimeNs / 1_000_000_000n),
  };
}

/**
 * Counts the bytes read through the handle and notes how much the response held unsent
 * whenever a read began: with backpressure a read only starts once the response has
 * drained below its high-water mark, so memory does not grow with the file.
 */
function countingHandle(handle: FileHandle, counter: { bytes: number; maxBuffered: number }, res: ServerResponse): FileHandle {
  return new Proxy(handle, {
    get(target, property) {
      if (property === 'read') {
        return async (...args: unknown[]) => {
          counter.maxBuffered = Math.max(counter.maxBuffered, res.writableLength);
          const result = await (target.read as (...a: unknown[]) => Promise<{ bytesRead: number }>).apply(target, args);
          counter.bytes += result.bytesRead;
          return result;
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

async function handle(req: Parameters<typeof sendFile>[0], res: ServerResponse): Promise<void> {
  const fixture = fixtures.get(req.url ?? '');
  if (fixture === undefined) {
    res.statusCode = 404;
    res.end();
    return;
  }
  const fileHandle = await open(fixture.path, 'r');
  const counter = { bytes: 0, maxBuffered: 0 };
  try {
    const file = await sendable(fileHandle, fixture);
    await beforeSend.get(req.url ?? '')?.(fileHandle);
    let outcome: Served['outcome'] = 'resolved';
    try {
      await sendFile(req, res, { ...file, handle: countingHandle(fileHandle, counter, res) });
    } catch (error) {
      outcome = error as Error;
    }
    const record = {
      outcome,
      finished: res.writableFinished,
      bytesRead: counter.bytes,
      maxBuffered: counter.maxBuffered,
      highWaterMark: res.writableHighWaterMark,
    };
    const waiter = servedWaiters.shift();
    if (waiter) waiter(record);
    else served.push(record);
  } finally {
    await fileHandle.close().catch(() => {});
  }
}

function nextServed(): Promise<Served> {
  const ready = served.shift();
  if (ready) return Promise.resolve(ready);
  return new Promise((resolve) => servedWaiters.push(resolve));
}

/** One request on its own connection. `onData` may abort; the reply then says what arrived. */
function fetchRaw(path: string, options: { method?: string; headers?: Record<string, string>; onData?: (abort: () => void) => void } = {}): Promise<Reply> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const reply: Reply = { headers: {}, body: Buffer.alloc(0), complete: false };
    const finish = (): void => {
      reply.body = Buffer.concat(chunks);
      resolve(reply);
    };
    const req = request({ host: '127.0.0.1', port, path, method: options.method ?? 'GET', headers: options.headers ?? {}, agent: false });
    req.on('error', (error) => {
      reply.error ??= error;
      if (reply.status === undefined) finish();
    });
    req.on('response', (res) => {
      reply.status = res.statusCode;
      reply.headers = res.headers;
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        options.onData?.(() => req.destroy());
      });
      res.on('error', (error) => {
        reply.error ??= error;
      });
      res.on('close', () => {
        reply.complete = res.complete;
        finish();
      });
    });
    req.end();
  });
}

/** A request whose server side must end with sendFile resolving and the response finished. */
async function fetchOk(path: string, options: { method?: string; headers?: Record<string, string> } = {}): Promise<Reply> {
  const [reply, record] = await Promise.all([fetchRaw(path, options), nextServed()]);
  assert.equal(record.outcome, 'resolved');
  assert.equal(reply.error, undefined);
  assert.equal(reply.complete, true);
  return reply;
}

const FILE_HEADER_NAMES = ['content-type', 'content-length', 'last-modified', 'etag', 'accept-ranges'];

function fileHeadersOf(reply: Reply): Record<string, string | undefined> {
  return Object.fromEntries(FILE_HEADER_NAMES.map((name) => [name, reply.headers[name] as string | undefined]));
}

let small: Fixture;
let etag: string;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'oaibag-send-file-'));
  small = await addFixture('small.bin', SMALL);
  etag = `"sha256-${small.sha256.slice(0, 32)}"`;
  server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      res.destroy();
      throw error;
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await rm(dir, { recursive: true, force: true });
});

describe('GET and HEAD', () => {
  test('a GET returns the bytes with exactly the headers fileHeaders promises, plus Date', async () => {
    const reply = await fetchOk('/small.bin');
    assert.equal(reply.status, 200);
    assert.ok(reply.body.equals(SMALL));
    const expected = fileHeaders({
      mimeType: 'application/octet-stream',
      size: SMALL.length,
      mtimeNs: BigInt(MTIME_SECONDS) * 1_000_000_000n + 750_000_000n,
      sha256: small.sha256,
    });
    assert.deepEqual(fileHeadersOf(reply), Object.fromEntries(expected.map((field) => [field.name.toLowerCase(), field.value])));
    assert.equal(reply.headers['last-modified'], LAST_MODIFIED);
    assert.equal(reply.headers.etag, etag);
    assert.ok(reply.headers.date !== undefined && !Number.isNaN(Date.parse(reply.headers.date)));
  });

  test('a HEAD sends the same headers and no body', async () => {
    const get = await fetchOk('/small.bin');
    const head = await fetchOk('/small.bin', { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.body.length, 0);
    assert.deepEqual(fileHeadersOf(head), fileHeadersOf(get));
    assert.equal(head.headers['content-length'], String(SMALL.length));
  });

  test('another method gets 405 with Allow, and no body', async () => {
    const reply = await fetchOk('/small.bin', { method: 'POST' });
    assert.equal(reply.status, 405);
    assert.equal(reply.headers.allow, 'GET, HEAD');
    assert.equal(reply.body.length, 0);
    assert.equal(reply.headers.etag, undefined);
  });

  test('an empty file is a 200 with Content-Length 0', async () => {
    await addFixture('empty.bin', Buffer.alloc(0));
    const reply = await fetchOk('/empty.bin');
    assert.equal(reply.status, 200);
    assert.equal(reply.headers['content-length'], '0');
    assert.equal(reply.body.length, 0);
  });
});

describe('conditional requests', () => {
  function assertNotModified(reply: Reply): void {
    assert.equal(reply.status, 304);
    assert.equal(reply.body.length, 0);
    assert.equal(reply.headers.etag, etag);
    assert.equal(reply.headers['last-modified'], LAST_MODIFIED);
    assert.equal(reply.headers['content-type'], undefined);
    assert.equal(reply.headers['content-length'], undefined);
    assert.ok(reply.headers.date !== undefined);
  }

  const notModified: Array<[string, Record<string, string>]> = [
    ['If-None-Match with the exact tag', { 'If-None-Match': '<etag>' }],
    ['If-None-Match with the weak form of the tag', { 'If-None-Match': 'W/<etag>' }],
    ['If-None-Match with a list holding the tag', { 'If-None-Match': '"other", W/"x,y", <etag>' }],
    ['If-None-Match: *', { 'If-None-Match': '*' }],
    ['If-Modified-Since equal to Last-Modified', { 'If-Modified-Since': LAST_MODIFIED }],
    ['If-Modified-Since later than Last-Modified', { 'If-Modified-Since': new Date((MTIME_SECONDS + 3600) * 1000).toUTCString() }],
    ['If-Modified-Since in asctime form', { 'If-Modified-Since': 'Tue Nov 14 22:13:20 2023' }],
  ];
  for (const [name, headers] of notModified) {
    test(`${name} gives 304 with the validators and no body headers`, async () => {
      const sent = Object.fromEntries(Object.entries(headers).map(([key, value]) => [key, value.replace('<etag>', etag)]));
      assertNotModified(await fetchOk('/small.bin', { headers: sent }));
      assertNotModified(await fetchOk('/small.bin', { method: 'HEAD', headers: sent }));
    });
  }

  const full: Array<[string, Record<string, string>]> = [
    ['If-None-Match with other tags only', { 'If-None-Match': '"other", W/"another"' }],
    ['a malformed If-None-Match', { 'If-None-Match': '<etag>"' }],
    ['If-Modified-Since earlier than Last-Modified', { 'If-Modified-Since': new Date((MTIME_SECONDS - 1) * 1000).toUTCString() }],
    ['an unparseable If-Modified-Since', { 'If-Modified-Since': 'yesterday, around noon' }],
    ['a non-matching If-None-Match, which overrides a matching If-Modified-Since', { 'If-None-Match': '"other"', 'If-Modified-Since': LAST_MODIFIED }],
    ['If-Match with the tag', { 'If-Match': '<etag>' }],
    ['If-Match: *', { 'If-Match': '*' }],
    ['If-Unmodified-Since equal to Last-Modified', { 'If-Unmodified-Since': LAST_MODIFIED }],
    ['an unparseable If-Unmodified-Since', { 'If-Unmodified-Since': 'not a date' }],
  ];
  for (const [name, headers] of full) {
    test(`${name} gives the full 200`, async () => {
      const sent = Object.fromEntries(Object.entries(headers).map(([key, value]) => [key, value.replace('<etag>', etag)]));
      const reply = await fetchOk('/small.bin', { headers: sent });
      assert.equal(reply.status, 200);
      assert.ok(reply.body.equals(SMALL));
    });
  }

  const failed: Array<[string, Record<string, string>]> = [
    ['If-Match with another tag', { 'If-Match': '"other"' }],
    ['If-Match with the weak form of the tag (If-Match compares strongly)', { 'If-Match': 'W/<etag>' }],
    ['If-Unmodified-Since earlier than Last-Modified', { 'If-Unmodified-Since': new Date((MTIME_SECONDS - 1) * 1000).toUTCString() }],
    ['If-Match failing before a matching If-None-Match is looked at', { 'If-Match': '"other"', 'If-None-Match': '<etag>' }],
  ];
  for (const [name, headers] of failed) {
    test(`${name} gives 412 without a body`, async () => {
      const sent = Object.fromEntries(Object.entries(headers).map(([key, value]) => [key, value.replace('<etag>', etag)]));
      const reply = await fetchOk('/small.bin', { headers: sent });
      assert.equal(reply.status, 412);
      assert.equal(reply.body.length, 0);
    });
  }
});

describe('byte ranges', () => {
  const size = SMALL.length;
  const partial: Array<[string, number, number]> = [
    ['bytes=0-99', 0, 99],
    ['bytes=100-', 100, size - 1],
    ['bytes=-50', size - 50, size - 1],
    ['bytes=990-5000', 990, size - 1],
    ['bytes=-5000', 0, size - 1],
    ['bytes=999-999', 999, 999],
    ['BYTES= 10-19 ,', 10, 19],
  ];
  for (const [range, start, end] of partial) {
    test(`Range: ${range} gives 206 with bytes ${start}-${end}`, async () => {
      const reply = await fetchOk('/small.bin', { headers: { Range: range } });
      assert.equal(reply.status, 206);
      assert.equal(reply.headers['content-range'], `bytes ${start}-${end}/${size}`);
      assert.equal(reply.headers['content-length'], String(end - start + 1));
      assert.ok(reply.body.equals(SMALL.subarray(start, end + 1)));
      assert.equal(reply.headers.etag, etag);
      assert.equal(reply.headers['content-type'], 'application/octet-stream');
    });
  }

  for (const range of [`bytes=${size}-`, `bytes=${size}-${size + 10}`, 'bytes=-0', 'bytes=99999999999999999999-']) {
    test(`Range: ${range} gives 416 with Content-Range bytes */size`, async () => {
      const reply = await fetchOk('/small.bin', { headers: { Range: range } });
      assert.equal(reply.status, 416);
      assert.equal(reply.headers['content-range'], `bytes */${size}`);
      assert.equal(reply.body.length, 0);
    });
  }

  const ignored: Array<[string, string]> = [
    ['a malformed range', 'bytes=abc'],
    ['a range with last before first', 'bytes=20-10'],
    ['another unit', 'items=0-1'],
    ['no equals sign', 'bytes 0-1'],
    ['an empty range set', 'bytes='],
    ['several ranges (served whole, not as multipart)', 'bytes=0-1,5-6'],
    ['several ranges, one unsatisfiable', `bytes=0-1,${size}-`],
  ];
  for (const [name, range] of ignored) {
    test(`${name} is ignored: 200 with the whole file`, async () => {
      const reply = await fetchOk('/small.bin', { headers: { Range: range } });
      assert.equal(reply.status, 200);
      assert.equal(reply.headers['content-range'], undefined);
      assert.ok(reply.body.equals(SMALL));
    });
  }

  test('a HEAD ignores Range (RFC 9110 defines ranges for GET only)', async () => {
    const reply = await fetchOk('/small.bin', { method: 'HEAD', headers: { Range: 'bytes=0-9' } });
    assert.equal(reply.status, 200);
    assert.equal(reply.headers['content-length'], String(size));
  });

  test('preconditions come before Range: a matching If-None-Match gives 304', async () => {
    const reply = await fetchOk('/small.bin', { headers: { Range: 'bytes=0-9', 'If-None-Match': etag } });
    assert.equal(reply.status, 304);
  });

  const ifRange: Array<[string, () => string, 200 | 206]> = [
    ['the strong ETag', () => etag, 206],
    ['Last-Modified exactly', () => LAST_MODIFIED, 206],
    ['the weak form of the ETag', () => `W/${etag}`, 200],
    ['another ETag', () => '"other"', 200],
    ['a later date', () => new Date((MTIME_SECONDS + 1) * 1000).toUTCString(), 200],
    ['an earlier date', () => new Date((MTIME_SECONDS - 1) * 1000).toUTCString(), 200],
    ['garbage', () => 'whenever', 200],
  ];
  for (const [name, value, status] of ifRange) {
    test(`If-Range with ${name} gives ${status}`, async () => {
      const reply = await fetchOk('/small.bin', { headers: { Range: 'bytes=10-19', 'If-Range': value() } });
      assert.equal(reply.status, status);
      assert.ok(reply.body.equals(status === 206 ? SMALL.subarray(10, 20) : SMALL));
    });
  }

  test('an empty file: a suffix range gives 200, explicit positions give 416', async () => {
    await addFixture('empty-range.bin', Buffer.alloc(0));
    const suffix = await fetchOk('/empty-range.bin', { headers: { Range: 'bytes=-10' } });
    assert.equal(suffix.status, 200);
    assert.equal(suffix.headers['content-length'], '0');
    const explicit = await fetchOk('/empty-range.bin', { headers: { Range: 'bytes=0-' } });
    assert.equal(explicit.status, 416);
    assert.equal(explicit.headers['content-range'], 'bytes */0');
  });
});

describe('streaming', { timeout: 60_000 }, () => {
  test('a 10 MiB file arrives whole, each chunk read only once the previous one has drained', async () => {
    const content = Buffer.alloc(10 * 1024 * 1024);
    for (let i = 0; i < content.length; i += PATTERN.length) PATTERN.copy(content, i);
    for (let i = 0; i < content.length; i += 4099) content[i] = i % 251;
    await addFixture('ten.bin', content);
    const [reply, record] = await Promise.all([fetchRaw('/ten.bin'), nextServed()]);
    assert.equal(record.outcome, 'resolved');
    assert.equal(reply.complete, true);
    assert.equal(reply.status, 200);
    assert.equal(reply.headers['content-length'], String(content.length));
    assert.equal(reply.body.length, content.length);
    assert.ok(reply.body.equals(content));
    assert.ok(record.maxBuffered < record.highWaterMark, `${record.maxBuffered} bytes unsent when a read began`);
  });

  test('a client leaving mid-body ends sendFile quietly, reading stops, and the server goes on', async () => {
    const size = 32 * 1024 * 1024;
    await addFixture('big.bin', Buffer.alloc(size, 0x5a));
    const [reply, record] = await Promise.all([fetchRaw('/big.bin', { onData: (abort) => abort() }), nextServed()]);
    assert.equal(reply.status, 200);
    assert.equal(reply.complete, false);
    assert.equal(record.outcome, 'resolved');
    assert.equal(record.finished, false);
    assert.ok(record.bytesRead < size, `read ${record.bytesRead} of ${size} bytes`);
    assert.ok(record.maxBuffered < record.highWaterMark, `${record.maxBuffered} bytes unsent when a read began`);
    const next = await fetchOk('/small.bin');
    assert.ok(next.body.equals(SMALL));
  });

  test('a file truncated after it was opened gives an incomplete response, not a short 200', async () => {
    const content = Buffer.alloc(1024 * 1024, 0x33);
    const fixture = await addFixture('shrinking.bin', content);
    beforeSend.set('/shrinking.bin', async () => truncate(fixture.path, 200 * 1024));
    const [reply, record] = await Promise.all([fetchRaw('/shrinking.bin'), nextServed()]);
    assert.equal(record.outcome, 'resolved');
    assert.equal(record.finished, false);
    assert.equal(reply.complete, false);
    if (reply.status !== undefined) {
      assert.equal(reply.headers['content-length'], String(content.length));
      assert.ok(reply.body.length < content.length);
    } else {
      assert.ok(reply.error !== undefined);
    }
    const next = await fetchOk('/small.bin');
    assert.ok(next.body.equals(SMALL));
  });

  test('a read error destroys the response and rejects', async () => {
    await addFixture('unreadable.bin', SMALL);
    beforeSend.set('/unreadable.bin', async (fileHandle) => fileHandle.close());
    const [reply, record] = await Promise.all([fetchRaw('/unreadable.bin'), nextServed()]);
    assert.ok(record.outcome instanceof Error);
    assert.equal(reply.complete, false);
    assert.ok(reply.error !== undefined);
  });
});

describe('planFileResponse and its parsers', () => {
  const facts = {
    size: 10,
    headers: [
      { name: 'Content-Length', value: '10' },
      { name: 'ETag', value: '"a"' },
    ],
    etag: '"a"',
    lastModifiedSeconds: 100,
  };

  test('the plan for HEAD has no body, for GET the whole file', () => {
    assert.deepEqual(planFileResponse('HEAD', {}, facts), { status: 200, headers: facts.headers });
    assert.deepEqual(planFileResponse('GET', {}, facts), { status: 200, headers: facts.headers, body: { start: 0, length: 10 } });
  });

  test('parseRange', () => {
    const table: Array<[string, number, ReturnType<typeof parseRange>]> = [
      ['bytes=0-0', 10, { kind: 'range', start: 0, end: 0 }],
      ['bytes=2-', 10, { kind: 'range', start: 2, end: 9 }],
      ['bytes=-3', 10, { kind: 'range', start: 7, end: 9 }],
      ['bytes=-30', 10, { kind: 'range', start: 0, end: 9 }],
      ['Bytes=1-2', 10, { kind: 'range', start: 1, end: 2 }],
      ['bytes=1-2, ', 10, { kind: 'range', start: 1, end: 2 }],
      ['bytes=\t1-2', 10, { kind: 'range', start: 1, end: 2 }],
      ['bytes=10-', 10, { kind: 'unsatisfiable' }],
      ['bytes=-0', 10, { kind: 'unsatisfiable' }],
      ['bytes=0-', 0, { kind: 'unsatisfiable' }],
      ['bytes=-1', 0, { kind: 'ignore' }],
      ['bytes=1-2,4-5', 10, { kind: 'ignore' }],
      ['bytes=3-2', 10, { kind: 'ignore' }],
      ['bytes=1 -2', 10, { kind: 'ignore' }],
      ['bytes=+1-2', 10, { kind: 'ignore' }],
      ['bytes=1-2-3', 10, { kind: 'ignore' }],
      ['bytes=,', 10, { kind: 'ignore' }],
      ['=1-2', 10, { kind: 'ignore' }],
      ['by tes=1-2', 10, { kind: 'ignore' }],
      ['none', 10, { kind: 'ignore' }],
    ];
    for (const [value, size, expected] of table) assert.deepEqual(parseRange(value, size), expected, `${value} of ${size}`);
  });

  test('parseHttpDate accepts the three HTTP-date forms and nothing else', () => {
    const now = Date.UTC(2025, 0, 1);
    const nov6 = Date.UTC(1994, 10, 6, 8, 49, 37) / 1000;
    const table: Array<[string, number | undefined]> = [
      ['Sun, 06 Nov 1994 08:49:37 GMT', nov6],
      ['Sunday, 06-Nov-94 08:49:37 GMT', nov6],
      ['Sun Nov  6 08:49:37 1994', nov6],
      ['Sun Nov 06 08:49:37 1994', nov6],
      ['Wednesday, 01-Jan-75 00:00:00 GMT', Date.UTC(2075, 0, 1) / 1000],
      ['Monday, 01-Jan-74 00:00:00 GMT', Date.UTC(2074, 0, 1) / 1000],
      ['Tuesday, 01-Jan-76 00:00:00 GMT', Date.UTC(1976, 0, 1) / 1000],
      ['Wed, 31 Dec 2025 23:59:60 GMT', Date.UTC(2026, 0, 1) / 1000],
      ['Sun, 06 Nov 1994 08:49:37 UTC', undefined],
      ['Sun, 06 Nov 1994 08:49:37 +0000', undefined],
      ['sun, 06 nov 1994 08:49:37 GMT', undefined],
      ['Sun, 6 Nov 1994 08:49:37 GMT', undefined],
      ['Sun, 31 Feb 1994 08:49:37 GMT', undefined],
      ['Sun, 00 Nov 1994 08:49:37 GMT', undefined],
      ['Sun, 06 Nov 1994 24:00:00 GMT', undefined],
      ['Sun, 06 Nov 1994 08:60:00 GMT', undefined],
      [' Sun, 06 Nov 1994 08:49:37 GMT', undefined],
      ['1994-11-06T08:49:37Z', undefined],
      ['784111777', undefined],
      ['', undefined],
    ];
    for (const [value, expected] of table) assert.equal(parseHttpDate(value, now), expected, JSON.stringify(value));
  });
});
