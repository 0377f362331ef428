import { Command } from 'commander';
import { Catalog } from '../catalog/catalog.js';
import type { CatalogStatus } from '../catalog/catalog-types.js';
import { formatDuration, parseDuration } from '../core/duration.js';
import { ArchiverError } from '../core/errors.js';
import { shown } from '../core/remote-text.js';
import { type ArchiveHealth, type AttemptHealth, readArchiveHealth } from '../health/archive-health.js';
import {
  CHECK_UNKNOWN,
  checkHealth,
  DEFAULT_DISK_CRITICAL_PERCENT,
  DEFAULT_DISK_WARNING_PERCENT,
  DEFAULT_MAX_AGE_MS,
  type HealthCheckOptions,
  timeAgo,
} from '../health/health-check.js';

interface StatusOptions {
  archive: string;
  json?: boolean;
  check?: boolean;
  // Parsed in the action, so that with --check a bad value is UNKNOWN like any other error.
  maxAge?: string;
  maxVerifyAge?: string;
  source?: string[];
  diskWarning?: string;
  diskCritical?: string;
}

/** `oaibag status`: per source the last attempt and success, failures, the last fixity check, free space. */
export function statusCommand(): Command {
  return new Command('status')
    .description('summarise an archive: per source the last attempt and the last success, failures outstanding, the last verify, free space')
    .option('--archive <DIR>', 'the archive folder', './archive')
    .option('--json', 'print JSON')
    .option('--check', 'one line and a monitoring-plugin exit code: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (docs/operations.md)')
    .option(
      '--max-age <DURATION>',
      `with --check: a source without a successful harvest for longer is critical (default ${formatDuration(DEFAULT_MAX_AGE_MS)})`,
    )
    .option('--max-verify-age <DURATION>', 'with --check: warn when the archive was not verified for longer (default: no such warning)')
    .option('--source <URL>', 'with --check: check only this source (repeatable)', (value: string, list: string[] | undefined) => [...(list ?? []), value])
    .option('--disk-warning <PERCENT>', `with --check: warn below this much free space on the archive disk (default ${DEFAULT_DISK_WARNING_PERCENT})`)
    .option('--disk-critical <PERCENT>', `with --check: critical below this much free space (default ${DEFAULT_DISK_CRITICAL_PERCENT})`)
    .addHelpText(
      'after',
      '\nWithout --check, exit codes are those of every command (0, 2 usage, 4 no catalog there).\n' +
        'With --check, the exit code is the plugin convention and any error is UNKNOWN (3).',
    )
    .action(async (options: StatusOptions) => {
      if (options.check) {
        process.exitCode = await check(options);
        return;
      }
      const checkOnly = (['maxAge', 'maxVerifyAge', 'source', 'diskWarning', 'diskCritical'] as const).filter((name) => options[name] !== undefined);
      if (checkOnly.length > 0) {
        const flag = `--${checkOnly[0]!.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)}`;
        throw new ArchiverError('ERR_ARCHIVE_USAGE', `${flag} is an option of status --check`, { hint: `add --check, or leave ${flag} out` });
      }
      const catalog = Catalog.openForReading(options.archive);
      try {
        const health = await readArchiveHealth(catalog, options.archive);
        const status = catalog.status();
        if (options.json) {
          process.stdout.write(`${JSON.stringify({ ...status, health }, null, 2)}\n`);
          return;
        }
        process.stdout.write(formatStatus(options.archive, status, health));
      } finally {
        catalog.close();
      }
    });
}

/** `--check`: never throws; whatever goes wrong reading the archive is UNKNOWN. */
async function check(options: StatusOptions): Promise<number> {
  let catalog: Catalog | undefined;
  try {
    const judged = checkOptions(options); // a bad value is UNKNOWN before the archive is read
    catalog = Catalog.openForReading(options.archive);
    const result = checkHealth(await readArchiveHealth(catalog, options.archive), judged);
    process.stdout.write(`${result.line}\n`);
    return result.state;
  } catch (error) {
    const what = error instanceof ArchiverError ? `${error.message} [${error.code}]` : (error as Error).message;
    process.stdout.write(`OAIBAG UNKNOWN: ${what.replace(/[\r\n]+/g, ' ')}\n`);
    return CHECK_UNKNOWN;
  } finally {
    catalog?.close();
  }
}

