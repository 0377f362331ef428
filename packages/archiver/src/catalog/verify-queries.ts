// The catalog's queries for `oaibag verify`: the payload files a bag should hold (to check
// their sizes), and which versions rely on a payload file found damaged, or on a missing bag.
import type { Catalog } from './catalog.js';
import type { Row } from './catalog-rows.js';

/** A version that relies on a payload file or a bag: it holds the bytes or the record, or revisits them. */
export interface RelyingVersion {
  versionId: number;
  sourceId: number;
  /** The source's OAI-PMH base URL. */
  source: string;
  identifier: string;
  datestamp: string;
  /** The batch bag that holds the version's record. */
  bagPath: string;
  /** True when the record is in another bag than the one asked about (a revisit of its bytes). */
  revisit: boolean;
}

const RELYING_COLUMNS = 'v.id, r.source_id, s.base_url, r.identifier, v.datestamp, rb.bag_path';
const RELYING_JOINS = 'JOIN resources r ON r.id = v.resource_id JOIN sources s ON s.id = r.source_id JOIN bags rb ON rb.id = v.bag_id';

function toRelying(row: Row, askedBag: string): RelyingVersion {
  return {
    versionId: Number(row.id),
    sourceId: Number(row.source_id),
    source: String(row.base_url),
    identifier: String(row.identifier),
    datestamp: String(row.datestamp),
    bagPath: String(row.bag_path),
    revisit: String(row.bag_path) !== askedBag,
  };
}

/**
 * Every version whose payload includes the file at `path` of the bag `bagPath` (by its sha-256:
 * the one payload row that points there), oldest first; each once, even when several of its
 * parts are these bytes.
 */
export function versionsRelyingOn(catalog: Catalog, bagPath: string, path: string): RelyingVersion[] {
  const rows = catalog
    .statement(`SELECT DISTINCT ${RELYING_COLUMNS}
      FROM bags pb JOIN payloads p ON p.bag_id = pb.id JOIN version_parts vp ON vp.payload_id = p.id
      JOIN versions v ON v.id = vp.version_id ${RELYING_JOINS}
      WHERE pb.bag_path = ? AND p.path = ? ORDER BY v.id`)
    .all(bagPath, path) as Row[];
  return rows.map((row) => toRelying(row, bagPath));
}

/**
 * Every version that relies on the bag `bagPath`: its record is there, or bytes of its payload
 * are (then, with the record elsewhere, a revisit), oldest first.
 */
export function versionsRelyingOnBag(catalog: Catalog, bagPath: string): RelyingVersion[] {
  const rows = catalog
    .statement(`SELECT ${RELYING_COLUMNS} FROM versions v ${RELYING_JOINS}
      WHERE v.bag_id = (SELECT id FROM bags WHERE bag_path = @bag)
        OR v.id IN (SELECT vp.version_id FROM version_parts vp JOIN payloads p ON p.id = vp.payload_id
          WHERE p.bag_id = (SELECT id FROM bags WHERE bag_path = @bag))
      ORDER BY v.id`)
    .all({ bag: bagPath }) as Row[];
  return rows.map((row) => toRelying(row, bagPath));
}

/** The payload files the catalog places in the bag `bagPath` (`data/…`), with their sizes. */
export function payloadsOfBag(catalog: Catalog, bagPath: string): Array<{ path: string; size: number }> {
  const rows = catalog
    .statement('SELECT p.path, p.size FROM payloads p JOIN bags b ON b.id = p.bag_id WHERE b.bag_path = ? ORDER BY p.path')
    .all(bagPath) as Row[];
  return rows.map((row) => ({ path: String(row.path), size: Number(row.size) }));
}
