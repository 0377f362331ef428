// One bag verifier whatever the bytes come from (issue 26): the same damaged bag checked as a
// folder (verifyBag) and as a ZIP read in place (the ZIP source, `oaibag verify --bag`) is found
// damaged in the same way, problem for problem; and `oaibag import` of a bag ZIP whose payload
// does not match its manifests, read once, stores nothing and names the entry.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, before, test } from 'node:test';
import yauzl from 'yauzl';
import yazl from 'yazl';
import { type BagTally, verifyBag, verifyBagSource } from '../packages/archiver/src/bag/bag-verifier.ts';
import { openZipBag } from '../packages/archiver/src/bag/zip-bag-source.ts';
import { Catalog } from '../packages/archiver/src/catalog/catalog.ts';
import { exportBags } from '../packages/archiver/src/export/export-bags.ts';
import { importDelivery } from '../packages/archiver/src/import/import-delivery.ts';
import { verifyZipBag } from '../packages/archiver/src/verify/verify-zip-bag.ts';

const BIN = join(import.meta.dirname, '..', 'packages', 'archiver', 'bin', 'oaibag.js');
const FOLDER = 'harvest-000001-batch-00001';
let work: string;
/** The exported bag, unpacked: the pristine copy every case damages a copy of. */
let pristine: string;
/** Its payload files, bag-relative. */
let payload: string[];

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-bag-sources-'));
  const site = join(work, 'site');
  mkdirSync(join(site, 'dir'), { recursive: true });
  writeFileSync(join(site, 'index.html'), '<p>home</p>');
  writeFileSync(join(site, 'dir', 'a b.txt'), 'a file with a space');
  writeFileSync(join(site, 'dir', 'other.txt'), 'another file');
  const archive = join(work, 'archive');
  await importDelivery({ archiveDir: archive, delivery: site, baseUrl: 'http://site.example/' });
  const [bag] = await exportBags({ archiveDir: archive, to: join(work, 'exported') });
  assert.equal(bag!.folder, FOLDER);
  pristine = join(work, 'pristine');
  await unzip(bag!.file, pristine);
  payload = filesUnder(join(pristine, FOLDER)).filter((path) => path.startsWith('data/'));
  assert.equal(payload.length, 3);
});

after(() => rmSync(work, { recursive: true, force: true }));

/** Every file below `dir`, relative, '/'-separated, in code-unit order. */
function filesUnder(dir: string): string[] {
  return (readdirSync(dir, { recursive: true, withFileTypes: true }) as import('node:fs').Dirent[])
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)).split('\\').join('/'))
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

async function unzip(file: string, to: string): Promise<void> {
  const zip = await yauzl.openPromise(file, { lazyEntries: true, strictFileNames: true });
  for await (const entry of zip.eachEntry()) {
    const target = join(to, entry.fileName);
    mkdirSync(join(target, '..'), { recursive: true });
    const chunks: Buffer[] = [];
    for await (const chunk of await zip.openReadStreamPromise(entry)) chunks.push(chunk as Buffer);
    writeFileSync(target, Buffer.concat(chunks));
  }
  zip.close();
}

/** The bag folder `bagDir` as a bag ZIP (as export writes one: its folder at the top, entries stored, in code-unit order). */
async function zipBag(bagDir: string, file: string): Promise<void> {
  const zip = new yazl.ZipFile();
  for (const path of filesUnder(bagDir)) zip.addBuffer(readFileSync(join(bagDir, path)), `${FOLDER}/${path}`, { compress: false });
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream) chunks.push(chunk as Buffer);
  writeFileSync(file, Buffer.concat(chunks));
}

/** A copy of the pristine bag, damaged by `damage`, as a folder and as a ZIP. */
async function damagedBag(name: string, damage: (bagDir: string) => void): Promise<{ folder: string; zip: string }> {
  const copy = join(work, 'cases', name);
  cpSync(pristine, copy, { recursive: true });
  const folder = join(copy, FOLDER);
  damage(folder);
  const zip = join(work, 'cases', `${name}.zip`);
  await zipBag(folder, zip);
  return { folder, zip };
}

const DAMAGES: Record<string, (bagDir: string) => void> = {
  'missing payload': (bagDir) => unlinkSync(join(bagDir, payload[0]!)),
  'wrong digest': (bagDir) => {
    const file = join(bagDir, payload[1]!);
    const bytes = readFileSync(file);
    bytes[0] = bytes[0]! ^ 1;
    writeFileSync(file, bytes);
  },
  'bad oxum': (bagDir) => {
    const info = join(bagDir, 'bag-info.txt');
    writeFileSync(info, readFileSync(info, 'utf8').replace(/Payload-Oxum: .*/, 'Payload-Oxum: 1.1'));
  },
  'unexpected file': (bagDir) => writeFileSync(join(bagDir, 'data', 'stray.txt'), 'not in any manifest'),
  'bad tag manifest': (bagDir) => {
    const manifest = join(bagDir, 'tagmanifest-sha256.txt');
    writeFileSync(manifest, readFileSync(manifest, 'utf8').replace(/^[0-9a-f]{64}(?= {2}bag-info\.txt$)/m, '0'.repeat(64)));
  },
};
const EACH = Object.values(DAMAGES);
DAMAGES['all at once'] = (bagDir) => {
  for (const damage of EACH) damage(bagDir);
};

