// `oaibag export-rdf --out FILE`: the graph streamed to a temporary name, fsynced and renamed
// (archive/durable-file.ts). A FILE from an earlier export stays whole until a new one replaces
// it; a full disk is ERR_ARCHIVE_FULL (exit 4) in one line, with nothing left beside FILE.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Parser as N3Parser } from 'n3';
import { ArchiverError, Catalog, exportRdfToFile } from '../packages/archiver/src/index.ts';
import { storeVersion } from './catalog-fixture.ts';
import { OAIBAG_BIN } from './oaibag-process.ts';

const BUILT = existsSync(new URL('../packages/archiver/dist/bundle/oaibag.js', import.meta.url));
const BASE_URL = 'https://archive.example.org';
const VERSIONS = 400;

let work: string;
let archive: string;

before(() => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-export-rdf-'));
  archive = join(work, 'archive');
  mkdirSync(archive);
  const catalog = Catalog.open(archive);
  try {
    const source = catalog.upsertSource('http://rdf.example/oai', {});
    const harvestId = catalog.startRun(source.id, 'harvest', { prefix: 'oai_didl' });
    for (let i = 0; i < VERSIONS; i++) {
      const sha256 = i.toString(16).padStart(64, '0');
      storeVersion(catalog, {
        sourceId: source.id,
        identifier: `item-${i}`,
        datestamp: '2024-01-01T00:00:00Z',
        size: 10,
        sha256,
        mimeType: 'text/plain',
        harvestId,
      });
    }
    catalog.finishRun(harvestId, 'complete');
  } finally {
    catalog.close();
  }
});

after(() => rmSync(work, { recursive: true, force: true }));

/** A folder on a tmpfs of `size`, unmounted after the test; undefined where mounting is not allowed. */
function smallFolder(t: { after: (fn: () => void) => void }, name: string, size: string): string | undefined {
  const dir = join(work, name);
  mkdirSync(dir);
  if (spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir]).status !== 0) return undefined;
  t.after(() => void spawnSync('umount', [dir]));
  return dir;
}

test('export-rdf --out replaces an earlier file with the whole graph, and leaves nothing beside it', async () => {
  const out = join(work, 'out');
  mkdirSync(out);
  const file = join(out, 'graph.nq');
  writeFileSync(file, 'an earlier graph\n');
  const lines = await exportRdfToFile({ archiveDir: archive, baseUrl: BASE_URL, file });
  const text = readFileSync(file, 'utf8');
  assert.ok(text.length > 256 * 1024, `a graph larger than the tmpfs below (${text.length} bytes)`);
  assert.equal(new N3Parser({ format: 'application/n-quads' }).parse(text).length, lines);
  assert.ok(text.includes('item-399'));
  assert.deepEqual(readdirSync(out), ['graph.nq']);
});

test('export-rdf --out on a file system that fills up midway: ERR_ARCHIVE_FULL, the earlier file kept whole, no temporary file', async (t) => {
  const small = smallFolder(t, 'small-library', '256k');
  if (small === undefined) return t.skip('cannot mount a tmpfs here');
  const file = join(small, 'graph.nq');
  writeFileSync(file, 'an earlier graph\n');
  await assert.rejects(exportRdfToFile({ archiveDir: archive, baseUrl: BASE_URL, file }), (error: unknown) => {
    assert.ok(error instanceof ArchiverError);
    assert.equal(error.code, 'ERR_ARCHIVE_FULL');
    assert.equal(error.path, small);
    return true;
  });
  assert.equal(readFileSync(file, 'utf8'), 'an earlier graph\n');
  assert.deepEqual(readdirSync(small), ['graph.nq']);
});

test('the command: exit 4 and one coded line on a full disk, the earlier file kept; an archive that cannot be read leaves no trace', { skip: !BUILT }, (t) => {
  const small = smallFolder(t, 'small-cli', '256k');
  if (small === undefined) return t.skip('cannot mount a tmpfs here');
  const file = join(small, 'graph.nq');
  writeFileSync(file, 'an earlier graph\n');
  const full = spawnSync(process.execPath, [OAIBAG_BIN, 'export-rdf', '--archive', archive, '--base-url', BASE_URL, '--out', file], { encoding: 'utf8' });
  assert.equal(full.status, 4, full.stderr);
  assert.equal(full.stdout, '');
  assert.match(full.stderr, /^oaibag: no room left on the file system of the folder of .*graph\.nq: .*ENOSPC.* \[ERR_ARCHIVE_FULL\] \(hint: free space there/);
  assert.equal(full.stderr.trimEnd().split('\n').length, 1, full.stderr);
  assert.equal(readFileSync(file, 'utf8'), 'an earlier graph\n');
  assert.deepEqual(readdirSync(small), ['graph.nq']);

  const missing = spawnSync(process.execPath, [OAIBAG_BIN, 'export-rdf', '--archive', join(work, 'no-archive'), '--out', file], { encoding: 'utf8' });
  assert.equal(missing.status, 4, missing.stderr);
  assert.equal(readFileSync(file, 'utf8'), 'an earlier graph\n');
  assert.deepEqual(readdirSync(small), ['graph.nq']);
});
