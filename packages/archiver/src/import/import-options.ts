// What `oaibag import` is told (the delivery, its kind, the source it joins, the caps) and what it
// answers, for import-delivery.ts and adopt-bags.ts alike.
import type { DeliveryFacts } from '../bag/aip-metadata.js';
import type { HarvestCounts, HarvestStatus } from '../catalog/catalog-schema.js';
import type { BatchBounds } from '../harvest/harvest-batch.js';
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
   * so that harvesting it later continues the import. Default: `baseUrl` for a site's files, the
   * `request` URL of the first saved response for DIDL records.
   */
  source?: string;
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
  /** Files left out: of a site, those the repository's export rules exclude (hidden, backups, scripts); of DIDL records, hidden ones. */
  skipped: number;
  /** Bags written (site, DIDL) or adopted (serialized bags). */
  bags: number;
}
