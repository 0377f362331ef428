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
      AND (? IS NULL OR started_at >= ?) AND (? IS NULL OR started_at <= ?) ORDER BY id`)
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
export function auditRawRows(catalog: Catalog, harvestIds: readonly number[]): IterableIterator<AuditRawRow> {
  return catalog.statement(ROWS_SQL).iterate(JSON.stringify(harvestIds)) as IterableIterator<AuditRawRow>;
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

// Events without a harvest (none are written today) sort first, as harvest 0. A deletion and a
// version of one resource in one harvest are ordered by datestamp, then by recording time.
const ROWS_SQL = `
WITH period(harvest_id) AS (SELECT value FROM json_each(?)),
bounds AS (
  SELECT h.source_id, MIN(h.id) AS lo, MAX(h.id) AS hi FROM harvests h JOIN period p ON p.harvest_id = h.id GROUP BY h.source_id
),
changed AS (
  SELECT v.resource_id FROM versions v JOIN period p ON p.harvest_id = v.harvest_id
  UNION
  SELECT d.resource_id FROM deletions d JOIN period p ON p.harvest_id = d.harvest_id
),
events AS (
  SELECT c.resource_id, COALESCE(v.harvest_id, 0) AS h, v.datestamp AS ds, v.stored_at AS at, 1 AS live,
    v.size AS size, v.sha256 AS sha256, v.mime_type AS mime
  FROM changed c JOIN versions v ON v.resource_id = c.resource_id
  UNION ALL
  SELECT c.resource_id, COALESCE(d.harvest_id, 0), d.datestamp, d.recorded_at, 0, NULL, NULL, NULL
  FROM changed c JOIN deletions d ON d.resource_id = c.resource_id
),
placed AS (
  SELECT e.*, (e.h >= b.lo) AS inside,
    ROW_NUMBER() OVER (PARTITION BY e.resource_id, e.h >= b.lo ORDER BY e.h DESC, e.ds DESC, e.at DESC, e.live DESC) AS rn,
    MAX(e.live) OVER (PARTITION BY e.resource_id, e.h >= b.lo) AS had_version
  FROM events e JOIN resources r ON r.id = e.resource_id JOIN bounds b ON b.source_id = r.source_id
  WHERE e.h <= b.hi
),
pivot AS (
  SELECT resource_id,
    MAX(CASE WHEN NOT inside THEN h END) AS b_h, MAX(CASE WHEN NOT inside THEN live END) AS b_live,
    MAX(CASE WHEN NOT inside THEN ds END) AS b_ds, MAX(CASE WHEN NOT inside THEN size END) AS b_size,
    MAX(CASE WHEN NOT inside THEN sha256 END) AS b_sha256, MAX(CASE WHEN NOT inside THEN mime END) AS b_mime,
    MAX(CASE WHEN NOT inside THEN had_version END) AS b_had_version,
    MAX(CASE WHEN inside THEN h END) AS a_h, MAX(CASE WHEN inside THEN live END) AS a_live,
    MAX(CASE WHEN inside THEN ds END) AS a_ds, MAX(CASE WHEN inside THEN size END) AS a_size,
    MAX(CASE WHEN inside THEN sha256 END) AS a_sha256, MAX(CASE WHEN inside THEN mime END) AS a_mime
  FROM placed WHERE rn = 1 GROUP BY resource_id
)
SELECT s.base_url AS source, r.identifier, p.*
FROM pivot p JOIN resources r ON r.id = p.resource_id JOIN sources s ON s.id = r.source_id
WHERE p.a_h IS NOT NULL
ORDER BY s.base_url, r.identifier`;
