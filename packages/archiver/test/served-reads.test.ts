// What `oaibag serve` reads from a bag for a ListRecords page: a record of records.xml.gz
// (serve/stored-records.ts), cut out only as far as asked, and a payload's base64
// (serve/payload-base64.ts), read whole with one read when it is small, in chunks when it is
// large, and refused when its size or SHA-256 is not the catalog's.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { AIP_NAMESPACE } from '../src/aip/aip-metadata.ts';
import type { PayloadLocation } from '../src/catalog/catalog-types.ts';
import { payloadBase64 } from '../src/serve/payload-base64.ts';
import { StoredRecords } from '../src/serve/stored-records.ts';

const archive = mkdtempSync(join(tmpdir(), 'oaibag-served-reads-'));
after(() => rmSync(archive, { recursive: true, force: true }));

const OAI = 'http://www.openarchives.org/OAI/2.0/';
const DIDL = 'urn:mpeg:mpeg21:2002:02-DIDL-NS';

function header(n: number): string {
  return `<header xmlns="${OAI}"><identifier>http://example.org/${n}</identifier><datestamp>2026-01-01T00:00:00Z</datestamp></header>`;
}

function record(n: number): string {
  return `<record n="${n}">${header(n)}<didl:DIDL xmlns:didl="${DIDL}"><didl:Item/></didl:DIDL><about xmlns="${OAI}"><x>${n}</x></about></record>`;
}

/** A bag whose records.xml.gz is `body` inside the records element (`tail` after it). */
function bagWith(name: string, body: string, tail = '</records>'): string {
  const bagPath = `aips/harvest-000001/${name}`;
  mkdirSync(join(archive, bagPath, 'metadata'), { recursive: true });
  writeFileSync(join(archive, bagPath, 'metadata', 'records.xml.gz'), gzipSync(`<records xmlns="${AIP_NAMESPACE}">${body}${tail}`));
  return bagPath;
}

test('a record of records.xml: its header, DIDL and about as the bag keeps them, in any order asked', async () => {
  const bag = bagWith('batch-00001', `${[1, 2, 3].map(record).join('\n')}<deleted n="4">${header(4)}</deleted>`);
  const records = new StoredRecords(archive);
  const third = await records.record(bag, 3);
  assert.equal(third.header, header(3));
  assert.equal(third.didl, `<didl:DIDL xmlns:didl="${DIDL}"><didl:Item/></didl:DIDL>`);
  assert.deepEqual(third.about, [`<about xmlns="${OAI}"><x>3</x></about>`]);
  assert.equal((await records.record(bag, 1)).header, header(1), 'a record before the one read last');
  const deleted = await records.record(bag, 4);
  assert.equal(deleted.didl, undefined);
  assert.equal(deleted.header, header(4));
  await assert.rejects(
    records.record(bag, 5),
    (error: Error & { code?: string }) => error.code === 'ERR_ARCHIVE_DAMAGED' && /has no record 5/.test(error.message),
  );
});

test('records.xml is read only as far as the record asked for: a page pays for its own records', async () => {
  // Malformed after record 2: records 1 and 2 come whole before the reading reaches it.
  const bag = bagWith('batch-00002', `${record(1)}${record(2)}<record n="3"><oops></record>`, '');
  const records = new StoredRecords(archive);
  assert.equal((await records.record(bag, 1)).header, header(1));
  assert.equal((await records.record(bag, 2)).header, header(2));
  for (let attempt = 0; attempt < 2; attempt++) {
    await assert.rejects(
      records.record(bag, 3),
      (error: Error & { code?: string }) => error.code === 'ERR_ARCHIVE_DAMAGED' && /not well-formed/.test(error.message),
    );
  }
  assert.equal((await records.record(bag, 2)).header, header(2), 'what was read stays served');
});

