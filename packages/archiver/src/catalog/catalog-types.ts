// The catalog's rows in TypeScript, which are the archiver's domain types: what the catalog's
// methods take and give (camelCase, parsed JSON), and the small pure helpers on them.
import type { DeliveryFacts } from '../aip/aip-metadata.js';

/**
 * Where an interrupted list stood, saved with each batch so that a harvest killed mid-list can
 * continue with the token (if the repository still accepts it) or restart the same list.
 * Resume only when set and prefix equal the new harvest's; the list's first-page responseDate
 * becomes the watermark when the resumed list completes.
 */
export interface ResumeState {
  token: string;
  listFrom: string | null;
  listUntil: string | null;
  set: string | null;
  prefix: string;
  listResponseDate: string | null;
  /** The harvest that started the list. */
  harvestId: number;
  /** When it was saved (set by the catalog; ignored when saving). */
  savedAt?: string;
}

/** A harvested repository, identified by its base URL. */
export interface CatalogSource {
  id: number;
  baseUrl: string;
  repositoryName: string | null;
  granularity: string | null;
  earliestDatestamp: string | null;
  deletedRecord: string | null;
  compression: string[];
  identifyCheckedAt: string | null;
  /** The OAI-rights rightsManifest its Identify gave, as received; null for none. */
  rightsManifest: string | null;
  /** The `from` of the next incremental harvest; null before the first complete list. */
  watermark: string | null;
  resume: ResumeState | null;
}

/** The arguments of a harvest as given (dates at the repository's granularity). */
export interface HarvestArguments {
  from?: string | null;
  until?: string | null;
  set?: string | null;
  prefix: string;
  /** Set for an import (`oaibag import`): the out-of-band delivery its records came in. */
  delivery?: DeliveryFacts;
  /** A harvest's politeness (`--delay`): milliseconds between the starts of two requests to a host. */
  delayMs?: number;
  /** A harvest's politeness (`--max-connections`): requests open at once to the repository's host. */
  maxConnections?: number;
}

/** What a run (a row of `harvests`) added to the archive from: a harvest over OAI-PMH, or an import of a delivery. */
export type RunKind = 'harvest' | 'import';

/** `running` until it ends; `interrupted` when found running after a crash. */
export type HarvestStatus = 'running' | 'complete' | 'partial' | 'failed' | 'interrupted';

/** What a harvest did; the same figures as `oaibag harvest --json`. */
export interface HarvestCounts {
  records: number;
  added: number;
  modified: number;
  touched: number;
  deleted: number;
  failed: number;
  bytes: number;
  requests: number;
}

/** Counts of a run that has done nothing yet. */
export function zeroCounts(): HarvestCounts {
  return { records: 0, added: 0, modified: 0, touched: 0, deleted: 0, failed: 0, bytes: 0, requests: 0 };
}

/** A run of the archive (its row in `harvests`): a harvest or an import. */
export interface CatalogHarvest {
  id: number;
  kind: RunKind;
  sourceId: number;
  startedAt: string;
  endedAt: string | null;
  status: HarvestStatus;
  arguments: HarvestArguments;
  listResponseDate: string | null;
  counts: HarvestCounts;
  /** Why it failed or was interrupted: one line ending with the error's code, or null. */
  reason: string | null;
}

/** The kinds of fixity check: `oaibag verify` in full or `--fast`, and `oaibag repair`'s. */
export type VerificationKind = 'full' | 'fast' | 'repair';

/** One fixity check of the whole archive, as `oaibag status` shows it. */
export interface CatalogVerification {
  kind: VerificationKind;
  startedAt: string;
  endedAt: string;
  /** Bags checked. */
  bags: number;
  /** Bytes read (0 for a fast check). */
  bytes: number;
  /** Problems found (after a repair: the ones left). */
  damaged: number;
}

/** One OAI item of a source: a web resource, live or deleted. */
export interface CatalogResource {
  id: number;
  sourceId: number;
  identifier: string;
  currentVersionId: number | null;
  /** The deletion's datestamp while the resource is deleted, else null. */
  deletedAt: string | null;
  mimeType: string | null;
}

/** How a version differs from the resource's state before it. */
export type VersionChange = 'added' | 'modified' | 'touched' | 'restored';

/** The count a version adds to: a resource that reappears after a deletion counts as added. */
export function countedAs(change: VersionChange): 'added' | 'modified' | 'touched' {
  return change === 'restored' ? 'added' : change;
}

/** One stored state of a resource (identifier + datestamp + content), recorded in a batch bag. */
export interface CatalogVersion {
  id: number;
  resourceId: number;
  identifier: string;
  datestamp: string;
  /** Payload bytes (all components of a compound object). */
  size: number;
  /** Lowercase hex sha-256 identifying the payload (for a compound object, of its parts' digests, one a line). */
  sha256: string;
  mimeType: string | null;
  /** The batch bag holding the record (its metadata/records.xml.gz), relative to the archive, `/`-separated. */
  bagPath: string;
  /** The record's place in that bag's records.xml.gz, from 1. */
  record: number;
  harvestId: number | null;
  storedAt: string;
  change: VersionChange;
  /** Payload files: 0 for a record without datastream. */
  payloadFiles: number;
  /** The record's Last-Modified header as sent, or null. */
  lastModified: string | null;
}

