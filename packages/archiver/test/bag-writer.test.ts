import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { appendFile, mkdir, mkdtemp, readdir, readFile, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { folderStorage } from '../src/aip/folder-storage.ts';
import { verifyBag } from '../src/bag/bag-verifier.ts';
import { type BagBuilder, cleanupLeftovers, createBagBuilder, humanSize, type SealOptions } from '../src/bag/bag-writer.ts';
import type { FinishedBag } from '../src/bag/sealed-bag.ts';
import { ArchiverError, isArchiverError } from '../src/core/errors.ts';

const dirs: string[] = [];
after(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

async function archive(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'oaibag-bag-'));
  dirs.push(dir);
  return dir;
}

async function* chunks(...parts: Array<string | Uint8Array>): AsyncIterable<Uint8Array> {
  for (const part of parts) yield typeof part === 'string' ? Buffer.from(part) : part;
}

/** Seals a bag and places it in the archive `dir` on its own, through the folder storage (aip/). */
async function finish(dir: string, builder: BagBuilder, options: SealOptions): Promise<FinishedBag> {
  const [placement] = await folderStorage(dir).placeBags([await builder.seal(options)]);
  if (placement!.error) throw placement!.error;
  return placement!.bag!;
}

const sha = (algorithm: string, data: string | Uint8Array) => createHash(algorithm).update(data).digest('hex');
const NOW = () => new Date('2024-02-29T23:30:00Z');
const INFO: Array<[string, string]> = [
  ['External-Identifier', 'http://example.org/files/report.pdf'],
  ['OAI-Identifier', 'oai:example.org:1'],
];

const AWKWARD = [
  'plain.txt',
  'with space.txt',
  'line\nbreak.txt',
  'carriage\rreturn.txt',
  'cafe\u0301.txt', // NFD in, NFC on disk and in the manifests
  `${'n'.repeat(196)}.txt`, // a 200-byte name
  'sub dir/nested.bin',
];

/** A bag with every awkward name, a tag file, finished at `dest`. */
async function awkwardBag(dir: string, dest = 'aips/aa/bb/x/20240229-000000000000'): Promise<FinishedBag> {
  const builder = await createBagBuilder(dir, { now: NOW });
  for (const name of AWKWARD) await builder.addPayload(name, chunks(`content of ${name}\n`, 'second chunk'));
  await builder.addTagFile('oai-record.xml', '<record/>\n');
  return finish(dir, builder, { bagInfo: INFO, destination: dest });
}

