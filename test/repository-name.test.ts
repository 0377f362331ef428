// The default repositoryName of both servers names the site or archive by its URL, never by a
// folder of the server: a repositoryName travels into every harvester's bag-info.txt and RDF.
// Before, oaibag-repository said "Web files of /the/served/folder".
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, before, test } from 'node:test';
import { type ArchiveServer, exportRdf, harvest, startArchiveServer } from '../packages/archiver/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';

const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;

let work: string;
let repository: Repository;
let archive: string;
let server: ArchiveServer;
/** Every spelling of the test's folder a server could leak. */
let folders: string[];

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-repository-name-'));
  folders = [...new Set([work, realpathSync(work)])];
  mkdirSync(join(work, 'site'));
  writeFileSync(join(work, 'site', 'page.html'), '<html>a page</html>');
  utimesSync(join(work, 'site', 'page.html'), YEAR_2000, YEAR_2000); // lists leave the current second out
  repository = await createRepository({ root: join(work, 'site'), index: join(work, 'index.sqlite'), watch: false, rescanSeconds: 0 });
  await repository.listen(0, '127.0.0.1');
  archive = join(work, 'archive');
  await harvest({ baseUrl: `${repository.baseUrl}/oai`, archiveDir: archive });
  server = await startArchiveServer({ archiveDir: archive });
});

after(async () => {
  await server?.close();
  await repository?.close();
  rmSync(work, { recursive: true, force: true });
});

function assertNoFolder(text: string, where: string): void {
  for (const folder of folders) assert.ok(!text.includes(folder), `${where} names the server's folder ${folder}:\n${text}`);
}

function bagInfos(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((path) => path.endsWith('bag-info.txt'))
    .map((path) => readFileSync(join(dir, path), 'utf8'));
}

test("oaibag-repository's default repositoryName is the site's URL, and no folder of the server reaches Identify or the archive's bags", async () => {
  const identify = await (await fetch(`${repository.baseUrl}/oai?verb=Identify`)).text();
  assert.match(identify, new RegExp(`<repositoryName>Web files at ${repository.baseUrl}</repositoryName>`));
  assertNoFolder(identify, "the repository's Identify");
  const infos = bagInfos(join(archive, 'aips'));
  assert.ok(infos.length > 0);
  for (const info of infos) {
    assert.match(info, new RegExp(`Web files at ${repository.baseUrl}`), 'the source is named in bag-info.txt');
    assertNoFolder(info, 'bag-info.txt');
  }
});

test("oaibag serve's default repositoryName is the archive's URL, in Identify, the ORE maps and the RDF, with no folder of the server", async () => {
  const identify = await (await fetch(`${server.baseUrl}/oai?verb=Identify`)).text();
  assert.match(identify, new RegExp(`<repositoryName>oaibag archive at ${server.baseUrl}</repositoryName>`));
  assertNoFolder(identify, "the archive's Identify");
  const identifier = encodeURIComponent(`${repository.baseUrl}/page.html`);
  const ore = await (await fetch(`${server.baseUrl}/oai?verb=GetRecord&metadataPrefix=ore&identifier=${identifier}`)).text();
  assert.match(ore, new RegExp(`<dcterms:creator>oaibag archive at ${server.baseUrl}</dcterms:creator>`));
  assertNoFolder(ore, 'the ORE maps');

  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (chunk: Buffer) => chunks.push(chunk));
  await exportRdf({ archiveDir: archive, baseUrl: 'https://archive.example.org', out });
  const rdf = Buffer.concat(chunks).toString('utf8');
  assert.match(rdf, new RegExp(`"Web files at ${repository.baseUrl}"`), "the source's name is in the graph");
  assertNoFolder(rdf, 'the RDF');
});
