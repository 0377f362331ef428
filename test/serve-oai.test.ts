// `oaibag serve`'s OAI-PMH endpoint over an archive (docs/serve.md): items are the archived
// resources with their original identifiers, datestamps are ingest times, a resource deleted
// last is a deleted header, one set per source; responses valid against the OAI-PMH and oai_dc
// schemas, paged with stateless tokens, and the protocol's errors where it wants them.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { type ArchiveServer, harvest, startArchiveServer } from '../packages/archiver/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';
import { validateArchiveResponse } from './archive-schemas.ts';

const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;
const PATHS = ['a.html', 'b.html', 'c.txt', 'dir/d.txt', 'dir/e.txt', 'gone.txt'];

let work: string;
let site: string;
let archive: string;
let repository: Repository;
let server: ArchiveServer;
let oai: string;
let ingestedBefore: number;

async function ask(query: string): Promise<string> {
  const response = await fetch(`${oai}?${query}`);
  assert.equal(response.status, 200);
  assert.match(String(response.headers.get('content-type')), /^text\/xml/);
  return response.text();
}

function valid(xml: string): string {
  const check = validateArchiveResponse(xml);
  assert.ok(check.ok, check.output);
  return xml;
}

function all(xml: string, pattern: RegExp): string[] {
  return [...xml.matchAll(pattern)].map((match) => match[1]!);
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-serve-oai-'));
  site = join(work, 'site');
  archive = join(work, 'archive');
  for (const path of PATHS) {
    mkdirSync(dirname(join(site, path)), { recursive: true });
    writeFileSync(join(site, path), `content of ${path}\n`);
    utimesSync(join(site, path), YEAR_2000, YEAR_2000);
  }
  repository = await createRepository({ root: site, index: join(work, 'index.sqlite'), watch: false, rescanSeconds: 0 });
  await repository.listen(0, '127.0.0.1');
  await harvest({ baseUrl: `${repository.baseUrl}/oai`, archiveDir: archive });
  ingestedBefore = Math.floor(Date.now() / 1000);
  await new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));
  unlinkSync(join(site, 'gone.txt'));
  await repository.scan();
  // The repository lists up to a second before its responseDate: the deletion must be older.
  await new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));
  const second = await harvest({ baseUrl: `${repository.baseUrl}/oai`, archiveDir: archive });
  assert.equal(second.deleted, 1);
  // The archive too lists up to a second before its responseDate.
  await new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));
  server = await startArchiveServer({ archiveDir: archive, repositoryName: 'test archive', adminEmails: ['archivist@example.org'] });
  oai = `${server.baseUrl}/oai`;
});

after(async () => {
  await server?.close();
  await repository?.close();
  rmSync(work, { recursive: true, force: true });
});

test('Identify: the archive as a repository, persistent deletions, seconds granularity', async () => {
  const xml = valid(await ask('verb=Identify'));
  assert.match(xml, /<repositoryName>test archive<\/repositoryName>/);
  assert.match(xml, new RegExp(`<baseURL>${oai}</baseURL>`));
  assert.match(xml, /<deletedRecord>persistent<\/deletedRecord>/);
  assert.match(xml, /<granularity>YYYY-MM-DDThh:mm:ssZ<\/granularity>/);
  assert.match(xml, /<adminEmail>archivist@example.org<\/adminEmail>/);
});

test('ListSets and ListMetadataFormats', async () => {
  const sets = valid(await ask('verb=ListSets'));
  // One per source, then the MIME sets of the records with the sets above them.
  assert.deepEqual(all(sets, /<setSpec>([^<]+)<\/setSpec>/g), ['source:1', 'mime', 'mime:text', 'mime:text:html', 'mime:text:plain']);
  assert.match(sets, /<setName>MIME type text\/plain<\/setName>/);
  assert.ok(sets.includes(repository.baseUrl));
  const formats = valid(await ask('verb=ListMetadataFormats'));
  assert.deepEqual(all(formats, /<metadataPrefix>([^<]+)</g), ['oai_dc', 'http_header', 'oai_didl', 'ore']);
});

test('ListRecords pages through every item with tokens; the deleted one is a deleted header', async () => {
  const identifiers: string[] = [];
  const deleted: string[] = [];
  let query = 'verb=ListIdentifiers&metadataPrefix=oai_dc';
  let pages = 0;
  for (;;) {
    const xml = valid(await ask(query));
    pages++;
    identifiers.push(...all(xml, /<identifier>([^<]+)<\/identifier>/g));
    deleted.push(...all(xml, /<header status="deleted"><identifier>([^<]+)</g));
    const token = /<resumptionToken[^>]*>([^<]+)</.exec(xml)?.[1];
    if (!token) break;
    query = `verb=ListIdentifiers&resumptionToken=${encodeURIComponent(token)}`;
  }
  assert.equal(pages, 1, 'six headers fit a page');
  const expected = PATHS.map((path) => `${repository.baseUrl}/${path}`).sort();
  assert.deepEqual([...identifiers].sort(), expected);
  assert.deepEqual(deleted, [`${repository.baseUrl}/gone.txt`]);

  const records = valid(await ask('verb=ListRecords&metadataPrefix=oai_dc'));
  assert.equal([...records.matchAll(/<record>/g)].length, 6);
  assert.match(records, new RegExp(`<dc:identifier>${repository.baseUrl}/dir/d.txt</dc:identifier>`));
  assert.match(records, /<dc:format>text\/plain<\/dc:format>/);
  assert.match(records, /<dc:date>2000-01-01T00:00:00.000Z<\/dc:date>/, 'the original Last-Modified');
});

