// `oaibag import … --until DATE`, then `oaibag harvest` (issue 25, "Import, then harvest, is not
// the APS case yet"; docs/import-export.md): the import sets the source's watermark from the
// delivery's cut-off, a site's files join the source the repository serves for their base URL,
// and the first harvest of the same unchanged site asks from= the cut-off and gets nothing again:
// no record, no By-Value byte, no file. Files nobody may read (mode 000) are left out as the
// repository leaves them out. Real parts: the repository's server on 127.0.0.1 over the very
// folder the import took, its request log counted; real archives; ZIPs written byte by byte.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import yazl from 'yazl';
import { Catalog, harvest, importDelivery, reindexArchive } from '../packages/archiver/src/index.ts';
import { writeDidl } from '../packages/didl/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';
import { rawZip } from './raw-zip.ts';

const BIN = join(import.meta.dirname, '..', 'packages', 'archiver', 'bin', 'oaibag.js');

let work: string;
let site: string;
let repository: Repository;
let oai: string;
/** The repository's request log: one line per request, with the bytes sent. */
const requests: string[] = [];

/** The site's resources, all last modified on 2004-05-06 (the delivery's cut-off is that day). */
const FILES: Record<string, string | Buffer> = {
  'index.html': '<p>home</p>',
  'papers/a b.txt': 'a paper with a space in its name',
  'img/big.bin': Buffer.alloc(60_000, 7),
};
const MODIFIED = new Date('2004-05-06T07:08:09Z');
/** Files the repository never exports, each for its own reason; `private.txt` has mode 000. */
const NOT_RESOURCES = ['.htaccess', 'index.php', 'private.txt'];

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-import-harvest-'));
  site = join(work, 'site');
  for (const [name, content] of Object.entries({ ...FILES, ...Object.fromEntries(NOT_RESOURCES.map((name) => [name, 'not a resource'])) })) {
    mkdirSync(join(site, name, '..'), { recursive: true });
    writeFileSync(join(site, name), content);
    utimesSync(join(site, name), MODIFIED, MODIFIED);
  }
  chmodSync(join(site, 'private.txt'), 0o000);
  repository = await createRepository({
    root: site,
    index: join(work, 'index.sqlite'),
    watch: false,
    rescanSeconds: 0,
    byValueMax: 100_000,
    log: (line) => requests.push(line),
  });
  await repository.listen(0, '127.0.0.1');
  oai = `${repository.baseUrl}/oai`;
});

after(async () => {
  await repository?.close();
  rmSync(work, { recursive: true, force: true });
});

