// The streaming ZIP writer of `export --site` (src/archive/zip-writer.ts): ZIPs read back by
// yauzl, and by Info-ZIP's unzip and Python's zipfile where the machine has them; ZIP64 from
// 65,535 entries and when forced (the form of an entry past 4 GiB); the spill file never left
// behind; bytes that disagree with the size given refused.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { after, test } from 'node:test';
import { promisify } from 'node:util';
import yauzl from 'yauzl';
import { writeZipDurably, type ZipEntry } from '../src/archive/zip-writer.ts';

const work = mkdtempSync(join(tmpdir(), 'oaibag-zip-writer-'));
after(() => rmSync(work, { recursive: true, force: true }));

const hasUnzip = spawnSync('unzip', ['-v']).status === 0;
const hasPython = spawnSync('python3', ['-c', 'import zipfile']).status === 0;

async function* chunks(...parts: Array<string | Buffer>): AsyncGenerator<Buffer> {
  for (const part of parts) yield Buffer.from(part);
}

interface ReadEntry {
  name: string;
  bytes: Buffer;
  mtime: number;
  mode: number;
  method: number;
}

/** Every entry of a ZIP as yauzl reads it (yauzl checks each CRC-32 and size as it reads). */
async function readZip(file: string): Promise<{ entries: ReadEntry[]; count: number }> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.open(file, { lazyEntries: true, autoClose: false, strictFileNames: true }, (error, opened) => (error ? reject(error) : resolve(opened))),
  );
  const openEntry = promisify(zip.openReadStream.bind(zip)) as (entry: yauzl.Entry) => Promise<Readable>;
  const entries: ReadEntry[] = [];
  await new Promise<void>((resolve, reject) => {
    zip.on('entry', (entry: yauzl.Entry) => {
      openEntry(entry)
        .then((stream) => stream.toArray())
        .then((read) => {
          entries.push({
            name: entry.fileName,
            bytes: Buffer.concat(read as Buffer[]),
            mtime: Math.floor(entry.getLastModDate().getTime() / 1000),
            mode: entry.externalFileAttributes >>> 16,
            method: entry.compressionMethod,
          });
          zip.readEntry();
        }, reject);
    });
    zip.once('end', resolve).once('error', reject);
    zip.readEntry();
  });
  const count = zip.entryCount;
  zip.close();
  return { entries, count };
}

/** `unzip -t` (each entry's CRC-32) and Python's zipfile (testzip, then names and one entry's bytes), where present. */
function checkWithOtherReaders(file: string, expect: { count: number; name: string; bytes: Buffer }): void {
  if (hasUnzip) {
    const tested = spawnSync('unzip', ['-tq', file], { encoding: 'utf8' });
    assert.equal(tested.status, 0, tested.stdout + tested.stderr);
    assert.match(tested.stdout, /No errors detected/);
  }
  if (hasPython) {
    const script = `import sys, zipfile, hashlib
z = zipfile.ZipFile(sys.argv[1])
assert z.testzip() is None
print(len(z.infolist()), hashlib.sha256(z.read(sys.argv[2])).hexdigest())`;
    const python = spawnSync('python3', ['-c', script, file, expect.name], { encoding: 'utf8' });
    assert.equal(python.status, 0, python.stderr);
    assert.equal(python.stdout.trim(), `${expect.count} ${createHash('sha256').update(expect.bytes).digest('hex')}`);
  }
}

const entry = (name: string, size: number, level = 6, mtime = 946_684_801): ZipEntry => ({ name, size, level, mtime, mode: 0o100644 });

test('entries deflated and stored, names in UTF-8, exact mtimes, modes: read back by yauzl, unzip and Python', async () => {
  const file = join(work, 'small.zip');
  const big = Buffer.alloc(3_000_000, 'abc');
  const written = await writeZipDurably(file, async (zip) => {
    await zip.add(entry('index.html', 17, 6, 946_684_801), chunks('<html>home</html>'));
    await zip.add(entry('café/naïve résumé.txt', 15, 0, 978_307_203), chunks('non-ASCII ', 'names'));
    await zip.add(entry('empty.txt', 0), chunks());
    await zip.add(entry('big/large.bin', big.length, 9), chunks(big.subarray(0, 1_000_000), big.subarray(1_000_000)));
  });
  const bytes = readFileSync(file);
  assert.equal(written.bytes, bytes.length);
  assert.equal(written.sha256, createHash('sha256').update(bytes).digest('hex'));
  assert.ok(bytes.length < 100_000, `deflated: ${bytes.length} bytes`);
  const { entries, count } = await readZip(file);
  assert.equal(count, 4);
  assert.deepEqual(
    entries.map((e) => [e.name, e.bytes.toString('latin1').length, e.mtime, e.mode, e.method]),
    [
      ['index.html', 17, 946_684_801, 0o100644, 8],
      ['café/naïve résumé.txt', 15, 978_307_203, 0o100644, 0],
      ['empty.txt', 0, 946_684_801, 0o100644, 8],
      ['big/large.bin', big.length, 946_684_801, 0o100644, 8],
    ],
  );
  assert.ok(entries[3]!.bytes.equals(big));
  assert.equal(bytes.indexOf(Buffer.from([0x50, 0x4b, 0x06, 0x06])), -1, 'no ZIP64 end record when nothing needs it');
  checkWithOtherReaders(file, { count: 4, name: 'big/large.bin', bytes: big });
  assert.deepEqual(readdirSync(work), ['small.zip'], 'no spill file nor partial file left');
});

