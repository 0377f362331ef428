// `oaibag sources add|list|remove` (docs/scale-out.md, "Workers"): the sources `oaibag worker`
// harvests, kept in the catalog with their schedules, so that every worker of the archive sees
// the same list. A source's settings are a mirror configuration's source entry (docs/mirror.md),
// checked when it is added; its password file is named by an absolute path, which must hold
// the password on every machine a worker runs on.
import { mkdir, readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { Command } from 'commander';
import { Catalog } from '../catalog/catalog.js';
import type { ScheduledSource } from '../catalog/source-leases.js';
import { parseDuration } from '../core/duration.js';
import { ArchiverError } from '../core/errors.js';
import { parseMirrorSource } from '../mirror/mirror-config.js';
import { applyCatalogOption, withCatalogOption } from './catalog-option.js';
import { httpUrl, wholeNumber } from './option-parsers.js';

interface ArchiveOptions {
  archive: string;
  catalog?: string;
}

interface AddOptions extends ArchiveOptions {
  every?: string;
  jitter?: string;
  set?: string;
  prefix?: string;
  concurrency?: number;
  user?: string;
  passwordFile?: string;
  allowPrivateRefs?: boolean;
  compression?: string;
  delay?: string;
  maxConnections?: number;
  config?: string;
}

export function sourcesCommand(): Command {
  const sources = new Command('sources').description("the sources `oaibag worker` harvests on a schedule, kept in the archive's catalog");
  sources.addCommand(
    withArchive(new Command('add'))
      .description('add a source to the schedule (or every source of a mirror configuration, --config); its first run is due at once')
      .argument('[BASEURL]', "the repository's OAI-PMH base URL", httpUrl('BASEURL'))
      .option('--every <DURATION>', 'how often it is harvested, e.g. 1d, 6h')
      .option('--jitter <DURATION>', 'each run starts up to this much later, at random')
      .option('--set <SPEC>', 'harvest only this set')
      .option('--prefix <PREFIX>', 'the metadata prefix (default oai_didl)')
      .option('--concurrency <N>', 'records stored at once', wholeNumber)
      .option('--user <NAME>', 'HTTP Basic user name')
      .option('--password-file <FILE>', 'a file whose first line is the password (kept by its absolute path)')
      .option('--allow-private-refs', 'allow By-Reference URLs to private addresses')
      .option('--compression <MODE>', 'auto, always or never')
      .option('--delay <DURATION>', 'a pause between requests to one host')
      .option('--max-connections <N>', 'connections to one host at most', wholeNumber)
      .option('--config <FILE>', "add every source of a mirror configuration file (docs/mirror.md); the file's archive is ignored")
      .action(async (baseUrl: string | undefined, options: AddOptions) => {
        const entries = await entriesToAdd(baseUrl, options);
        const catalog = await openCatalog('sources add', options);
        try {
          // Every entry is checked before any is added: a typo adds nothing.
          const checked = await Promise.all(
            entries.map(async ({ entry, where }) => ({ entry, source: await parseMirrorSource(entry, { where, folder: '/' }) })),
          );
          for (const { entry, source } of checked) {
            const added = catalog.addScheduledSource({
              baseUrl: source.baseUrl,
              settings: JSON.stringify(entry),
              everyMs: source.schedule.everyMs,
              jitterMs: source.schedule.jitterMs,
            });
            process.stdout.write(added ? `added ${source.baseUrl}\n` : `${source.baseUrl} is on the schedule already: left as it is\n`);
          }
        } finally {
          catalog.close();
        }
      }),
  );
  sources.addCommand(
    withArchive(new Command('list'))
      .description('list the scheduled sources: settings, next run, the worker harvesting each, how the last run ended')
      .option('--json', 'print JSON, one object per source')
      .action(async (options: ArchiveOptions & { json?: boolean }) => {
        const catalog = await openCatalog('status', options);
        try {
          const now = catalog.clockMs();
          for (const source of catalog.scheduledSources()) {
            process.stdout.write(`${options.json ? JSON.stringify(asJson(source, now)) : describe(source, now)}\n`);
          }
        } finally {
          catalog.close();
        }
      }),
  );
  sources.addCommand(
    withArchive(new Command('remove'))
      .description('remove a source from the schedule (what was harvested from it stays in the archive)')
      .argument('<BASEURL>', "the repository's OAI-PMH base URL")
      .action(async (baseUrl: string, options: ArchiveOptions) => {
        const catalog = await openCatalog('sources remove', options);
        try {
          if (!catalog.removeScheduledSource(baseUrl)) {
            throw new ArchiverError('ERR_ARCHIVE_USAGE', `${baseUrl} is not on the schedule`, { hint: 'oaibag sources list shows the sources' });
          }
          process.stdout.write(`removed ${baseUrl}\n`);
        } finally {
          catalog.close();
        }
      }),
  );
  return sources;
}

function withArchive(command: Command): Command {
  return withCatalogOption(command.option('--archive <DIR>', 'the archive folder', './archive'));
}

async function openCatalog(command: string, options: ArchiveOptions): Promise<Catalog> {
  if (command !== 'status') await mkdir(options.archive, { recursive: true });
  await applyCatalogOption(command, options.archive, options.catalog);
  return command === 'status' ? Catalog.openForReading(options.archive) : Catalog.open(options.archive);
}

/** The source entries to add, as a mirror configuration spells them, with their paths made absolute. */
async function entriesToAdd(baseUrl: string | undefined, options: AddOptions): Promise<{ entry: Record<string, unknown>; where: string }[]> {
  if (options.config !== undefined) {
    if (baseUrl !== undefined || options.every !== undefined)
      throw new ArchiverError('ERR_ARCHIVE_USAGE', 'give either BASEURL with --every, or --config FILE, not both');
    const text = await readFile(options.config, 'utf8').catch((error: NodeJS.ErrnoException) => {
      throw new ArchiverError('ERR_ARCHIVE_USAGE', `cannot read the mirror configuration ${options.config}: ${error.code ?? error.message}`);
    });
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch (error) {
      throw new ArchiverError('ERR_ARCHIVE_USAGE', `${options.config} is not JSON: ${(error as Error).message}`);
    }
    const list = (data as { sources?: unknown } | null)?.sources;
    if (!Array.isArray(list) || list.length === 0)
      throw new ArchiverError('ERR_ARCHIVE_USAGE', `${options.config}: sources: expected a non-empty list of sources`);
    const folder = dirname(resolve(options.config));
    return list.map((entry: unknown, index) => {
      const where = `${options.config}: sources[${index}]`;
      if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) throw new ArchiverError('ERR_ARCHIVE_USAGE', `${where}: expected an object`);
      const fields = { ...(entry as Record<string, unknown>) };
      if (typeof fields.passwordFile === 'string') fields.passwordFile = resolve(folder, fields.passwordFile);
      return { entry: fields, where };
    });
  }
  if (baseUrl === undefined || options.every === undefined)
    throw new ArchiverError('ERR_ARCHIVE_USAGE', 'give BASEURL and --every DURATION (or --config FILE)');
  // The durations are checked as the options they are, so that a message names the option.
  parseDuration(options.every, '--every');
  if (options.jitter !== undefined) parseDuration(options.jitter, '--jitter');
  const entry: Record<string, unknown> = { baseUrl, every: options.every };
  const copy: [keyof AddOptions, string][] = [
    ['jitter', 'jitter'],
    ['set', 'set'],
    ['prefix', 'prefix'],
    ['concurrency', 'concurrency'],
    ['user', 'user'],
    ['allowPrivateRefs', 'allowPrivateRefs'],
    ['compression', 'compression'],
    ['delay', 'delay'],
    ['maxConnections', 'maxConnections'],
  ];
  for (const [option, field] of copy) if (options[option] !== undefined) entry[field] = options[option];
  if (options.passwordFile !== undefined) entry.passwordFile = resolve(options.passwordFile);
  return [{ entry, where: `the source ${baseUrl}` }];
}

