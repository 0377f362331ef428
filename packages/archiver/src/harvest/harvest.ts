import { defaultFlushMode } from '../archive/flush-to-disk.js';
import type { Catalog } from '../catalog/catalog.js';
import type { HarvestCounts, HarvestStatus } from '../catalog/catalog-schema.js';
import { oaiDateOf, parseCommandLineDate } from '../core/command-line-date.js';
import { ArchiverError, archiveFullError, isStorageExhausted } from '../core/errors.js';
import { checkHttpUrl } from '../core/http-url.js';
import { harvestMemoryBudget } from '../ingest/incoming-file.js';
import type { BatchBounds } from '../ingest/ingest-batch.js';
import { openIngestSession } from '../ingest/ingest-session.js';
import type { Politeness } from '../oai/host-politeness.js';
import { identifyRepository } from '../oai/identify.js';
import { type Compression, type Credentials, OaiClient } from '../oai/oai-client.js';
import type { ResolveHost } from '../oai/origin-pools.js';
import type { RetryPolicy } from '../oai/retry-policy.js';
import type { SourceLimits } from '../oai/source-limits.js';
import { HarvestList, HarvestStopped } from './harvest-list.js';
import { planHarvest } from './harvest-plan.js';

export interface HarvestOptions {
  /** The repository's OAI-PMH base URL. */
  baseUrl: string;
  archiveDir: string;
  /** Without it, the harvest continues from the catalog's watermark for this source. */
  from?: string;
  until?: string;
  set?: string;
  prefix?: string;
  credentials?: Credentials;
  /**
   * By-Reference URLs (and their redirects) may lead to loopback, private, link-local and other
   * non-public addresses, also of kinds the repository is not on itself (see address-policy.ts).
   */
  allowPrivateRefs?: boolean;
  /** How host names of other origins are resolved (tests; default: the system's resolver). */
  resolveHost?: ResolveHost;
  /** Whether pages are asked for compressed (see OaiClientOptions.compression; default `auto`). */
  compression?: Compression;
  /** Bounds on what the source controls (oai/source-limits.ts); the defaults where not given. */
  limits?: Partial<SourceLimits> | undefined;
  /**
   * A delay between the requests to one host and a cap on the connections to it (`--delay`,
   * `--max-connections`; oai/host-politeness.ts), recorded with the harvest's arguments.
   */
  politeness?: Partial<Politeness> | undefined;
  /**
   * Records stored at once (By-Reference fetches and bag writes overlap; the page itself is
   * read in order). Every record of a batch is stored before its resumption token is saved.
   */
  concurrency?: number;
  /** When a batch bag is sealed (default DEFAULT_BATCH_BOUNDS: 1,000 records or 256 MiB of new payload). */
  batchBounds?: BatchBounds;
  retry?: RetryPolicy;
  /**
   * Stops the harvest early (SIGINT/SIGTERM in `oaibag harvest` and `oaibag mirror`): the page
   * being read is abandoned, records already being stored are finished, what was stored is
   * committed, and the harvest ends `interrupted` with its last resumption token saved, so the
   * next harvest resumes. Aborted before the harvest is recorded (during Identify), the
   * signal's AbortError is thrown instead.
   */
  signal?: AbortSignal;
  log?: (line: string) => void;
  /**
   * Called after each record with the counts so far and, when the repository gives it, the
   * list's completeListSize (for a progress display with an ETA).
   */
  progress?: (counts: Readonly<HarvestCounts>, completeListSize?: number) => void;
}

export interface HarvestSummary extends HarvestCounts {
  harvestId: number;
  from: string | null;
  until: string | null;
  status: Exclude<HarvestStatus, 'running'>;
  /** The `from` of the next incremental harvest. */
  watermark: string | null;
  /** Why the list failed (status `failed`): the repository's error or the token loop, in one line. */
  reason?: string;
}

/**
 * One harvest: Identify, then ListRecords page by page (resumption tokens, retried pages),
 * each record verified and taken into a batch bag with its page's other records, deletions
 * kept as tombstones. The watermark moves to the
 * responseDate of the list's first page only when the list completed and no record failed,
 * so nothing that was not stored is ever skipped by the next harvest.
 */