test('70,000 entries: the end of the central directory in ZIP64 form; every entry read back', async () => {
  const file = join(work, 'many.zip');
  const total = 70_000;
  const name = (i: number): string => `d${String(Math.floor(i / 1000)).padStart(3, '0')}/f${String(i).padStart(6, '0')}.txt`;
  await writeZipDurably(file, async (zip) => {
    for (let i = 0; i < total; i += 1) {
      const content = `file ${i}\n`;
      await zip.add(entry(name(i), content.length, i % 1000 === 0 ? 6 : 0), chunks(content));
    }
  });
  const bytes = readFileSync(file);
  const end = bytes.subarray(-22);
  assert.equal(end.readUInt32LE(0), 0x06054b50);
  assert.equal(end.readUInt16LE(10), 0xffff, "the count is ZIP64's marker in the classic end record");
  const locator = bytes.subarray(-42, -22);
  assert.equal(locator.readUInt32LE(0), 0x07064b50);
  const record = Number(locator.readBigUInt64LE(8));
  assert.equal(bytes.readUInt32LE(record), 0x06064b50);
  assert.equal(Number(bytes.readBigUInt64LE(record + 32)), total);
  assert.equal(end.readUInt32LE(16), Number(bytes.readBigUInt64LE(record + 48)), 'the central directory offset, which fits, kept in the classic record');
  assert.equal(end.readUInt32LE(12), Number(bytes.readBigUInt64LE(record + 40)));
  const { entries, count } = await readZip(file);
  assert.equal(count, total);
  assert.equal(entries.length, total);
  for (const i of [0, 1, 65_534, 65_535, 65_536, total - 1]) {
    assert.equal(entries[i]!.name, name(i));
    assert.equal(entries[i]!.bytes.toString(), `file ${i}\n`);
  }
  checkWithOtherReaders(file, { count: total, name: name(65_536), bytes: Buffer.from('file 65536\n') });
});

test('forced ZIP64 (the form of an entry past 4 GiB): a ZIP64 extra field in each local header and central record, 8-byte data descriptors', async () => {
  const file = join(work, 'zip64.zip');
  const text = Buffer.from('the same form as an entry of more than 4 GiB, '.repeat(1000));
  await writeZipDurably(
    file,
    async (zip) => {
      await zip.add(entry('a.txt', text.length), chunks(text));
      await zip.add(entry('b.txt', 3, 0), chunks('abc'));
    },
    { forceZip64: true },
  );
  const bytes = readFileSync(file);
  assert.equal(bytes.readUInt32LE(0), 0x04034b50);
  assert.equal(bytes.readUInt16LE(4), 45, 'version needed: 4.5');
  assert.equal(bytes.readUInt32LE(18), 0xffffffff, 'compressed size in the ZIP64 field');
  const extra = bytes.subarray(30 + 5, 30 + 5 + bytes.readUInt16LE(28));
  assert.equal(extra.readUInt16LE(13), 0x0001, 'the ZIP64 extra field follows the timestamp');
  const { entries } = await readZip(file);
  assert.deepEqual(
    entries.map((e) => [e.name, e.bytes.length]),
    [
      ['a.txt', text.length],
      ['b.txt', 3],
    ],
  );
  assert.ok(entries[0]!.bytes.equals(text));
  checkWithOtherReaders(file, { count: 2, name: 'a.txt', bytes: text });
});

test('bytes that disagree with the size given, or a source that fails: an error, no ZIP and no spill file left', async () => {
  const folder = mkdtempSync(join(work, 'fail-'));
  const file = join(folder, 'bad.zip');
  await assert.rejects(
    writeZipDurably(file, async (zip) => {
      await zip.add(entry('short.txt', 10), chunks('abc'));
    }),
    { code: 'ERR_ARCHIVE_IO', message: /short\.txt was given as 10 bytes and has 3/ },
  );
  assert.deepEqual(readdirSync(folder), []);
  const failing = async function* (): AsyncGenerator<Buffer> {
    yield Buffer.from('some bytes');
    throw Object.assign(new Error('the source broke'), { code: 'EIO' });
  };
  await assert.rejects(
    writeZipDurably(file, async (zip) => {
      await zip.add(entry('ok.txt', 2), chunks('ok'));
      await zip.add(entry('broken.txt', 100), failing());
    }),
    { code: 'ERR_ARCHIVE_IO', message: /the source broke|EIO/ },
  );
  assert.deepEqual(readdirSync(folder), []);
});
