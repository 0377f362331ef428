// `oaibag verify --bag` and `oaibag import` of damaged bag ZIPs (issue 26): every problem of a
// damaged bag ZIP, read in place, is one line naming its entry (exit 4); and `oaibag import` of a
// bag ZIP whose payload does not match its manifests, read once, stores nothing and names the
// entry. (That the verifier finds a folder and a ZIP damaged the same way, problem for problem,
// is packages/archiver/test/bag-sources.test.ts.)
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Catalog, importDelivery, verifyZipBag } from '../packages/archiver/src/index.ts';
import { DAMAGES, damagedBag, FOLDER, type PristineBag, pristineBag } from './damaged-bags.ts';

const BIN = join(import.meta.dirname, '..', 'packages', 'archiver', 'bin', 'oaibag.js');
let work: string;
let bag: PristineBag;

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-bag-sources-'));
  bag = await pristineBag(work);
});

after(() => rmSync(work, { recursive: true, force: true }));

test('the damage as verify --bag words it: each line names the entry; exit 4', async () => {
  const { zip } = await damagedBag(bag, 'worded', DAMAGES['all at once']!);
  const report = await verifyZipBag(zip);
  assert.equal(report.ok, false);
  assert.equal(report.folder, FOLDER);
  const original = (path: string) => readFileSync(join(bag.pristine, FOLDER, path));
  const flipped = Buffer.from(original(bag.payload[1]!));
  flipped[0] = flipped[0]! ^ 1;
  const lines = new Set(report.problems);
  for (const line of [
    `${FOLDER}/${bag.payload[0]}: in manifest-sha256.txt, missing from the ZIP`,
    `${FOLDER}/${bag.payload[0]}: in manifest-sha512.txt, missing from the ZIP`,
    `${FOLDER}/${bag.payload[1]}: sha256 ${sha256(flipped)}, the manifest says ${sha256(original(bag.payload[1]!))}`,
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
  const { zip } = await damagedBag(bag, 'import', DAMAGES['wrong digest']!);
  const bags = join(work, 'bags-folder');
  mkdirSync(bags);
  const zipName = `${FOLDER}.zip`;
  cpSync(zip, join(bags, zipName));
  writeFileSync(join(bags, 'SHA256SUMS'), `${sha256(readFileSync(zip))}  ${zipName}\n`);
  const named = new RegExp(
    `^${zipName.replace(/\./g, '\\.')}: ${FOLDER}/${bag.payload[1]!.replace(/[.]/g, '\\.')}: sha256 [0-9a-f]{64}, the manifest says [0-9a-f]{64} \\(and 1 more problem\\(s\\)\\)$`,
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
  const { zip: longer } = await damagedBag(bag, 'import-longer', (bagDir, payload) => appendFileSync(join(bagDir, payload[2]!), '!'));
  await assert.rejects(
    importDelivery({ archiveDir: join(work, 'import-longer'), delivery: longer }),
    (error: NodeJS.ErrnoException) =>
      error.code === 'ERR_IMPORT_DAMAGED' &&
      error.message.startsWith(`import-longer.zip: ${FOLDER}/${bag.payload[2]}: sha256 `) &&
      / \(and 2 more problem\(s\)\)$/.test(error.message),
  );
});
