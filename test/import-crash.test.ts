// `oaibag import` killed with SIGKILL half-way (issue 16): the archive stays valid (every bag
// placed is whole and recorded, or recorded at the next start), and the same command run again
// continues: every file ends up stored exactly once.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import yazl from 'yazl';
import { Catalog } from '../packages/archiver/src/index.ts';

const BIN = join(import.meta.dirname, '..', 'packages', 'archiver', 'bin', 'oaibag.js');
const FILES = 3000;
let work: string;

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-import-crash-'));
  const zip = new yazl.ZipFile();
  for (let n = 0; n < FILES; n++) {
    zip.addBuffer(Buffer.from(`file ${n}\n`.repeat(50)), `pages/${String(n).padStart(5, '0')}.html`, { mtime: new Date('2010-01-01T00:00:00Z') });
  }
  zip.end();
  await new Promise<void>((resolve, reject) =>
    zip.outputStream
      .pipe(createWriteStream(join(work, 'site.zip')))
      .on('close', resolve)
      .on('error', reject),
  );
});

after(() => rmSync(work, { recursive: true, force: true }));

function liveResources(archive: string): number {
  const catalog = Catalog.open(archive, { create: false });
  try {
    return catalog.status().sources.reduce((sum, source) => sum + source.liveResources, 0);
  } finally {
    catalog.close();
  }
}

test('kill -9 in the middle of an import: the archive stays valid and the rerun continues', async () => {
  const archive = join(work, 'archive');
  const args = [BIN, 'import', '--archive', archive, '--base-url', 'http://site.example/', '--batch-records', '100', join(work, 'site.zip')];
  const child = spawn(process.execPath, args, { stdio: 'ignore' });
  const firstBag = join(archive, 'aips', 'harvest-000001', 'batch-00002');
  const killed = await new Promise<NodeJS.Signals | null>((resolve) => {
    const poll = setInterval(() => {
      if (existsSync(firstBag)) {
        clearInterval(poll);
        child.kill('SIGKILL');
      }
    }, 2);
    child.on('exit', (_code, signal) => {
      clearInterval(poll);
      resolve(signal);
    });
  });
  assert.equal(killed, 'SIGKILL', 'the import was killed before it could finish');
  const before = liveResources(archive);
  assert.ok(before < FILES, `${before} of ${FILES} files stored before the kill`);

  const verify = spawnSync(process.execPath, [BIN, 'verify', '--archive', archive], { encoding: 'utf8' });
  assert.equal(verify.status, 0, verify.stdout + verify.stderr);

  const rerun = spawnSync(process.execPath, args, { encoding: 'utf8' });
  assert.equal(rerun.status, 0, rerun.stderr);
  assert.equal(liveResources(archive), FILES);
  const catalog = Catalog.open(archive, { create: false });
  try {
    const versions = catalog.status().sources.reduce((sum, source) => sum + source.versions, 0);
    assert.equal(versions, FILES, 'every file stored exactly once');
  } finally {
    catalog.close();
  }
  const tmp = join(archive, 'tmp');
  if (existsSync(tmp)) assert.deepEqual(readdirSync(tmp), [], 'nothing left in tmp/');
  const again = spawnSync(process.execPath, [BIN, 'verify', '--archive', archive], { encoding: 'utf8' });
  assert.equal(again.status, 0, again.stdout + again.stderr);
});

/** Kills `args`' process once `ready()` holds (polled every 2 ms); resolves with its signal. */
function killWhen(args: string[], ready: () => boolean): Promise<NodeJS.Signals | null> {
  const child = spawn(process.execPath, args, { stdio: 'ignore' });
  return new Promise((resolve) => {
    const poll = setInterval(() => {
      if (ready()) {
        clearInterval(poll);
        child.kill('SIGKILL');
      }
    }, 2);
    child.on('exit', (_code, signal) => {
      clearInterval(poll);
      resolve(signal);
    });
  });
}

function hasAdoptionFolder(archive: string): boolean {
  const tmp = join(archive, 'tmp');
  return existsSync(tmp) && readdirSync(tmp).some((name) => name.startsWith('adopt-'));
}

// Serialized bags are unpacked into tmp/ while the delivery is screened, then placed one by one
// (issue 26: each bag ZIP read once). A kill -9 while they are unpacked, or between two placed
// bags, leaves a valid archive, and the same import run again takes every bag exactly once.
test('kill -9 while serialized bags are unpacked or placed: the archive stays valid and the rerun takes every bag once', async () => {
  const source = join(work, 'bags-source');
  const made = spawnSync(
    process.execPath,
    [BIN, 'import', '--archive', source, '--base-url', 'http://site.example/', '--batch-records', '100', join(work, 'site.zip')],
    {
      encoding: 'utf8',
    },
  );
  assert.equal(made.status, 0, made.stderr);
  const bags = join(work, 'bags');
  const exported = spawnSync(process.execPath, [BIN, 'export', '--bags', '--archive', source, '--to', bags], { encoding: 'utf8' });
  assert.equal(exported.status, 0, exported.stderr);
  const zips = readdirSync(bags).filter((name) => name.endsWith('.zip'));
  assert.ok(zips.length >= 20, `${zips.length} bag ZIPs exported`);

  const moments: Array<[string, (archive: string) => boolean]> = [
    ['while the bags are unpacked into tmp/', hasAdoptionFolder],
    ['after the fifth bag is placed', (archive) => existsSync(join(archive, 'aips', 'harvest-000001', 'batch-00005'))],
  ];
  for (const [moment, ready] of moments) {
    const archive = join(work, `adopted-${moments.findIndex(([name]) => name === moment)}`);
    const args = [BIN, 'import', '--archive', archive, bags];
    const killed = await killWhen(args, () => ready(archive));
    assert.equal(killed, 'SIGKILL', `the import was killed ${moment}, before it could finish`);
    if (existsSync(join(archive, 'catalog.sqlite'))) {
      const verify = spawnSync(process.execPath, [BIN, 'verify', '--archive', archive], { encoding: 'utf8' });
      assert.equal(verify.status, 0, `killed ${moment}: ${verify.stdout}${verify.stderr}`);
    }
    const rerun = spawnSync(process.execPath, args, { encoding: 'utf8' });
    assert.equal(rerun.status, 0, `rerun after a kill ${moment}: ${rerun.stderr}`);
    assert.equal(liveResources(archive), FILES, `killed ${moment}: every file of the bags is in the archive`);
    const catalog = Catalog.open(archive, { create: false });
    try {
      const status = catalog.status();
      assert.equal(
        status.sources.reduce((sum, one) => sum + one.versions, 0),
        FILES,
        `killed ${moment}: every version recorded exactly once`,
      );
    } finally {
      catalog.close();
    }
    assert.deepEqual(
      readdirSync(join(archive, 'aips', 'harvest-000001')).sort(),
      zips.map((zip) => zip.slice('harvest-000001-'.length, -'.zip'.length)).sort(),
    );
    const tmp = join(archive, 'tmp');
    if (existsSync(tmp)) assert.deepEqual(readdirSync(tmp), [], `killed ${moment}: nothing left in tmp/ after the rerun`);
    const again = spawnSync(process.execPath, [BIN, 'verify', '--archive', archive], { encoding: 'utf8' });
    assert.equal(again.status, 0, `killed ${moment}, rerun: ${again.stdout}${again.stderr}`);
  }
});
