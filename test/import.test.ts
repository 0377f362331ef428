// `oaibag import` (issue 16; docs/import-export.md): the three kinds of delivery, the APS case
// (an import, then a harvest of the same site that adds nothing and carries on), and export →
// import into an empty archive → restore equal to the site. Real parts throughout: a site
// folder served by the repository on 127.0.0.1, ZIPs written with yazl, real archives.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createWriteStream, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, before, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import yazl from 'yazl';
import { Catalog, exportBags, harvest, importDelivery, reindexArchive, restoreSite, verifyArchive } from '../packages/archiver/src/index.ts';
import { writeDidl } from '../packages/didl/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';
import { oaibag } from './oaibag-process.ts';

let work: string;
let site: string;
let repository: Repository;
let oai: string;

/** Site files as a visitor sees them (what the repository exports), with their mtimes. */
const FILES: Record<string, string | Buffer> = {
  'index.html': '<p>home</p>',
  'papers/a b.txt': 'a paper with a space in its name',
  'papers/été.txt': 'accented',
  'img/big.bin': Buffer.alloc(300_000, 7),
  'img/copy.bin': Buffer.alloc(300_000, 7), // the same bytes at two URLs: one payload file
  'nested.zip': Buffer.concat([Buffer.from([0x50, 0x4b, 0x05, 0x06]), Buffer.alloc(18)]), // a ZIP inside: a file like any other
};
/** Files the repository never exports: not resources. */
const NOT_RESOURCES = ['.htaccess', 'index.php', 'notes.txt~'];

function siteFiles(root: string): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else files.set(relative(root, path).split('\\').join('/'), readFileSync(path));
    }
  };
  walk(root);
  return files;
}

/** The site as one ZIP, each entry with its file's mtime (yazl writes the 1-second UT field). */
async function zipFolder(root: string, to: string): Promise<void> {
  const zip = new yazl.ZipFile();
  for (const name of [...siteFiles(root).keys()].sort()) zip.addFile(join(root, name), name, { mtime: statSync(join(root, name)).mtime, compress: true });
  zip.end();
  await new Promise<void>((resolve, reject) => zip.outputStream.pipe(createWriteStream(to)).on('close', resolve).on('error', reject));
}

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-import-'));
  site = join(work, 'site');
  const old = new Date('2004-05-06T07:08:09Z');
  for (const [name, content] of Object.entries(FILES)) {
    mkdirSync(join(site, name, '..'), { recursive: true });
    writeFileSync(join(site, name), content);
    utimesSync(join(site, name), old, old);
  }
  for (const name of NOT_RESOURCES) writeFileSync(join(site, name), 'not a resource');
  repository = await createRepository({ root: site, index: join(work, 'index.sqlite'), watch: false, rescanSeconds: 0, byValueMax: 100_000 });
  await repository.listen(0, '127.0.0.1');
  oai = `${repository.baseUrl}/oai`;
  // The repository lists up to a second before its responseDate: the new files must be older.
  await new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));
});

after(async () => {
  await repository?.close();
  rmSync(work, { recursive: true, force: true });
});

