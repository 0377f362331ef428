// Damaged copies of one real bag, as a folder and as a bag ZIP, for the tests of the bag
// verifier (packages/archiver/test/bag-sources.test.ts) and of `verify --bag` and `import`
// (test/bag-sources.test.ts): a small site imported, its one bag exported and unpacked, then
// each damage applied to a copy.
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, readdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import yauzl from 'yauzl';
import yazl from 'yazl';
import { exportBags, importDelivery } from '../packages/archiver/src/index.ts';

/** The folder the exported bag unpacks to. */
export const FOLDER = 'harvest-000001-batch-00001';

/** The exported bag, unpacked below `pristine`: the copy every case damages a copy of. */
export interface PristineBag {
  work: string;
  pristine: string;
  /** Its payload files, bag-relative. */
  payload: string[];
}

/** Imports a three-file site into a new archive in `work`, exports its bag and unpacks it. */
export async function pristineBag(work: string): Promise<PristineBag> {
  const site = join(work, 'site');
  mkdirSync(join(site, 'dir'), { recursive: true });
  writeFileSync(join(site, 'index.html'), '<p>home</p>');
  writeFileSync(join(site, 'dir', 'a b.txt'), 'a file with a space');
  writeFileSync(join(site, 'dir', 'other.txt'), 'another file');
  const archive = join(work, 'archive');
  await importDelivery({ archiveDir: archive, delivery: site, baseUrl: 'http://site.example/' });
  const [bag] = await exportBags({ archiveDir: archive, to: join(work, 'exported') });
  assert.equal(bag!.folder, FOLDER);
  const pristine = join(work, 'pristine');
  await unzip(bag!.file, pristine);
  const payload = filesUnder(join(pristine, FOLDER)).filter((path) => path.startsWith('data/'));
  assert.equal(payload.length, 3);
  return { work, pristine, payload };
}

/** Every file below `dir`, relative, '/'-separated, in code-unit order. */
export function filesUnder(dir: string): string[] {
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
export async function damagedBag(bag: PristineBag, name: string, damage: Damage): Promise<{ folder: string; zip: string }> {
  const copy = join(bag.work, 'cases', name);
  cpSync(bag.pristine, copy, { recursive: true });
  const folder = join(copy, FOLDER);
  damage(folder, bag.payload);
  const zip = join(bag.work, 'cases', `${name}.zip`);
  await zipBag(folder, zip);
  return { folder, zip };
}

/** A damage done to a bag folder whose payload files (bag-relative) are `payload`. */
export type Damage = (bagDir: string, payload: readonly string[]) => void;

const EACH: Record<string, Damage> = {
  'missing payload': (bagDir, payload) => unlinkSync(join(bagDir, payload[0]!)),
  'wrong digest': (bagDir, payload) => {
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

/** Each damage by its name, and all of them at once (`all at once`). */
export const DAMAGES: Readonly<Record<string, Damage>> = {
  ...EACH,
  'all at once': (bagDir, payload) => {
    for (const damage of Object.values(EACH)) damage(bagDir, payload);
  },
};
