// `oaibag import` of hostile deliveries (issue 16): each refused with one coded line naming the
// entry, exit 1, and nothing stored: not a bag, not a catalog row, not even the archive folder
// (the delivery is screened whole before the archive is opened). The screening itself is tested
// case by case in import-delivery.test.ts; here the command's end of it, and a delivery damaged
// past the screening, which fails its import run as a failed harvest fails.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { deflateRawSync } from 'node:zlib';
import { Catalog, importDelivery } from '../packages/archiver/src/index.ts';
import { rawZip } from './raw-zip.ts';

const BIN = join(import.meta.dirname, '..', 'packages', 'archiver', 'bin', 'oaibag.js');
let work: string;

before(() => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-import-refusals-'));
});

after(() => rmSync(work, { recursive: true, force: true }));

const good = { name: 'index.html', data: '<p>a good file first</p>' };
const zeros = Buffer.alloc(8 * 1024 * 1024);

const HOSTILE: Array<{ why: string; entries: Parameters<typeof rawZip>[0]; code: string; entry: string }> = [
  { why: 'an entry named ../x (zip slip)', entries: [good, { name: '../x', data: 'outside' }], code: 'ERR_IMPORT_UNSAFE', entry: '../x' },
  {
    why: 'a symbolic link entry',
    entries: [good, { name: 'link', data: '/etc/passwd', externalAttributes: (0o120777 << 16) >>> 0 }],
    code: 'ERR_IMPORT_UNSAFE',
    entry: 'link',
  },
  {
    why: 'an entry over the ratio cap',
    entries: [good, { name: 'bomb.bin', rawData: deflateRawSync(zeros), method: 8, uncompressedSize: zeros.length, crc32: 0 }],
    code: 'ERR_IMPORT_UNSAFE',
    entry: 'bomb.bin',
  },
  {
    why: 'an entry with a wrong CRC',
    entries: [good, { name: 'page.html', data: 'some bytes', crc32: 0x12345678 }],
    code: 'ERR_IMPORT_DAMAGED',
    entry: 'page.html',
  },
];

for (const hostile of HOSTILE) {
  test(`a delivery with ${hostile.why} is refused and nothing is stored`, async () => {
    const delivery = join(work, `${hostile.entry.replace(/\W/g, '_')}.zip`);
    writeFileSync(delivery, rawZip(hostile.entries));
    const archive = join(work, `archive-${hostile.entry.replace(/\W/g, '_')}`);
    await assert.rejects(
      importDelivery({ archiveDir: archive, delivery, baseUrl: 'http://site.example/' }),
      (error: NodeJS.ErrnoException) => error.code === hostile.code && error.message.includes(JSON.stringify(hostile.entry)),
    );
    assert.equal(existsSync(archive), false, 'the archive is not even created');
    // An archive that exists keeps exactly what it had.
    mkdirSync(archive);
    const cli = spawnSync(process.execPath, [BIN, 'import', '--archive', archive, '--base-url', 'http://site.example/', delivery], { encoding: 'utf8' });
    assert.equal(cli.status, 3, cli.stderr);
    const lines = cli.stderr.trim().split('\n');
    assert.equal(lines.length, 1, cli.stderr);
    assert.match(lines[0]!, new RegExp(`^oaibag: .*${hostile.entry.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}.*\\[${hostile.code}\\]`));
    assert.deepEqual(readdirSync(archive), []);
  });
}

test('a ZIP inside the delivery is a file like any other, never unpacked', async () => {
  const inner = rawZip([{ name: '../escape', data: 'would be hostile if unpacked' }]);
  const delivery = join(work, 'nested.zip');
  writeFileSync(delivery, rawZip([good, { name: 'downloads/inner.zip', data: inner }]));
  const summary = await importDelivery({ archiveDir: join(work, 'nested-archive'), delivery, baseUrl: 'http://site.example/' });
  assert.equal(summary.added, 2);
});

test("a site's files without --base-url are refused after the screening, and the archive is not created", async () => {
  const delivery = join(work, 'site-without-base.zip');
  writeFileSync(delivery, rawZip([good]));
  const archive = join(work, 'archive-without-base');
  await assert.rejects(
    importDelivery({ archiveDir: archive, delivery }),
    (error: NodeJS.ErrnoException) => error.code === 'ERR_IMPORT_KIND' && /--base-url/.test(error.message),
  );
  assert.equal(existsSync(archive), false);
});

test('a delivery damaged past the screening fails its import run: the row is failed with its reason, as a failed harvest is, and status says why', async () => {
  const folder = join(work, 'error-response');
  mkdirSync(folder);
  writeFileSync(
    join(folder, 'page.xml'),
    '<?xml version="1.0" encoding="UTF-8"?>\n<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><responseDate>2024-01-01T00:00:00Z</responseDate>' +
      '<request verb="ListRecords">http://repo.example/oai</request><error code="badArgument">no such argument</error></OAI-PMH>\n',
  );
  const archive = join(work, 'archive-error-response');
  await assert.rejects(importDelivery({ archiveDir: archive, delivery: folder }), (error: NodeJS.ErrnoException) => error.code === 'ERR_IMPORT_DAMAGED');
  const catalog = Catalog.open(archive, { create: false });
  try {
    const source = catalog.source('http://repo.example/oai')!;
    const run = catalog.lastHarvest(source.id)!;
    assert.deepEqual([run.kind, run.status], ['import', 'failed']);
    assert.match(run.reason ?? '', /page\.xml is an OAI-PMH error response \(badArgument: no such argument\) \[ERR_IMPORT_DAMAGED\]$/);
    assert.deepEqual(
      catalog.openFailures(source.id).map((failure) => [failure.stage, failure.code]),
      [['store', 'ERR_IMPORT_DAMAGED']],
    );
  } finally {
    catalog.close();
  }
  const status = spawnSync(process.execPath, [BIN, 'status', '--archive', archive], { encoding: 'utf8' });
  assert.match(status.stdout, /last attempt: #1 failed, [^\n]+ \[ERR_IMPORT_DAMAGED\] \(import of error-response\)\n/);
});