test("a web site's files as a ZIP: imported as the repository's records; a harvest of the site then adds nothing and carries on", async () => {
  const delivery = join(work, 'site.zip');
  await zipFolder(site, delivery);
  const archive = join(work, 'aps');
  const imported = await importDelivery({ archiveDir: archive, delivery, baseUrl: repository.baseUrl, source: oai, sourceName: 'the test site' });
  assert.equal(imported.kind, 'site');
  assert.equal(imported.status, 'complete');
  assert.equal(imported.added, Object.keys(FILES).length);
  assert.equal(imported.skipped, NOT_RESOURCES.length);
  assert.equal(imported.delivery.sha256, sha256(readFileSync(delivery)));

  // The identifiers, datestamps and bytes are the repository's own.
  const catalog = Catalog.open(archive, { create: false });
  try {
    const source = catalog.source(oai)!;
    assert.equal(source.repositoryName, 'the test site');
    assert.equal(source.watermark, null, 'an import never moves the watermark');
    const harvestRow = catalog.harvest(imported.importId!)!;
    assert.deepEqual(harvestRow.arguments.delivery, imported.delivery);
    assert.equal(harvestRow.kind, 'import', 'the run is an import, not a harvest');
    assert.equal(catalog.resource(source.id, `${repository.baseUrl}/papers/a%20b.txt`)?.deletedAt ?? null, null);
    assert.ok(catalog.resource(source.id, `${repository.baseUrl}/papers/%C3%A9t%C3%A9.txt`));
    assert.equal(catalog.resource(source.id, `${repository.baseUrl}/index.php`), undefined);
  } finally {
    catalog.close();
  }
  // The bag names the delivery: bag-info labels and a PREMIS accession event.
  const bag = join(archive, 'aips', `harvest-${String(imported.importId).padStart(6, '0')}`, 'batch-00001');
  const info = readFileSync(join(bag, 'bag-info.txt'), 'utf8');
  assert.match(info, new RegExp(`Delivery-SHA-256: ${imported.delivery.sha256}`));
  assert.match(info, /Delivery-Name: site\.zip/);
  const premis = gunzipSync(readFileSync(join(bag, 'metadata', 'premis.xml.gz'))).toString('utf8');
  assert.match(premis, /<premis:eventType>accession<\/premis:eventType>/);
  assert.match(premis, /imported from the out-of-band delivery site\.zip/);

  // The bags are the record: a catalog rebuilt from them knows the import as an import.
  await reindexArchive({ archiveDir: archive, force: true });
  const rebuilt = Catalog.open(archive, { create: false });
  try {
    const row = rebuilt.harvest(imported.importId!)!;
    assert.equal(row.status, 'complete');
    assert.deepEqual(row.arguments.delivery, imported.delivery);
    assert.equal(row.kind, 'import');
  } finally {
    rebuilt.close();
  }
  // `oaibag status` names the import after the last attempt; --json gives the run's kind.
  const shown = oaibag('status', '--archive', archive);
  assert.equal(shown.status, 0, shown.stderr);
  assert.match(shown.stdout, new RegExp(`last attempt: #${imported.importId} complete, [^\\n]+ \\(import of site\\.zip\\)\\n`));
  const asJson = JSON.parse(oaibag('status', '--archive', archive, '--json').stdout) as { sources: Array<{ lastHarvest: { kind: string } }> };
  assert.equal(asJson.sources[0]?.lastHarvest.kind, 'import');

  // The APS case: the harvest recognises every imported record (same identifier, datestamp, bytes).
  const first = await harvest({ baseUrl: oai, archiveDir: archive });
  assert.equal(first.status, 'complete');
  assert.equal(first.records, Object.keys(FILES).length);
  assert.deepEqual([first.added, first.modified, first.touched, first.failed], [0, 0, 0, 0]);
  // …and carries on from there: a change after the import is harvested.
  writeFileSync(join(site, 'index.html'), '<p>home, changed</p>');
  await repository.scan();
  // Dated when the scan saw it: listed once a second has passed (the list ends at responseDate - 1 s).
  await new Promise((resolve) => setTimeout(resolve, 2100 - (Date.now() % 1000)));
  const second = await harvest({ baseUrl: oai, archiveDir: archive });
  assert.equal(second.modified, 1);
  assert.deepEqual((await verifyArchive({ archiveDir: archive })).problems, []);
  // The harvests are runs of kind harvest, also in a catalog rebuilt from the bags; status says no import.
  const afterHarvest = oaibag('status', '--archive', archive);
  assert.match(afterHarvest.stdout, new RegExp(`last attempt: #${second.harvestId} complete, [^\\n]+ ago\\)\\n`));
  assert.doesNotMatch(afterHarvest.stdout, /import of/);
  await reindexArchive({ archiveDir: archive, force: true });
  const kinds = Catalog.open(archive, { create: false });
  try {
    assert.deepEqual(
      [imported.importId, second.harvestId].map((id) => kinds.harvest(id!)?.kind),
      ['import', 'harvest'],
    );
  } finally {
    kinds.close();
  }
});