function iso(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
}

function leased(source: ScheduledSource, now: number): boolean {
  return source.leaseOwner !== null && source.leaseExpiresAt !== null && source.leaseExpiresAt > now;
}

/** One line: the source, its schedule, and what it is doing or did last. */
function describe(source: ScheduledSource, now: number): string {
  const doing = leased(source, now) ? `harvested now by ${source.leaseOwner}` : `next run ${iso(source.startAt)}`;
  const last =
    source.lastOutcome === null
      ? 'never run'
      : `last run ${source.lastOutcome}${source.lastHarvestId !== null ? ` (harvest ${source.lastHarvestId})` : ''} at ${source.lastEndedAt}${source.lastError ? `: ${source.lastError}` : ''}`;
  return `${source.baseUrl}: ${JSON.stringify(JSON.parse(source.settings))}; ${doing}; ${last}`;
}

function asJson(source: ScheduledSource, now: number): Record<string, unknown> {
  return {
    baseUrl: source.baseUrl,
    settings: JSON.parse(source.settings),
    nextRunAt: leased(source, now) ? null : iso(source.startAt),
    worker: leased(source, now) ? source.leaseOwner : null,
    leaseExpiresAt: leased(source, now) ? iso(source.leaseExpiresAt!) : null,
    lastOutcome: source.lastOutcome,
    lastHarvestId: source.lastHarvestId,
    lastError: source.lastError,
    lastEndedAt: source.lastEndedAt,
  };
}
