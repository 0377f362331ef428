/**
 * Clients that leave in the middle of a response, at seeded random points, in every way a
 * connection can end (request destroyed, socket closed, socket reset, paused then dropped),
 * over compressed and plain lists, records and files. The repository is a long-running
 * server: none of this may throw out of a callback, and it must answer correctly afterwards.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { utimesSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { seededRandom } from '../../../test/seeded-random.ts';
import { headers, type RunningRepository, resumptionToken, startRepository, tempDir, writeTree } from './repository-helpers.ts';

const FILES = 40;
const REQUESTS = 240;
const AT_ONCE = 8;
const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;

const site = tempDir('oaibag-leaving-site-');
const work = tempDir('oaibag-leaving-work-');
let repository: RunningRepository;

before(async () => {
  const files: Record<string, Uint8Array | string> = {};
  for (let i = 0; i < FILES; i++) {
    // PDFs are random bytes (base64 in oai_didl: the Huffman-only strategy), HTML is markup.
    files[`d${i % 4}/f${i}.${i % 3 === 0 ? 'pdf' : 'html'}`] = i % 3 === 0 ? randomBytes(20_000 + i * 5_000) : `<html>${'x'.repeat(i * 300)}</html>`;
  }
  writeTree(site.path, files);
  // Dated in 2000 (a new index dates files by mtime): listed at once, not a second later.
  for (const path of Object.keys(files)) utimesSync(join(site.path, path), YEAR_2000, YEAR_2000);
  repository = await startRepository(site.path, work.path, { pageRecords: 7 });
});

after(async () => {
  await repository.stop();
  site.cleanup();
  work.cleanup();
});

type Leaving = 'request destroyed' | 'socket closed' | 'socket reset' | 'paused, then dropped';
const WAYS: Leaving[] = ['request destroyed', 'socket closed', 'socket reset', 'paused, then dropped'];
const PATHS = [
  '/oai?verb=ListRecords&metadataPrefix=oai_didl',
  '/oai?verb=ListRecords&metadataPrefix=oai_dc',
  '/oai?verb=GetRecord&metadataPrefix=oai_didl&identifier=REPLACED',
  '/d0/f0.pdf',
];
const CODINGS = ['gzip', 'deflate', 'identity'];

/** One request left after `cut` bytes of the body (or at once, when paused). Never rejects. */
function leaveAfter(path: string, coding: string, way: Leaving, cut: number, delay: number): Promise<void> {
  const base = new URL(repository.baseUrl);
  return new Promise((resolve) => {
    const req = request({ host: base.hostname, port: base.port, path, headers: { 'Accept-Encoding': coding }, agent: false }, (res) => {
      res.on('error', () => resolve());
      res.on('close', () => resolve());
      if (way === 'paused, then dropped') {
        res.pause();
        setTimeout(() => req.destroy(), delay);
        return;
      }
      let received = 0;
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received < cut) return;
        if (way === 'request destroyed') req.destroy();
        else if (way === 'socket closed') res.socket.destroy();
        else res.socket.resetAndDestroy();
      });
    });
    req.on('error', () => resolve());
    req.on('close', () => resolve());
    req.end();
  });
}

test(`${REQUESTS} clients leaving mid-response at random points: nothing is thrown, and the repository answers whole afterwards`, async () => {
  const thrown: unknown[] = [];
  const record = (error: unknown): void => void thrown.push(error);
  process.on('uncaughtException', record);
  process.on('unhandledRejection', record);
  try {
    const identifier = encodeURIComponent(`${repository.baseUrl}/d0/f0.pdf`);
    const random = seededRandom(20261123);
    for (let start = 0; start < REQUESTS; start += AT_ONCE) {
      await Promise.all(
        Array.from({ length: AT_ONCE }, (_, k) => {
          const n = start + k;
          const path = PATHS[n % PATHS.length]!.replace('REPLACED', identifier);
          const coding = CODINGS[Math.floor(n / PATHS.length) % CODINGS.length]!;
          return leaveAfter(path, coding, WAYS[n % WAYS.length]!, Math.floor(random() * 200_000), random() * 20);
        }),
      );
    }
    // Flushes and stream teardowns still under way have ended by now.
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.deepEqual(thrown.map(String), []);
  } finally {
    process.off('uncaughtException', record);
    process.off('unhandledRejection', record);
  }
  for (const coding of CODINGS) {
    assert.equal((await wholeList(coding)).length, FILES, `a whole harvest afterwards (${coding})`);
  }
});

/** Every header of a complete oai_didl ListRecords, asked for in `coding` (fetch decodes it). */
async function wholeList(coding: string): Promise<unknown[]> {
  const found: unknown[] = [];
  let query = 'verb=ListRecords&metadataPrefix=oai_didl';
  for (;;) {
    const response = await fetch(`${repository.endpoint}?${query}`, { headers: { 'Accept-Encoding': coding } });
    assert.equal(response.headers.get('content-encoding') ?? 'identity', coding);
    const text = await response.text();
    found.push(...headers(text));
    const token = resumptionToken(text);
    if (!token || token.token === '') return found;
    query = `verb=ListRecords&resumptionToken=${encodeURIComponent(token.token)}`;
  }
}
