// The oaibag side of the experiment (experiment.mjs), beyond what runHarvester gives: which
// changes an incremental harvest recorded, read from the archive's catalog path by path, the
// batch bags each harvest wrote (what their data/ folders hold), and the archive restored with
// `oaibag restore` for the byte-for-byte check.
import { spawnSync } from 'node:child_process';
import { lstatSync, readdirSync } from 'node:fs';
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

/**
 * The batch bags each harvest wrote (format 2, docs/aip-profile.md), by harvest id, from the
 * catalog's `bags` (read-only): how many, their counts (records, new payloads, revisits,
 * deletions), and what their data/ folders hold on disk: `payloadFiles` (files below data/)
 * and `payloadFolders` (folders strictly below data/: the host and URL-path folders the new
 * payload files needed; data/ itself is part of every bag). Unique inodes each.
 * Opening the catalog may leave SQLite's -shm/-wal beside it: call this after the archive's
 * inodes and bytes have been counted.
 */
export function harvestBags(archiveDir) {
  const { Database } = loadBetterSqlite3();
  const db = new Database(join(archiveDir, 'catalog.sqlite'), { readonly: true, fileMustExist: true });
  let rows;
  try {
    rows = db
      .prepare(
        'SELECT harvest_id AS harvestId, bag_path AS bagPath, records, new_payloads AS newPayloads, revisits, deletions, payload_bytes AS payloadBytes FROM bags ORDER BY id',
      )
      .all();
  } finally {
    db.close();
  }
  const byHarvest = {};
  for (const row of rows) {
    const h = (byHarvest[row.harvestId] ??= {
      harvestId: row.harvestId,
      bags: 0,
      records: 0,
      newPayloads: 0,
      revisits: 0,
      deletions: 0,
      payloadBytes: 0,
      payloadFiles: 0,
      payloadFolders: 0,
    });
    h.bags++;
    for (const key of ['records', 'newPayloads', 'revisits', 'deletions', 'payloadBytes']) h[key] += row[key];
    const data = countTree(join(archiveDir, row.bagPath, 'data'));
    h.payloadFiles += data.files;
    h.payloadFolders += data.folders;
  }
  return byHarvest;
}

/** Files and folders below `dir` (not `dir` itself), each inode once; nothing when it is absent. */
function countTree(dir) {
  const seen = new Set();
  const counts = { files: 0, folders: 0 };
  const walk = (path) => {
    let entries;
    try {
      entries = readdirSync(path, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const full = join(path, entry.name);
      const stats = lstatSync(full);
      const key = `${stats.dev}:${stats.ino}`;
      if (seen.has(key)) continue;
      seen.add(key);
      if (entry.isDirectory()) {
        counts.folders++;
        walk(full);
      } else counts.files++;
    }
  };
  walk(dir);
  return counts;
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
