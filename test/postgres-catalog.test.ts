// The catalog on PostgreSQL (issue 28), end to end through the `oaibag` command: a site
// harvested twice (a change, an addition, a deletion between) into two archives at once, one
// with `--catalog postgres://…` and one with its SQLite file. Restore, audit, verify, status
// and serve then answer the same on both. The archive folder keeps the catalog's URL (never
// its password), so later commands need no --catalog; a second catalog for one archive is
// refused, as is a catalog that cannot be reached, each with one coded line. PostgreSQL is a
// scratch cluster of this test's own (test/postgres-server.ts).
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startArchiveServer } from '../packages/archiver/src/index.ts';
import { createRepository, type Repository } from '../packages/repository/src/index.ts';
import { oaibagAsync } from './oaibag-process.ts';
import { POSTGRES_SKIP, type Postgres, startPostgres } from './postgres-server.ts';
import { snapshot } from './site-tree.ts';

const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;
const nextSecond = () => new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)));

let postgres: Postgres;
let work: string;
let site: string;
let repository: Repository;
let endpoint: string;
let catalogUrl: string;
/** The archive whose catalog is in PostgreSQL, and the one whose catalog is its SQLite file. */
let onPostgres: string;
let onSqlite: string;

function write(path: string, content: string, mtime = YEAR_2000): void {
  mkdirSync(dirname(join(site, path)), { recursive: true });
  writeFileSync(join(site, path), content);
  utimesSync(join(site, path), mtime, mtime);
}

