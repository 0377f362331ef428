// The oaibag side of the experiment (experiment.mjs), beyond what runHarvester gives: which
// changes an incremental harvest recorded, read from the archive's catalog path by path, and
// the archive restored with `oaibag restore` for the byte-for-byte check.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ARCHIVER_BIN } from './harvest-common.mjs';
import { loadBetterSqlite3 } from './repository-common.mjs';

/** The site path an identifier names: the URL after the repository's base, decoded per segment. */
export function pathOfIdentifier(identifier, baseUrl) {
  const prefix = `${baseUrl}/`;
  if (!identifier.startsWith(prefix)) return identifier;
  return identifier.slice(prefix.length).split('/').map(decodeURIComponent).join('/');
}

/**
 * What the archive's latest harvest recorded, from its catalog (read-only): the paths of the
 * versions it stored, by change (added, modified, touched), and of the deletions it recorded,
 * as the Sets scoreFound (experiment-testbed.mjs) takes.
 */
export function oaibagFound(archiveDir, baseUrl) {
  const { Database } = loadBetterSqlite3();
  const db = new Database(join(archiveDir, 'catalog.sqlite'), { readonly: true, fileMustExist: true });
  try {
    const harvest = db.prepare('SELECT id FROM harvests ORDER BY id DESC LIMIT 1').get();
    const versions = db
      .prepare('SELECT r.identifier AS identifier, v.change AS change FROM versions v JOIN resources r ON r.id = v.resource_id WHERE v.harvest_id = ?')
      .all(harvest.id);
    const deletions = db
      .prepare('SELECT r.identifier AS identifier FROM deletions d JOIN resources r ON r.id = d.resource_id WHERE d.harvest_id = ?')
      .all(harvest.id);
    const byChange = {};
    const changed = new Set();
    for (const { identifier, change } of versions) {
      byChange[change] = (byChange[change] ?? 0) + 1;
      changed.add(pathOfIdentifier(identifier, baseUrl));
    }
    return { harvestId: harvest.id, byChange, changed, deleted: new Set(deletions.map(({ identifier }) => pathOfIdentifier(identifier, baseUrl))) };
  } finally {
    db.close();
  }
}

/** `oaibag restore --archive DIR --to TARGET --json`: its exit code, summary and wall time. */
export function restoreArchive(archiveDir, target) {
  const started = performance.now();
  const result = spawnSync(process.execPath, [ARCHIVER_BIN, 'restore', '--archive', archiveDir, '--to', target, '--json'], {
    encoding: 'utf8',
    maxBuffer: 64 * 2 ** 20,
  });
  let summary;
  try {
    summary = JSON.parse(result.stdout);
  } catch {
    summary = undefined;
  }
  return { exitCode: result.status, seconds: (performance.now() - started) / 1000, summary, stderr: result.stderr.trim().slice(-2000) };
}