/** The requests logged since `from`: method, decoded path and query, status, bytes sent. */
function requestsSince(from: number): Array<{ method: string; target: string; status: number; bytes: number }> {
  return requests.slice(from).flatMap((line) => {
    const match = /"(\w+) (\S+) HTTP\/[\d.]+" (\d{3}) (\d+)/.exec(line);
    return match ? [{ method: match[1]!, target: decodeURIComponent(match[2]!), status: Number(match[3]), bytes: Number(match[4]) }] : [];
  });
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function sourceOf(archive: string, url: string) {
  const catalog = Catalog.open(archive, { create: false });
  try {
    return catalog.source(url);
  } finally {
    catalog.close();
  }
}

test("a site's folder imported --until its cut-off, then harvested unchanged: nothing added, modified or touched, no byte sent again", async () => {
  const archive = join(work, 'aps');
  const logged: string[] = [];
  // The base URL as a user may type it: the identifiers are still the repository's.
  const imported = await importDelivery({
    archiveDir: archive,
    delivery: site,
    baseUrl: `${repository.baseUrl}/`,
    until: '2004-05-06',
    log: (line) => logged.push(line),
  });
  assert.equal(imported.status, 'complete');
  assert.equal(imported.source, oai, "a site's files join the source the repository serves for their base URL");
  assert.equal(imported.added, Object.keys(FILES).length);
  assert.equal(imported.skipped, NOT_RESOURCES.length, 'hidden, script and mode-000 files are not resources');
  assert.ok(logged.includes('not a resource (unreadable: nobody may read it): private.txt'), logged.join('\n'));
  assert.equal(imported.watermark, '2004-05-07T00:00:00Z', 'the first second after the cut-off day');
  const catalog = Catalog.open(archive, { create: false });
  try {
    const source = catalog.source(oai)!;
    assert.equal(source.watermark, '2004-05-07T00:00:00Z');
    assert.equal(catalog.harvest(imported.importId!)!.arguments.until, '2004-05-06');
    assert.ok(catalog.resource(source.id, `${repository.baseUrl}/papers/a%20b.txt`));
    assert.equal(catalog.resource(source.id, `${repository.baseUrl}/private.txt`), undefined, 'a file nobody may read is not imported');
  } finally {
    catalog.close();
  }

  // The bags are the record: a catalog rebuilt from them has the same watermark.
  await reindexArchive({ archiveDir: archive, force: true });
  assert.equal(sourceOf(archive, oai)?.watermark, '2004-05-07T00:00:00Z', 'reindex sets the watermark from the import bag');

  const seen = requests.length;
  const first = await harvest({ baseUrl: oai, archiveDir: archive });
  assert.equal(first.status, 'complete');
  assert.equal(first.from, '2004-05-07T00:00:00Z');
  assert.deepEqual([first.records, first.added, first.modified, first.touched, first.failed, first.bytes], [0, 0, 0, 0, 0, 0]);
  const sent = requestsSince(seen);
  const lists = sent.filter((request) => request.target.includes('verb=ListRecords'));
  assert.equal(lists.length, 1, JSON.stringify(sent));
  assert.match(lists[0]!.target, /from=2004-05-07T00:00:00Z/);
  assert.ok(lists[0]!.bytes < 4000, `the list carried no record: ${lists[0]!.bytes} bytes`);
  assert.deepEqual(
    sent.filter((request) => !request.target.includes('/oai')),
    [],
    'no file of the site was fetched',
  );

  // …and it carries on: a change after the cut-off is harvested as a modification of the imported record.
  writeFileSync(join(site, 'index.html'), '<p>home, changed</p>');
  await repository.scan();
  await new Promise((resolve) => setTimeout(resolve, 2100 - (Date.now() % 1000)));
  const second = await harvest({ baseUrl: oai, archiveDir: archive });
  assert.deepEqual([second.records, second.added, second.modified, second.touched], [1, 0, 1, 0]);
});

test('the watermark never moves back: an import with an earlier cut-off keeps a later one; a later cut-off moves it on', async () => {
  const archive = join(work, 'forward');
  const harvested = await harvest({ baseUrl: oai, archiveDir: archive });
  assert.ok(harvested.watermark !== null && harvested.watermark > '2020');
  const logged: string[] = [];
  const again = await importDelivery({
    archiveDir: archive,
    delivery: site,
    baseUrl: repository.baseUrl,
    until: '2004-05-06',
    log: (line) => logged.push(line),
  });
  assert.equal(again.status, 'complete');
  assert.equal(again.watermark, harvested.watermark);
  assert.equal(sourceOf(archive, oai)?.watermark, harvested.watermark);
  assert.ok(
    logged.some((line) => line.includes(`watermark ${harvested.watermark} is not before`)),
    logged.join('\n'),
  );

  const fresh = join(work, 'forward-fresh');
  await importDelivery({ archiveDir: fresh, delivery: site, baseUrl: repository.baseUrl, until: '2004-05-06' });
  const later = await importDelivery({ archiveDir: fresh, delivery: site, baseUrl: repository.baseUrl, until: '2005-01-01T10:30:00+01:00' });
  assert.equal(later.watermark, '2005-01-01T09:30:01Z');
  assert.equal(sourceOf(fresh, oai)?.watermark, '2005-01-01T09:30:01Z');
});

test('ZIP entries whose Unix mode gives nobody read permission are left out, as the repository leaves such files out', async () => {
  const delivery = join(work, 'modes.zip');
  writeFileSync(
    delivery,
    rawZip([
      { name: 'open.txt', data: 'anyone may read this' },
      { name: 'owner-only.txt', data: 'the owner may read this', externalAttributes: (0o100400 << 16) >>> 0 },
      { name: 'private.txt', data: 'nobody may read this', externalAttributes: (0o100000 << 16) >>> 0 },
      { name: 'bare.txt', data: 'made on Unix with no mode at all: unzip gives it mode 000', externalAttributes: 0 },
      // MS-DOS has no Unix mode: its attribute bits say nothing about read permission.
      { name: 'dos.txt', data: 'made on MS-DOS', externalAttributes: 0x20, versionMadeBy: 0x0014 },
    ]),
  );
  const archive = join(work, 'modes');
  const logged: string[] = [];
  const imported = await importDelivery({ archiveDir: archive, delivery, baseUrl: 'http://site.example', log: (line) => logged.push(line) });
  assert.equal(imported.source, 'http://site.example/oai');
  assert.deepEqual([imported.added, imported.skipped], [3, 2]);
  for (const name of ['bare.txt', 'private.txt']) assert.ok(logged.includes(`not a resource (unreadable: nobody may read it): ${name}`), logged.join('\n'));
  const catalog = Catalog.open(archive, { create: false });
  try {
    const source = catalog.source('http://site.example/oai')!;
    for (const name of ['open.txt', 'owner-only.txt', 'dos.txt']) assert.ok(catalog.resource(source.id, `http://site.example/${name}`), name);
    for (const name of ['private.txt', 'bare.txt']) assert.equal(catalog.resource(source.id, `http://site.example/${name}`), undefined, name);
  } finally {
    catalog.close();
  }
});

test('--until through the command: a date in the future or not in the grammar is a usage error (exit 2, one line); with serialized bags too', async () => {
  const archive = join(work, 'cli');
  for (const value of ['2999-01-01', 'yesterday']) {
    const cli = spawnSync(process.execPath, [BIN, 'import', '--archive', archive, '--base-url', repository.baseUrl, '--until', value, site], {
      encoding: 'utf8',
    });
    assert.equal(cli.status, 2, cli.stderr);
    assert.match(cli.stderr, /--until/);
    assert.equal(cli.stderr.trim().split('\n').length, 1, cli.stderr);
  }
  const bags = join(work, 'bags');
  mkdirSync(bags);
  const zip = new yazl.ZipFile();
  zip.addBuffer(Buffer.from('BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n'), 'harvest-000001-batch-00001/bagit.txt');
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream) chunks.push(chunk as Buffer);
  writeFileSync(join(bags, 'harvest-000001-batch-00001.zip'), Buffer.concat(chunks));
  const cli = spawnSync(process.execPath, [BIN, 'import', '--archive', archive, '--until', '2004-05-06', bags], { encoding: 'utf8' });
  assert.equal(cli.status, 2, cli.stderr);
  assert.match(cli.stderr, /--until is for a site's files or DIDL records/);

  const ok = spawnSync(process.execPath, [BIN, 'import', '--archive', archive, '--base-url', repository.baseUrl, '--until', '2004-05-06', site], {
    encoding: 'utf8',
  });
  assert.equal(ok.status, 0, ok.stderr);
  assert.match(ok.stdout, new RegExp(`for ${oai.replace(/[.]/g, '\\.')}: .*; next harvest from 2004-05-07T00:00:00Z\\n$`));
  assert.match(ok.stderr, /not a resource \(unreadable: nobody may read it\): private\.txt/);
});

test('a partial import sets no watermark (the next harvest lists everything and retries); a bag ZIP with a file nobody may read is refused', async () => {
  const folder = join(work, 'didl-partial');
  mkdirSync(folder);
  const didl = async (identifier: string, text: string, digest: string) => {
    let xml = '';
    for await (const part of writeDidl({
      identifier,
      components: [
        {
          mimeType: 'text/plain',
          byValue: (async function* () {
            yield Buffer.from(text);
          })(),
          digest: { algorithm: 'SHA-256', value: digest },
        },
      ],
    }))
      xml += part;
    return xml;
  };
  writeFileSync(join(folder, 'good.xml'), await didl('http://elsewhere.example/good.txt', 'good', sha256('good')));
  writeFileSync(join(folder, 'bad.xml'), await didl('http://elsewhere.example/bad.txt', 'bad', sha256('not these bytes')));
  const archive = join(work, 'partial');
  const source = 'http://elsewhere.example/oai';
  const imported = await importDelivery({ archiveDir: archive, delivery: folder, source, until: '2004-05-06' });
  assert.deepEqual([imported.status, imported.added, imported.failed], ['partial', 1, 1]);
  assert.equal(imported.watermark, null);
  assert.equal(sourceOf(archive, source)?.watermark, null, 'a record that failed would never be harvested past a watermark');

  const bag = join(work, 'harvest-000001-batch-00001.zip');
  writeFileSync(
    bag,
    rawZip([
      { name: 'harvest-000001-batch-00001/bagit.txt', data: 'BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n' },
      { name: 'harvest-000001-batch-00001/data/x.txt', data: 'x', externalAttributes: (0o100000 << 16) >>> 0 },
    ]),
  );
  await assert.rejects(
    importDelivery({ archiveDir: join(work, 'bag-archive'), delivery: bag }),
    (error: NodeJS.ErrnoException) =>
      error.code === 'ERR_IMPORT_DAMAGED' && error.message.includes('"harvest-000001-batch-00001/data/x.txt" gives nobody read permission'),
  );
});
