// The catalog's queries for `oaibag audit` (audit/audit-query.ts turns their rows into the
// report): set-based, never one query per resource, so 100,000 resources take about a second.
import type { Catalog } from './catalog.js';
import type { HarvestStatus, VersionChange } from './catalog-types.js';

/** A source as the audit names it. */
export interface SourceRecord {
  id: number;
  baseUrl: string;
  repositoryName: string | null;
}

/** Every source, by base URL. */
export function sourcesByBaseUrl(catalog: Catalog): SourceRecord[] {
  const rows = catalog.statement('SELECT id, base_url, repository_name FROM sources ORDER BY base_url').all() as Array<{
    id: number;
    base_url: string;
    repository_name: string | null;
  }>;
  return rows.map((row) => ({ id: row.id, baseUrl: row.base_url, repositoryName: row.repository_name }));
}

/** The source of a harvest, or undefined when there is no such harvest. */
export function sourceOfHarvest(catalog: Catalog, harvestId: number): number | undefined {
  const row = catalog.statement('SELECT source_id FROM harvests WHERE id = ?').get(harvestId) as { source_id: number } | undefined;
  return row?.source_id;
}

/** The harvests of these sources started within `since`..`until` (ISO instants, null: open), oldest first. */
export function harvestsStartedBetween(catalog: Catalog, sourceIds: readonly number[], since: string | null, until: string | null): number[] {
  const rows = catalog
    .statement(`SELECT id FROM harvests WHERE source_id IN (SELECT value FROM json_each(?))
      AND (CAST(? AS TEXT) IS NULL OR started_at >= ?) AND (CAST(? AS TEXT) IS NULL OR started_at <= ?) ORDER BY id`)
    .all(JSON.stringify(sourceIds), since, since, until, until) as Array<{ id: number }>;
  return rows.map((row) => row.id);
}

/** For each of these sources, its last harvest that recorded a version or a deletion. */
export function lastChangingHarvests(catalog: Catalog, sourceIds: readonly number[]): number[] {
  const rows = catalog
    .statement(`SELECT MAX(h.id) AS id FROM harvests h WHERE h.source_id IN (SELECT value FROM json_each(?))
      AND (EXISTS (SELECT 1 FROM versions v WHERE v.harvest_id = h.id) OR EXISTS (SELECT 1 FROM deletions d WHERE d.harvest_id = h.id))
      GROUP BY h.source_id ORDER BY id`)
    .all(JSON.stringify(sourceIds)) as Array<{ id: number }>;
  return rows.map((row) => row.id);
}

/** A harvest as the audit's totals name it. */
export interface HarvestHead {
  id: number;
  startedAt: string;
  endedAt: string | null;
  status: HarvestStatus;
  source: string;
}

/** These harvests, by start time. */
export function harvestHeads(catalog: Catalog, harvestIds: readonly number[]): HarvestHead[] {
  const rows = catalog
    .statement(`SELECT h.id, h.started_at, h.ended_at, h.status, s.base_url FROM harvests h JOIN sources s ON s.id = h.source_id
      WHERE h.id IN (SELECT value FROM json_each(?)) ORDER BY h.started_at, h.id`)
    .all(JSON.stringify(harvestIds)) as Array<{ id: number; started_at: string; ended_at: string | null; status: HarvestStatus; base_url: string }>;
  return rows.map((row) => ({ id: row.id, startedAt: row.started_at, endedAt: row.ended_at, status: row.status, source: row.base_url }));
}

/** How many versions of each change kind, and deletions (`deleted`), each of these harvests recorded. */
export function harvestChangeCounts(
  catalog: Catalog,
  harvestIds: readonly number[],
): Array<{ harvestId: number; change: VersionChange | 'deleted'; count: number }> {
  const rows = catalog
    .statement(`SELECT harvest_id, change, COUNT(*) AS n FROM versions WHERE harvest_id IN (SELECT value FROM json_each(@ids)) GROUP BY harvest_id, change
      UNION ALL
      SELECT harvest_id, 'deleted', COUNT(*) FROM deletions WHERE harvest_id IN (SELECT value FROM json_each(@ids)) GROUP BY harvest_id`)
    .all({ ids: JSON.stringify(harvestIds) }) as Array<{ harvest_id: number; change: VersionChange | 'deleted'; n: number }>;
  return rows.map((row) => ({ harvestId: row.harvest_id, change: row.change, count: row.n }));
}

/**
 * One row per resource with a version or deletion recorded by a harvest of the period: its last
 * event before the period's first harvest of its source (b_…) and its last event up to the
 * period's last harvest (a_…), sorted by source and identifier; read lazily.
 */
