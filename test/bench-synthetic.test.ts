// The synthetic catalogs of bench:scale (bench/scale-synthetic.mjs) measure serve's lists at
// 10M resources: every copy must be served as its original is. A copy once lost its served_at
// (the catalog's insert trigger ran before its version was copied), and a "10M" list walked the
// 1M originals only, with nothing to say so.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { makeSyntheticArchive, replicateCatalog } from '../bench/scale-synthetic.mjs';
import { type ArchiveServer, startArchiveServer } from '../packages/archiver/src/index.ts';
import { HarvestedSite, nextSecond } from './harvested-site.ts';

let site: HarvestedSite;
let served: ArchiveServer | undefined;

before(async () => {
  site = await HarvestedSite.start('oaibag-bench-synthetic-', { 'a.html': '<p>a</p>', 'b/c.txt': 'c', 'd.css': 'p {}' });
});

after(async () => {
  await served?.close();
  await site.close();
});

test('a synthetic catalog serves every copy: each list holds the originals and their copies, with their datestamps', async () => {
  const synthetic = makeSyntheticArchive(site.archive, join(site.work, 'synthetic'));
  const build = replicateCatalog(synthetic, 9);
  assert.equal(build.resources, 9);
  assert.equal(build.copies, 2);
  served = await startArchiveServer({ archiveDir: synthetic, pageIdentifiers: 4 });
  await nextSecond(); // a list ends a second before its first response
  const headers: Array<{ identifier: string; datestamp: string }> = [];
  let query = 'verb=ListIdentifiers&metadataPrefix=oai_didl';
  for (;;) {
    const text = await (await fetch(`${served.baseUrl}/oai?${query}`)).text();
    for (const match of text.matchAll(/<identifier>([^<]*)<\/identifier><datestamp>([^<]*)<\/datestamp>/g)) {
      headers.push({ identifier: match[1]!, datestamp: match[2]! });
    }
    const token = /<resumptionToken[^>]*>([^<]+)<\/resumptionToken>/.exec(text)?.[1];
    if (!token) break;
    query = `verb=ListIdentifiers&resumptionToken=${token}`;
  }
  const base = `${site.repository.baseUrl}/`;
  const paths = headers.map((header) => header.identifier.slice(base.length)).sort();
  assert.deepEqual(paths, ['a.html', 'b/c.txt', 'c1/a.html', 'c1/b/c.txt', 'c1/d.css', 'c2/a.html', 'c2/b/c.txt', 'c2/d.css', 'd.css']);
  const stamp = (path: string) => headers.find((header) => header.identifier === `${base}${path}`)!.datestamp;
  for (const path of ['a.html', 'b/c.txt', 'd.css']) assert.equal(stamp(`c2/${path}`), stamp(path), `${path}: the copy's datestamp is its original's`);
});
