// `oaibag harvest`: one harvest of a repository over OAI-PMH, a run of kind harvest (ingest/):
// Identify, the plan (harvest-plan.ts), then the list page by page (harvest-list.ts).
import { defaultFlushMode } from '../archive/flush-to-disk.js';
import type { Catalog } from '../catalog/catalog.js';
import type { CatalogSource, HarvestCounts, HarvestStatus } from '../catalog/catalog-types.js';
import { oaiDateOf, parseCommandLineDate } from '../core/command-line-date.js';
import { archiveFullError, isStorageExhausted } from '../core/errors.js';
import { checkHttpUrl } from '../core/http-url.js';
import type { BatchBounds } from '../ingest/batch-bounds.js';
import { harvestMemoryBudget } from '../ingest/incoming-file.js';
import { ingestConcurrency } from '../ingest/ingest-context.js';
import { IngestRun } from '../ingest/ingest-run.js';
import { type IngestSession, type LeasedRun, lockForIngest, openIngestSession } from '../ingest/ingest-session.js';
import { RunRow, STOPPED_REASON } from '../ingest/run-row.js';
import type { Politeness } from '../oai/host-politeness.js';
import { identifyRepository } from '../oai/identify.js';
import { type Compression, type Credentials, OaiClient, type OaiClientOptions } from '../oai/oai-client.js';
import type { ResolveHost } from '../oai/origin-pools.js';
import type { RetryPolicy } from '../oai/retry-policy.js';
import type { SourceLimits } from '../oai/source-limits.js';
import { HarvestList, HarvestStopped } from './harvest-list.js';
import { type HarvestPlan, planHarvest } from './harvest-plan.js';

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
   * A worker's run (worker/worker.ts): the source's lease, checked and renewed by every write to
   * the catalog the workers share.
   */
  lease?: LeasedRun;
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
  const log = options.log ?? (() => undefined);
  const concurrency = ingestConcurrency(options.concurrency);
  defaultFlushMode(); // refuses a bad OAIBAG_SYNC before anything is written
  checkHttpUrl(options.baseUrl, 'the base URL'); // before the archive is opened, not by the client
  // The user's dates in the one command-line grammar, sent as OAI-PMH's UTC forms.
  const window = {
    from: options.from === undefined ? undefined : oaiDateOf(parseCommandLineDate(options.from, '--from')),
    until: options.until === undefined ? undefined : oaiDateOf(parseCommandLineDate(options.until, '--until')),
  };
  const session = await openIngestSession(await lockForIngest(options.archiveDir, `harvest ${options.baseUrl}`), log, options.lease, options.baseUrl);
  const client = new OaiClient(options.baseUrl, clientOptions(options, session.catalog, log));
  try {
    return await harvestSource(session, client, { ...options, prefix: options.prefix ?? 'oai_didl', log, concurrency }, window);
  } catch (error) {
    // Before the list (adopting bags, starting the harvest) a full disk is the same story.
    throw isStorageExhausted(error) ? archiveFullError(options.archiveDir, error) : error;
  } finally {
    await client.close();
    await session.close();
  }
}

/** The harvest's options as harvestSource takes them: with their defaults. */
type HarvestSetup = HarvestOptions & { prefix: string; log: (line: string) => void; concurrency: number };

/** The OAI-PMH client of a harvest: the user's options, its retries logged. */
function clientOptions(options: HarvestOptions, catalog: Catalog, log: (line: string) => void): OaiClientOptions {
  return {
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
  };
}

/** The run of the harvest: its row opened, Identify, the plan, then the list to its end. */
async function harvestSource(
  session: IngestSession,
  client: OaiClient,
  options: HarvestSetup,
  window: { from: string | undefined; until: string | undefined },
): Promise<HarvestSummary> {
  const { catalog } = session;
  const { baseUrl, prefix } = options;
  const set = options.set ?? null;
  // The attempt is recorded before the first request, so that a night whose source cannot be
  // reached (or refuses the format, or is stopped) leaves its trace for `oaibag status`.
  const known = catalog.source(baseUrl) ?? catalog.ensureSource(baseUrl, null);
  // The politeness it keeps, as `oaibag status` shows it: the repository host's figures.
  const polite = { delayMs: client.politeness.delayMs, maxConnections: client.repositoryConnections };
  const row = RunRow.open(catalog, known.id, 'harvest', { from: window.from ?? null, until: window.until ?? null, set, prefix, ...polite });
  const facts = await identifyRepository(client, prefix).catch((error: unknown) => {
    row.endAttempt(error);
    throw error;
  });
  const source = catalog.upsertSource(baseUrl, facts);
  const plan = planHarvest({ prefix, set: options.set, ...window, watermark: source.watermark, resume: source.resume, granularity: facts.granularity });
  row.setArguments({ from: plan.from, until: plan.until, set, prefix, ...polite });
  const run = new IngestRun(session, row, {
    client,
    baseUrl,
    repositoryName: facts.repositoryName ?? baseUrl,
    ...(facts.rightsManifest ? { rightsManifest: facts.rightsManifest } : {}),
    prefix,
    from: plan.from,
    until: plan.until,
    set,
    ...(options.batchBounds ? { bounds: options.batchBounds } : {}),
    concurrency: options.concurrency,
    budget: harvestMemoryBudget(),
    ...(options.signal ? { signal: options.signal } : {}),
    log: options.log,
  });
  const list = new HarvestList(run, plan, { retry: options.retry, progress: options.progress });
  return runList(run, list, source, plan);
}

/**
 * The list walked to its end, and the run closed with its outcome: the list's failures resolved
 * and the watermark moved when it ended, the run `interrupted` when stopped on request (what the
 * batch held committed), `failed` when a page kept failing (or no room was left).
 */
async function runList(run: IngestRun, list: HarvestList, source: CatalogSource, plan: HarvestPlan): Promise<HarvestSummary> {
  const { catalog, client, log } = run.context;
  const summaryOf = (status: Exclude<HarvestStatus, 'running'>, watermark: string | null): HarvestSummary => ({
    harvestId: run.id,
    from: plan.from,
    until: plan.until,
    status,
    watermark,
    ...run.counts,
    ...(status === 'failed' && list.failure !== undefined ? { reason: list.failure } : {}),
  });
  let status: Exclude<HarvestStatus, 'running'>;
  try {
    status = await list.walk();
  } catch (error) {
    // What the batch holds is committed with the list state of its last complete page.
    const settled = await list.settle();
    run.counts.requests = client.requests;
    if (error instanceof HarvestStopped && settled === undefined) {
      // Stopped on request: what was stored is committed, the last page's token saved.
      log('stopped on request; the next harvest resumes from the last complete page');
      run.finish('interrupted', STOPPED_REASON);
      return summaryOf('interrupted', source.watermark);
    }
    // A page that kept failing (or no room left): the saved token and the watermark stay.
    throw run.fail(error instanceof HarvestStopped ? settled : error, 'list');
  }
  run.counts.requests = client.requests;
  if (status !== 'failed') {
    // The list itself ended; the watermark moves only when no record failure of the list (of
    // any run that took part in it) is still open (docs/archiver.md, "No silent loss").
    catalog.resolveListFailures(source.id);
    if (status === 'complete' && list.listResponseDate) catalog.setWatermark(source.id, list.listResponseDate);
  }
  const open = status === 'partial' ? catalog.openRecordFailuresSince(source.id, source.resume?.harvestId ?? run.id) : 0;
  run.finish(status, status === 'partial' ? `${open} record failure(s) of the list still open, retried next time` : undefined);
  return summaryOf(status, catalog.source(source.baseUrl)?.watermark ?? null);
}