export function* auditRawRows(catalog: Catalog, harvestIds: readonly number[]): Generator<AuditRawRow> {
  for (const row of catalog.statement(AUDIT_ROWS_SQL).iterate(JSON.stringify(harvestIds)) as IterableIterator<PickedRow>) {
    // An event in the period's harvests lies in [lo, hi]; the check costs nothing and keeps the
    // rule of the row set in one place.
    if (row.after === null) continue;
    const before = row.before === null ? null : (JSON.parse(row.before) as PickedEvent);
    const after = JSON.parse(row.after) as PickedEvent;
    yield {
      source: row.source,
      identifier: row.identifier,
      b_h: before?.[0] ?? null,
      b_live: before?.[1] ?? null,
      b_ds: before?.[2] ?? null,
      b_size: before?.[3] ?? null,
      b_sha256: before?.[4] ?? null,
      b_mime: before?.[5] ?? null,
      b_had_version: before ? row.had_version : null,
      a_h: after[0],
      a_live: after[1],
      a_ds: after[2],
      a_size: after[3],
      a_sha256: after[4],
      a_mime: after[5],
    };
  }
}

export interface AuditRawRow {
  source: string;
  identifier: string;
  b_h: number | null;
  b_live: number | null;
  b_ds: string | null;
  b_size: number | null;
  b_sha256: string | null;
  b_mime: string | null;
  b_had_version: number | null;
  a_h: number;
  a_live: number;
  a_ds: string;
  a_size: number | null;
  a_sha256: string | null;
  a_mime: string | null;
}

/** An event as AUDIT_ROWS_SQL picks it: [harvest, live (1 a version, 0 a deletion), datestamp, size, sha256, MIME type]. */
type PickedEvent = [number, number, string, number | null, string | null, string | null];

interface PickedRow {
  source: string;
  identifier: string;
  /** JSON of a PickedEvent, or null when there is none. */
  before: string | null;
  had_version: number;
  after: string | null;
}

/**
 * The last of a resource's events (versions and deletions) that `condition` keeps, as the JSON
 * of a PickedEvent. Events without a harvest (none are written today) count as harvest 0. A
 * deletion and a version of one resource in one harvest are ordered by datestamp, then by
 * recording time.
 */
const lastEvent = (condition: string) => `(SELECT json_array(e.h, e.live, e.ds, e.size, e.sha256, e.mime) FROM (
    SELECT COALESCE(v.harvest_id, 0) AS h, v.datestamp AS ds, v.stored_at AS at, 1 AS live, v.size AS size, v.sha256 AS sha256, v.mime_type AS mime
      FROM versions v WHERE v.resource_id = c.resource_id
    UNION ALL
    SELECT COALESCE(d.harvest_id, 0), d.datestamp, d.recorded_at, 0, NULL, NULL, NULL FROM deletions d WHERE d.resource_id = c.resource_id
  ) e WHERE ${condition} ORDER BY e.h DESC, e.ds DESC, e.at DESC, e.live DESC LIMIT 1)`;

// Each changed resource's events are looked up by its id (the versions' and deletions' unique
// indexes start with it): nothing holds the events of the whole period. An earlier form joined a
// table of every event of the period and ranked it with window functions; SQLite built a
// temporary index of those events, and each temporary table it makes keeps up to 16 MB in
// memory whatever cache_size says: 108 MB at 1M resources against 60 MB now, and slower. What
// remains are sorts (the period's resource ids, the final order), which spill to temporary files
// past cache_size.
export const AUDIT_ROWS_SQL = `
WITH period(harvest_id) AS (SELECT value FROM json_each(?)),
bounds AS (
  SELECT h.source_id, MIN(h.id) AS lo, MAX(h.id) AS hi FROM harvests h JOIN period p ON p.harvest_id = h.id GROUP BY h.source_id
),
changed AS (
  SELECT v.resource_id FROM versions v JOIN period p ON p.harvest_id = v.harvest_id
  UNION
  SELECT d.resource_id FROM deletions d JOIN period p ON p.harvest_id = d.harvest_id
)
SELECT s.base_url AS source, r.identifier,
  ${lastEvent('e.h < b.lo')} AS before,
  EXISTS (SELECT 1 FROM versions v WHERE v.resource_id = c.resource_id AND COALESCE(v.harvest_id, 0) < b.lo) AS had_version,
  ${lastEvent('e.h >= b.lo AND e.h <= b.hi')} AS after
FROM changed c JOIN resources r ON r.id = c.resource_id JOIN bounds b ON b.source_id = r.source_id JOIN sources s ON s.id = r.source_id
ORDER BY s.base_url, r.identifier`;