test('datestamps are ingest times: from selects what the archive took in since', async () => {
  const since = new Date((ingestedBefore + 1) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const xml = valid(await ask(`verb=ListIdentifiers&metadataPrefix=oai_dc&from=${since}`));
  assert.deepEqual(all(xml, /<identifier>([^<]+)<\/identifier>/g), [`${repository.baseUrl}/gone.txt`], 'only the deletion came later');
  const stamps = all(valid(await ask('verb=ListIdentifiers&metadataPrefix=oai_dc')), /<datestamp>([^<]+)</g);
  for (const stamp of stamps) assert.ok(stamp > '2020', `${stamp} is an ingest time, not the original 2000 date`);
});

test('GetRecord, and the errors: idDoesNotExist, cannotDisseminateFormat, noRecordsMatch, badResumptionToken, badVerb', async () => {
  const record = valid(await ask(`verb=GetRecord&metadataPrefix=oai_dc&identifier=${encodeURIComponent(`${repository.baseUrl}/c.txt`)}`));
  assert.match(record, /<dc:title>c.txt<\/dc:title>/);
  const cases: Array<[string, string]> = [
    ['verb=GetRecord&metadataPrefix=oai_dc&identifier=http%3A%2F%2Fnowhere%2Fx', 'idDoesNotExist'],
    [`verb=GetRecord&metadataPrefix=marc&identifier=${encodeURIComponent(`${repository.baseUrl}/c.txt`)}`, 'cannotDisseminateFormat'],
    ['verb=ListRecords&metadataPrefix=oai_dc&set=source:9', 'noRecordsMatch'],
    ['verb=ListRecords&metadataPrefix=oai_dc&until=1999-01-01', 'noRecordsMatch'],
    ['verb=ListRecords&resumptionToken=forged', 'badResumptionToken'],
    ['verb=Frobnicate', 'badVerb'],
    ['verb=ListRecords', 'badArgument'],
  ];
  for (const [query, code] of cases) assert.match(valid(await ask(query)), new RegExp(`<error code="${code}"`), query);
});

test('every verb: its argument rules and errors, each answer valid', async () => {
  const gone = encodeURIComponent(`${repository.baseUrl}/gone.txt`);
  const live = encodeURIComponent(`${repository.baseUrl}/a.html`);
  const cases: Array<[string, string]> = [
    ['verb=Identify&extra=1', 'badArgument'],
    [`verb=ListMetadataFormats&identifier=${gone}`, 'noMetadataFormats'],
    ['verb=ListMetadataFormats&identifier=http%3A%2F%2Fnowhere%2Fx', 'idDoesNotExist'],
    ['verb=ListSets&resumptionToken=abc', 'badResumptionToken'],
    [`verb=GetRecord&identifier=${live}`, 'badArgument'],
    ['verb=GetRecord&metadataPrefix=oai_dc', 'badArgument'],
    ['verb=ListIdentifiers&metadataPrefix=oai_dc&from=2026-01-01&until=2026-01-01T00:00:00Z', 'badArgument'],
    ['verb=ListIdentifiers&metadataPrefix=oai_dc&from=2026-02-01&until=2026-01-01', 'badArgument'],
    ['verb=ListIdentifiers&metadataPrefix=oai_dc&from=yesterday', 'badArgument'],
    ['verb=ListIdentifiers&metadataPrefix=oai_dc&metadataPrefix=oai_dc', 'badArgument'],
    ['verb=ListIdentifiers&resumptionToken=abc&metadataPrefix=oai_dc', 'badArgument'],
    ['verb=ListRecords&metadataPrefix=marc', 'cannotDisseminateFormat'],
    ['verb=ListRecords&metadataPrefix=oai_dc&set=mime:image', 'noRecordsMatch'],
  ];
  for (const [query, code] of cases) assert.match(valid(await ask(query)), new RegExp(`<error code="${code}"`), query);
  const deleted = valid(await ask(`verb=GetRecord&metadataPrefix=oai_didl&identifier=${gone}`));
  assert.match(deleted, /<header status="deleted">/);
  assert.doesNotMatch(deleted, /<metadata>|<about>/, 'a deleted record is its header only');
});

test('a small page size pages with tokens that carry the list', async () => {
  await server.close();
  server = await startArchiveServer({ archiveDir: archive, pageIdentifiers: 2 });
  oai = `${server.baseUrl}/oai`;
  let query = 'verb=ListIdentifiers&metadataPrefix=oai_dc';
  const seen: string[] = [];
  let pages = 0;
  for (;;) {
    const xml = valid(await ask(query));
    pages++;
    seen.push(...all(xml, /<identifier>([^<]+)<\/identifier>/g));
    const token = /<resumptionToken[^>]*>([^<]+)</.exec(xml)?.[1];
    if (!token) break;
    query = `verb=ListIdentifiers&resumptionToken=${encodeURIComponent(token)}`;
  }
  assert.equal(pages, 3);
  assert.equal(new Set(seen).size, 6);
});

test('a POSTed request is answered like a GET; an oversized one is 413', async () => {
  const posted = await fetch(oai, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'verb=ListSets' });
  assert.equal(posted.status, 200);
  assert.match(valid(await posted.text()), /<setSpec>source:1<\/setSpec>/);
  const huge = await fetch(oai, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: `verb=Identify&x=${'a'.repeat(70_000)}`,
  });
  assert.equal(huge.status, 413);
});