test('a bag with awkward payload names is written to the letter and verifies', async () => {
  const dir = await archive();
  const bag = await awkwardBag(dir);
  assert.equal(bag.bagPath, join(dir, 'aips/aa/bb/x/20240229-000000000000'));
  assert.equal(bag.existing, false);
  assert.equal(bag.files.length, AWKWARD.length);

  assert.equal(await readFile(join(bag.bagPath, 'bagit.txt'), 'utf8'), 'BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n');
  const bytes = AWKWARD.reduce((sum, n) => sum + Buffer.byteLength(`content of ${n}\nsecond chunk`), 0);
  assert.equal(bag.payloadOxum, `${bytes}.${AWKWARD.length}`);
  assert.equal(
    await readFile(join(bag.bagPath, 'bag-info.txt'), 'utf8'),
    'External-Identifier: http://example.org/files/report.pdf\nOAI-Identifier: oai:example.org:1\n' +
      `Bagging-Date: 2024-02-29\nBag-Size: ${humanSize(bytes)}\nPayload-Oxum: ${bytes}.${AWKWARD.length}\n`,
  );

  const manifest = await readFile(join(bag.bagPath, 'manifest-sha256.txt'), 'utf8');
  const content = (n: string) => `content of ${n}\nsecond chunk`;
  assert.ok(manifest.includes(`${sha('sha256', content('with space.txt'))}  data/with space.txt\n`));
  assert.ok(manifest.includes(`${sha('sha256', content('line\nbreak.txt'))}  data/line%0Abreak.txt\n`));
  assert.ok(manifest.includes(`  data/carriage%0Dreturn.txt\n`));
  assert.ok(manifest.includes(`  data/caf\u00e9.txt\n`), 'NFC in the manifest');
  assert.equal(manifest.split('\n').length, AWKWARD.length + 1, 'one line per file, nothing split by a name');
  const lines = manifest
    .trimEnd()
    .split('\n')
    .map((l) => Buffer.from(l.slice(66)));
  assert.deepEqual(lines, [...lines].sort(Buffer.compare), 'sorted by UTF-8 bytes');
  const sha512 = await readFile(join(bag.bagPath, 'manifest-sha512.txt'), 'utf8');
  assert.ok(sha512.includes(`${sha('sha512', content('plain.txt'))}  data/plain.txt\n`));

  const names = await readdir(join(bag.bagPath, 'data'));
  assert.ok(names.includes('caf\u00e9.txt') && !names.includes('cafe\u0301.txt'));
  assert.equal(await readFile(join(bag.bagPath, 'data', 'line\nbreak.txt'), 'utf8'), content('line\nbreak.txt'));

  const tags = await readFile(join(bag.bagPath, 'tagmanifest-sha256.txt'), 'utf8');
  assert.deepEqual(
    tags
      .trimEnd()
      .split('\n')
      .map((l) => l.split('  ')[1]),
    ['bag-info.txt', 'bagit.txt', 'manifest-sha256.txt', 'manifest-sha512.txt', 'metadata/oai-record.xml'],
  );
  assert.ok(tags.includes(`${sha('sha256', '<record/>\n')}  metadata/oai-record.xml\n`));

  assert.deepEqual(await verifyBag(bag.bagPath), { valid: true, problems: [] });
  assert.deepEqual(await verifyBag(bag.bagPath, { fast: true }), { valid: true, problems: [] });
  assert.deepEqual(await readdir(join(dir, 'tmp')), [], 'no temporary directory left');
});

test('corruption, deletion, a stray file and a broken oxum are each reported with the file', async () => {
  const dir = await archive();
  const bag = await awkwardBag(dir);
  const p = (name: string) => join(bag.bagPath, 'data', name);

  // One flipped byte in the file whose name holds a line break.
  const victim = p('line\nbreak.txt');
  const original = await readFile(victim);
  const flipped = Buffer.from(original);
  flipped[0] = flipped[0]! ^ 1;
  await writeFile(victim, flipped);
  let report = await verifyBag(bag.bagPath);
  assert.equal(report.valid, false);
  assert.deepEqual(
    report.problems.map((x) => [x.kind, x.path, x.algorithm, x.expected, x.found]),
    [
      ['checksum', 'data/line\nbreak.txt', 'sha256', sha('sha256', original), sha('sha256', flipped)],
      ['checksum', 'data/line\nbreak.txt', 'sha512', sha('sha512', original), sha('sha512', flipped)],
    ],
  );
  assert.equal(
    report.problems[0]!.message,
    `data/line%0Abreak.txt sha256 validation failed: expected="${sha('sha256', original)}" found="${sha('sha256', flipped)}"`,
  );
  assert.deepEqual(await verifyBag(bag.bagPath, { fast: true }), { valid: true, problems: [] }, 'same size: fast mode cannot see it');
  await writeFile(victim, original);

  // A deleted file: missing from disk in both manifests, and the oxum no longer adds up.
  const gone = await readFile(p('with space.txt'));
  await unlink(p('with space.txt'));
  report = await verifyBag(bag.bagPath, { fast: true });
  assert.deepEqual(
    report.problems.map((x) => [x.kind, x.path, x.algorithm ?? null]),
    [
      ['missing', 'data/with space.txt', 'sha256'],
      ['missing', 'data/with space.txt', 'sha512'],
      ['oxum', 'bag-info.txt', null],
    ],
  );
  const [bytes, files] = bag.payloadOxum.split('.').map(Number);
  assert.equal(report.problems[2]!.expected, bag.payloadOxum);
  assert.equal(report.problems[2]!.found, `${bytes! - gone.length}.${files! - 1}`);
  await writeFile(p('with space.txt'), gone);

  // A stray file.
  await writeFile(p('stray.txt'), 'x');
  report = await verifyBag(bag.bagPath);
  assert.deepEqual(
    report.problems.map((x) => [x.kind, x.path, x.algorithm ?? null]),
    [
      ['unexpected', 'data/stray.txt', 'sha256'],
      ['unexpected', 'data/stray.txt', 'sha512'],
      ['oxum', 'bag-info.txt', null],
    ],
  );
  await unlink(p('stray.txt'));

  // A broken Payload-Oxum: bag-info.txt changes, so the tag manifest notices too.
  const info = join(bag.bagPath, 'bag-info.txt');
  const infoText = await readFile(info, 'utf8');
  await writeFile(info, infoText.replace(`Payload-Oxum: ${bag.payloadOxum}`, `Payload-Oxum: ${bytes! + 1}.${files}`));
  report = await verifyBag(bag.bagPath);
  assert.deepEqual(
    report.problems.map((x) => [x.kind, x.path, x.expected, x.found]),
    [
      ['oxum', 'bag-info.txt', `${bytes! + 1}.${files}`, bag.payloadOxum],
      ['tag', 'bag-info.txt', sha('sha256', infoText), sha('sha256', await readFile(info))],
    ],
  );
  await writeFile(info, infoText);

  // A changed metadata file and a stray tag file.
  await appendFile(join(bag.bagPath, 'metadata', 'oai-record.xml'), ' ');
  await writeFile(join(bag.bagPath, 'metadata', 'extra.txt'), 'x');
  report = await verifyBag(bag.bagPath, { fast: true });
  assert.deepEqual(
    report.problems.map((x) => [x.kind, x.path]),
    [
      ['unexpected', 'metadata/extra.txt'],
      ['tag', 'metadata/oai-record.xml'],
    ],
  );
});

