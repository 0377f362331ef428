// The archive's health in the Prometheus text exposition format (version 0.0.4): served at
// `oaibag serve`'s /metrics and written by `oaibag mirror --metrics-file` for node_exporter's
// textfile collector. Gauges only: each value is read from the catalog when asked.
import type { HarvestStatus } from '../catalog/catalog-types.js';
import type { ArchiveHealth } from './archive-health.js';

/** The media type of the text format (served with `; charset=utf-8`). */
export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4';

const STATUSES: readonly HarvestStatus[] = ['running', 'complete', 'partial', 'failed', 'interrupted'];

/** The metrics of `health`, one HELP and TYPE per family, then its samples. */
export function formatMetrics(health: ArchiveHealth): string {
  const out: string[] = [];
  const family = (name: string, help: string, samples: Array<[labels: Record<string, string>, value: number]>): void => {
    if (samples.length === 0) return;
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`);
    for (const [labels, value] of samples) out.push(`${name}${labelText(labels)} ${Number.isFinite(value) ? value : 'NaN'}`);
  };
  const seconds = (iso: string | null | undefined): number | undefined => (iso ? Date.parse(iso) / 1000 : undefined);
  const perSource = (value: (source: ArchiveHealth['sources'][number]) => number | undefined): Array<[Record<string, string>, number]> =>
    health.sources.flatMap((source) => {
      const v = value(source);
      return v === undefined ? [] : [[{ source: source.baseUrl }, v] as [Record<string, string>, number]];
    });

  family(
    'oaibag_source_last_attempt_timestamp_seconds',
    'When the last harvest attempt of the source started (Unix time).',
    perSource((s) => seconds(s.lastAttempt?.startedAt)),
  );
  family(
    'oaibag_source_last_attempt_status',
    'The outcome of the last harvest attempt: 1 for its status, 0 for the others.',
    health.sources.flatMap((source) =>
      source.lastAttempt === undefined
        ? []
        : STATUSES.map((status): [Record<string, string>, number] => [{ source: source.baseUrl, status }, source.lastAttempt?.status === status ? 1 : 0]),
    ),
  );
  family(
    'oaibag_source_last_success_timestamp_seconds',
    'When the last harvest whose list ended (complete or partial) ended (Unix time).',
    perSource((s) => seconds(s.lastSuccess?.endedAt ?? s.lastSuccess?.startedAt)),
  );
  family(
    'oaibag_source_last_harvest_records',
    'Records the last successful harvest received.',
    perSource((s) => s.lastSuccess?.records),
  );
  family(
    'oaibag_source_last_harvest_bytes',
    'Payload bytes the last successful harvest received.',
    perSource((s) => s.lastSuccess?.bytes),
  );
  family(
    'oaibag_source_failures_outstanding',
    'Failures of the source not yet resolved (retried by the next harvest).',
    perSource((s) => s.openFailures),
  );
  const verification = health.lastVerification;
  if (verification !== undefined) {
    family('oaibag_verify_last_timestamp_seconds', 'When the last fixity check of the archive ended (Unix time).', [
      [{ kind: verification.kind }, Date.parse(verification.endedAt) / 1000],
    ]);
    family('oaibag_verify_last_damage', 'Problems the last fixity check found (after a repair: the ones left).', [[{}, verification.damaged]]);
    family('oaibag_verify_last_bags', 'Bags the last fixity check covered.', [[{}, verification.bags]]);
  }
  if (health.disk !== undefined) {
    family('oaibag_archive_free_bytes', "Bytes free on the archive's file system.", [[{}, health.disk.freeBytes]]);
    family('oaibag_archive_filesystem_bytes', "Size of the archive's file system.", [[{}, health.disk.totalBytes]]);
  }
  return `${out.join('\n')}\n`;
}

/** `{a="…",b="…"}` with the format's escapes (backslash, double quote, line feed); empty for none. */
function labelText(labels: Record<string, string>): string {
  const pairs = Object.entries(labels).map(([name, value]) => `${name}="${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`);
  return pairs.length === 0 ? '' : `{${pairs.join(',')}}`;
}