/** The --check options as checkHealth takes them; ERR_ARCHIVE_USAGE for a bad value. */
function checkOptions(options: StatusOptions): HealthCheckOptions {
  return {
    ...(options.maxAge !== undefined ? { maxAgeMs: parseDuration(options.maxAge, '--max-age') } : {}),
    ...(options.maxVerifyAge !== undefined ? { maxVerifyAgeMs: parseDuration(options.maxVerifyAge, '--max-verify-age') } : {}),
    sources: options.source ?? [],
    ...(options.diskWarning !== undefined ? { diskWarningPercent: percent(options.diskWarning, '--disk-warning') } : {}),
    ...(options.diskCritical !== undefined ? { diskCriticalPercent: percent(options.diskCritical, '--disk-critical') } : {}),
  };
}

function percent(value: string, option: string): number {
  const number = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value) || number > 100) {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `${option} ${JSON.stringify(value)} is not a percentage from 0 to 100`);
  }
  return number;
}

function formatStatus(archiveDir: string, status: CatalogStatus, health: ArchiveHealth): string {
  const now = Date.parse(health.at);
  const ago = (iso: string): string => timeAgo(now, iso);
  const attempt = (a: AttemptHealth | undefined): string => {
    if (a === undefined) return 'none';
    const when = a.endedAt ?? a.startedAt;
    const reason = a.reason !== null && a.status !== 'complete' ? `: ${shown(a.reason, 300)}` : '';
    return `#${a.harvestId} ${a.status}, ${when} (${ago(when)})${reason}`;
  };
  let text = `archive ${archiveDir} (catalog schema ${status.schemaVersion})\n`;
  for (const source of status.sources) {
    const h = health.sources.find((entry) => entry.baseUrl === source.source.baseUrl);
    // An import run is told apart in the line, as `(import of <delivery>)`.
    const last = source.lastHarvest;
    const delivery = last?.kind === 'import' ? last.arguments.delivery : undefined;
    text +=
      `\n${source.source.baseUrl}\n` +
      `  last attempt: ${attempt(h?.lastAttempt)}${delivery ? ` (import of ${delivery.name})` : ''}\n` +
      `  last success: ${attempt(h?.lastSuccess)}\n` +
      `  watermark: ${source.source.watermark ?? 'none (never completed)'}\n` +
      (h?.delayMs !== undefined || h?.maxConnections !== undefined
        ? `  politeness: ${h.delayMs !== undefined && h.delayMs > 0 ? `${formatDuration(h.delayMs)} between requests` : 'no delay'}, ${h.maxConnections !== undefined ? `at most ${h.maxConnections} connection(s)` : 'default connections'}\n`
        : '') +
      `  resources: ${source.liveResources} live, ${source.deletedResources} deleted; versions: ${source.versions}; payload: ${source.payloadBytes} bytes\n` +
      `  stored: ${source.storedBytes} bytes (each byte stream once) in ${source.bags} bag(s)\n` +
      `  failures outstanding: ${source.openFailures}\n`;
  }
  const v = health.lastVerification;
  const stored = status.sources.reduce((sum, source) => sum + source.storedBytes, 0);
  text +=
    `\nlast verify: ${v ? `${v.kind}, ${v.endedAt} (${ago(v.endedAt)}), ${v.bags} bag(s), ${v.damaged === 0 ? 'no problem' : `${v.damaged} PROBLEM(S)`}` : 'never (run oaibag verify)'}\n` +
    `archive size: ${stored} bytes stored` +
    (health.disk
      ? `; disk: ${health.disk.freeBytes} of ${health.disk.totalBytes} bytes free (${((100 * health.disk.freeBytes) / Math.max(1, health.disk.totalBytes)).toFixed(1)}%)\n`
      : '\n');
  return text;
}
