export { type Placement, type PlaceOptions, placeSealedBags } from './aip/bag-placement.js';
export { safeFileName, uniqueFileName } from './aip/payload-names.js';
export { type RestorePath, type RestorePathOptions, restorePathFor } from './aip/restore-path.js';
export { ArchiveLock, type ArchiveLockHolder, acquireArchiveLock, readArchiveLockHolder } from './archive/archive-lock.js';
export {
  type DiskFlusher,
  defaultFlushMode,
  type FlushMode,
  type FlushRequest,
  flushToDisk,
  oneShotFlusher,
  openDiskFlusher,
} from './archive/flush-to-disk.js';
export { AUDIT_CSV_HEADER, AUDIT_FORMATS, type AuditFormat, formatAudit, writeAuditOutput } from './audit/audit-format.js';
export { renderAuditHtml } from './audit/audit-html.js';
export {
  AUDIT_CHANGES,
  type AuditChange,
  type AuditHarvestTotals,
  type AuditOptions,
  type AuditPeriod,
  type AuditReport,
  type AuditRow,
  type AuditSource,
  type AuditState,
  type AuditTotals,
  audit,
  classifyChange,
  parseAuditDate,
  resolveAuditPeriod,
} from './audit/audit-query.js';
export { decodeManifestPath, encodeManifestPath } from './bag/bag-paths.js';
export { type BagProblem, type BagProblemKind, type BagReport, type BagTally, type VerifyOptions, verifyBag } from './bag/bag-verifier.js';
export { type BagBuilder, cleanupLeftovers, createBagBuilder } from './bag/bag-writer.js';
export type { FinishedBag, PayloadFile, SealedBag } from './bag/sealed-bag.js';
export { CATALOG_FILE_NAME, Catalog, type CatalogOpenOptions } from './catalog/catalog.js';
export { CATALOG_SCHEMA_VERSION } from './catalog/catalog-migrations.js';
export type {
  CatalogFailure,
  CatalogHarvest,
  CatalogResource,
  CatalogSource,
  CatalogStatus,
  CatalogVersion,
  FailureStage,
  HarvestArguments,
  HarvestCounts,
  HarvestStatus,
  NewEvent,
  NewFailure,
  NewVersion,
  RecordedVersion,
  ResumeState,
  SourceStatus,
  VersionChange,
  VersionFetch,
} from './catalog/catalog-types.js';
export { formatDuration, parseDuration } from './core/duration.js';
export { ArchiverError, type ArchiverErrorCode, isArchiverError } from './core/errors.js';
export { type HarvestOptions, type HarvestSummary, harvest } from './harvest/harvest.js';
export { type MirrorOptions, type MirrorRun, type MirrorSource, mirror } from './mirror/mirror.js';
export { type MirrorConfig, readMirrorConfig } from './mirror/mirror-config.js';
export { type MirrorSchedule, type NextRun, nextRun } from './mirror/mirror-schedule.js';
export { type AddressKind, type AddressPolicy, addressKind, onLocalNetwork, refusalOf } from './oai/address-policy.js';
export type { IdentifyFacts } from './oai/identify.js';
export { type Compression, type Credentials, type DatastreamResponse, MAX_REDIRECTS, OaiClient, type OaiClientOptions } from './oai/oai-client.js';
export { OriginPools, type OriginPoolsOptions, type ResolveHost } from './oai/origin-pools.js';
export { DEFAULT_RETRY_POLICY, type RetryPolicy, retryDelayMs } from './oai/retry-policy.js';
export { listBatchBags, type ReindexOptions, type ReindexSummary, reindexArchive } from './reindex/reindex.js';
export {
  type DamageFound,
  type FolderChanges,
  type RefusedResource,
  type RestoreCounts,
  type RestoredFile,
  type RestoreOptions,
  type RestoreSummary,
  restoreSite,
} from './restore/restore.js';
export { parseAsOf, planRestore, type ResourceState, type RestorePlan, resourceStateAt } from './restore/restore-plan.js';
export { type ArchiveServer, type ArchiveServerOptions, startArchiveServer } from './serve/archive-server.js';
export { payloadLocationOf, payloadUrlPath } from './serve/payload-files.js';
export {
  type ChangedUrl,
  formatChangedUrl,
  isCrawlableUrl,
  type ListChangedUrlsOptions,
  type ListChangedUrlsSummary,
  listChangedUrls,
} from './urls/list-changed-urls.js';
export {
  type ArchiveProblem,
  type ArchiveProblemKind,
  type DamagedBag,
  formatVerifyReport,
  type VerifyArchiveOptions,
  type VerifyReport,
  verifyArchive,
} from './verify/verify-archive.js';
