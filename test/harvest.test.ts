import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { Catalog, harvest, verifyBag } from '../packages/archiver/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';
import { batchBags, payloadOf, premisXml, recordElement, recordsXml } from './batch-bags.ts';
import { checkWellFormed, validateXmlSchema } from './xml-schema.ts';

const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;
/** A payload name with every character an XML attribute must escape. */
const ODD = 'odd/say "a" & <b>.txt';
const FAST_RETRY = { retries: 2, baseDelayMs: 10, maxDelayMs: 100 };
const nextSecond = () => new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));

let work: string;
let site: string;
let repository: Repository;
let endpoint: string;

function write(path: string, content: string | Buffer, mtime = YEAR_2000): void {
  mkdirSync(dirname(join(site, path)), { recursive: true });
  writeFileSync(join(site, path), content);
  utimesSync(join(site, path), mtime, mtime);
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-harvest-'));
  site = join(work, 'site');
  write('index.html', '<html>home</html>');
  write('papers/a b.txt', 'a paper with a space in its name');
  write('big/large.bin', Buffer.alloc(300_000, 7)); // By-Reference (over by-value-max)
  write('img/logo.png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]));
  write(ODD, 'a name that needs escaping in XML');
  repository = await createRepository({ root: site, index: join(work, 'index.sqlite'), watch: false, rescanSeconds: 0, byValueMax: 100_000, pageRecords: 2 });
  endpoint = `${await repository.listen(0, '127.0.0.1')}/oai`;
});

after(async () => {
  await repository.close();
  rmSync(work, { recursive: true, force: true });
});

/**
 * What a record of records.xml must hold for a file: the header and DIDL elements of its record
 * as the repository sends them, byte for byte, with the namespaces they inherit from the OAI-PMH
 * envelope declared on them and the base64 of the By-Value Resource replaced by a pointer to the
 * payload file.
 */
async function asKept(identifier: string, payloadPath: string, bytes: Buffer): Promise<{ header: string; didl: string }> {
  const page = await (await fetch(`${endpoint}?verb=GetRecord&metadataPrefix=oai_didl&identifier=${encodeURIComponent(identifier)}`)).text();
  const didl = /<didl:DIDL[\s\S]*<\/didl:DIDL>/.exec(page)![0];
  const envelope = ' xmlns="http://www.openarchives.org/OAI/2.0/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"';
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const escaped = payloadPath.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
  const pointer = `<oaibag:byValue xmlns:oaibag="urn:oaibag:aip:2" path="${escaped}" size="${bytes.length}" sha256="${sha256}"/>`;
  const kept = didl.replace(/^<didl:DIDL[^>]*/, (start) => start + envelope).replace(/(encoding="base64">)[^<]*(<\/didl:Resource>)/, `$1${pointer}$2`);
  const header = /<header>[\s\S]*?<\/header>/.exec(page)![0].replace('<header>', `<header${envelope}>`);
  return { header, didl: kept };
}

