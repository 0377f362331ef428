// What `oaibag import` is told (the delivery, its kind, the source it joins, the caps) and what it
// answers, for import-delivery.ts and adopt-bags.ts alike.
import type { DeliveryFacts } from '../aip/aip-metadata.js';
import type { HarvestCounts, HarvestStatus } from '../catalog/catalog-types.js';
import type { BatchBounds } from '../ingest/batch-bounds.js';
import type { DeliveryLimits } from './delivery.js';
import type { DeliveryKind } from './delivery-kind.js';

export interface ImportOptions {
  archiveDir: string;
  /** The delivery: a ZIP file or a folder. */
  delivery: string;
  /** What the delivery holds; without it, told from the contents. */
  kind?: DeliveryKind;
  /** A web site's files: the URL the site's paths are relative to (the identifiers' base). */
  baseUrl?: string;
  /**
   * The OAI-PMH base URL of the repository the delivery stands for: the source its records join,
   * so that harvesting it later continues the import. Default: for a site's files the endpoint
   * oaibag-repository serves for `baseUrl` (`<baseUrl>/oai`), for DIDL records the `request` URL
   * of the first saved response.
   */
  source?: string;
  /**
   * The delivery's cut-off (the command-line date grammar): it holds the source's changes up to
   * the end of that day or instant, so the import sets the source's watermark to the second after
   * it and the first harvest asks only what changed since (delivery-cut-off.ts). A site's files
   * or DIDL records only; set when the import completes, never moved back.
   */
  until?: string;
  /** The source's name, for a source the archive does not know yet (no Identify to ask). */
  sourceName?: string;
  limits?: Partial<DeliveryLimits>;
  /** Records stored at once (default 4). */
  concurrency?: number;
  batchBounds?: BatchBounds;
  /** Stops the import between files: what was stored is committed; the next run continues. */
  signal?: AbortSignal;
  log?: (line: string) => void;
  progress?: (progress: ImportProgress) => void;
}

export type ImportProgress =
  | { stage: 'screening'; done: number; total: number }
  | { stage: 'storing'; done: number; total: number; counts: Readonly<HarvestCounts> };

export interface ImportSummary extends HarvestCounts {
  /** The import's row among the source's harvests (null for adopted bags: they keep their own harvests). */
  importId: number | null;
  kind: DeliveryKind;
  delivery: DeliveryFacts;
  source: string;
  status: Exclude<HarvestStatus, 'running' | 'failed'>;
  /** The source's watermark after the import (the next harvest's `from`); null when it has none. Adopted bags: null. */
  watermark: string | null;
  /**
   * Files left out: of a site, those the repository's export rules exclude (hidden, backups,
   * scripts, files nobody may read); of DIDL records, hidden ones and files nobody may read.
   */
  skipped: number;
  /** Bags written (site, DIDL) or adopted (serialized bags). */
  bags: number;
}