test('a tag manifest deleted, or a folder in its place, is a problem: BagIt allows none, our profile does not', async () => {
  for (const damage of ['deleted', 'a folder'] as const) {
    const dir = await archive();
    const bag = await awkwardBag(dir);
    // Without the tag manifest, an edited bag-info.txt would go unseen.
    await unlink(join(bag.bagPath, 'tagmanifest-sha256.txt'));
    if (damage === 'a folder') await mkdir(join(bag.bagPath, 'tagmanifest-sha256.txt'));
    await appendFile(join(bag.bagPath, 'bag-info.txt'), 'Edited: afterwards\n');
    for (const fast of [false, true]) {
      const report = await verifyBag(bag.bagPath, { fast });
      assert.equal(report.valid, false, `${damage}, fast ${fast}`);
      assert.deepEqual(
        report.problems.map((problem) => [problem.kind, problem.path, problem.message]),
        [['missing', 'tagmanifest-sha256.txt', 'no tag manifest (tagmanifest-sha256.txt): the tag files are unprotected']],
      );
    }
  }
});

test('malformed bag declarations and manifests are format problems', async () => {
  const dir = await archive();
  const bag = await awkwardBag(dir);
  await writeFile(join(bag.bagPath, 'bagit.txt'), 'BagIt-Version: 0.97\nTag-File-Character-Encoding: UTF-8\n');
  await appendFile(join(bag.bagPath, 'manifest-sha256.txt'), `${'0'.repeat(64)}  data/../../etc/passwd\n${'0'.repeat(64)}  data/50%off\nnot a line\n`);
  const report = await verifyBag(bag.bagPath, { fast: true });
  const kinds = report.problems.map((x) => [x.kind, x.path]);
  assert.deepEqual(kinds.slice(0, 4), [
    ['format', 'bagit.txt'],
    ['format', 'data/../../etc/passwd'],
    ['format', 'manifest-sha256.txt'],
    ['format', 'manifest-sha256.txt'],
  ]);
  assert.match(report.problems[2]!.message, /line \d+ has a "%"/);
  assert.match(report.problems[3]!.message, /is not "<sha256 digest> <path>"/);
});