test('DIDL records: saved ListRecords responses and a standalone DIDL document, read as a harvest reads them', async () => {
  const folder = join(work, 'didl-delivery');
  mkdirSync(folder);
  let url = `${oai}?verb=ListRecords&metadataPrefix=oai_didl`;
  for (let page = 1; url !== ''; page++) {
    const text = await (await fetch(url)).text();
    writeFileSync(join(folder, `page-${page}.xml`), text);
    const token = /<resumptionToken[^>]*>([^<]+)</.exec(text)?.[1];
    url = token ? `${oai}?verb=ListRecords&resumptionToken=${encodeURIComponent(token)}` : '';
  }
  let didl = '';
  for await (const part of writeDidl({
    identifier: 'http://elsewhere.example/doc.txt',
    components: [
      {
        mimeType: 'text/plain',
        byValue: (async function* () {
          yield Buffer.from('a standalone DIDL document');
        })(),
        digest: { algorithm: 'SHA-256', value: sha256(Buffer.from('a standalone DIDL document')) },
      },
    ],
  }))
    didl += part;
  writeFileSync(join(folder, 'standalone.xml'), didl);
  writeFileSync(join(folder, '.DS_Store'), 'a hidden file is not read');
  const stamp = new Date('2003-02-01T00:00:00Z');
  utimesSync(join(folder, 'standalone.xml'), stamp, stamp);

  const archive = join(work, 'didl-archive');
  const imported = await importDelivery({ archiveDir: archive, delivery: folder });
  assert.equal(imported.kind, 'didl');
  assert.equal(imported.source, oai, "the source is the responses' request URL");
  assert.equal(imported.failed, 0);
  assert.equal(imported.skipped, 1);
  assert.equal(imported.added, Object.keys(FILES).length + 1);
  const catalog = Catalog.open(archive, { create: false });
  try {
    const versions = catalog.versions(catalog.source(oai)!.id, 'http://elsewhere.example/doc.txt');
    assert.deepEqual(
      versions.map((version) => version.datestamp),
      ['2003-02-01T00:00:00Z'],
      "a standalone DIDL is dated by its file's modification time",
    );
  } finally {
    catalog.close();
  }
  // The records are the repository's: its harvest recognises every one.
  const next = await harvest({ baseUrl: oai, archiveDir: archive });
  assert.deepEqual([next.added, next.modified, next.touched, next.failed], [0, 0, 0, 0]);
});

test('serialized bags: export, import into an empty archive, restore equals the site; importing again adds nothing', async () => {
  const original = join(work, 'original');
  await harvest({ baseUrl: oai, archiveDir: original });
  const exported = join(work, 'exported');
  const bags = await exportBags({ archiveDir: original, to: exported });
  const copy = join(work, 'copy');
  const imported = await importDelivery({ archiveDir: copy, delivery: exported });
  assert.equal(imported.kind, 'bags');
  assert.equal(imported.bags, bags.length);
  const restored = join(work, 'restored');
  const summary = await restoreSite({ archiveDir: copy, to: restored });
  assert.equal(summary.problems, 0);
  const expected = siteFiles(site);
  for (const name of NOT_RESOURCES) expected.delete(name);
  assert.deepEqual(siteFiles(restored), expected);
  assert.deepEqual((await verifyArchive({ archiveDir: copy })).problems, []);

  const again = await importDelivery({ archiveDir: copy, delivery: exported });
  assert.equal(again.bags, 0, 'bags held already are not placed twice');
  // One bag ZIP on its own is a delivery too; a harvest afterwards finds nothing new.
  const single = join(work, 'single');
  const one = await importDelivery({ archiveDir: single, delivery: join(exported, `${bags[0]!.folder}.zip`) });
  assert.equal(one.bags, 1);
  const next = await harvest({ baseUrl: oai, archiveDir: copy });
  assert.deepEqual([next.added, next.modified, next.touched], [0, 0, 0]);
});
