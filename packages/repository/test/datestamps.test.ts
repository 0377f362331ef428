import assert from 'node:assert/strict';
import { chmodSync, copyFileSync, mkdirSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { identifierForPath } from '../src/index.ts';
import { FileIndex } from '../src/site/file-index.ts';
import { harvestAll, headers, oai, type RunningRepository, responseDate, resumptionToken, startRepository, tempDir, writeTree } from './repository-helpers.ts';

const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;

/** A site whose files all carry an old mtime, like the mod_oai paper's testbed. */
function oldSite(root: string, files: Record<string, string>): void {
  writeTree(root, files);
  for (const path of Object.keys(files)) utimesSync(join(root, path), YEAR_2000, YEAR_2000);
}

async function listAll(run: RunningRepository, params: Record<string, string> = {}) {
  const pages = await harvestAll(run.endpoint, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc', ...params });
  return { responseDate: responseDate(pages[0]!), items: pages.flatMap((page) => headers(page)) };
}

function id(run: RunningRepository, path: string): string {
  return identifierForPath(run.baseUrl, path);
}

const sleepToNextSecond = () => new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));

let dir: ReturnType<typeof tempDir>;
before(() => {
  dir = tempDir();
});
after(() => dir.cleanup());

test('the first scan of an empty index dates files by their mtime, capped at now', async () => {
  const work = tempDir();
  try {
    const site = join(work.path, 'site');
    oldSite(site, { 'old.html': 'old' });
    writeTree(site, { 'future.txt': 'from the future' });
    utimesSync(join(site, 'future.txt'), 4_000_000_000, 4_000_000_000);
    const run = await startRepository(site, work.path);
    try {
      const identify = await oai(run.endpoint, { verb: 'Identify' });
      assert.match(identify.text, /<earliestDatestamp>2000-01-01T00:00:00Z<\/earliestDatestamp>/);
      const record = await oai(run.endpoint, { verb: 'GetRecord', metadataPrefix: 'oai_dc', identifier: id(run, 'future.txt') });
      const [header] = headers(record.text);
      assert.ok(Date.parse(header!.datestamp) <= Date.now(), `future mtime not capped: ${header!.datestamp}`);
    } finally {
      await run.stop();
    }
  } finally {
    work.cleanup();
  }
});

test('a harvest from the responseDate of an earlier complete list gets every change made after it started', async () => {
  const work = tempDir();
  try {
    const site = join(work.path, 'site');
    oldSite(site, {
      'touched.html': 'same bytes',
      'edited.txt': 'first version',
      'deleted.txt': 'goes away',
      'renamed.txt': 'moves',
      'folder/a.txt': 'a',
      'folder/b.txt': 'b',
      'untouched.txt': 'stays',
      'chmodded.txt': 'mode only',
    });
    writeTree(work.path, { 'outside/copied-in.txt': 'copied with an old mtime' });
    utimesSync(join(work.path, 'outside/copied-in.txt'), YEAR_2000 - 86400, YEAR_2000 - 86400);
    const run = await startRepository(site, work.path);
    try {
      const first = await listAll(run);
      assert.equal(first.items.length, 8);

      // Every kind of change the mod_oai invariant must cover.
      utimesSync(join(site, 'touched.html'), new Date(), new Date());
      writeFileSync(join(site, 'edited.txt'), 'second version');
      utimesSync(join(site, 'edited.txt'), YEAR_2000, YEAR_2000); // content changed, mtime put back
      rmSync(join(site, 'deleted.txt'));
      renameSync(join(site, 'renamed.txt'), join(site, 'renamed-to.txt'));
      renameSync(join(site, 'folder'), join(site, 'folder-moved'));
      copyFileSync(join(work.path, 'outside/copied-in.txt'), join(site, 'copied-in.txt'));
      utimesSync(join(site, 'copied-in.txt'), YEAR_2000 - 86400, YEAR_2000 - 86400); // cp -p
      chmodSync(join(site, 'chmodded.txt'), 0o600);
      await run.repository.scan();

      // A list leaves out the second it starts in (its until is one second before its
      // responseDate), so changes made just now show from the next second on.
      await sleepToNextSecond();
      const second = await listAll(run, { from: first.responseDate });
      const byId = new Map(second.items.map((item) => [item.identifier, item]));
      const expectLive = ['touched.html', 'edited.txt', 'renamed-to.txt', 'folder-moved/a.txt', 'folder-moved/b.txt', 'copied-in.txt'];
      const expectDeleted = ['deleted.txt', 'renamed.txt', 'folder/a.txt', 'folder/b.txt'];
      for (const path of expectLive) assert.equal(byId.get(id(run, path))?.deleted, false, `${path} should be listed live`);
      for (const path of expectDeleted) assert.equal(byId.get(id(run, path))?.deleted, true, `${path} should be listed deleted`);
      assert.equal(second.items.length, expectLive.length + expectDeleted.length, 'nothing unchanged is listed again');
      for (const item of second.items) assert.ok(item.datestamp >= first.responseDate, `${item.identifier} ${item.datestamp}`);
      // A permission change alters no format of the record, so it is not a new version.
      assert.equal(byId.has(id(run, 'chmodded.txt')), false);
      assert.equal(byId.has(id(run, 'untouched.txt')), false);
    } finally {
      await run.stop();
    }
  } finally {
    work.cleanup();
  }
});

