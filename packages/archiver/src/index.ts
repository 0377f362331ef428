export { ArchiverError, isArchiverError, type ArchiverErrorCode } from './errors.js';
export { Catalog, CATALOG_FILE_NAME, type CatalogOpenOptions } from './catalog.js';
export {
  CATALOG_SCHEMA_VERSION,
  type IdentifyFacts,
  type ResumeState,
  type CatalogSource,
  type HarvestArguments,
  type HarvestStatus,
  type HarvestCounts,
  type CatalogHarvest,
  type CatalogResource,
  type VersionChange,
  type CatalogVersion,
  type NewVersion,
  type VersionFetch,
  type RecordedVersion,
  type FailureStage,
  type NewFailure,
  type CatalogFailure,
  type NewEvent,
  type SourceStatus,
  type CatalogStatus,
} from './catalog-schema.js';
export { acquireArchiveLock, readArchiveLockHolder, ArchiveLock, type ArchiveLockHolder } from './archive-lock.js';
export { createBagBuilder, cleanupLeftovers, type BagBuilder, type FinishedBag, type PayloadFile } from './bag-writer.js';
export { placeSealedBags, type SealedBag, type Placement, type PlaceOptions } from './bag-placement.js';
export { openDiskFlusher, oneShotFlusher, flushToDisk, defaultFlushMode, type DiskFlusher, type FlushMode, type FlushRequest } from './flush-to-disk.js';
export { verifyBag, type BagReport, type BagProblem, type BagProblemKind, type BagTally, type VerifyOptions } from './bag-verifier.js';
export { bagDirectoryFor, resourceDirectoryFor } from './storage-path.js';
export { safeFileName, uniqueFileName, encodeManifestPath, decodeManifestPath } from './bag-paths.js';
export { OaiClient, MAX_REDIRECTS, type OaiClientOptions, type Credentials, type DatastreamResponse } from './oai-client.js';
export { addressKind, refusalOf, type AddressKind, type AddressPolicy } from './address-policy.js';
export { OriginPools, type OriginPoolsOptions, type ResolveHost } from './origin-pools.js';
export { DEFAULT_RETRY_POLICY, retryDelayMs, type RetryPolicy } from './retry-policy.js';
export { harvest, type HarvestOptions, type HarvestSummary } from './harvest.js';
export { PageLedger, type PageTally } from './page-ledger.js';
export { restoreSite, type RestoreOptions, type RestoreSummary, type RestoreCounts, type RestoredFile, type RefusedResource, type DamagedBag } from './restore.js';
export { planRestore, resourceStateAt, parseAsOf, type RestorePlan, type ResourceState } from './restore-plan.js';
export { restorePathFor, type RestorePath, type RestorePathOptions } from './restore-path.js';
export { mirror, type MirrorOptions, type MirrorRun, type MirrorSource } from './mirror.js';
export { readMirrorConfig, type MirrorConfig } from './mirror-config.js';
export { nextRun, type MirrorSchedule, type NextRun } from './mirror-schedule.js';
export { parseDuration, formatDuration } from './duration.js';
export { verifyArchive, formatVerifyReport, type VerifyArchiveOptions, type VerifyReport, type ArchiveProblem, type ArchiveProblemKind, type DamagedBag as VerifyDamagedBag } from './verify-archive.js';
export { listChangedUrls, isCrawlableUrl, formatChangedUrl, type ListChangedUrlsOptions, type ListChangedUrlsSummary, type ChangedUrl } from './list-changed-urls.js';
export { audit, resolveAuditPeriod, parseAuditDate, classifyChange, AUDIT_CHANGES, type AuditChange, type AuditState, type AuditRow, type AuditHarvestTotals, type AuditTotals, type AuditPeriod, type AuditSource, type AuditOptions, type AuditReport } from './audit-query.js';
export { formatAudit, writeAuditOutput, AUDIT_FORMATS, AUDIT_CSV_HEADER, type AuditFormat } from './audit-format.js';
export { renderAuditHtml } from './audit-html.js';