test('a bag read ahead serves the request that comes next, even with its file gone since', async () => {
  const bag = bagWith('batch-00004', [1, 2].map(record).join(''));
  const records = new StoredRecords(archive);
  records.readAhead(bag);
  records.readAhead(bag); // a second read-ahead of a bag being read adds nothing
  await new Promise((resolve) => setTimeout(resolve, 100));
  rmSync(join(archive, bag, 'metadata', 'records.xml.gz'));
  assert.equal((await records.record(bag, 2)).header, header(2));
  assert.equal((await records.record(bag, 1)).header, header(1), 'from what was read ahead: the file is gone');
});

test('a damaged bag read ahead fails no one: the request that reads it gets ERR_ARCHIVE_DAMAGED', async () => {
  const bagPath = 'aips/harvest-000001/batch-00005';
  mkdirSync(join(archive, bagPath, 'metadata'), { recursive: true });
  writeFileSync(join(archive, bagPath, 'metadata', 'records.xml.gz'), Buffer.from('not gzip at all'));
  const records = new StoredRecords(archive);
  records.readAhead(bagPath);
  records.readAhead('aips/harvest-000001/no-such-bag');
  await new Promise((resolve) => setTimeout(resolve, 50)); // both fail meanwhile, unobserved
  await assert.rejects(
    records.record(bagPath, 1),
    (error: Error & { code?: string }) => error.code === 'ERR_ARCHIVE_DAMAGED' && /cannot be read/.test(error.message),
  );
});

test('text that is not ASCII is read as UTF-8, ASCII alike', async () => {
  const named = (n: number) => record(n).replace(`http://example.org/${n}`, `http://example.org/café-${n}-😀`);
  const bag = bagWith('batch-00006', [1, 2].map(named).join(''));
  const records = new StoredRecords(archive);
  assert.match((await records.record(bag, 2)).header, /café-2-😀/);
});

/** A payload file in a bag and its location as the catalog holds it. */
function payloadOf(name: string, bytes: Buffer): PayloadLocation {
  const bagPath = 'aips/harvest-000001/batch-00003';
  mkdirSync(join(archive, bagPath, 'data'), { recursive: true });
  writeFileSync(join(archive, bagPath, 'data', name), bytes);
  return { bagPath, path: `data/${name}`, size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
}

async function base64Of(payload: PayloadLocation): Promise<string> {
  let text = '';
  for await (const piece of payloadBase64(archive, payload)) text += piece;
  return text;
}

/** The base64 of `bytes` in 76-column lines, each ended by a newline. */
function lines(bytes: Buffer): string {
  const text = bytes.toString('base64');
  let out = '';
  for (let at = 0; at < text.length; at += 76) out += `${text.slice(at, at + 76)}\n`;
  return out;
}

test("a payload's base64: small and large files, each byte once, in 76-column lines", async () => {
  for (const size of [0, 1, 57, 4000, 57 * 4600, 57 * 4600 + 1, 700_001]) {
    const bytes = randomBytes(size);
    assert.equal(await base64Of(payloadOf(`file-${size}`, bytes)), lines(bytes), `${size} bytes`);
  }
});

test('a payload whose file is longer, shorter or other than the catalog says is refused, small or large', async () => {
  for (const size of [4000, 700_001]) {
    const bytes = randomBytes(size);
    const expected = payloadOf(`damaged-${size}`, bytes);
    const cases: Array<[string, Buffer]> = [
      ['one byte more', Buffer.concat([bytes, Buffer.from('x')])],
      ['one byte less', bytes.subarray(0, size - 1)],
      ['other bytes', Buffer.from(bytes.map((byte) => byte ^ 1))],
    ];
    for (const [what, content] of cases) {
      writeFileSync(join(archive, expected.bagPath, expected.path), content);
      await assert.rejects(
        base64Of(expected),
        (error: Error & { code?: string }) => error.code === 'ERR_ARCHIVE_DAMAGED' && /not the payload the catalog holds/.test(error.message),
        `${size} bytes, ${what}`,
      );
    }
  }
});