export async function harvest(options: HarvestOptions): Promise<HarvestSummary> {
  const prefix = options.prefix ?? 'oai_didl';
  const log = options.log ?? (() => undefined);
  const concurrency = options.concurrency ?? 4;
  if (!Number.isSafeInteger(concurrency) || concurrency < 1)
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `concurrency must be a whole number of at least 1, not ${concurrency}`);
  defaultFlushMode(); // refuses a bad OAIBAG_SYNC before anything is written
  checkHttpUrl(options.baseUrl, 'the base URL'); // before the archive is opened, not by the client
  // The user's dates in the one command-line grammar, sent as OAI-PMH's UTC forms.
  const userFrom = options.from === undefined ? undefined : oaiDateOf(parseCommandLineDate(options.from, '--from'));
  const userUntil = options.until === undefined ? undefined : oaiDateOf(parseCommandLineDate(options.until, '--until'));
  const session = await openIngestSession(options.archiveDir, `harvest ${options.baseUrl}`, log);
  const { catalog, flusher } = session;
  const client = new OaiClient(options.baseUrl, {
    answeredBefore: (catalog.source(options.baseUrl)?.identifyCheckedAt ?? null) !== null,
    ...(options.credentials ? { credentials: options.credentials } : {}),
    ...(options.retry ? { retry: options.retry } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.allowPrivateRefs !== undefined ? { allowPrivateRefs: options.allowPrivateRefs } : {}),
    ...(options.resolveHost ? { resolveHost: options.resolveHost } : {}),
    ...(options.compression ? { compression: options.compression } : {}),
    limits: options.limits,
    politeness: options.politeness,
    onRetry: ({ attempt, delayMs, reason }) => log(`retry ${attempt} in ${Math.round(delayMs / 1000)} s: ${reason}`),
  });
  try {
    // The attempt is recorded before the first request, so that a night whose source cannot be
    // reached (or refuses the format, or is stopped) leaves its trace for `oaibag status`.
    const known = catalog.source(options.baseUrl) ?? catalog.ensureSource(options.baseUrl, null);
    // The politeness it keeps, as `oaibag status` shows it: the repository host's figures.
    const polite = { delayMs: client.politeness.delayMs, maxConnections: client.repositoryConnections };
    const harvestId = catalog.startRun(known.id, 'harvest', { from: userFrom ?? null, until: userUntil ?? null, set: options.set ?? null, prefix, ...polite });
    let facts: Awaited<ReturnType<typeof identifyRepository>>;
    try {
      facts = await identifyRepository(client, prefix);
    } catch (error) {
      recordAttemptEnd(catalog, harvestId, error);
      throw error;
    }
    const source = catalog.upsertSource(options.baseUrl, facts);
    const plan = planHarvest({
      prefix,
      set: options.set,
      from: userFrom,
      until: userUntil,
      watermark: source.watermark,
      resume: source.resume,
      granularity: facts.granularity,
    });
    catalog.setRunArguments(harvestId, { from: plan.from, until: plan.until, set: options.set ?? null, prefix, ...polite });
    const list = new HarvestList({
      signal: options.signal,
      set: options.set,
      retry: options.retry,
      progress: options.progress,
      catalog,
      client,
      plan,
      sourceId: source.id,
      harvestId,
      prefix,
      log,
      concurrency,
      batchBounds: options.batchBounds,
      context: {
        archiveDir: options.archiveDir,
        catalog,
        client,
        sourceId: source.id,
        harvestId,
        baseUrl: options.baseUrl,
        repositoryName: facts.repositoryName ?? options.baseUrl,
        ...(facts.rightsManifest ? { rightsManifest: facts.rightsManifest } : {}),
        flusher,
        budget: harvestMemoryBudget(),
        ...(options.signal ? { signal: options.signal } : {}),
      },
    });
    const summaryOf = (status: Exclude<HarvestStatus, 'running'>, watermark: string | null): HarvestSummary => ({
      harvestId,
      from: plan.from,
      until: plan.until,
      status,
      watermark,
      ...list.counts,
      ...(status === 'failed' && list.failure !== undefined ? { reason: list.failure } : {}),
    });
    let status: Exclude<HarvestStatus, 'running'>;
    try {
      status = await list.run();
    } catch (error) {
      list.releasePrefetched();
      // What the batch holds is committed with the list state of its last complete page.
      const settled = await list.settle().then(
        () => undefined,
        (failure: unknown) => failure,
      );
      list.counts.requests = client.requests;
      if (error instanceof HarvestStopped && settled === undefined) {
        // Stopped on request: what was stored is committed, the last page's token saved.
        log('stopped on request; the next harvest resumes from the last complete page');
        catalog.finishRun(harvestId, 'interrupted', list.counts, STOPPED_REASON);
        return summaryOf('interrupted', source.watermark);
      }
      throw recordHarvestFailure(catalog, options.archiveDir, source.id, harvestId, list.counts, error instanceof HarvestStopped ? settled : error);
    }

    list.counts.requests = client.requests;
    if (status !== 'failed') {
      // The list itself ended; the watermark moves only when no record failure of the list (of
      // any run that took part in it) is still open (docs/archiver.md, "No silent loss").
      catalog.resolveListFailures(source.id);
      if (status === 'complete' && list.listResponseDate) catalog.setWatermark(source.id, list.listResponseDate);
    }
    const open = status === 'partial' ? catalog.openRecordFailuresSince(source.id, source.resume?.harvestId ?? harvestId) : 0;
    catalog.finishRun(harvestId, status, list.counts, status === 'partial' ? `${open} record failure(s) of the list still open, retried next time` : undefined);
    return summaryOf(status, catalog.source(options.baseUrl)?.watermark ?? null);
  } catch (error) {
    // Before the list (adopting bags, starting the harvest) a full disk is the same story.
    throw isStorageExhausted(error) ? archiveFullError(options.archiveDir, error) : error;
  } finally {
    await client.close();
    await session.close();
  }
}

