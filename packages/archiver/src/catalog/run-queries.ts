// The rows of runs (the `harvests` table: a harvest or an import of a source), for the Catalog's
// methods of the same names, which say what each does: catalog.ts is the one way in.
import { type Row, toHarvest } from './catalog-rows.js';
import {
  type CatalogHarvest,
  countedAs,
  type HarvestArguments,
  type HarvestCounts,
  type HarvestStatus,
  type RunKind,
  type VersionChange,
} from './catalog-types.js';
import { type CatalogStatements, stamp } from './statements.js';

export function ensureRun(db: CatalogStatements, id: number, sourceId: number, kind: RunKind, args: HarvestArguments, startedAt: string): void {
  db.statement(`INSERT OR IGNORE INTO harvests (id, kind, source_id, started_at, status, arguments) VALUES (?, ?, ?, ?, 'interrupted', ?)`).run(
    id,
    kind,
    sourceId,
    startedAt,
    argumentsJson(args),
  );
}

export function closeRebuiltRun(
  db: CatalogStatements,
  harvestId: number,
  status: Exclude<HarvestStatus, 'running'>,
  counts: HarvestCounts,
  endedAt: string,
  listResponseDate: string | null,
): void {
  db.transaction(() => {
    db.statement('UPDATE harvests SET status = ?, ended_at = ?, list_response_date = ? WHERE id = ?').run(status, endedAt, listResponseDate, harvestId);
    updateRunCounts(db, harvestId, counts);
  });
}

/**
 * The counts of a run rebuilt from its bags, from every row the catalog holds for it rather
 * than from the bags one call indexed: an import killed half-way records a run's first bags,
 * and the rerun its others (catalog/index-bags.ts).
 */
export function recountRebuiltRun(db: CatalogStatements, harvestId: number): void {
  const records = db.statement('SELECT COALESCE(SUM(records), 0) AS n FROM bags WHERE harvest_id = ?').get(harvestId) as Row;
  const changes = db
    .statement('SELECT change, COUNT(*) AS n, COALESCE(SUM(size), 0) AS bytes FROM versions WHERE harvest_id = ? GROUP BY change')
    .all(harvestId) as Row[];
  const deleted = db.statement('SELECT COUNT(*) AS n FROM deletions WHERE harvest_id = ?').get(harvestId) as Row;
  const counts = { records: Number(records.n), added: 0, modified: 0, touched: 0, deleted: Number(deleted.n), bytes: 0 };
  for (const row of changes) {
    counts[countedAs(row.change as VersionChange)] += Number(row.n);
    counts.bytes += Number(row.bytes);
  }
  updateRunCounts(db, harvestId, counts);
}

export function startRun(db: CatalogStatements, sourceId: number, kind: RunKind, args: HarvestArguments): number {
  const result = db
    .statement("INSERT INTO harvests (kind, source_id, started_at, status, arguments) VALUES (?, ?, ?, 'running', ?)")
    .run(kind, sourceId, stamp(), argumentsJson(args));
  return Number(result.lastInsertRowid);
}

export function setListResponseDate(db: CatalogStatements, harvestId: number, responseDate: string): void {
  db.statement('UPDATE harvests SET list_response_date = ? WHERE id = ?').run(responseDate, harvestId);
}

/** Writes the counts given, and only those (a statement per set of names, cached). */
export function updateRunCounts(db: CatalogStatements, harvestId: number, counts: Partial<HarvestCounts>): void {
  const names = COUNT_NAMES.filter((name) => counts[name] !== undefined);
  if (names.length === 0) return;
  const sql = `UPDATE harvests SET ${names.map((name) => `${name} = @${name}`).join(', ')} WHERE id = @id`;
  db.statement(sql).run({ id: harvestId, ...Object.fromEntries(names.map((name) => [name, counts[name]])) });
}

export function setListEnded(db: CatalogStatements, harvestId: number, at: string): void {
  db.statement('UPDATE harvests SET ended_at = ? WHERE id = ?').run(at, harvestId);
}

export function finishRun(
  db: CatalogStatements,
  harvestId: number,
  status: Exclude<HarvestStatus, 'running'>,
  counts: Partial<HarvestCounts>,
  reason: string | undefined,
): void {
  db.transaction(() => {
    db.statement('UPDATE harvests SET status = ?, ended_at = COALESCE(ended_at, ?), reason = COALESCE(?, reason) WHERE id = ?').run(
      status,
      stamp(),
      reason ?? null,
      harvestId,
    );
    updateRunCounts(db, harvestId, counts);
  });
}

export function setRunArguments(db: CatalogStatements, harvestId: number, args: HarvestArguments): void {
  db.statement('UPDATE harvests SET arguments = ? WHERE id = ?').run(argumentsJson(args), harvestId);
}

export function interruptRunningRuns(db: CatalogStatements, baseUrl?: string): number {
  if (baseUrl === undefined) return db.statement("UPDATE harvests SET status = 'interrupted', ended_at = ? WHERE status = 'running'").run(stamp()).changes;
  return db
    .statement("UPDATE harvests SET status = 'interrupted', ended_at = ? WHERE status = 'running' AND source_id IN (SELECT id FROM sources WHERE base_url = ?)")
    .run(stamp(), baseUrl).changes;
}

export function harvest(db: CatalogStatements, harvestId: number): CatalogHarvest | undefined {
  const row = db.statement('SELECT * FROM harvests WHERE id = ?').get(harvestId) as Row | undefined;
  return row && toHarvest(row);
}

export function lastHarvest(db: CatalogStatements, sourceId: number): CatalogHarvest | undefined {
  const row = db.statement('SELECT * FROM harvests WHERE source_id = ? ORDER BY id DESC LIMIT 1').get(sourceId) as Row | undefined;
  return row && toHarvest(row);
}

const COUNT_NAMES = ['records', 'added', 'modified', 'touched', 'deleted', 'failed', 'bytes', 'requests'] as const satisfies readonly (keyof HarvestCounts)[];

/** A run's arguments as its row keeps them (an import's with its delivery). */
function argumentsJson(args: HarvestArguments): string {
  return JSON.stringify({
    from: args.from ?? null,
    until: args.until ?? null,
    set: args.set ?? null,
    prefix: args.prefix,
    ...(args.delivery ? { delivery: args.delivery } : {}),
    ...(args.delayMs !== undefined ? { delayMs: args.delayMs } : {}),
    ...(args.maxConnections !== undefined ? { maxConnections: args.maxConnections } : {}),
  });
}
