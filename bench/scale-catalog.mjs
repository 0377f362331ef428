#!/usr/bin/env node
// A synthetic large catalog from a real archive: its resources, versions, payload parts,
// fetches and deletions copied again and again in SQL, each copy under new identifiers
// (`https://host/r<k>/path` for `https://host/path`) and pointing at the same bags and payload
// files. What reads only the catalog (restore --dry-run, audit, the plan of a restore or an
// export) sees an archive of `targetResources` resources; a real restore of a copy reads the
// bytes of the resource it copies, so it is checked as any other.
//
//   node bench/scale-catalog.mjs --archive DIR --resources N
//
// changes DIR's catalog in place (copy the archive first). Used by the issue-27 memory figures
// of bench/README.md and by bench:scale.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { parseBenchArgs, wholeNumberArg } from './bench-args.mjs';
import { ROOT } from './repository-common.mjs';

const require = createRequire(join(ROOT, 'packages/archiver/package.json'));
const Database = require('better-sqlite3');

/** An identifier's copy `k`: `r<k>/` put after its authority (an identifier that is not a URL gets the prefix `r<k>/`). */
const COPY_IDENTIFIER = `CASE WHEN instr(identifier, '://') > 0 AND instr(substr(identifier, instr(identifier, '://') + 3), '/') > 0
  THEN substr(identifier, 1, instr(identifier, '://') + 2 + instr(substr(identifier, instr(identifier, '://') + 3), '/')) || 'r' || @k || '/'
    || substr(identifier, instr(identifier, '://') + 3 + instr(substr(identifier, instr(identifier, '://') + 3), '/'))
  ELSE 'r' || @k || '/' || identifier END`;

/**
 * Grows the catalog of `archiveDir` to at least `targetResources` resources (rounded to whole
 * rows of the original: the last copy is partial) by copying the resources it holds now.
 * Returns the counts before and after. A catalog already that large is left as it is.
 */
export function replicateCatalog(archiveDir, targetResources) {
  const file = join(archiveDir, 'catalog.sqlite');
  if (!existsSync(file)) throw new Error(`no catalog at ${file}`);
  const db = new Database(file, { fileMustExist: true });
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = OFF');
    db.pragma('foreign_keys = OFF');
    const count = (table) => db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get().n;
    const before = { resources: count('resources'), versions: count('versions'), deletions: count('deletions') };
    const maxOf = (table) => db.prepare(`SELECT COALESCE(MAX(id), 0) AS n FROM ${table}`).get().n;
    const resources = maxOf('resources');
    const versions = maxOf('versions');
    const deletions = maxOf('deletions');
    const fetches = maxOf('fetches');
    if (before.resources === 0) throw new Error(`${file} holds no resource to copy`);
    const copy = db.transaction((k, lastId) => {
      // BigInts: SQLite is given integers (a JS number is bound as a REAL, `r1.0`).
      const ids = { k: BigInt(k), r: BigInt(k * resources), v: BigInt(k * versions), d: BigInt(k * deletions), f: BigInt(k * fetches), last: BigInt(lastId) };
      db.prepare(`INSERT INTO resources (id, source_id, identifier, current_version_id, deleted_at, mime_type)
        SELECT id + @r, source_id, ${COPY_IDENTIFIER}, current_version_id + @v, deleted_at, mime_type FROM resources WHERE id <= @last`).run(ids);
      db.prepare(`INSERT INTO versions (id, resource_id, datestamp, size, sha256, mime_type, bag_id, record, harvest_id, stored_at, change, payload_files, last_modified)
        SELECT id + @v, resource_id + @r, datestamp, size, sha256, mime_type, bag_id, record, harvest_id, stored_at, change, payload_files, last_modified
        FROM versions WHERE id <= @v / @k AND resource_id <= @last`).run(ids);
      db.prepare(`INSERT INTO version_parts (version_id, part, payload_id)
        SELECT vp.version_id + @v, vp.part, vp.payload_id FROM version_parts vp JOIN versions v ON v.id = vp.version_id
        WHERE v.id <= @v / @k AND v.resource_id <= @last`).run(ids);
      db.prepare(`INSERT INTO fetches (id, version_id, part, ref, url, redirects)
        SELECT f.id + @f, f.version_id + @v, f.part, f.ref, f.url, f.redirects FROM fetches f JOIN versions v ON v.id = f.version_id
        WHERE f.id <= @f / @k AND v.resource_id <= @last`).run(ids);
      db.prepare(`INSERT INTO deletions (id, resource_id, datestamp, harvest_id, recorded_at, bag_id)
        SELECT id + @d, resource_id + @r, datestamp, harvest_id, recorded_at, bag_id FROM deletions WHERE id <= @d / @k AND resource_id <= @last`).run(ids);
    });
    let have = before.resources;
    for (let k = 1; have < targetResources; k++) {
      const wanted = targetResources - have;
      // Copy `wanted` resources of the original (ids 1..resources, maybe with gaps): the last copy is partial.
      const lastId =
        wanted >= before.resources
          ? resources
          : db.prepare('SELECT id FROM resources WHERE id <= ? ORDER BY id LIMIT 1 OFFSET ?').get(resources, wanted - 1).id;
      copy(k, lastId);
      have = count('resources');
    }
    db.pragma('wal_checkpoint(TRUNCATE)');
    const after = { resources: count('resources'), versions: count('versions'), deletions: count('deletions') };
    return { before, after };
  } finally {
    db.close();
  }
}

const USAGE = `usage: node bench/scale-catalog.mjs --archive DIR --resources N

  --archive DIR    the archive whose catalog grows (in place: copy it first)
  --resources N    resources wanted in all (the original's rows are copied until there are)`;

if (import.meta.url === `file://${process.argv[1]}`) {
  const { args, usageError } = parseBenchArgs('scale-catalog', USAGE, {
    archive: { type: 'string' },
    resources: { type: 'string' },
  });
  if (args.archive === undefined || args.resources === undefined) usageError('--archive and --resources are required');
  const target = wholeNumberArg(args.resources, '--resources', usageError);
  const started = performance.now();
  const counts = replicateCatalog(args.archive, target);
  process.stdout.write(`${JSON.stringify({ ...counts, seconds: Math.round((performance.now() - started) / 100) / 10 })}\n`);
}
