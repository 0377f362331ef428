// The delivery reader of `oaibag import` (issue 16): real ZIPs and folders in a temporary
// folder. Good ZIPs are written with yazl; the hostile ones yazl refuses to write come from
// test/raw-zip.ts. Every refusal is checked for its code and for naming the entry.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  createWriteStream,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import yazl from 'yazl';
import { type RawZipEntry, rawZip } from '../../../test/raw-zip.ts';
import { ArchiverError } from '../src/core/errors.ts';
import { type Delivery, type DeliveryLimits, openDelivery } from '../src/import/delivery.ts';

let work: string;
let count = 0;

before(() => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-delivery-'));
});
after(() => rmSync(work, { recursive: true, force: true }));

const sha256 = (bytes: Buffer | string): string => createHash('sha256').update(bytes).digest('hex');

/** A new path in the work folder. */
const fresh = (name: string): string => {
  const folder = join(work, String(++count));
  mkdirSync(folder);
  return join(folder, name);
};

const writeRaw = (entries: RawZipEntry[]): string => {
  const file = fresh('delivery.zip');
  writeFileSync(file, rawZip(entries));
  return file;
};

interface YazlFile {
  name: string;
  data?: Buffer | string;
  compress?: boolean;
  mtime?: Date;
  folder?: boolean;
}

const yazlBuffer = (files: YazlFile[]): Promise<Buffer> => {
  const zip = new yazl.ZipFile();
  for (const file of files) {
    if (file.folder) zip.addEmptyDirectory(file.name, { mtime: file.mtime ?? new Date() });
    else zip.addBuffer(Buffer.from(file.data ?? ''), file.name, { compress: file.compress ?? false, mtime: file.mtime ?? new Date() });
  }
  zip.end();
  const chunks: Buffer[] = [];
  return new Promise((resolve, reject) => {
    zip.outputStream.on('data', (chunk: Buffer) => chunks.push(chunk));
    zip.outputStream.on('end', () => resolve(Buffer.concat(chunks)));
    zip.outputStream.on('error', reject);
  });
};

const writeYazl = async (files: YazlFile[], name = 'delivery.zip'): Promise<string> => {
  const file = fresh(name);
  const zip = new yazl.ZipFile();
  for (const entry of files) zip.addBuffer(Buffer.from(entry.data ?? ''), entry.name, { compress: entry.compress ?? false, mtime: entry.mtime ?? new Date() });
  zip.end();
  await new Promise<void>((resolve, reject) => zip.outputStream.pipe(createWriteStream(file)).on('close', resolve).on('error', reject));
  return file;
};

const readAll = async (delivery: Delivery, name: string): Promise<Buffer> => {
  const entry = delivery.entries.find((found) => found.name === name);
  assert.ok(entry, `${name} is listed`);
  const chunks: Buffer[] = [];
  for await (const chunk of delivery.open(entry)) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
};

