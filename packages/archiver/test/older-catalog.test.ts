// A catalog of an older schema in a read-only archive (a snapshot taken before an upgrade):
// `oaibag status` refuses it in one line naming both versions (exit 4) and changes nothing;
// writable, it migrates it first. Here rather than in test/read-only-archive.test.ts because
// making an older catalog takes the catalog's migrations, which are no part of the public API.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import Database from 'better-sqlite3';
import { oaibagAs, readOnlyCopy, SKIP_CLI, tree } from '../../../test/read-only-copy.ts';
import { CATALOG_MIGRATIONS, CATALOG_SCHEMA_VERSION, migrateCatalog } from '../src/catalog/catalog-migrations.ts';

let work: string;
/** The commands' TMPDIR, which anyone may write into. */
let temporary: string;

before(() => {
  work = mkdtempSync(join(tmpdir(), 'oaibag-older-catalog-'));
  chmodSync(work, 0o755);
  temporary = join(work, 'tmp');
  mkdirSync(temporary);
  chmodSync(temporary, 0o777);
});

after(() => {
  if (work) {
    // Read-only folders cannot be emptied: give them back their write bit first.
    spawnSync('chmod', ['-R', 'u+w', work]);
    rmSync(work, { recursive: true, force: true });
  }
});

test('a catalog older than this oaibag: refused on a read-only copy (exit 4, both versions named), migrated when writable', { skip: SKIP_CLI }, async () => {
  const older = join(work, 'older', 'archive');
  mkdirSync(older, { recursive: true });
  const db = new Database(join(older, 'catalog.sqlite'));
  db.pragma('journal_mode = WAL');
  migrateCatalog(db, join(older, 'catalog.sqlite'), CATALOG_MIGRATIONS.slice(0, -1));
  db.close();
  const frozen = readOnlyCopy(older, join(work, 'older-copy'));
  const before = tree(frozen);
  const refused = await oaibagAs(['status', '--archive', frozen], work, temporary);
  assert.equal(refused.status, 4, refused.stderr);
  assert.match(
    refused.stderr,
    new RegExp(
      `^oaibag: the catalog \\S+ has schema version ${CATALOG_SCHEMA_VERSION - 1}, older than the ${CATALOG_SCHEMA_VERSION} this oaibag reads, and the archive is read-only: it cannot be migrated \\[ERR_ARCHIVE_CATALOG\\] \\(hint: [^\\n]+\\)\\n$`,
    ),
  );
  assert.deepEqual(tree(frozen), before);

  // Writable: status migrates it first, as before there was a read-only mode.
  spawnSync('chmod', ['-R', 'a+w', join(work, 'older')]);
  const migrated = await oaibagAs(['status', '--archive', older], work, temporary);
  assert.equal(migrated.status, 0, migrated.stderr);
  assert.match(migrated.stdout, new RegExp(`catalog schema ${CATALOG_SCHEMA_VERSION}`));
});