/**
 * A page that kept failing (or no room left): the harvest ends failed, with its reason in the
 * catalog; the saved token and the watermark stay, so the next harvest resumes. Returns the
 * error to throw (ERR_ARCHIVE_FULL for a full disk); one that is not an ArchiverError (a bug) is
 * returned as it is, unrecorded.
 */
function recordHarvestFailure(catalog: Catalog, archiveDir: string, sourceId: number, harvestId: number, counts: HarvestCounts, error: unknown): unknown {
  const stop = isStorageExhausted(error) ? archiveFullError(archiveDir, error) : error;
  if (!(stop instanceof ArchiverError)) return stop;
  try {
    catalog.recordFailure({ sourceId, harvestId, stage: stop.code === 'ERR_ARCHIVE_FULL' ? 'store' : 'list', code: stop.code, message: stop.message });
    catalog.finishRun(harvestId, 'failed', counts, reasonOf(stop));
  } catch (bookkeeping) {
    // A full disk may refuse these rows too; the next harvest marks this one interrupted.
    if (!isStorageExhausted(bookkeeping)) throw bookkeeping;
  }
  return stop;
}

/** Why a harvest stopped on request (SIGINT, SIGTERM, a mirror stopping). */
const STOPPED_REASON = 'stopped on request; the next harvest resumes';

/** One line for the catalog: the error's message and code. */
function reasonOf(error: unknown): string {
  if (error instanceof ArchiverError) return `${error.message} [${error.code}]`;
  if ((error as Error | undefined)?.name === 'AbortError') return STOPPED_REASON;
  return `${(error as Error | undefined)?.message ?? String(error)} [ERR_ARCHIVE_INTERNAL]`;
}

/**
 * Closes an attempt that never reached its list (Identify failed, the format was refused, the
 * harvest was stopped): `interrupted` when stopped, else `failed`, with its reason. A full disk
 * may refuse the row; the next harvest then marks the attempt interrupted.
 */
function recordAttemptEnd(catalog: Catalog, harvestId: number, error: unknown): void {
  const stopped = (error as Error | undefined)?.name === 'AbortError';
  try {
    catalog.finishRun(harvestId, stopped ? 'interrupted' : 'failed', {}, reasonOf(error));
  } catch (bookkeeping) {
    if (!isStorageExhausted(bookkeeping)) throw bookkeeping;
  }
}