/** openDelivery must refuse `path` with `code`, in one line naming the delivery and `names` (the entry, JSON-quoted). */
const refuses = async (
  path: string,
  code: string,
  names: string | null,
  also: RegExp | null = null,
  limits: Partial<DeliveryLimits> = {},
): Promise<ArchiverError> => {
  let caught: unknown;
  try {
    const delivery = await openDelivery(path, { limits });
    await delivery.close();
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof ArchiverError, `refused with an ArchiverError, not ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  assert.equal(caught.path, path);
  assert.ok(!caught.message.includes('\n'), 'one line');
  assert.ok(caught.message.startsWith(`${path.split('/').pop()}: `), `names the delivery: ${caught.message}`);
  if (names !== null) assert.ok(caught.message.includes(`entry ${JSON.stringify(names)}`), `names entry ${JSON.stringify(names)}: ${caught.message}`);
  if (also) assert.match(caught.message, also);
  return caught;
};

// ---- Names that would leave the delivery

for (const [label, name, also] of [
  ['a ".." segment (zip slip)', '../x', /outside the delivery \(zip slip\)/],
  ['a ".." segment inside the name', 'a/../../x', /zip slip/],
  ['an absolute path', '/etc/x', /absolute path/],
  ['a backslash', 'a\\b', /backslash/],
  ['a drive letter and a slash', 'C:/x', /drive letter/],
  ['a drive letter alone', 'C:x', /drive letter/],
  ['an empty segment', 'a//b', /empty path segment/],
  ['a NUL character', 'a\u0000b', /control character/],
  ['a control character', 'a\u001bb', /control character/],
] as const) {
  test(`ZIP: refuses an entry name with ${label}`, async () => {
    await refuses(
      writeRaw([
        { name: 'fine.txt', data: 'fine' },
        { name, data: 'evil' },
      ]),
      'ERR_IMPORT_UNSAFE',
      name,
      also,
    );
  });
}

// ---- Entries that are not plain files

test('ZIP: refuses a symbolic link entry', async () => {
  const path = writeRaw([{ name: 'link', data: '/etc/passwd', externalAttributes: (0o120777 << 16) >>> 0, versionMadeBy: 0x031e }]);
  await refuses(path, 'ERR_IMPORT_UNSAFE', 'link', /symbolic link/);
});

test('ZIP: refuses an encrypted entry', async () => {
  // ZipCrypto: 12 bytes of header before the data, the stored sizes differ by 12.
  const path = writeRaw([{ name: 'secret.txt', rawData: Buffer.alloc(12 + 5, 1), uncompressedSize: 5, flags: 0x0801 }]);
  await refuses(path, 'ERR_IMPORT_UNSAFE', 'secret.txt', /encrypted/);
});

// ---- Names that clash

test('ZIP: refuses two names equal after Unicode NFC', async () => {
  const path = writeRaw([
    { name: 'caf\u00e9.txt', data: 'precomposed' },
    { name: 'cafe\u0301.txt', data: 'decomposed' },
  ]);
  const error = await refuses(path, 'ERR_IMPORT_UNSAFE', 'cafe\u0301.txt', /Unicode NFC/);
  assert.ok(error.message.includes(JSON.stringify('caf\u00e9.txt')), 'names the other entry too');
});

test('ZIP: refuses a name that is a file and the folder of another entry', async () => {
  const path = writeRaw([
    { name: 'a', data: 'a file' },
    { name: 'a/b', data: 'below it' },
  ]);
  await refuses(path, 'ERR_IMPORT_UNSAFE', 'a/b', /"a" is a file/);
  await refuses(
    writeRaw([
      { name: 'a/b', data: 'below' },
      { name: 'a', data: 'a file' },
    ]),
    'ERR_IMPORT_UNSAFE',
    'a',
    /makes it a folder/,
  );
  await refuses(writeRaw([{ name: 'a', data: 'a file' }, { name: 'a/' }]), 'ERR_IMPORT_UNSAFE', 'a/', /is a folder/);
});

// ---- Damaged bytes

test('ZIP: refuses an entry whose CRC-32 is wrong', async () => {
  const path = writeRaw([
    { name: 'ok.txt', data: 'fine' },
    { name: 'bad.txt', data: 'these bytes', crc32: 0xdeadbeef },
  ]);
  await refuses(path, 'ERR_IMPORT_DAMAGED', 'bad.txt', /CRC-32.*0xdeadbeef/);
});

test('ZIP: refuses an entry whose size is wrong', async () => {
  // Stored: the two sizes of the directory disagree (yauzl refuses before naming; the reader names it).
  await refuses(
    writeRaw([
      { name: 'ok.txt', data: 'fine' },
      { name: 'stored.txt', data: 'twelve bytes', uncompressedSize: 15 },
    ]),
    'ERR_IMPORT_DAMAGED',
    'stored.txt',
  );
  // Deflated: more bytes inflate than declared, then fewer.
  await refuses(writeRaw([{ name: 'more.txt', data: 'x'.repeat(1000), method: 8, uncompressedSize: 10 }]), 'ERR_IMPORT_DAMAGED', 'more.txt');
  await refuses(writeRaw([{ name: 'less.txt', data: 'x'.repeat(1000), method: 8, uncompressedSize: 2000 }]), 'ERR_IMPORT_DAMAGED', 'less.txt');
});

test('ZIP: refuses a truncated ZIP and a file that is no ZIP', async () => {
  const good = readFileSync(await writeYazl([{ name: 'a.txt', data: 'a'.repeat(5000) }]));
  const truncated = fresh('truncated.zip');
  writeFileSync(truncated, good.subarray(0, good.length - 30));
  await refuses(truncated, 'ERR_IMPORT_DAMAGED', null, /not a ZIP file/);
  const text = fresh('text.zip');
  writeFileSync(text, 'hello, this is not a ZIP file at all');
  await refuses(text, 'ERR_IMPORT_DAMAGED', null, /not a ZIP file/);
  // Its data cut, its central directory kept (pointing past the data now).
  const cut = fresh('cut.zip');
  const directoryAt = good.lastIndexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
  writeFileSync(cut, Buffer.concat([good.subarray(0, 40), good.subarray(directoryAt)]));
  await refuses(cut, 'ERR_IMPORT_DAMAGED', null);
});

// ---- Caps, checked on the declared sizes before anything inflates

test('ZIP: refuses an entry over the compression ratio cap without inflating it', async () => {
  const path = await writeYazl([{ name: 'zeros.bin', data: Buffer.alloc(20 * 1024 * 1024), compress: true }]);
  let progressed = false;
  await assert.rejects(
    openDelivery(path, { progress: () => (progressed = true) }),
    (error: ArchiverError) => error.code === 'ERR_IMPORT_UNSAFE' && error.message.includes('entry "zeros.bin"') && /--max-ratio/.test(error.message),
  );
  assert.equal(progressed, false, 'refused from the central directory, before reading data');
  await refuses(path, 'ERR_IMPORT_UNSAFE', 'zeros.bin', /over the cap of 200 \(raise it with --max-ratio\)/);
});

test('ZIP: refuses a ZIP over the ratio cap as a whole (entries each too small for the entry ratio)', async () => {
  const files = Array.from({ length: 30 }, (_, index) => ({ name: `z${index}.bin`, data: Buffer.alloc(1024 * 1024 - 1), compress: true }));
  await refuses(
    await writeYazl(files),
    'ERR_IMPORT_UNSAFE',
    null,
    /its entries inflate to 31,457,250 bytes from a ZIP of .* over the cap of 200 \(raise it with --max-ratio\)/,
  );
});

test('ZIP: refuses more entries than the cap', async () => {
  const path = await writeYazl([{ name: 'a' }, { name: 'b' }, { name: 'c' }]);
  await refuses(path, 'ERR_IMPORT_UNSAFE', 'c', /over the cap of 2 entries \(raise it with --max-entries\)/, { maxEntries: 2 });
});

test('ZIP: refuses an entry over the entry size cap', async () => {
  const path = await writeYazl([
    { name: 'small', data: '0123456789' },
    { name: 'big', data: '0123456789A' },
  ]);
  await refuses(path, 'ERR_IMPORT_UNSAFE', 'big', /11 bytes, over the cap of 10 bytes per entry \(raise it with --max-entry-size\)/, { maxEntryBytes: 10 });
});

test('ZIP: refuses a delivery over the total size cap', async () => {
  const path = await writeYazl([
    { name: 'one', data: '0123456789' },
    { name: 'two', data: '0123456789' },
  ]);
  await refuses(path, 'ERR_IMPORT_UNSAFE', 'two', /20 bytes, over the cap of 15 bytes in all \(raise it with --max-total-size\)/, { maxTotalBytes: 15 });
});

// ---- Good deliveries

test('ZIP: a good delivery is listed, hashed and read back', async () => {
  const mtime = new Date('2024-05-06T07:08:09Z');
  const nested = await yazlBuffer([{ name: 'inner.txt', data: 'inside' }]);
  const big = randomBytes(3 * 1024 * 1024 + 17);
  const files: YazlFile[] = [
    { name: 'b.txt', data: 'bee', mtime },
    { name: 'a/deep/c.txt', data: 'sea', compress: true, mtime },
    { name: 'a/', folder: true, mtime },
    { name: 'B.txt', data: '', mtime },
    { name: 'nested.zip', data: nested, mtime },
    { name: 'big.bin', data: big, compress: true, mtime },
    { name: 'caf\u00e9.txt', data: 'accent', mtime },
  ];
  const path = fresh('good.zip');
  writeFileSync(path, await yazlBuffer(files));
  const seen: [number, number][] = [];
  const delivery = await openDelivery(path, { progress: (done, total) => seen.push([done, total]) });
  try {
    assert.equal(delivery.kind, 'zip');
    assert.equal(delivery.path, path);
    assert.equal(delivery.name, 'good.zip');
    const bytes = readFileSync(path);
    assert.equal(delivery.size, bytes.length);
    assert.equal(delivery.sha256, sha256(bytes));
    const expected = files.filter((file) => !file.folder).map((file) => ({ name: file.name, data: Buffer.from(file.data ?? '') }));
    expected.sort((x, y) => (x.name < y.name ? -1 : 1));
    assert.deepEqual(
      delivery.entries.map((entry) => entry.name),
      ['B.txt', 'a/deep/c.txt', 'b.txt', 'big.bin', 'caf\u00e9.txt', 'nested.zip'],
    );
    for (const { name, data } of expected) {
      const entry = delivery.entries.find((found) => found.name === name)!;
      assert.equal(entry.size, data.length, name);
      assert.equal(entry.sha256, sha256(data), name);
      assert.equal(entry.mtimeNs, BigInt(mtime.getTime()) * 1_000_000n, name);
      assert.deepEqual(await readAll(delivery, name), data, name);
    }
    const total = expected.reduce((sum, { data }) => sum + data.length, 0) + bytes.length;
    assert.deepEqual(seen.at(-1), [total, total], 'progress ends at the total');
    assert.deepEqual(seen[0], [0, total]);
  } finally {
    await delivery.close();
  }
});

test('ZIP: open() throws ERR_IMPORT_DAMAGED when the ZIP changed after the screening', async () => {
  const path = await writeYazl([{ name: 'x.txt', data: 'original bytes' }]);
  const delivery = await openDelivery(path);
  try {
    const at = readFileSync(path).indexOf('original');
    const fd = openSync(path, 'r+');
    writeSync(fd, 'ORIGINAL', at);
    closeSync(fd);
    await assert.rejects(
      readAll(delivery, 'x.txt'),
      (error: ArchiverError) => error.code === 'ERR_IMPORT_DAMAGED' && error.message.includes('entry "x.txt" changed since it was screened'),
    );
  } finally {
    await delivery.close();
  }
});

test('folder: a good delivery is listed, hashed and read back', async () => {
  const root = fresh('site');
  const seconds = Date.UTC(2023, 10, 12, 13, 14, 15) / 1000;
  const files: Record<string, Buffer> = {
    'index.html': Buffer.from('<p>hello</p>'),
    'a/b/c.txt': Buffer.from('deep'),
    'A.txt': Buffer.from(''),
    'nested.zip': await yazlBuffer([{ name: 'inner.txt', data: 'inside' }]),
    'big.bin': Buffer.alloc(2 * 1024 * 1024 + 3, 9),
  };
  for (const [name, data] of Object.entries(files)) {
    mkdirSync(join(root, name, '..'), { recursive: true });
    writeFileSync(join(root, name), data);
    utimesSync(join(root, name), seconds, seconds);
  }
  mkdirSync(join(root, 'empty'));
  const delivery = await openDelivery(`${root}/`);
  try {
    assert.equal(delivery.kind, 'folder');
    assert.equal(delivery.path, root);
    assert.equal(delivery.name, 'site');
    const names = Object.keys(files).sort((x, y) => (x < y ? -1 : 1));
    assert.deepEqual(
      delivery.entries.map((entry) => entry.name),
      names,
    );
    assert.deepEqual(names, ['A.txt', 'a/b/c.txt', 'big.bin', 'index.html', 'nested.zip']);
    assert.equal(
      delivery.size,
      Object.values(files).reduce((sum, data) => sum + data.length, 0),
    );
    assert.equal(delivery.sha256, sha256(names.map((name) => `${sha256(files[name]!)}  ${name}\n`).join('')));
    for (const entry of delivery.entries) {
      assert.equal(entry.size, files[entry.name]!.length);
      assert.equal(entry.sha256, sha256(files[entry.name]!));
      assert.equal(entry.mtimeNs / 1_000_000_000n, BigInt(seconds), entry.name);
      assert.deepEqual(await readAll(delivery, entry.name), files[entry.name]);
    }
    // A file changed after the screening is caught when read again.
    writeFileSync(join(root, 'index.html'), '<p>HELLO</p>');
    await assert.rejects(
      readAll(delivery, 'index.html'),
      (error: ArchiverError) => error.code === 'ERR_IMPORT_DAMAGED' && error.message.includes('entry "index.html" changed since it was screened'),
    );
  } finally {
    await delivery.close();
  }
});

test('folder: refuses a symbolic link', async () => {
  const root = fresh('site');
  mkdirSync(join(root, 'sub'), { recursive: true });
  writeFileSync(join(root, 'sub', 'ok.txt'), 'fine');
  symlinkSync('/etc/passwd', join(root, 'sub', 'link'));
  await refuses(root, 'ERR_IMPORT_UNSAFE', 'sub/link', /symbolic link/);
});

test('folder: refuses a fifo', async (t) => {
  const root = fresh('site');
  mkdirSync(root);
  if (spawnSync('mkfifo', [join(root, 'pipe')]).status !== 0) return t.skip('no mkfifo here');
  await refuses(root, 'ERR_IMPORT_UNSAFE', 'pipe', /fifo/);
});

test('folder: refuses names over the caps and names that clash after NFC', async () => {
  const root = fresh('site');
  mkdirSync(root);
  writeFileSync(join(root, 'one'), '0123456789');
  writeFileSync(join(root, 'two'), '0123456789');
  await refuses(root, 'ERR_IMPORT_UNSAFE', null, /--max-total-size/, { maxTotalBytes: 15 });
  await refuses(root, 'ERR_IMPORT_UNSAFE', null, /--max-entries/, { maxEntries: 1 });
  writeFileSync(join(root, 'caf\u00e9'), 'precomposed');
  writeFileSync(join(root, 'cafe\u0301'), 'decomposed');
  const error = await refuses(root, 'ERR_IMPORT_UNSAFE', null, /Unicode NFC/);
  assert.ok(error.message.includes('"caf\u00e9"') && error.message.includes('"cafe\u0301"'), error.message);
});

test('a path that does not exist is a usage error', async () => {
  await assert.rejects(openDelivery(join(work, 'nothing-here.zip')), (error: ArchiverError) => error.code === 'ERR_ARCHIVE_USAGE');
});
