// The catalog's part in `oaibag repair`: what the archive recorded about a payload file (its
// sha-256 and size, the bytes a repair must put back), where the source served those bytes
// By-Reference, and the PREMIS-style `recovery` event of each file put back (or not).
import type { Catalog } from './catalog.js';
import type { Row } from './catalog-rows.js';

/** A payload file as the catalog recorded it. */
export interface RecordedPayload {
  sha256: string;
  size: number;
  /** The source of the bag holding it. */
  sourceId: number;
}

/** A By-Reference URL the source served these bytes from, with the source's base URL. */
export interface SourceCopy {
  baseUrl: string;
  ref: string;
}

/** The PREMIS eventType a repair records (id.loc.gov/vocabulary/preservation/eventType/rec). */
export const RECOVERY_EVENT_TYPE = 'recovery';

/** One file a repair put back (`success`) or could not (`failure`). */
export interface RecoveryEvent {
  sourceId: number | null;
  outcome: 'success' | 'failure';
  /** One line: the bag, the file, the digest and where the bytes came from (or why none were found). */
  detail: string;
}

/** The payload file at `path` of the bag `bagPath`, if the catalog places one there. */
export function recordedPayload(catalog: Catalog, bagPath: string, path: string): RecordedPayload | undefined {
  const row = catalog
    .statement('SELECT p.sha256, p.size, b.source_id FROM payloads p JOIN bags b ON b.id = p.bag_id WHERE b.bag_path = ? AND p.path = ?')
    .get(bagPath, path) as Row | undefined;
  return row && { sha256: String(row.sha256), size: Number(row.size), sourceId: Number(row.source_id) };
}

/** Every payload file the catalog places in the bag `bagPath`, with its sha-256 and size, by path. */
export function recordedPayloadsOfBag(catalog: Catalog, bagPath: string): Array<{ path: string; sha256: string; size: number }> {
  const rows = catalog
    .statement('SELECT p.path, p.sha256, p.size FROM payloads p JOIN bags b ON b.id = p.bag_id WHERE b.bag_path = ? ORDER BY p.path')
    .all(bagPath) as Row[];
  return rows.map((row) => ({ path: String(row.path), sha256: String(row.sha256), size: Number(row.size) }));
}

/**
 * The By-Reference URLs the source served the bytes with this sha-256 from, newest fetch first,
 * each once, at most `limit`: a By-Value payload has none (its bytes came inside the record).
 */
export function sourceCopiesOf(catalog: Catalog, sha256: string, limit = 3): SourceCopy[] {
  const rows = catalog
    .statement(`SELECT s.base_url, f.ref, MAX(f.id) AS newest FROM payloads p
      JOIN version_parts vp ON vp.payload_id = p.id
      JOIN fetches f ON f.version_id = vp.version_id AND f.part = vp.part
      JOIN versions v ON v.id = vp.version_id JOIN resources r ON r.id = v.resource_id JOIN sources s ON s.id = r.source_id
      WHERE p.sha256 = ? GROUP BY s.base_url, f.ref ORDER BY newest DESC LIMIT ?`)
    .all(sha256, limit) as Row[];
  return rows.map((row) => ({ baseUrl: String(row.base_url), ref: String(row.ref) }));
}

/** Records the recovery events of a repair, durably, in one transaction. */
export function recordRecoveryEvents(catalog: Catalog, events: readonly RecoveryEvent[]): void {
  if (events.length === 0) return;
  catalog.transaction(() => {
    for (const event of events) catalog.addEvent({ sourceId: event.sourceId, type: RECOVERY_EVENT_TYPE, outcome: event.outcome, detail: event.detail });
  });
}