test('linkPayload hard-links the previous version, which costs no space, and the bag verifies', async () => {
  const dir = await archive();
  const first = await awkwardBag(dir, 'aips/aa/bb/x/20240101-000000000000');
  const previous = first.files.find((f) => f.path === 'data/with space.txt')!;
  const builder = await createBagBuilder(dir, { now: NOW });
  const linked = await builder.linkPayload('with space.txt', join(first.bagPath, previous.path), previous);
  assert.equal(linked.linked, true);
  assert.equal(linked.sha512, previous.sha512);
  const second = await finish(dir, builder, { bagInfo: INFO, destination: 'aips/aa/bb/x/20240229-000000000000' });
  const a = await stat(join(first.bagPath, previous.path));
  const b = await stat(join(second.bagPath, 'data', 'with space.txt'));
  assert.equal(b.ino, a.ino, 'same inode');
  assert.equal(b.nlink, 2);
  assert.deepEqual(await verifyBag(second.bagPath), { valid: true, problems: [] });
  assert.deepEqual(await verifyBag(first.bagPath), { valid: true, problems: [] });

  const wrong = await createBagBuilder(dir);
  await assert.rejects(
    wrong.linkPayload('x.txt', join(first.bagPath, previous.path), { ...previous, size: previous.size + 1 }),
    (e: unknown) => e instanceof ArchiverError && e.code === 'ERR_ARCHIVE_BAG',
  );
  await wrong.abort();
});

test('linkPayload copies, checking the digests, when a hard link is impossible (another file system)', async (t) => {
  const shm = await mkdtemp('/dev/shm/oaibag-').catch(() => undefined);
  if (shm === undefined) return t.skip('no /dev/shm');
  dirs.push(shm);
  const dir = await archive();
  if ((await stat(shm)).dev === (await stat(dir)).dev) return t.skip('/dev/shm is on the same file system');
  const source = join(shm, 'previous.bin');
  await writeFile(source, 'same bytes as before');
  const digests = { size: 20, sha256: sha('sha256', 'same bytes as before'), sha512: sha('sha512', 'same bytes as before') };
  const builder = await createBagBuilder(dir, { now: NOW });
  const entry = await builder.linkPayload('previous.bin', source, digests);
  assert.equal(entry.linked, false);
  const bag = await finish(dir, builder, { bagInfo: [], destination: 'aips/ee/ff/w/20240229-333333333333' });
  assert.notEqual((await stat(join(bag.bagPath, 'data', 'previous.bin'))).ino, (await stat(source)).ino);
  assert.deepEqual(await verifyBag(bag.bagPath), { valid: true, problems: [] });

  const liar = await createBagBuilder(dir);
  await assert.rejects(liar.linkPayload('previous.bin', source, { ...digests, sha256: sha('sha256', 'other') }), /does not match its recorded digests/);
  assert.deepEqual(await readdir(join(liar.tempDir, 'data')), [], 'the bad copy is not kept');
  await liar.abort();
});

test('a 50 MB payload streams through', async () => {
  const dir = await archive();
  const builder = await createBagBuilder(dir, { now: NOW });
  const block = Buffer.alloc(1 << 20, 0x61);
  async function* big(): AsyncIterable<Uint8Array> {
    for (let i = 0; i < 50; i++) yield block;
  }
  const entry = await builder.addPayload('big.bin', big());
  const expected = createHash('sha256');
  for (let i = 0; i < 50; i++) expected.update(block);
  assert.equal(entry.size, 50 * (1 << 20));
  assert.equal(entry.sha256, expected.digest('hex'));
  const bag = await finish(dir, builder, { bagInfo: [], destination: 'aips/bb/cc/y/20240229-111111111111' });
  assert.equal(bag.payloadOxum, `${50 * (1 << 20)}.1`);
  assert.match(await readFile(join(bag.bagPath, 'bag-info.txt'), 'utf8'), /^Bag-Size: 52 MB$/m);
  assert.deepEqual(await verifyBag(bag.bagPath), { valid: true, problems: [] });
});