async function ok(...args: string[]): Promise<string> {
  const result = await oaibagAsync(...args);
  assert.equal(result.status, 0, `oaibag ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

/** Both archives harvest the site as it is now. */
async function harvestBoth(): Promise<void> {
  await repository.scan();
  await nextSecond();
  // The password is given once, in the URL; the folder keeps the URL without it.
  await ok('harvest', endpoint, '--archive', onPostgres, '--catalog', catalogUrl.replace('postgres@', 'postgres:not-written@'));
  await ok('harvest', endpoint, '--archive', onSqlite);
}

describe('the catalog on PostgreSQL', { skip: POSTGRES_SKIP }, () => {
  before(async () => {
    postgres = await startPostgres();
    catalogUrl = await postgres.createDatabase('archive');
    work = mkdtempSync(join(tmpdir(), 'oaibag-postgres-catalog-'));
    site = join(work, 'site');
    onPostgres = join(work, 'on-postgres');
    onSqlite = join(work, 'on-sqlite');
    write('index.html', '<html>home</html>');
    write('papers/a.txt', 'a paper');
    write('papers/b.txt', 'b paper, to be deleted');
    write('img/logo.png', 'not really a PNG');
    repository = await createRepository({ root: site, index: join(work, 'index.sqlite'), watch: false, rescanSeconds: 0, pageRecords: 2 });
    endpoint = `${await repository.listen(0, '127.0.0.1')}/oai`;
    await harvestBoth();
    write('papers/a.txt', 'a paper, revised', YEAR_2000 + 86_400);
    write('papers/c.txt', 'a new paper');
    rmSync(join(site, 'papers/b.txt'));
    await harvestBoth();
  });

  after(async () => {
    await repository?.close();
    await postgres?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  test('the folder keeps the catalog URL without its password, and no SQLite catalog', () => {
    const kept = JSON.parse(readFileSync(join(onPostgres, 'locations.json'), 'utf8')) as { catalog: string };
    assert.equal(kept.catalog, catalogUrl);
    assert.doesNotMatch(readFileSync(join(onPostgres, 'locations.json'), 'utf8'), /not-written/);
    assert.equal(existsSync(join(onPostgres, 'catalog.sqlite')), false);
  });

  test('restore gives the same site from both catalogs', async () => {
    await ok('restore', '--archive', onPostgres, '--to', join(work, 'restored-postgres'));
    await ok('restore', '--archive', onSqlite, '--to', join(work, 'restored-sqlite'));
    const fromPostgres = snapshot(join(work, 'restored-postgres'));
    assert.deepEqual(fromPostgres, snapshot(join(work, 'restored-sqlite')));
    assert.deepEqual([...fromPostgres.keys()].sort(), ['img/logo.png', 'index.html', 'papers/a.txt', 'papers/c.txt']);
  });

  test('audit gives the same changes from both catalogs', async () => {
    const columns = (csv: string) =>
      csv
        .trim()
        .split('\n')
        .map((line) => line.split(',').slice(0, 4).join(','));
    const fromPostgres = await ok('audit', '--archive', onPostgres, '--format', 'csv');
    const fromSqlite = await ok('audit', '--archive', onSqlite, '--format', 'csv');
    assert.deepEqual(columns(fromPostgres), columns(fromSqlite));
    assert.match(fromPostgres, /papers\/b\.txt/);
    assert.match(fromPostgres, /papers\/c\.txt/);
  });

  test('verify and status agree', async () => {
    const verify = (archive: string) =>
      ok('verify', '--archive', archive, '--json').then((text) => JSON.parse(text) as { ok: boolean; bags: number; bytes: number });
    const [a, b] = [await verify(onPostgres), await verify(onSqlite)];
    assert.equal(a.ok, true);
    assert.equal(a.bags, b.bags);
    assert.equal(a.bytes, b.bytes);
    const status = (archive: string) =>
      ok('status', '--archive', archive, '--json').then(
        (text) => JSON.parse(text) as { sources: Array<{ liveResources: number; deletedResources: number; versions: number; bags: number }> },
      );
    const [sa, sb] = [await status(onPostgres), await status(onSqlite)];
    const counts = (s: typeof sa) =>
      s.sources.map(({ liveResources, deletedResources, versions, bags }) => ({ liveResources, deletedResources, versions, bags }));
    assert.deepEqual(counts(sa), counts(sb));
    assert.deepEqual(counts(sa), [{ liveResources: 4, deletedResources: 1, versions: 6, bags: counts(sb)[0]!.bags }]);
  });

  test('serve lists the same identifiers from both catalogs', async () => {
    const identifiers = async (archiveDir: string): Promise<string[]> => {
      const server = await startArchiveServer({ archiveDir, log: () => {} });
      try {
        const found: string[] = [];
        let query = 'verb=ListIdentifiers&metadataPrefix=oai_didl';
        for (;;) {
          const body = await (await fetch(`${server.baseUrl}/oai?${query}`)).text();
          for (const match of body.matchAll(/<identifier>([^<]*)<\/identifier>/g)) found.push(match[1]!);
          const token = /<resumptionToken[^>]*>([^<]+)<\/resumptionToken>/.exec(body)?.[1];
          if (!token) return found;
          query = `verb=ListIdentifiers&resumptionToken=${encodeURIComponent(token)}`;
        }
      } finally {
        await server.close();
      }
    };
    const fromPostgres = await identifiers(onPostgres);
    assert.deepEqual(fromPostgres, await identifiers(onSqlite));
    assert.equal(fromPostgres.length, 5, 'four live resources and a deleted one');
  });

  test('reindex rebuilds the PostgreSQL catalog from the bags, and keeps the one it replaces', async () => {
    const before = await ok('status', '--archive', onPostgres, '--json');
    const refused = await oaibagAsync('reindex', '--archive', onPostgres);
    assert.equal(refused.status, 2);
    assert.match(
      refused.stderr,
      /the catalog postgres:\/\/postgres@127\.0\.0\.1:\d+\/archive exists; reindex does not overwrite a catalog \[ERR_ARCHIVE_USAGE\]/,
    );
    await ok('reindex', '--archive', onPostgres, '--force');
    // oaibag_ext holds pg_trgm (catalog migration 12), outside every swap.
    const schemas = (await postgres.psql('archive', "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'oaibag_%' AND nspname <> 'oaibag_ext' ORDER BY 1"))
      .trim()
      .split('\n');
    assert.equal(schemas.length, 1, `one kept schema, no rebuild left: ${schemas}`);
    assert.match(schemas[0]!, /^oaibag_kept_\d{8}t\d{6}z$/);
    const counts = (text: string) =>
      (JSON.parse(text) as { sources: Array<{ liveResources: number; deletedResources: number; versions: number; bags: number }> }).sources.map(
        ({ liveResources, deletedResources, versions, bags }) => ({ liveResources, deletedResources, versions, bags }),
      );
    assert.deepEqual(counts(await ok('status', '--archive', onPostgres, '--json')), counts(before));
    await ok('restore', '--archive', onPostgres, '--to', join(work, 'restored-reindexed'));
    assert.deepEqual(snapshot(join(work, 'restored-reindexed')), snapshot(join(work, 'restored-sqlite')));
  });

  test('a second catalog for one archive is refused, with one coded line and exit 2', async () => {
    const other = await postgres.createDatabase('other');
    const refused = await oaibagAsync('status', '--archive', onPostgres, '--catalog', other);
    assert.equal(refused.status, 2);
    assert.match(
      refused.stderr,
      /^oaibag: the archive .* keeps its catalog at postgres:\/\/postgres@127\.0\.0\.1:\d+\/archive, not at .*\/other \[ERR_ARCHIVE_USAGE\]/,
    );
    assert.equal(refused.stderr.trim().split('\n').length, 1);
    const sqlite = await oaibagAsync('harvest', endpoint, '--archive', onSqlite, '--catalog', other);
    assert.equal(sqlite.status, 2);
    assert.match(sqlite.stderr, /has its catalog in .*catalog\.sqlite: --catalog would start a second one \[ERR_ARCHIVE_USAGE\]/);
    assert.equal(existsSync(join(onSqlite, 'locations.json')), false);
  });

  test('a catalog that cannot be reached: one coded line, exit 4, nothing written', async () => {
    const fresh = join(work, 'unreachable');
    const result = await oaibagAsync('status', '--archive', fresh, '--catalog', 'postgres://postgres@127.0.0.1:1/none');
    assert.equal(result.status, 4);
    assert.match(result.stderr, /^oaibag: the catalog postgres:\/\/postgres@127\.0\.0\.1:1\/none: .*ECONNREFUSED.* \[ERR_ARCHIVE_CATALOG\]/);
    assert.equal(result.stderr.trim().split('\n').length, 1);
    assert.equal(existsSync(fresh), false, 'status only reads: the folder is not made');
  });

  test('a catalog newer than this oaibag is refused', async () => {
    const newer = await postgres.createDatabase('newer');
    const fresh = join(work, 'newer');
    await ok('status', '--archive', fresh, '--catalog', newer);
    await postgres.psql('newer', "INSERT INTO schema_migrations VALUES (99, 'from the future', '2030-01-01T00:00:00Z')");
    const result = await oaibagAsync('status', '--archive', fresh, '--catalog', newer);
    assert.equal(result.status, 4);
    assert.match(result.stderr, /has schema version 99, newer than the \d+ this oaibag knows \[ERR_ARCHIVE_CATALOG\]/);
  });
});
