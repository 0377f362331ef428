// biome-ignore-all assist/source/organizeImports: grouped by what a user does, not sorted by path
// The archiver as a library: what a program that harvests, keeps, checks and serves an archive
// needs, each operation with its options and its result. The `oaibag` command (cli.ts) is built
// on the same operations; the modules behind them are not part of this list and may change.

// Errors: every failure is an ArchiverError with a stable code; the exit code `oaibag` gives it.
export { ArchiverError, type ArchiverErrorCode, type ArchiverErrorDetails, isArchiverError } from './core/errors.js';
export { EXIT_ARCHIVE, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, EXIT_PARTIAL, EXIT_SOURCE, EXIT_USAGE, exitCodeOf } from './commands/exit-codes.js';

// Durations as the commands and the mirror configuration write them (`90s`, `1h30m`), in milliseconds.
export { formatDuration, parseDuration } from './core/duration.js';

// Harvest a repository over OAI-PMH, and what its options are made of.
export { type HarvestOptions, type HarvestSummary, harvest } from './harvest/harvest.js';
export type { BatchBounds } from './ingest/batch-bounds.js';
export type { Politeness } from './oai/host-politeness.js';
export type { Compression, Credentials } from './oai/oai-client.js';
export type { ResolveHost } from './oai/origin-pools.js';
export type { RetryPolicy } from './oai/retry-policy.js';
export type { SourceLimits } from './oai/source-limits.js';

// Import an out-of-band delivery (a site's files, DIDL records, bag ZIPs).
export { importDelivery } from './import/import-delivery.js';
export type { ImportOptions, ImportProgress, ImportSummary } from './import/import-options.js';
export { DEFAULT_DELIVERY_LIMITS, type DeliveryLimits } from './import/delivery.js';
export { DELIVERY_KINDS, type DeliveryKind } from './import/delivery-kind.js';
export type { DeliveryFacts } from './aip/aip-metadata.js';

// Mirror: scheduled harvests of several sources, its configuration file, its reports.
export { type MirrorOptions, type MirrorRun, type MirrorSource, mirror } from './mirror/mirror.js';
export { type MirrorConfig, readMirrorConfig } from './mirror/mirror-config.js';
export type { MirrorSchedule } from './mirror/mirror-schedule.js';
export { DEFAULT_LEASE_MS, DEFAULT_POLL_MS, runWorker, type WorkerOptions, type WorkerRun } from './mirror/worker.js';
export type { LeaseEnd, ScheduledSource, SourceLease } from './catalog/source-leases.js';
export type { RunReportOptions } from './mirror/run-report.js';
export type { Notice, NotifyOptions } from './health/notify.js';

// Restore a site as of a date, into a folder or a ZIP.
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
export { type ExportedSite, type ExportSiteOptions, exportSite } from './restore/site-zip.js';

// Audit: what changed between harvests, in memory or streamed, as text, JSON, CSV or HTML.
export {
  type AuditChange,
  type AuditHarvestTotals,
  type AuditOptions,
  type AuditPeriod,
  type AuditReport,
  type AuditRow,
  type AuditRun,
  type AuditSource,
  type AuditState,
  type AuditTotals,
  audit,
  openAudit,
} from './audit/audit-query.js';
export { AUDIT_CSV_HEADER, AUDIT_FORMATS, type AuditFormat, type AuditFormatOptions, formatAudit, writeAuditOutput } from './audit/audit-format.js';
export { type AuditHtmlOptions, renderAuditHtml } from './audit/audit-html.js';
export { type AuditLinks, auditLinks, auditServeUrl } from './audit/audit-links.js';

// Fixity: the whole archive, one bag folder, one bag ZIP.
export {
  type ArchiveProblem,
  type ArchiveProblemKind,
  type DamagedBag,
  type DamagedPayload,
  formatVerifyReport,
  type ReliantVersion,
  type VerifyArchiveOptions,
  type VerifyReport,
  verifyArchive,
} from './verify/verify-archive.js';
export { type BagProblem, type BagProblemKind, type BagReport, type BagTally, type VerifyOptions, verifyBag, verifyBagSource } from './bag/bag-verifier.js';
export type { BagSource } from './bag/bag-source.js';
export type { AipStorage, StoredBag } from './aip/aip-storage.js';
export { S3Storage } from './aip/s3-storage.js';
export type { S3StoreOptions } from './aip/s3-location.js';
export type { CommitRecord } from './aip/s3-commit.js';
export { storedBagSource } from './aip/stored-bag-source.js';
export { verifyZipBag, type ZipBagReport } from './verify/verify-zip-bag.js';

