// Rows as better-sqlite3 returns them, mapped to the catalog's types (catalog-types.ts).
import type {
  CatalogBag,
  CatalogFailure,
  CatalogHarvest,
  CatalogResource,
  CatalogSource,
  CatalogVerification,
  CatalogVersion,
  FailureStage,
  HarvestArguments,
  HarvestStatus,
  PayloadLocation,
  PendingBag,
  RunKind,
  ServedPayload,
  VersionChange,
  VersionFetch,
} from './catalog-types.js';

/** A raw row as better-sqlite3 returns it. */
export type Row = Record<string, unknown>;

const text = (value: unknown): string | null => (value === null || value === undefined ? null : String(value));
const int = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));

export function toSource(row: Row): CatalogSource {
  const token = text(row.resume_token);
  return {
    id: Number(row.id),
    baseUrl: String(row.base_url),
    repositoryName: text(row.repository_name),
    granularity: text(row.granularity),
    earliestDatestamp: text(row.earliest_datestamp),
    deletedRecord: text(row.deleted_record),
    compression: JSON.parse(String(row.compression)) as string[],
    identifyCheckedAt: text(row.identify_checked_at),
    rightsManifest: text(row.rights_manifest),
    watermark: text(row.watermark),
    resume:
      token === null
        ? null
        : {
            token,
            listFrom: text(row.resume_list_from),
            listUntil: text(row.resume_list_until),
            set: text(row.resume_list_set),
            prefix: String(row.resume_list_prefix),
            listResponseDate: text(row.resume_list_response_date),
            harvestId: Number(row.resume_harvest_id),
            savedAt: String(row.resume_saved_at),
          },
  };
}

export function toHarvest(row: Row): CatalogHarvest {
  return {
    id: Number(row.id),
    kind: String(row.kind) as RunKind,
    sourceId: Number(row.source_id),
    startedAt: String(row.started_at),
    endedAt: text(row.ended_at),
    status: String(row.status) as HarvestStatus,
    arguments: JSON.parse(String(row.arguments)) as HarvestArguments,
    listResponseDate: text(row.list_response_date),
    reason: text(row.reason),
    counts: {
      records: Number(row.records),
      added: Number(row.added),
      modified: Number(row.modified),
      touched: Number(row.touched),
      deleted: Number(row.deleted),
      failed: Number(row.failed),
      bytes: Number(row.bytes),
      requests: Number(row.requests),
    },
  };
}

export function toResource(row: Row): CatalogResource {
  return {
    id: Number(row.id),
    sourceId: Number(row.source_id),
    identifier: String(row.identifier),
    currentVersionId: int(row.current_version_id),
    deletedAt: text(row.deleted_at),
    mimeType: text(row.mime_type),
  };
}

/** Maps a `versions` row joined with its resource's `identifier` and its bag's `bag_path`. */
export function toVersion(row: Row): CatalogVersion {
  return {
    id: Number(row.id),
    resourceId: Number(row.resource_id),
    identifier: String(row.identifier),
    datestamp: String(row.datestamp),
    size: Number(row.size),
    sha256: String(row.sha256),
    mimeType: text(row.mime_type),
    bagPath: String(row.bag_path),
    record: Number(row.record),
    harvestId: int(row.harvest_id),
    storedAt: String(row.stored_at),
    change: String(row.change) as VersionChange,
    payloadFiles: Number(row.payload_files),
    lastModified: text(row.last_modified),
  };
}

export function toBag(row: Row): CatalogBag {
  return {
    id: Number(row.id),
    bagPath: String(row.bag_path),
    sourceId: Number(row.source_id),
    harvestId: int(row.harvest_id),
    records: Number(row.records),
    newPayloads: Number(row.new_payloads),
    revisits: Number(row.revisits),
    deletions: Number(row.deletions),
    payloadBytes: Number(row.payload_bytes),
    placedAt: String(row.placed_at),
  };
}

export function toFailure(row: Row): CatalogFailure {
  return {
    id: Number(row.id),
    sourceId: Number(row.source_id),
    harvestId: int(row.harvest_id),
    identifier: text(row.identifier),
    datestamp: text(row.datestamp),
    stage: String(row.stage) as FailureStage,
    code: String(row.code),
    message: String(row.message),
    expected: text(row.expected),
    found: text(row.found),
    firstSeenAt: String(row.first_seen_at),
    lastSeenAt: String(row.last_seen_at),
    attempts: Number(row.attempts),
    resolvedAt: text(row.resolved_at),
  };
}

export function toPendingBag(row: Row): PendingBag {
  return { bagPath: String(row.bag_path), harvestId: row.harvest_id === null ? null : Number(row.harvest_id) };
}

/** Maps a `payloads` row joined with its bag's `bag_path`. */
export function toPayloadLocation(row: Row): PayloadLocation {
  return { sha256: String(row.sha256), size: Number(row.size), bagPath: String(row.bag_path), path: String(row.path) };
}

/** Maps a payload location with the `mime_type` and `last_modified` of the latest version holding it. */
export function toServedPayload(row: Row): ServedPayload {
  return {
    sha256: String(row.sha256),
    size: Number(row.size),
    bagPath: String(row.bag_path),
    path: String(row.path),
    mimeType: row.mime_type === null ? null : String(row.mime_type),
    lastModified: row.last_modified === null ? null : String(row.last_modified),
  };
}

export function toFetch(row: Row): VersionFetch {
  return {
    part: Number(row.part),
    ref: String(row.ref),
    url: String(row.url),
    redirects: JSON.parse(String(row.redirects)) as string[],
  };
}

export function toVerification(row: Row): CatalogVerification {
  return {
    kind: String(row.kind) as CatalogVerification['kind'],
    startedAt: String(row.started_at),
    endedAt: String(row.ended_at),
    bags: Number(row.bags),
    bytes: Number(row.bytes),
    damaged: Number(row.damaged),
  };
}