for (const [name, damage] of Object.entries(DAMAGES)) {
  test(`${name}: found the same as a folder and as a ZIP`, async () => {
    const { folder, zip } = await damagedBag(name.replace(/ /g, '-'), damage);
    const folderTally: BagTally = { payloadBytes: 0, payloadFiles: 0, hashedBytes: 0 };
    const fromFolder = await verifyBag(folder, { tally: folderTally });
    const zipBag = await openZipBag(zip);
    const zipTally: BagTally = { payloadBytes: 0, payloadFiles: 0, hashedBytes: 0 };
    const fromZip = await verifyBagSource(zipBag.source, { tally: zipTally }).finally(() => zipBag.close());
    assert.equal(fromFolder.valid, false);
    assert.ok(fromFolder.problems.length > 0);
    assert.deepEqual(fromZip, fromFolder, 'problem for problem');
    assert.deepEqual(zipTally, folderTally);
    assert.deepEqual(zipBag.problems, [], 'a sound container');
  });
}

test('the damage as verify --bag words it: each line names the entry; exit 4', async () => {
  const { zip } = await damagedBag('worded', DAMAGES['all at once']!);
  const report = await verifyZipBag(zip);
  assert.equal(report.ok, false);
  assert.equal(report.folder, FOLDER);
  const original = (path: string) => readFileSync(join(pristine, FOLDER, path));
  const flipped = Buffer.from(original(payload[1]!));
  flipped[0] = flipped[0]! ^ 1;
  const lines = new Set(report.problems);
  for (const line of [
    `${FOLDER}/${payload[0]}: in manifest-sha256.txt, missing from the ZIP`,
    `${FOLDER}/${payload[0]}: in manifest-sha512.txt, missing from the ZIP`,
    `${FOLDER}/${payload[1]}: sha256 ${sha256(flipped)}, the manifest says ${sha256(original(payload[1]!))}`,
    `${FOLDER}/data/stray.txt: not in every payload manifest`,
  ]) {
    assert.ok(lines.has(line), `${line}\nin\n${report.problems.join('\n')}`);
  }
  assert.ok(report.problems.some((line) => /^harvest-000001-batch-00001\/bag-info\.txt: Payload-Oxum 1\.1, the payload is \d+\.3$/.test(line)));
  assert.ok(report.problems.some((line) => /^harvest-000001-batch-00001\/bag-info\.txt: sha256 [0-9a-f]{64}, the manifest says 0{64}$/.test(line)));
  const cli = spawnSync(process.execPath, [BIN, 'verify', '--bag', zip], { encoding: 'utf8' });
  assert.equal(cli.status, 4, cli.stderr);
  assert.equal(
    cli.stdout,
    `${report.problems.join('\n')}\n${zip}: ${report.problems.length} problem(s) (${FOLDER}, ${report.entries} files, 3 payload files, ${report.payloadBytes} bytes)\n`,
  );
});

test('import of a bag ZIP whose payload does not match its manifests stores nothing and names the entry', async () => {
  // The ZIP is sound (its CRC-32s are those of the bytes it holds): only the manifests see it.
  const { zip } = await damagedBag('import', DAMAGES['wrong digest']!);
  const bags = join(work, 'bags-folder');
  mkdirSync(bags);
  const zipName = `${FOLDER}.zip`;
  cpSync(zip, join(bags, zipName));
  writeFileSync(join(bags, 'SHA256SUMS'), `${sha256(readFileSync(zip))}  ${zipName}\n`);
  const named = new RegExp(
    `^${zipName.replace(/\./g, '\\.')}: ${FOLDER}/${payload[1]!.replace(/[.]/g, '\\.')}: sha256 [0-9a-f]{64}, the manifest says [0-9a-f]{64} \\(and 1 more problem\\(s\\)\\)$`,
  );
  for (const [label, delivery] of [
    ['one bag ZIP', join(bags, zipName)],
    ['a folder of bag ZIPs', bags],
  ] as const) {
    const archive = join(work, `import-${label.replace(/ /g, '-')}`);
    await assert.rejects(importDelivery({ archiveDir: archive, delivery }), (error: NodeJS.ErrnoException) => {
      assert.equal(error.code, 'ERR_IMPORT_DAMAGED', label);
      assert.match(error.message, named, label);
      return true;
    });
    assert.equal(existsSync(join(archive, 'aips')), false, `${label}: no bag placed`);
    assert.deepEqual(readdirSync(join(archive, 'tmp')), [], `${label}: nothing left in tmp/`);
    const catalog = Catalog.open(archive, { create: false });
    try {
      assert.deepEqual(catalog.bags(), [], `${label}: no bag recorded`);
    } finally {
      catalog.close();
    }
  }
  // A byte appended: its digests and Payload-Oxum disagree, the entry is named first.
  const { zip: longer } = await damagedBag('import-longer', (bagDir) => appendFileSync(join(bagDir, payload[2]!), '!'));
  await assert.rejects(
    importDelivery({ archiveDir: join(work, 'import-longer'), delivery: longer }),
    (error: NodeJS.ErrnoException) =>
      error.code === 'ERR_IMPORT_DAMAGED' &&
      error.message.startsWith(`import-longer.zip: ${FOLDER}/${payload[2]}: sha256 `) &&
      / \(and 2 more problem\(s\)\)$/.test(error.message),
  );
});
