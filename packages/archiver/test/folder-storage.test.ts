import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { bagInFolder, folderStorage } from '../src/aip/folder-storage.ts';
import { verifyBag } from '../src/bag/bag-verifier.ts';
import { createBagBuilder } from '../src/bag/bag-writer.ts';
import { isArchiverError } from '../src/core/errors.ts';

const dirs: string[] = [];
after(() => Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true }))));

async function archive(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'oaibag-storage-'));
  dirs.push(dir);
  return dir;
}

async function text(stream: AsyncIterable<Buffer>): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

async function* pieces(...parts: string[]): AsyncIterable<Uint8Array> {
  for (const part of parts) yield Buffer.from(part);
}

const isPathRefusal = (error: unknown): boolean => isArchiverError(error) && error.code === 'ERR_ARCHIVE_PATH';

test('putFile writes a whole file durably, creating its folders, and replaces one whole', async () => {
  const dir = await archive();
  const storage = folderStorage(dir);
  assert.equal(await storage.putFile('aips/new/folder/notes.txt', 'first'), 5);
  assert.equal(await readFile(join(dir, 'aips/new/folder/notes.txt'), 'utf8'), 'first');
  assert.equal(await storage.putFile('aips/new/folder/notes.txt', pieces('second ', 'version')), 14);
  assert.equal(await readFile(join(dir, 'aips/new/folder/notes.txt'), 'utf8'), 'second version');
  assert.deepEqual(await readdir(join(dir, 'aips/new/folder')), ['notes.txt'], 'no temporary file is left');
  for (const path of ['../outside.txt', '/etc/x', 'aips/../../x', 'a//b', '']) {
    await assert.rejects(storage.putFile(path, 'x'), isPathRefusal, path);
  }
  assert.deepEqual((await readdir(dir)).sort(), ['aips'], 'nothing was written for a refused path');
  assert.equal(storage.where('aips/new/folder/notes.txt'), join(dir, 'aips', 'new', 'folder', 'notes.txt'));
});

test('read gives a file or a range of it; a missing file is ENOENT when read', async () => {
  const dir = await archive();
  const storage = folderStorage(dir);
  await storage.putFile('aips/b/file.txt', '0123456789');
  assert.equal(await text(storage.read('aips/b/file.txt')), '0123456789');
  assert.equal(await text(storage.read('aips/b/file.txt', { offset: 2, length: 3 })), '234');
  assert.equal(await text(storage.read('aips/b/file.txt', { offset: 8, length: 10 })), '89', 'fewer bytes at the end');
  assert.equal(await text(storage.read('aips/b/file.txt', { offset: 4, length: 0 })), '');
  assert.equal(await text(storage.read('aips/b/file.txt', { offset: 20, length: 5 })), '');
  await assert.rejects(text(storage.read('aips/b/gone.txt')), (error: unknown) => (error as NodeJS.ErrnoException).code === 'ENOENT');
  assert.throws(() => storage.read('../b/file.txt'), isPathRefusal);
});

test("listBag lists a bag's files in code-unit order with their sizes, and refuses anything else", async () => {
  const dir = await archive();
  const storage = folderStorage(dir);
  for (const [path, content] of [
    ['aips/h/b/bagit.txt', 'BagIt'],
    ['aips/h/b/data/Z.txt', 'zz'],
    ['aips/h/b/data/a b/ä.txt', 'umlaut'],
    ['aips/h/b/data/a.txt', ''],
    ['aips/h/other/data/x.txt', 'not this bag'],
  ] as const) {
    await storage.putFile(path, content);
  }
  assert.deepEqual(await storage.listBag('aips/h/b'), [
    { path: 'bagit.txt', size: 5 },
    { path: 'data/Z.txt', size: 2 },
    { path: 'data/a b/ä.txt', size: 6 },
    { path: 'data/a.txt', size: 0 },
  ]);
  assert.deepEqual(await bagInFolder(join(dir, 'aips/h/b')).storage.listBag('b'), await storage.listBag('aips/h/b'), 'a bag folder anywhere');
  await symlink(join(dir, 'aips/h/other/data/x.txt'), join(dir, 'aips/h/b/data/link.txt'));
  await assert.rejects(
    storage.listBag('aips/h/b'),
    (error: unknown) => isArchiverError(error) && error.code === 'ERR_ARCHIVE_DAMAGED' && /link\.txt is neither a file nor a folder/.test(error.message),
  );
  await assert.rejects(storage.listBag('aips/../..'), isPathRefusal);
});

test('placeBags puts sealed bags in place, and never over another bag', async () => {
  const dir = await archive();
  const storage = folderStorage(dir);
  const sealed = async (content: string) => {
    const builder = await createBagBuilder(dir);
    await builder.addPayload('a.txt', pieces(content));
    return builder.seal({ bagInfo: [['Oaibag-Format', '2']], destination: 'aips/harvest-000001/batch-00001' });
  };
  let noted = 0;
  const [placed] = await storage.placeBags([await sealed('alpha')], { beforeRename: () => void noted++ });
  assert.equal(noted, 1, 'the caller notes the bag before it is renamed');
  assert.equal(placed?.bag?.existing, false);
  assert.equal(placed?.bag?.bagPath, join(dir, 'aips/harvest-000001/batch-00001'));
  assert.deepEqual(await verifyBag(join(dir, 'aips/harvest-000001/batch-00001')), { valid: true, problems: [] });
  const [other] = await storage.placeBags([await sealed('bravo')]);
  assert.ok(isArchiverError(other?.error) && other.error.code === 'ERR_ARCHIVE_BAG' && /a different bag already exists/.test(other.error.message));
  assert.equal(await readFile(join(dir, 'aips/harvest-000001/batch-00001/data/a.txt'), 'utf8'), 'alpha');
  assert.deepEqual(await readdir(join(dir, 'tmp')), [], 'the refused bag is gone from tmp/');
});
