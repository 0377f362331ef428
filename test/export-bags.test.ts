// `oaibag export --bags` (issue 16, first step; docs/import-export.md): each bag as one ZIP that
// unpacks to exactly one folder, byte-identical from one export to the next, and a valid bag
// once unpacked (read back with yauzl, checked by the archive's own bag verifier).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { after, before, test } from 'node:test';
import yauzl from 'yauzl';
import { exportBags, harvest, verifyBag, verifyZipBag } from '../packages/archiver/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';

let work: string;
let archive: string;
let repository: Repository;

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-export-bags-'));
  const site = join(work, 'site');
  mkdirSync(join(site, 'dir'), { recursive: true });
  writeFileSync(join(site, 'index.html'), '<p>home</p>');
  writeFileSync(join(site, 'dir', 'a b.txt'), 'a file with a space');
  writeFileSync(join(site, 'big.bin'), Buffer.alloc(200_000, 3));
  repository = await createRepository({ root: site, index: join(work, 'index.sqlite'), watch: false, rescanSeconds: 0, byValueMax: 100_000 });
  await repository.listen(0, '127.0.0.1');
  archive = join(work, 'archive');
  // The repository lists up to a second before its responseDate: the files must be older.
  await new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));
  await harvest({ baseUrl: `${repository.baseUrl}/oai`, archiveDir: archive });
});

after(async () => {
  await repository?.close();
  rmSync(work, { recursive: true, force: true });
});

/** Every entry of a ZIP, unpacked below `to`; returns the entry names. */
async function unzip(file: string, to: string): Promise<string[]> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.open(file, { lazyEntries: true, strictFileNames: true }, (error, opened) => (error ? reject(error) : resolve(opened))),
  );
  const names: string[] = [];
  await new Promise<void>((resolve, reject) => {
    zip.on('entry', (entry: yauzl.Entry) => {
      names.push(entry.fileName);
      zip.openReadStream(entry, (error, stream) => {
        if (error) return reject(error);
        mkdirSync(dirname(join(to, entry.fileName)), { recursive: true });
        pipeline(stream, createWriteStream(join(to, entry.fileName))).then(() => zip.readEntry(), reject);
      });
    });
    zip.on('end', resolve);
    zip.on('error', reject);
    zip.readEntry();
  });
  return names;
}

test('each bag is one ZIP that unpacks to exactly its one folder, a valid bag; the same bag gives the same bytes', async () => {
  const first = await exportBags({ archiveDir: archive, to: join(work, 'one') });
  // In another time zone (13:45 ahead, with daylight saving): the same bytes.
  const zone = process.env.TZ;
  process.env.TZ = 'Pacific/Chatham';
  const second = await exportBags({ archiveDir: archive, to: join(work, 'two') }).finally(() => {
    if (zone === undefined) delete process.env.TZ;
    else process.env.TZ = zone;
  });
  assert.equal(first.length, 1);
  const [bag] = first;
  assert.equal(bag!.folder, 'harvest-000001-batch-00001');
  assert.deepEqual(
    second.map((entry) => entry.sha256),
    first.map((entry) => entry.sha256),
    'deterministic',
  );
  assert.deepEqual(readFileSync(second[0]!.file), readFileSync(bag!.file));
  assert.equal(createHash('sha256').update(readFileSync(bag!.file)).digest('hex'), bag!.sha256);
  assert.equal(readFileSync(join(work, 'one', 'SHA256SUMS'), 'utf8'), `${bag!.sha256}  harvest-000001-batch-00001.zip\n`);
  const unpacked = join(work, 'unpacked');
  const names = await unzip(bag!.file, unpacked);
  assert.ok(
    names.every((name) => name.startsWith('harvest-000001-batch-00001/')),
    'one folder',
  );
  assert.deepEqual(names, [...names].sort(), 'entries in a fixed order');
  assert.ok(names.includes('harvest-000001-batch-00001/bagit.txt'));
  const report = await verifyBag(join(unpacked, 'harvest-000001-batch-00001'));
  assert.deepEqual(report.problems, [], 'a valid bag once unpacked');
});

test('verify --bag checks a serialized bag in place: a good one passes, a changed byte is named', async () => {
  const [bag] = await exportBags({ archiveDir: archive, to: join(work, 'checked') });
  const good = await verifyZipBag(bag!.file);
  assert.deepEqual(good.problems, []);
  assert.equal(good.folder, 'harvest-000001-batch-00001');
  assert.equal(good.payloadFiles, 3);
  const bytes = readFileSync(bag!.file);
  const at = bytes.indexOf('a file with a space');
  assert.ok(at > 0, 'entries are stored, so the text is in the ZIP as it is');
  bytes[at] = 'A'.charCodeAt(0);
  const damaged = join(work, 'damaged.zip');
  writeFileSync(damaged, bytes);
  const bad = await verifyZipBag(damaged);
  assert.equal(bad.ok, false);
  assert.equal(bad.problems.length, 2, 'one line for each manifest that disagrees');
  assert.match(bad.problems[0]!, /^harvest-000001-batch-00001\/data\/.*a b\.txt: sha256 [0-9a-f]{64}, the manifest says [0-9a-f]{64}$/);
  assert.match(bad.problems[1]!, /^harvest-000001-batch-00001\/data\/.*a b\.txt: sha512 [0-9a-f]{128}, the manifest says [0-9a-f]{128}$/);
});