test('a first harvest stores one valid batch bag holding every exported file at its URL path, with identical bytes', async () => {
  const archive = join(work, 'archive');
  const seen: Array<[number, number | undefined]> = [];
  const summary = await harvest({ baseUrl: endpoint, archiveDir: archive, retry: FAST_RETRY, progress: (counts, total) => seen.push([counts.records, total]) });
  assert.equal(summary.status, 'complete');
  assert.equal(summary.added, 5);
  assert.deepEqual(seen.at(-1), [5, 5], 'progress knows the list size once the repository gave it');
  assert.equal(summary.failed, 0);
  assert.ok(summary.watermark, 'the watermark is set after a complete list');
  const bags = batchBags(archive);
  assert.deepEqual(bags, ['aips/harvest-000001/batch-00001'], 'one bag for the whole batch of three pages');
  const bag = join(archive, bags[0]!);
  const report = await verifyBag(bag);
  assert.equal(report.valid, true, JSON.stringify(report.problems));
  const info = readFileSync(join(bag, 'bag-info.txt'), 'utf8');
  for (const line of [
    'Oaibag-Format: 2',
    `OAI-Base-URL: ${endpoint}`,
    'Harvest-Id: 1',
    'Batch-Pages: 1-3',
    'List-End: complete',
    'Records: 5',
    'New-Payloads: 5',
    'Revisits: 0',
  ]) {
    assert.ok(info.includes(`${line}\n`), `bag-info.txt lacks ${line}:\n${info}`);
  }
  const records = recordsXml(archive, bags[0]!);
  assert.ok(checkWellFormed(records, 'records.xml').ok);
  const premis = checkWellFormed(premisXml(archive, bags[0]!), 'premis.xml');
  assert.ok(premis.ok, premis.output);
  const host = new URL(endpoint).host.replace(':', '_');
  const catalog = Catalog.open(archive);
  try {
    for (const path of ['index.html', 'papers/a b.txt', 'big/large.bin', 'img/logo.png', ODD]) {
      const identifier = `${endpoint.slice(0, -4)}/${path.split('/').map(encodeURIComponent).join('/')}`;
      const version = catalog.latestVersion(catalog.source(endpoint)!.id, identifier);
      assert.ok(version, `no version of ${identifier}`);
      assert.equal(version.bagPath, bags[0]);
      const [part] = catalog.versionParts(version.id);
      assert.equal(part!.path, `data/${host}/${path}`, "a person opening the bag sees the site's files");
      assert.deepEqual(readFileSync(payloadOf(archive, catalog, version.id)), readFileSync(join(site, path)));
      const element = recordElement(records, identifier);
      const didl = /<didl:DIDL[\s\S]*<\/didl:DIDL>/.exec(element)![0];
      const valid = validateXmlSchema('didl.xsd', didl, `DIDL of ${path}`);
      assert.ok(valid.ok, valid.output);
      if (path === 'big/large.bin') continue; // By-Reference: no base64 in the record
      const kept = await asKept(identifier, part!.path, readFileSync(join(site, path)));
      assert.ok(element.includes(`\n${kept.header}\n`), `the header as received:\n${element}`);
      assert.ok(element.includes(`\n${kept.didl}\n`), `the DIDL as received:\n${element}`);
    }
  } finally {
    catalog.close();
  }
});

test('an incremental harvest records exactly the changes: added, modified, touched, deleted', async () => {
  const archive = join(work, 'archive');
  await nextSecond();
  write('new.txt', 'added after the first harvest', YEAR_2000 - 86400); // like cp -p
  write('index.html', '<html>home, edited</html>');
  utimesSync(join(site, 'img/logo.png'), new Date(), new Date()); // touched: same bytes
  rmSync(join(site, 'papers/a b.txt'));
  await repository.scan();
  await nextSecond();
  const summary = await harvest({ baseUrl: endpoint, archiveDir: archive, retry: FAST_RETRY });
  assert.equal(summary.status, 'complete');
  assert.deepEqual(
    { added: summary.added, modified: summary.modified, touched: summary.touched, deleted: summary.deleted, failed: summary.failed },
    { added: 1, modified: 1, touched: 1, deleted: 1, failed: 0 },
  );
  const catalog = Catalog.open(archive);
  try {
    const sourceId = catalog.source(endpoint)!.id;
    const logo = catalog.versions(sourceId, `${endpoint.slice(0, -4)}/img/logo.png`);
    assert.equal(logo.length, 2);
    // A touched version is a revisit of the bytes the first bag holds: no new file.
    assert.deepEqual(catalog.versionParts(logo[1]!.id), catalog.versionParts(logo[0]!.id));
    const bags = batchBags(archive);
    assert.equal(bags.length, 2);
    assert.equal(logo[1]!.bagPath, bags[1]);
    const record = recordElement(recordsXml(archive, bags[1]!), `${endpoint.slice(0, -4)}/img/logo.png`);
    assert.match(record, new RegExp(`<revisit part="1" bag="${bags[0]}" path="data/[^"]+/img/logo.png"`));
    const manifest = readFileSync(join(archive, bags[1]!, 'manifest-sha256.txt'), 'utf8')
      .trim()
      .split('\n');
    assert.deepEqual(manifest.map((line) => line.split('/').pop()).sort(), ['index.html', 'new.txt'], 'the second bag holds only the new bytes');
    const deleted = recordElement(recordsXml(archive, bags[1]!), `${endpoint.slice(0, -4)}/papers/a%20b.txt`);
    assert.match(deleted, /^<deleted [^>]*><header [^>]*status="deleted"/, 'the deletion is kept as a tombstone');
  } finally {
    catalog.close();
  }
  // Nothing changed since: a third harvest stores nothing.
  await nextSecond();
  const again = await harvest({ baseUrl: endpoint, archiveDir: archive, retry: FAST_RETRY });
  assert.equal(again.added + again.modified + again.touched + again.deleted, 0);
});