/** Where a By-Reference datastream's bytes came from. */
export interface VersionFetch {
  /** The part of the record (1: the first datastream). */
  part: number;
  /** The record's `ref`. */
  ref: string;
  /** The URL that answered with the bytes: `ref`, or the last redirect's target. */
  url: string;
  /** Each redirect's target, in order. */
  redirects: string[];
}

/** A payload file of the archive: the bytes with this sha-256 are at `path` in `bagPath`. */
export interface PayloadLocation {
  sha256: string;
  size: number;
  bagPath: string;
  /** `data/…`, as in the bag's manifests. */
  path: string;
}

/** A payload file as `oaibag serve` answers for it: the original type and date of the latest version it holds. */
export interface ServedPayload extends PayloadLocation {
  mimeType: string | null;
  /** The record's Last-Modified header as sent, or null. */
  lastModified: string | null;
}

/** What {@link Catalog.recordVersion} needs. */
export interface NewVersion {
  sourceId: number;
  identifier: string;
  datestamp: string;
  size: number;
  sha256: string;
  mimeType?: string | null;
  /** The batch bag holding the record (recorded with {@link Catalog.recordBag} first). */
  bagPath: string;
  /** The record's place in the bag's records.xml.gz, from 1. */
  record: number;
  harvestId?: number | null;
  /** The sha-256 of each payload file, in the record's order (each already in `payloads`). */
  parts: string[];
  lastModified?: string | null;
  /** The By-Reference datastreams' fetches. */
  fetches?: VersionFetch[];
  /** When it was stored: its bag's Bagged-At (default now). */
  storedAt?: string;
}

/** A batch bag placed in aips/, with the payload files it holds (see {@link Catalog.recordBag}). */
export interface NewBag {
  bagPath: string;
  sourceId: number;
  harvestId: number | null;
  records: number;
  newPayloads: number;
  revisits: number;
  deletions: number;
  payloadBytes: number;
  /** The payload files it brings to the archive. */
  payloads: Array<{ sha256: string; size: number; path: string }>;
}

/** A batch bag of the catalog: what was recorded of it, without its payload list. */
export interface CatalogBag extends Omit<NewBag, 'payloads'> {
  id: number;
  placedAt: string;
}

/** A bag noted before its rename into place (see migration 5). */
export interface PendingBag {
  bagPath: string;
  harvestId: number | null;
}

export interface RecordedVersion {
  version: CatalogVersion;
  change: VersionChange;
  known: boolean;
}

/** Where in the work a failure happened. */
export type FailureStage = 'list' | 'record' | 'fetch' | 'verify' | 'store';

/** What {@link Catalog.recordFailure} needs; `expected`/`found` carry both values of a mismatch. */
export interface NewFailure {
  sourceId: number;
  harvestId?: number | null;
  /** Null for a failure of the list itself. */
  identifier?: string | null;
  datestamp?: string | null;
  stage: FailureStage;
  /** An ArchiverError code or another stable code (`badResumptionToken`, `HTTP 404`…). */
  code: string;
  message: string;
  expected?: string | null;
  found?: string | null;
}

export interface CatalogFailure {
  id: number;
  sourceId: number;
  /** The last harvest that saw it. */
  harvestId: number | null;
  identifier: string | null;
  datestamp: string | null;
  stage: FailureStage;
  code: string;
  message: string;
  expected: string | null;
  found: string | null;
  firstSeenAt: string;
  lastSeenAt: string;
  attempts: number;
  resolvedAt: string | null;
}

/** A PREMIS-style event (`capture`, `message digest calculation`, `fixity check`, `ingestion`, `deletion`…). */
export interface NewEvent {
  sourceId?: number | null;
  resourceId?: number | null;
  versionId?: number | null;
  harvestId?: number | null;
  type: string;
  outcome: 'success' | 'failure' | 'warning';
  detail?: string | null;
  /** Defaults to now. */
  at?: string;
}

/** One source in `oaibag status`. */
export interface SourceStatus {
  source: CatalogSource;
  lastHarvest: CatalogHarvest | undefined;
  /** Resources with a stored version and not deleted now. */
  liveResources: number;
  deletedResources: number;
  versions: number;
  /** Sum of version sizes (what a full restore of every version would write). */
  payloadBytes: number;
  /** Bytes of the payload files the source brought to the archive (each stored once). */
  storedBytes: number;
  bags: number;
  openFailures: number;
}

/** The whole of `oaibag status`. */
export interface CatalogStatus {
  file: string;
  schemaVersion: number;
  sources: SourceStatus[];
}
