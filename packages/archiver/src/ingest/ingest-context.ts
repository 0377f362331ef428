// What every part of one run works with (ingest-run.ts builds it once): where the records go
// (the archive, its catalog, the run's row and source), the labels every bag of the run carries,
// and how records are taken (the client for By-Reference datastreams, concurrency, memory).

import type { DeliveryFacts } from '../aip/aip-metadata.js';
import type { AipStorage } from '../aip/aip-storage.js';
import type { DiskFlusher } from '../archive/flush-to-disk.js';
import type { Catalog } from '../catalog/catalog.js';
import type { RunKind } from '../catalog/catalog-types.js';
import { ArchiverError } from '../core/errors.js';
import type { OaiClient } from '../oai/oai-client.js';
import type { BatchBounds } from './batch-bounds.js';
import type { MemoryBudget } from './incoming-file.js';

export interface IngestContext {
  kind: RunKind;
  archiveDir: string;
  catalog: Catalog;
  /** Makes each batch bag durable (see IngestBatch). */
  flusher: DiskFlusher;
  /** Where the bags are placed: the archive's folder, or its object store. */
  storage: AipStorage;
  /** Fetches By-Reference datastreams; its limits bound a page (a harvest's) and a datastream. */
  client: OaiClient;
  sourceId: number;
  /** The run's row id: Harvest-Id in its bags (`aips/harvest-<id>/`), the harvest of what it records. */
  harvestId: number;
  /** The source's OAI-PMH base URL. */
  baseUrl: string;
  repositoryName: string;
  /** The source's OAI-rights rightsManifest (XML as received), kept in each batch bag. */
  rightsManifest?: string;
  prefix: string;
  /** The window the run covers (a harvest's list; an import's cut-off as `until`). */
  from: string | null;
  until: string | null;
  set: string | null;
  /** An import's delivery, named in bag-info.txt and PREMIS. */
  delivery?: DeliveryFacts;
  /** When a batch bag is sealed (default DEFAULT_BATCH_BOUNDS). */
  bounds?: BatchBounds;
  /** Records stored at once. */
  concurrency: number;
  /** Memory for small datastreams not yet in a bag (see `receiveIncoming`); none: always files. */
  budget?: MemoryBudget;
  /** Aborts By-Reference fetches; an aborted record is abandoned, not recorded as failed. */
  signal?: AbortSignal;
  log: (line: string) => void;
}

/** Records stored at once, as both commands take it: 4 unless given, a whole number of at least 1. */
export function ingestConcurrency(concurrency: number | undefined): number {
  const value = concurrency ?? 4;
  if (!Number.isSafeInteger(value) || value < 1) throw new ArchiverError('ERR_ARCHIVE_USAGE', `concurrency must be a whole number of at least 1, not ${value}`);
  return value;
}
