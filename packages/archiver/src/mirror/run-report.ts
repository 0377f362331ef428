// What the mirror does after each run besides its line on stdout: a notification when the
// attempt failed or left failures (not when the mirror itself is stopping), and the metrics file
// for node_exporter's textfile collector, rewritten from the catalog.
import { rename, unlink, writeFile } from 'node:fs/promises';
import { Catalog } from '../catalog/catalog.js';
import type { ArchiverError } from '../core/errors.js';
import type { HarvestSummary } from '../harvest/harvest.js';
import { readArchiveHealth } from '../health/archive-health.js';
import { type Notice, type NotifyOptions, sendNotice } from '../health/notify.js';
import { formatMetrics } from '../health/prometheus-metrics.js';

/** What a report needs of a mirror's run (mirror.ts's MirrorRun is one). */
export interface ReportedRun {
  baseUrl: string;
  summary?: HarvestSummary;
  error?: ArchiverError;
}

export interface RunReportOptions {
  archiveDir: string;
  notify?: NotifyOptions | undefined;
  /** Rewritten (temporary name, then rename) after each run and at the start. */
  metricsFile?: string | undefined;
  log: (line: string) => void;
}

/** The notice for a run, or undefined when nothing needs telling (a clean run, or a stop on request). */
export function noticeOf(run: ReportedRun, archiveDir: string, stopping: boolean): Notice | undefined {
  const at = new Date().toISOString();
  if (run.error) {
    return { event: 'harvest', archive: archiveDir, source: run.baseUrl, outcome: 'failed', reason: `${run.error.message} [${run.error.code}]`, at };
  }
  const summary = run.summary;
  if (summary === undefined || summary.status === 'complete') return undefined;
  if (summary.status === 'interrupted' && stopping) return undefined;
  const { harvestId: _id, from: _from, until: _until, status, watermark: _watermark, reason, ...counts } = summary;
  return {
    event: 'harvest',
    archive: archiveDir,
    source: run.baseUrl,
    outcome: status,
    ...(reason !== undefined ? { reason } : status === 'partial' ? { reason: `${summary.failed} record(s) failed; the next harvest retries them` } : {}),
    counts,
    at,
  };
}

/** Sends the run's notice, if any, and rewrites the metrics file; never throws. */
export async function reportRun(run: ReportedRun, stopping: boolean, options: RunReportOptions): Promise<void> {
  const notice = options.notify ? noticeOf(run, options.archiveDir, stopping) : undefined;
  if (notice && options.notify) await sendNotice(notice, options.notify);
  await writeMetricsFile(options);
}

/**
 * Writes the archive's metrics to `metricsFile` under a temporary name, then renames it, so the
 * collector never reads half a file. A failure is one log line; the mirror goes on.
 */
export async function writeMetricsFile(options: RunReportOptions): Promise<void> {
  const file = options.metricsFile;
  if (file === undefined) return;
  let catalog: Catalog | undefined;
  const temporary = `${file}.${process.pid}.tmp`;
  try {
    // Read as status reads it: the mirror's own harvests hold the lock and write between runs.
    catalog = Catalog.openForReading(options.archiveDir);
    const text = formatMetrics(await readArchiveHealth(catalog, options.archiveDir));
    await writeFile(temporary, text);
    await rename(temporary, file);
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    const what = (error as { code?: string }).code;
    options.log(
      `--metrics-file: cannot write ${file}: ${(error as Error).message}${what && !String((error as Error).message).includes(what) ? ` [${what}]` : ''}`,
    );
  } finally {
    catalog?.close();
  }
}
