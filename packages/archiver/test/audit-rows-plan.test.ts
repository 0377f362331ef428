// The audit's rows query (catalog/audit-queries.ts) looks up each changed resource's events by its
// id: SQLite keeps up to 16 MB of every temporary table or index it builds in memory, whatever
// the connection's cache, so the plan may build none but the index of the period's bounds (a
// row per source). The earlier form built a temporary index of every event of the period.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { AUDIT_ROWS_SQL } from '../src/catalog/audit-queries.ts';
import { Catalog } from '../src/catalog/catalog.ts';

test("EXPLAIN QUERY PLAN: the audit looks up each changed resource's events by its id; no temporary index of the period's events", () => {
  const dir = mkdtempSync(join(tmpdir(), 'oaibag-audit-plan-'));
  const catalog = Catalog.open(dir);
  try {
    const plan = (catalog.statement(`EXPLAIN QUERY PLAN ${AUDIT_ROWS_SQL}`).all(JSON.stringify([1, 2, 3])) as Array<{ detail: string }>).map(
      (row) => row.detail,
    );
    const text = plan.join('\n');
    for (const line of plan.filter((detail) => /AUTOMATIC/.test(detail))) {
      assert.match(line, /^SEARCH b USING AUTOMATIC COVERING INDEX \(source_id=\?\)$/, `only the bounds' index is temporary\n${text}`);
    }
    for (const line of plan) {
      assert.doesNotMatch(line, /^SCAN (v|d|r|versions|deletions|resources)\b/, `no scan of a table\n${text}`);
      // The changed resources and each one's events stream (co-routines), never stored in a temporary table.
      assert.doesNotMatch(line, /^MATERIALIZE (changed|e)\b/, `nothing of the period materialized\n${text}`);
    }
    assert.match(text, /SEARCH v USING INDEX sqlite_autoindex_versions_1 \(resource_id=\?\)/, text);
    assert.match(text, /SEARCH d USING INDEX sqlite_autoindex_deletions_1 \(resource_id=\?\)/, text);
  } finally {
    catalog.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