// Repair damaged payloads from replicas or the source; rebuild the catalog from the bags.
export {
  formatRepairReport,
  type RepairedFile,
  type RepairOptions,
  type RepairReport,
  type RestoredBag,
  repairArchive,
  type UnrepairedFile,
} from './repair/repair-archive.js';
export { type MigrateOptions, type MigrateSummary, migrateArchive } from './migrate/migrate-archive.js';
export { type ReindexOptions, type ReindexSummary, reindexArchive } from './reindex/reindex.js';

// Export: each bag as one ZIP for a partner; the archive's graph as N-Quads.
export { type ExportBagsOptions, exportBags } from './export/export-bags.js';
export type { SerializedBag } from './export/serialize-bag.js';
// The versions as WARC 1.1 records with a CDXJ index, or one WACZ (`export --warc`); its catalog reads (tests explain them).
export {
  DEFAULT_EXPORT_NAME,
  DEFAULT_WARC_FILE_BYTES,
  type ExportedWarc,
  type ExportedWarcFile,
  type ExportWarcOptions,
  exportWarc,
} from './export/warc-export.js';
export { type HeadFacts, type ResponseHead, responseHead, warcDigest } from './export/warc-record.js';
export { WarcExportTable, warcQueryPlans } from './catalog/warc-queries.js';
export { type ExportRdfFileOptions, type ExportRdfOptions, exportRdf, exportRdfToFile } from './serve/export-rdf.js';

// Serve the archive as an OAI-PMH repository, with its files and its linked data.
export { type ArchiveServer, type ArchiveServerOptions, startArchiveServer } from './serve/archive-server.js';
export type { SparqlBounds } from './serve/graph-store.js';
export { payloadUrlPath } from './serve/payload-files.js';
// Links between archives (`serve --link-to`): the rules, the predicates, the bounds and the linker's state.
export { type LinkedGraph, LinkKeeper, type LinkState, linksGraphOf } from './serve/link-keeper.js';
export {
  DEFAULT_LINK_RULES,
  LINK_BOUND_DEFAULTS,
  LINK_PREDICATE_DEFAULT,
  type LinkBounds,
  type LinkOptions,
  type LinkRule,
  linkEndpoint,
  parseLinkRule,
  SAME_BYTES_PREDICATE,
} from './serve/link-rules.js';
// OAI2LOD's directory (`/directory`, `/all`): its keyset queries (tests explain them) and its bounds.
export { DIRECTORY_QUERIES } from './catalog/directory-queries.js';
export { DIRECTORY_COUNT_BOUND, DIRECTORY_KINDS, DIRECTORY_PAGE } from './serve/directory-listing.js';

// What changed at a repository, for a crawler (no archive).
export {
  type ChangedUrl,
  formatChangedUrl,
  type ListChangedUrlsOptions,
  type ListChangedUrlsSummary,
  listChangedUrls,
} from './urls/list-changed-urls.js';

// Status: the archive's health, the monitoring check (`status --check`), Prometheus metrics.
export { type ArchiveHealth, type AttemptHealth, readArchiveHealth, type SourceHealth } from './health/archive-health.js';
export {
  CHECK_CRITICAL,
  CHECK_OK,
  CHECK_UNKNOWN,
  CHECK_WARNING,
  type CheckState,
  checkHealth,
  type HealthCheckOptions,
  type HealthCheckResult,
  type HealthProblem,
} from './health/health-check.js';
export { formatMetrics } from './health/prometheus-metrics.js';

// The catalog: what the archive holds, read (and written) through its methods, and their rows.
export { Catalog, type CatalogOpenOptions } from './catalog/catalog.js';
export { CATALOG_SCHEMA_VERSION } from './catalog/catalog-migrations.js';
export type {
  CatalogBag,
  CatalogFailure,
  CatalogHarvest,
  CatalogResource,
  CatalogSource,
  CatalogStatus,
  CatalogVerification,
  CatalogVersion,
  FailureStage,
  HarvestArguments,
  HarvestCounts,
  HarvestStatus,
  NewBag,
  NewEvent,
  NewFailure,
  NewVersion,
  PayloadLocation,
  PendingBag,
  RecordedVersion,
  ResumeState,
  RunKind,
  ServedPayload,
  SourceStatus,
  VerificationKind,
  VersionChange,
  VersionFetch,
} from './catalog/catalog-types.js';
export type { IdentifyFacts } from './oai/identify.js';
// The pages people browse (docs/browse.md).
export { BROWSE_QUERIES } from './catalog/browse-queries.js';
export { BROWSE_BOUNDS } from './serve/browse-pages.js';
export { DIFF_BOUNDS } from './serve/diff-page.js';
export { REPLAY_CSS_MAX_BYTES, REPLAY_HTML_MAX_BYTES } from './serve/replay.js';
