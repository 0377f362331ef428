// `oaibag repair` (docs/repair.md): the fixity check, then, for each damaged or missing payload
// file, bytes with the recorded digests put back from a replica (another archive folder, a ZIP
// of `export --bags`), failing that from the source's current copy; then the bags written into
// checked again and the result recorded. Read, plan, act: verifyArchive reads, repairTargets
// decides what may be repaired and to which bytes, the offers are tried in order (--from in the
// order given, then the source) and place-payload.ts writes only bytes that match.
import { unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import { acquireArchiveLock } from '../archive/archive-lock.js';
import { fsyncFolder } from '../archive/flush-to-disk.js';
import { lockArchiveForWriting } from '../archive/read-only-archive.js';
import { resolveArchivePath } from '../archive/storage-path.js';
import { Catalog } from '../catalog/catalog.js';
import { type RecoveryEvent, recordRecoveryEvents } from '../catalog/repair-queries.js';
import { isStorageExhausted } from '../core/errors.js';
import type { RetryPolicy } from '../oai/retry-policy.js';
import type { SourceLimits } from '../oai/source-limits.js';
import { type ArchiveProblem, recheckBags, verifyArchive } from '../verify/verify-archive.js';
import type { ByteOffer } from './byte-offer.js';
import { placePayload, REPAIR_TEMP_NAME } from './place-payload.js';
import { type RepairTarget, repairTargets, type Unrepairable } from './repair-targets.js';
import { checkFrom, openReplicas, type Replica } from './replica-copies.js';
import { restoreMissingBag } from './restore-missing-bag.js';
import { SourceCopies } from './source-copies.js';

export interface RepairOptions {
  archiveDir: string;
  /** Replicas, tried in this order: archive folders, ZIPs of `export --bags`, folders of ZIPs. */
  from?: readonly string[];
  /** Ask the source for its current copy of By-Reference bytes no replica had (default true). */
  source?: boolean;
  /** Find and check the bytes, write nothing, record nothing but the fixity check's own events. */
  dryRun?: boolean;
  /** Worker threads of the fixity check. */
  jobs?: number;
  retry?: RetryPolicy;
  limits?: Partial<SourceLimits>;
  allowPrivateRefs?: boolean;
  signal?: AbortSignal;
}

/** A payload file put back (or, in a dry run, that would be). */
export interface RepairedFile {
  bagPath: string;
  path: string;
  sha256: string;
  size: number;
  /** Where the bytes came from. */
  origin: string;
}

/** A damaged payload file (or missing bag, `path` null) not repaired, with why and every offer refused. */
export interface UnrepairedFile extends Unrepairable {
  tried: string[];
}

/** A missing bag brought back whole from a replica. */
export interface RestoredBag {
  bagPath: string;
  origin: string;
}

/** The result of {@link repairArchive}; `--json` prints it. */
export interface RepairReport {
  dryRun: boolean;
  /** The fixity check's problems before the repair. */
  found: number;
  repaired: RepairedFile[];
  restoredBags: RestoredBag[];
  unrepaired: UnrepairedFile[];
  /** Temporary files of an interrupted repair removed from bags. */
  leftoversRemoved: string[];
  /** Bags checked again after writing into them. */
  rechecked: number;
  /** The problems of the archive after the repair (all of them, not only the payloads'). */
  remaining: ArchiveProblem[];
  notes: string[];
  /** Recovery events recorded in the catalog. */
  events: number;
  seconds: number;
  /** True when the archive is intact afterwards (exit 0). */
  ok: boolean;
}

/**
 * Repairs the archive at `archiveDir` (see the file comment). Throws ERR_ARCHIVE_USAGE for a
 * `--from` that is not a replica, ERR_ARCHIVE_LOCKED while another process holds the archive,
 * ERR_ARCHIVE_CATALOG without a catalog, ERR_ARCHIVE_FULL / ERR_ARCHIVE_IO when the archive
 * cannot be written.
 */
const REPAIR_WRITES = {
  writes: 'repair puts bytes back into its bags and records events in the catalog',
  hint: 'repair a writable copy (then copy it back), or see what would be done with oaibag repair --dry-run',
};

export async function repairArchive(options: RepairOptions): Promise<RepairReport> {
  const started = Date.now();
  const archiveDir = options.archiveDir;
  const dryRun = options.dryRun === true;
  await checkFrom(options.from ?? [], archiveDir);
  // A read-only archive is named as such, with repair's own advice, before the verify below
  // (which records its events) can refuse it with verify's.
  if (!dryRun) await (await lockArchiveForWriting(archiveDir, 'repair', REPAIR_WRITES)).release();
  // A dry run records nothing, not even the check's events: it works on a read-only archive too.
  const report = await verifyArchive({ archiveDir, record: !dryRun, ...(options.jobs !== undefined ? { jobs: options.jobs } : {}) });
  const result: RepairReport = {
    dryRun,
    found: report.problems.length,
    repaired: [],
    restoredBags: [],
    unrepaired: [],
    leftoversRemoved: [],
    rechecked: 0,
    remaining: report.problems,
    notes: [...report.notes],
    events: 0,
    seconds: 0,
    ok: report.ok,
  };
  if (report.ok) return { ...result, seconds: (Date.now() - started) / 1000 };

  const lock = dryRun ? undefined : await acquireArchiveLock(archiveDir, 'repair');
  let catalog: Catalog | undefined;
  let sources: SourceCopies | undefined;
  try {
    catalog = Catalog.open(archiveDir, { create: false });
    const checkStarted = new Date().toISOString();
    const plan = await repairTargets(report, catalog, archiveDir);
    const replicas = await openReplicas(options.from ?? [], archiveDir, new Set(plan.targets.map((target) => target.sha256)));
    for (const replica of replicas) result.notes.push(...replica.notes);
    if (options.source !== false) {
      sources = new SourceCopies(catalog, {
        ...(options.retry !== undefined ? { retry: options.retry } : {}),
        ...(options.limits !== undefined ? { limits: options.limits } : {}),
        ...(options.allowPrivateRefs !== undefined ? { allowPrivateRefs: options.allowPrivateRefs } : {}),
        ...(options.signal !== undefined ? { signal: options.signal } : {}),
      });
    }
    result.unrepaired.push(...plan.unrepairable.map((file) => ({ ...file, tried: [] })));
    for (const target of plan.targets) {
      options.signal?.throwIfAborted();
      const outcome = await repairOne(target, replicas, sources, dryRun);
      if ('origin' in outcome)
        result.repaired.push({ bagPath: target.bagPath, path: target.path, sha256: target.sha256, size: target.size, origin: outcome.origin });
      else result.unrepaired.push({ bagPath: target.bagPath, path: target.path, sha256: target.sha256, reason: outcome.reason, tried: outcome.tried });
    }
    for (const bagPath of plan.missingBags) {
      const restored = await restoreMissingBag(catalog, archiveDir, bagPath, options.from ?? [], dryRun);
      if ('origin' in restored) result.restoredBags.push({ bagPath, origin: restored.origin });
      else result.unrepaired.push({ bagPath, path: null, sha256: null, reason: restored.reason, tried: restored.tried });
    }
    const leftovers = dryRun ? [] : await removeLeftovers(archiveDir, report.problems);
    result.leftoversRemoved = leftovers.map((file) => `${file.bagPath}/${file.path}`);
    if (dryRun) return { ...result, seconds: (Date.now() - started) / 1000, ok: false };

    result.events = recordEvents(catalog, result, plan.targets, result.notes);
    const touched = new Set([
      ...result.repaired.map((file) => file.bagPath),
      ...result.restoredBags.map((bag) => bag.bagPath),
      ...leftovers.map((file) => file.bagPath),
    ]);
    const again = await recheckBags(catalog, archiveDir, [...touched]);
    result.rechecked = touched.size;
    result.remaining = [...report.problems.filter((problem) => !touched.has(problem.bagPath)), ...again.problems].sort(
      (a, b) => byCodeUnit(a.bagPath, b.bagPath) || byCodeUnit(a.message, b.message),
    );
    result.ok = result.remaining.length === 0;
    try {
      catalog.recordVerification({
        kind: 'repair',
        startedAt: checkStarted,
        endedAt: new Date().toISOString(),
        bags: touched.size,
        bytes: again.hashedBytes,
        damaged: result.remaining.length,
      });
    } catch (error) {
      if (!isStorageExhausted(error)) throw error;
      result.notes.push('catalog: no room left on its file system: the verification after the repair is not recorded');
    }
    return { ...result, seconds: (Date.now() - started) / 1000 };
  } finally {
    await sources?.close();
    catalog?.close();
    await lock?.release();
  }
}

/** Tries every offer for one file, in order, until one is placed; the origin, or why none was. */
async function repairOne(
  target: RepairTarget,
  replicas: readonly Replica[],
  sources: SourceCopies | undefined,
  dryRun: boolean,
): Promise<{ origin: string } | { reason: string; tried: string[] }> {
  const offers: ByteOffer[] = [
    ...replicas.flatMap((replica) => replica.offers(target.sha256, target.size)),
    ...(sources?.offers(target.sha256, target.size) ?? []),
  ];
  const tried: string[] = [];
  for (const offer of offers) {
    const opened = await offer.open();
    if ('why' in opened) {
      tried.push(`${offer.origin}: ${opened.why}`);
      continue;
    }
    const placed = await placePayload(target, opened.bytes, dryRun);
    if (placed.placed) return { origin: offer.origin };
    tried.push(`${offer.origin}: ${placed.why}`);
  }
  const where = [
    replicas.length === 0 ? 'no --from given' : `no copy in ${replicas.map((replica) => replica.description).join(', ')}`,
    sources === undefined ? 'the source not asked (--no-source)' : 'no By-Reference URL recorded for these bytes (By-Value bytes came inside their record)',
  ];
  const reason = offers.length === 0 ? `no copy found: ${where.join('; ')}` : `no copy with the recorded size and digests (${offers.length} tried)`;
  return { reason, tried };
}

/** One recovery event per file repaired, restored bag and file not repaired; how many were recorded. */
function recordEvents(catalog: Catalog, result: RepairReport, targets: readonly RepairTarget[], notes: string[]): number {
  const sourceOf = new Map(targets.map((target) => [`${target.bagPath}\n${target.path}`, target.sourceId]));
  const bagSource = (bagPath: string): number | null => catalog.bag(bagPath)?.sourceId ?? null;
  const events: RecoveryEvent[] = [
    ...result.repaired.map((file) => ({
      sourceId: sourceOf.get(`${file.bagPath}\n${file.path}`) ?? null,
      outcome: 'success' as const,
      detail: `oaibag repair: ${file.bagPath}: ${file.path} (sha256 ${file.sha256}, ${file.size} bytes) put back from ${file.origin}`,
    })),
    ...result.restoredBags.map((bag) => ({
      sourceId: bagSource(bag.bagPath),
      outcome: 'success' as const,
      detail: `oaibag repair: ${bag.bagPath}: the missing bag put back from ${bag.origin}`,
    })),
    ...result.unrepaired.map((file) => ({
      sourceId: file.path === null ? bagSource(file.bagPath) : (sourceOf.get(`${file.bagPath}\n${file.path}`) ?? bagSource(file.bagPath)),
      outcome: 'failure' as const,
      detail: `oaibag repair: ${file.bagPath}: ${file.path ?? 'the missing bag'}${file.sha256 ? ` (sha256 ${file.sha256})` : ''} not repaired: ${file.reason}${
        file.tried.length > 0 ? `; ${file.tried.slice(0, 10).join('; ')}` : ''
      }`,
    })),
  ];
  try {
    recordRecoveryEvents(catalog, events);
    return events.length;
  } catch (error) {
    if (!isStorageExhausted(error)) throw error;
    notes.push(`catalog: no room left on its file system: ${events.length} recovery event(s) not recorded`);
    return 0;
  }
}

/**
 * Removes the temporary files an interrupted repair left in bags: the files verify found on disk
 * but in no manifest whose name only a repair gives (place-payload.ts). Returns those removed.
 */
async function removeLeftovers(archiveDir: string, problems: readonly ArchiveProblem[]): Promise<Array<{ bagPath: string; path: string }>> {
  const removed: Array<{ bagPath: string; path: string }> = [];
  const seen = new Set<string>();
  for (const problem of problems) {
    const path = problem.path;
    if (problem.kind !== 'unexpected' || path === undefined || !REPAIR_TEMP_NAME.test(path.split('/').pop() ?? '')) continue;
    const file = resolveArchivePath(archiveDir, `${problem.bagPath}/${path}`);
    if (seen.has(file)) continue;
    seen.add(file);
    await unlink(file).then(
      async () => {
        removed.push({ bagPath: problem.bagPath, path });
        await fsyncFolder(dirname(file));
      },
      () => undefined,
    );
  }
  return removed;
}

function byCodeUnit(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The text report: each file repaired and where from, each not and why, what remains, the totals. */
export function formatRepairReport(report: RepairReport): string {
  const lines: string[] = [];
  const verb = report.dryRun ? 'would repair' : 'repaired';
  for (const file of report.repaired) lines.push(`${verb} ${file.bagPath}: ${file.path} from ${file.origin}`);
  for (const bag of report.restoredBags) lines.push(`${report.dryRun ? 'would restore' : 'restored'} ${bag.bagPath} (a missing bag) from ${bag.origin}`);
  for (const file of report.leftoversRemoved) lines.push(`removed ${file}: a temporary file of an interrupted repair`);
  for (const file of report.unrepaired) {
    lines.push(`not repaired ${file.bagPath}: ${file.path ?? '(the missing bag)'}: ${file.reason}`);
    for (const attempt of file.tried) lines.push(`  tried ${attempt}`);
  }
  if (!report.dryRun) for (const problem of report.remaining) lines.push(`still damaged: ${problem.message}`);
  for (const note of report.notes) lines.push(`note: ${note}`);
  lines.push(
    `repair${report.dryRun ? ' (dry run: nothing written)' : ''}: ${report.found} problem(s) found; ${report.repaired.length} payload file(s) ${verb}, ` +
      `${report.restoredBags.length} missing bag(s) ${report.dryRun ? 'would be ' : ''}restored, ${report.unrepaired.length} not repairable; ` +
      (report.dryRun ? '' : `${report.rechecked} bag(s) checked again, ${report.remaining.length} problem(s) remain; ${report.events} event(s) recorded; `) +
      `${report.seconds.toFixed(1)} s`,
  );
  lines.push(report.ok ? 'archive OK' : report.dryRun ? 'archive NOT OK (dry run)' : 'archive NOT OK');
  return `${lines.join('\n')}\n`;
}
