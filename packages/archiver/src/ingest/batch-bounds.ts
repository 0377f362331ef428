// When a run's batch is sealed into a bag: the same bounds for a harvest's pages and an
// import's files (docs/aip-profile.md gives the measurements behind the defaults).

/** When a batch is sealed: after the page that brings it to this many records or new payload bytes. */
export interface BatchBounds {
  records: number;
  bytes: number;
  /**
   * Payload parts (new files and revisits): a batch's records.xml, PREMIS events, manifests and
   * catalog rows grow with its parts, not its records (default DEFAULT_BATCH_PARTS).
   */
  parts?: number;
}

/** 1,000 records of 5 parts each: a batch of records with thousands of parts is sealed at a page end all the same. */
export const DEFAULT_BATCH_PARTS = 5_000;

/**
 * 1,000 records keeps a bag's metadata small enough to read whole and a crash's re-fetch short
 * (at most one batch of pages); 256 MiB of new payload keeps one bag a size that copies and
 * verifies in seconds. See docs/aip-profile.md for the measurements behind them.
 */
export const DEFAULT_BATCH_BOUNDS: BatchBounds = { records: 1000, bytes: 256 * 1024 * 1024 };
