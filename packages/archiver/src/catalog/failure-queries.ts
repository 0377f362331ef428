// The failures of records and lists (the `failures` table: what the next run must retry), for
// the Catalog's methods of the same names, which say what each does: catalog.ts is the one way in.
import { type Row, toFailure } from './catalog-rows.js';
import type { CatalogFailure, NewFailure } from './catalog-types.js';
import { type CatalogStatements, stamp } from './statements.js';

export function recordFailure(db: CatalogStatements, failure: NewFailure): CatalogFailure {
  return db.transaction(() => {
    const now = stamp();
    const open = (
      failure.identifier != null
        ? db.statement('SELECT id FROM failures WHERE source_id = ? AND identifier = ? AND resolved_at IS NULL').get(failure.sourceId, failure.identifier)
        : db
            .statement('SELECT id FROM failures WHERE source_id = ? AND identifier IS NULL AND stage = ? AND code = ? AND resolved_at IS NULL')
            .get(failure.sourceId, failure.stage, failure.code)
    ) as { id: number } | undefined;
    const values = {
      sourceId: failure.sourceId,
      harvestId: failure.harvestId ?? null,
      identifier: failure.identifier ?? null,
      datestamp: failure.datestamp ?? null,
      stage: failure.stage,
      code: failure.code,
      message: failure.message.replace(/[\r\n]+/g, ' '),
      expected: failure.expected ?? null,
      found: failure.found ?? null,
      now,
    };
    let id: number;
    if (open) {
      id = open.id;
      db.statement(`UPDATE failures SET harvest_id = @harvestId, datestamp = @datestamp, stage = @stage, code = @code, message = @message,
          expected = @expected, found = @found, last_seen_at = @now, attempts = attempts + 1 WHERE id = @id`).run({ ...values, id });
    } else {
      const result = db
        .statement(`INSERT INTO failures (source_id, harvest_id, identifier, datestamp, stage, code, message, expected, found, first_seen_at, last_seen_at)
          VALUES (@sourceId, @harvestId, @identifier, @datestamp, @stage, @code, @message, @expected, @found, @now, @now)`)
        .run(values);
      id = Number(result.lastInsertRowid);
    }
    return toFailure(db.statement('SELECT * FROM failures WHERE id = ?').get(id) as Row);
  });
}

export function openFailures(db: CatalogStatements, sourceId: number): CatalogFailure[] {
  const rows = db.statement('SELECT * FROM failures WHERE source_id = ? AND resolved_at IS NULL ORDER BY id').all(sourceId) as Row[];
  return rows.map(toFailure);
}

export function openRecordFailuresSince(db: CatalogStatements, sourceId: number, sinceHarvestId: number): number {
  const row = db
    .statement('SELECT COUNT(*) AS n FROM failures WHERE source_id = ? AND resolved_at IS NULL AND identifier IS NOT NULL AND harvest_id >= ?')
    .get(sourceId, sinceHarvestId) as { n: number };
  return row.n;
}

export function hasOpenRecordFailureSince(db: CatalogStatements, sourceId: number, identifier: string, sinceHarvestId: number): boolean {
  return (
    db
      .statement('SELECT 1 FROM failures WHERE source_id = ? AND identifier = ? AND resolved_at IS NULL AND harvest_id >= ?')
      .get(sourceId, identifier, sinceHarvestId) !== undefined
  );
}

export function resolveListFailures(db: CatalogStatements, sourceId: number): number {
  return db.statement('UPDATE failures SET resolved_at = ? WHERE source_id = ? AND identifier IS NULL AND resolved_at IS NULL').run(stamp(), sourceId).changes;
}

/** Resolves the open failure of a record, if it has one: the record is now stored or deleted. */
export function resolveRecordFailure(db: CatalogStatements, sourceId: number, identifier: string): void {
  db.statement('UPDATE failures SET resolved_at = ? WHERE source_id = ? AND identifier = ? AND resolved_at IS NULL').run(stamp(), sourceId, identifier);
}