test('an interrupted build leaves nothing in place, and cleanupLeftovers removes its remains', async () => {
  const dir = await archive();
  const aborted = await createBagBuilder(dir);
  await aborted.addPayload('a.txt', chunks('a'));
  await aborted.abort();
  await assert.rejects(aborted.addPayload('b.txt', chunks('b')), /already aborted/);

  // A source that fails midway: the partial file does not linger in the bag.
  const failing = await createBagBuilder(dir);
  async function* broken(): AsyncIterable<Uint8Array> {
    yield Buffer.from('half');
    throw new Error('connection reset');
  }
  await assert.rejects(failing.addPayload('c.txt', broken()), /connection reset/);
  assert.deepEqual(await readdir(join(failing.tempDir, 'data')), []);

  // A crash: the builder is simply never finished; the next start cleans up.
  const crashed = await createBagBuilder(dir);
  await crashed.addPayload('d.txt', chunks('d'));
  assert.deepEqual((await readdir(join(dir, 'tmp'))).sort(), [failing.tempDir, crashed.tempDir].map((t) => t.split('/').pop()!).sort());
  assert.equal((await cleanupLeftovers(dir)).length, 2);
  assert.deepEqual(await readdir(join(dir, 'tmp')), []);
  assert.deepEqual(await readdir(dir), ['tmp'], 'no aips directory was ever created');
  assert.deepEqual(await cleanupLeftovers(await archive()), [], 'no tmp directory is fine');
});

test('finish never clobbers an existing bag, and accepts the same bag delivered twice', async () => {
  const dir = await archive();
  const dest = 'aips/cc/dd/z/20240229-222222222222';
  const first = await awkwardBag(dir, dest);
  const twin = await awkwardBag(dir, dest);
  assert.equal(twin.existing, true);
  assert.equal(twin.bagPath, first.bagPath);

  const other = await createBagBuilder(dir, { now: NOW });
  await other.addPayload('plain.txt', chunks('different bytes'));
  await assert.rejects(
    finish(dir, other, { bagInfo: INFO, destination: dest }),
    (e: unknown) => e instanceof ArchiverError && e.code === 'ERR_ARCHIVE_BAG' && e.path === first.bagPath,
  );
  assert.deepEqual(await verifyBag(first.bagPath), { valid: true, problems: [] }, 'the existing bag is untouched');
  assert.deepEqual(await readdir(join(dir, 'tmp')), []);
});

test('bag-info labels and values that would corrupt the file are refused', async () => {
  const dir = await archive();
  for (const bagInfo of [[['Title', 'two\nlines']], [['Bad:Label', 'x']], [[' Padded', 'x']], [['Payload-Oxum', '1.1']]] as Array<Array<[string, string]>>) {
    const builder = await createBagBuilder(dir);
    await builder.addPayload('a.txt', chunks('a'));
    await assert.rejects(finish(dir, builder, { bagInfo, destination: 'aips/x' }), (e: unknown) => e instanceof ArchiverError && e.code === 'ERR_ARCHIVE_BAG');
  }
  const builder = await createBagBuilder(dir);
  await assert.rejects(builder.addPayload('../escape.txt', chunks('a')), (e: unknown) => e instanceof ArchiverError && e.code === 'ERR_ARCHIVE_PATH');
  await builder.addPayload('a.txt', chunks('a'));
  await assert.rejects(builder.addPayload('a.txt', chunks('a')), /added twice/);
  await assert.rejects(
    finish(dir, builder, { bagInfo: [], destination: '../outside' }),
    (e: unknown) => e instanceof ArchiverError && e.code === 'ERR_ARCHIVE_PATH',
  );
  await mkdir(join(dir, 'unused'));
  assert.deepEqual(await readdir(join(dir, 'tmp')), []);
  assert.deepEqual((await readdir(dir)).sort(), ['tmp', 'unused']);
});

test('humanSize', () => {
  assert.equal(humanSize(0), '0 bytes');
  assert.equal(humanSize(999), '999 bytes');
  assert.equal(humanSize(1234567), '1.2 MB');
  assert.equal(humanSize(292_000_000), '292 MB');
  assert.equal(humanSize(999_999), '1.0 MB');
});

test('payload names bagit-python could not read back are refused: "%" and trailing Python whitespace', async () => {
  const dir = await archive();
  const builder = await createBagBuilder(dir, { now: NOW });
  for (const name of ['100% sure.txt', 'literal %0A escape.txt', 'unit\u001f', 'next line\u0085']) {
    await assert.rejects(builder.addPayload(name, chunks('x')), (error: unknown) => isArchiverError(error) && error.code === 'ERR_ARCHIVE_PATH', name);
  }
  await builder.abort();
});