test('a change the scanner has not seen yet is picked up when the record or file is served', async () => {
  const work = tempDir();
  try {
    const site = join(work.path, 'site');
    oldSite(site, { 'page.html': '<p>one</p>', 'other.html': 'x' });
    const run = await startRepository(site, work.path);
    try {
      const first = await listAll(run);
      writeFileSync(join(site, 'page.html'), '<p>two, longer</p>');
      // No scan: GetRecord must describe the bytes on disk now, with a datestamp after the list.
      const record = await oai(run.endpoint, { verb: 'GetRecord', metadataPrefix: 'oai_didl', identifier: id(run, 'page.html') });
      const [header] = headers(record.text);
      assert.ok(header!.datestamp >= first.responseDate);
      const encoded = /encoding="base64">\s*([^<]+)</.exec(record.text)![1]!.replace(/\s+/g, '');
      assert.equal(Buffer.from(encoded, 'base64').toString(), '<p>two, longer</p>');
      await sleepToNextSecond();
      const listed = await listAll(run, { from: first.responseDate });
      assert.deepEqual(
        listed.items.map((item) => item.identifier),
        [id(run, 'page.html')],
      );
    } finally {
      await run.stop();
    }
  } finally {
    work.cleanup();
  }
});

test('a list whose items change while it is paged neither skips nor repeats the others', async () => {
  const work = tempDir();
  try {
    const site = join(work.path, 'site');
    const files: Record<string, string> = {};
    for (let i = 0; i < 9; i++) files[`f${i}.txt`] = `file ${i}`;
    oldSite(site, files);
    // Give each file its own datestamp so the order is known: f0 oldest.
    for (let i = 0; i < 9; i++) utimesSync(join(site, `f${i}.txt`), YEAR_2000 + i, YEAR_2000 + i);
    const run = await startRepository(site, work.path, { pageIdentifiers: 3 });
    try {
      const page1 = await oai(run.endpoint, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc' });
      const listStarted = responseDate(page1.text);
      const seen = headers(page1.text).map((item) => item.identifier);
      // Change one item already sent and one not yet sent, and delete one not yet sent.
      writeFileSync(join(site, 'f1.txt'), 'changed after it was sent');
      writeFileSync(join(site, 'f7.txt'), 'changed before it was sent');
      rmSync(join(site, 'f5.txt'));
      await run.repository.scan();
      let token = resumptionToken(page1.text);
      while (token && token.token !== '') {
        const page = await oai(run.endpoint, { verb: 'ListIdentifiers', resumptionToken: token.token });
        seen.push(...headers(page.text).map((item) => item.identifier));
        token = resumptionToken(page.text);
      }
      const unchanged = ['f0', 'f2', 'f3', 'f4', 'f6', 'f8'].map((name) => id(run, `${name}.txt`));
      for (const identifier of unchanged) assert.equal(seen.filter((s) => s === identifier).length, 1, identifier);
      assert.equal(new Set(seen).size, seen.length, `an identifier was repeated: ${seen.join(' ')}`);
      // What changed during the list comes with the next incremental harvest.
      await sleepToNextSecond();
      const next = await listAll(run, { from: listStarted });
      assert.deepEqual(next.items.map((item) => `${item.identifier.split('/').pop()}${item.deleted ? ' deleted' : ''}`).sort(), [
        'f1.txt',
        'f5.txt deleted',
        'f7.txt',
      ]);
    } finally {
      await run.stop();
    }
  } finally {
    work.cleanup();
  }
});

test('deletions are remembered across a restart, and a file that comes back is live again', async () => {
  const work = tempDir();
  try {
    const site = join(work.path, 'site');
    oldSite(site, { 'gone.txt': 'bye', 'kept.txt': 'hi' });
    let run = await startRepository(site, work.path);
    rmSync(join(site, 'gone.txt'));
    await run.repository.scan();
    await run.stop();

    run = await startRepository(site, work.path);
    try {
      await run.repository.scan();
      const record = await oai(run.endpoint, { verb: 'GetRecord', metadataPrefix: 'oai_dc', identifier: id(run, 'gone.txt') });
      const [deleted] = headers(record.text);
      assert.equal(deleted!.deleted, true);
      assert.doesNotMatch(record.text, /<metadata>/);

      await sleepToNextSecond();
      writeTree(site, { 'gone.txt': 'back again' });
      await run.repository.scan();
      const back = await oai(run.endpoint, { verb: 'GetRecord', metadataPrefix: 'oai_dc', identifier: id(run, 'gone.txt') });
      const [live] = headers(back.text);
      assert.equal(live!.deleted, false);
      assert.ok(live!.datestamp > deleted!.datestamp, 'the datestamp of an identifier never goes backwards');
    } finally {
      await run.stop();
    }
  } finally {
    work.cleanup();
  }
});

test('the watcher indexes a new file without a rescan', async () => {
  const work = tempDir();
  try {
    const site = join(work.path, 'site');
    oldSite(site, { 'index.html': 'home', 'sub/x.txt': 'x' });
    const run = await startRepository(site, work.path, { watch: true });
    try {
      writeTree(site, { 'sub/new.txt': 'arrived' });
      const wanted = id(run, 'sub/new.txt');
      let found = false;
      for (let attempt = 0; attempt < 100 && !found; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        // ListIdentifiers leaves out the current second, so look with GetRecord-free means: the index.
        found = (await listAll(run).catch(() => ({ items: [] as { identifier: string }[] }))).items.some((item) => item.identifier === wanted);
      }
      assert.ok(found, 'the new file never appeared in the list');
    } finally {
      await run.stop();
    }
  } finally {
    work.cleanup();
  }
});

test('observation datestamps never go backwards, even when the clock does', () => {
  const work = tempDir();
  try {
    const file = join(work.path, 'index.sqlite');
    let index = FileIndex.open(file);
    assert.equal(index.observationDatestamp(2_000_000_000), 2_000_000_000);
    assert.equal(index.observationDatestamp(1_900_000_000), 2_000_000_000);
    index.close();
    index = FileIndex.open(file);
    assert.equal(index.observationDatestamp(1_800_000_000), 2_000_000_000, 'the high-water mark survives a restart');
    assert.equal(index.observationDatestamp(2_000_000_005), 2_000_000_005);
    index.close();
  } finally {
    work.cleanup();
  }
});

test('files copied into a site that was once indexed empty get the time they were observed', async () => {
  const work = tempDir();
  try {
    const site = join(work.path, 'site');
    mkdirSync(site);
    let run = await startRepository(site, work.path);
    const empty = await oai(run.endpoint, { verb: 'ListIdentifiers', metadataPrefix: 'oai_dc' });
    assert.match(empty.text, /noRecordsMatch/);
    await run.stop();
    oldSite(site, { 'old.txt': 'copied in with cp -p while the server was down' });
    run = await startRepository(site, work.path);
    try {
      await sleepToNextSecond();
      const listed = await listAll(run, { from: responseDate(empty.text) });
      assert.deepEqual(
        listed.items.map((item) => item.identifier),
        [id(run, 'old.txt')],
      );
    } finally {
      await run.stop();
    }
  } finally {
    work.cleanup();
  }
});
