// What an operator (or a monitoring system) needs to know about an archive, read cheaply from
// its catalog, its lock and its file system: per source the last attempt and the last success,
// failures outstanding, the politeness used; for the archive the last fixity check and the room
// left. `oaibag status`, `status --check`, /metrics and `mirror --metrics-file` all read this.
import { statfs } from 'node:fs/promises';
import { lockHolderIsAlive, readArchiveLockHolder } from '../archive/archive-lock.js';
import type { Catalog } from '../catalog/catalog.js';
import type { CatalogHarvest, CatalogVerification, HarvestStatus } from '../catalog/catalog-types.js';
import { sourcesHealth } from '../catalog/health-queries.js';

/** One attempt as health reports it. */
export interface AttemptHealth {
  harvestId: number;
  /** `interrupted` also for a row left `running` by a process that is gone. */
  status: HarvestStatus;
  startedAt: string;
  endedAt: string | null;
  /** Why it failed or was interrupted (one line ending with the error's code), or null. */
  reason: string | null;
  records: number;
  bytes: number;
}

export interface SourceHealth {
  baseUrl: string;
  watermark: string | null;
  lastAttempt: AttemptHealth | undefined;
  lastSuccess: AttemptHealth | undefined;
  openFailures: number;
  /** The politeness the last attempt used (see harvest --delay and --max-connections), when recorded. */
  delayMs?: number;
  maxConnections?: number;
}

export interface ArchiveHealth {
  archiveDir: string;
  /** When this was read (ISO 8601). */
  at: string;
  sources: SourceHealth[];
  lastVerification: CatalogVerification | undefined;
  /** Bytes free for an unprivileged writer, and the file system's size; undefined when unknown. */
  disk: { freeBytes: number; totalBytes: number } | undefined;
}

/** Reads the health of the archive whose catalog is open as `catalog`. */
export async function readArchiveHealth(catalog: Catalog, archiveDir: string, now: Date = new Date()): Promise<ArchiveHealth> {
  const holder = readArchiveLockHolder(archiveDir);
  const holderAlive = holder !== undefined && lockHolderIsAlive(holder);
  const sources = sourcesHealth(catalog).map((row): SourceHealth => {
    const args = row.lastAttempt?.arguments as { delayMs?: unknown; maxConnections?: unknown } | undefined;
    return {
      baseUrl: row.baseUrl,
      watermark: row.watermark,
      lastAttempt: row.lastAttempt && attemptHealth(row.lastAttempt, holderAlive),
      lastSuccess: row.lastSuccess && attemptHealth(row.lastSuccess, holderAlive),
      openFailures: row.openFailures,
      ...(typeof args?.delayMs === 'number' ? { delayMs: args.delayMs } : {}),
      ...(typeof args?.maxConnections === 'number' ? { maxConnections: args.maxConnections } : {}),
    };
  });
  return { archiveDir, at: now.toISOString(), sources, lastVerification: catalog.lastVerification(), disk: await diskSpace(archiveDir) };
}

function attemptHealth(harvest: CatalogHarvest, holderAlive: boolean): AttemptHealth {
  // A harvest writes its row only while holding the lock: `running` with no live holder means
  // its process died (kill -9, power cut); the next harvest marks it so in the catalog too.
  const dead = harvest.status === 'running' && !holderAlive;
  return {
    harvestId: harvest.id,
    status: dead ? 'interrupted' : harvest.status,
    startedAt: harvest.startedAt,
    endedAt: harvest.endedAt,
    reason: dead ? 'its process ended without closing it (killed, or the machine stopped); the next harvest resumes' : harvest.reason,
    records: harvest.counts.records,
    bytes: harvest.counts.bytes,
  };
}

async function diskSpace(archiveDir: string): Promise<ArchiveHealth['disk']> {
  try {
    const info = await statfs(archiveDir);
    return { freeBytes: info.bavail * info.bsize, totalBytes: info.blocks * info.bsize };
  } catch {
    return undefined;
  }
}
