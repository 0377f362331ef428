// `oaibag verify`: the fixity check of a whole archive. It holds the archive lock (no harvest
// writes meanwhile) but changes nothing in the archive's files: it reads bags and writes
// PREMIS-style events into the catalog, never into bags (a bag is immutable: editing a tag
// file would break its tag manifest).
//
// The catalog and the aips/ tree are compared both ways: a version whose bag is gone is a
// `missing-bag`, a bag the catalog does not list an `uncatalogued-bag` (one noted as pending —
// a harvest interrupted between rename and record — is only a note: the next harvest records
// it). Every bag found is verified by verifyBag in a pool of worker threads, whole bags per
// worker, and the report is sorted by bag path, so it is the same whatever the number of jobs.

import type { Dirent } from 'node:fs';
import { lstat, readdir, stat } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { acquireArchiveLock } from '../archive/archive-lock.js';
import { AIPS_DIRECTORY, resolveArchivePath, TEMP_DIRECTORY } from '../archive/storage-path.js';
import type { BagProblem, BagProblemKind } from '../bag/bag-verifier.js';
import { CATALOG_FILE_NAME, Catalog } from '../catalog/catalog.js';
import type { NewEvent } from '../catalog/catalog-schema.js';
import { cataloguedBags } from '../catalog/verify-queries.js';
import { ArchiverError, isStorageExhausted } from '../core/errors.js';
import type { VerifyJob, VerifyJobResult } from './verify-worker.js';

/** Bags whose events are written in one catalog transaction. */
export const VERIFY_EVENT_BATCH = 500;

export interface VerifyArchiveOptions {
  archiveDir: string;
  /** Completeness, sizes and Payload-Oxum only: no payload checksum is computed. */
  fast?: boolean;
  /** Worker threads verifying bags at once (default: `os.availableParallelism()`). */
  jobs?: number;
  /** Called after each bag with the bags done, the bags to do and the payload bytes so far. */
  progress?: (done: number, total: number, bytes: number) => void;
}

/**
 * What can be wrong: a bag's own problems (bag-verifier.ts), or the archive's: `missing-bag`
 * (catalogued, not on disk), `uncatalogued-bag`, `size` (the payload on disk is not the size
 * the catalog recorded), `stray` (something in aips/ that is not a bag), `unreadable`.
 */
export type ArchiveProblemKind = BagProblemKind | 'missing-bag' | 'uncatalogued-bag' | 'size' | 'stray' | 'unreadable';

/** One problem; `message` is one stable line starting with the bag path (archive-relative). */
export interface ArchiveProblem extends Omit<BagProblem, 'kind'> {
  kind: ArchiveProblemKind;
  bagPath: string;
}

/** A bag whose content is not intact. */
export interface DamagedBag {
  bagPath: string;
  /** The resource's identifier when the catalog (or a pending note) knows the bag. */
  identifier: string | null;
  problems: number;
}

/** The result of {@link verifyArchive}; `--json` prints it. */
export interface VerifyReport {
  fast: boolean;
  jobs: number;
  /** Bags checked (catalogued, pending and uncatalogued ones found on disk). */
  bags: number;
  valid: number;
  damaged: number;
  missingBags: number;
  uncataloguedBags: number;
  /** Bags noted as pending by an interrupted harvest (checked, not a problem by themselves). */
  pendingBags: number;
  /** Entries left in tmp/ by an interrupted harvest: not errors (the next harvest removes them). */
  tmpLeftovers: number;
  damagedBags: DamagedBag[];
  problems: ArchiveProblem[];
  /** Lines that are not problems (pending bags, tmp/ leftovers). */
  notes: string[];
  /** Payload bytes of the bags checked. */
  bytes: number;
  /** Bytes read to compute checksums (tag files, and payload unless fast). */
  hashedBytes: number;
  /** Fixity-check events written to the catalog. */
  events: number;
  seconds: number;
  /** True when nothing is wrong (exit 0). */
  ok: boolean;
}

/** What the catalog says about a bag path. */
interface Known {
  versionId: number | null;
  resourceId: number | null;
  sourceId: number | null;
  identifier: string;
  size: number | null;
  pending: boolean;
}

/**
 * Checks the fixity of the archive at `archiveDir`: every catalogued and every found bag is verified (in
 * full, or `fast`), missing and uncatalogued bags are reported, and one `fixity check` event
 * per bag checked (and per version whose bag is missing) is written to the catalog, 500 bags
 * per transaction. Throws ERR_ARCHIVE_CATALOG when there is no catalog, ERR_ARCHIVE_LOCKED
 * while a harvest runs, ERR_ARCHIVE_USAGE for a bad `jobs`.
 */
export async function verifyArchive(options: VerifyArchiveOptions): Promise<VerifyReport> {
  const started = Date.now();
  const fast = options.fast === true;
  const jobs = options.jobs ?? availableParallelism();
  if (!Number.isSafeInteger(jobs) || jobs < 1) throw new ArchiverError('ERR_ARCHIVE_USAGE', `jobs must be a whole number of at least 1, not ${jobs}`);
  const archiveDir = options.archiveDir;
  await requireCatalogFile(archiveDir);
  const lock = await acquireArchiveLock(archiveDir, 'verify');
  let catalog: Catalog | undefined;
  try {
    catalog = Catalog.open(archiveDir, { create: false });
    const known = catalogueBags(catalog);
    const problems = new Map<string, ArchiveProblem[]>();
    const complain = (problem: ArchiveProblem): void => void problems.set(problem.bagPath, [...(problems.get(problem.bagPath) ?? []), problem]);
    const notes: string[] = [];

    const onDisk = await findBags(archiveDir, known, complain);
    const { toCheck, missing, uncatalogued, pending } = takeInventory(known, onDisk, complain, notes);
    const tmpLeftovers = (await readdir(join(archiveDir, TEMP_DIRECTORY)).catch(() => [])).length;
    if (tmpLeftovers > 0) notes.push(`${TEMP_DIRECTORY}/: ${tmpLeftovers} leftover(s) of an interrupted harvest; the next harvest removes them`);

    // Verify, writing the events in batches as results come in.
    const events = new EventRecorder(catalog, known, fast ? 'fast' : 'full');
    for (const path of missing) events.add(path, 'failure', 'the bag is missing');

    let bytes = 0;
    let hashedBytes = 0;
    let done = 0;
    const damagedBags: DamagedBag[] = [];
    await runPool(
      toCheck.map((path, id): VerifyJob => ({ id, bagDir: resolveArchivePath(archiveDir, path), fast })),
      jobs,
      (result) => {
        const path = toCheck[result.id]!;
        const entry = known.get(path);
        const found = problemsOf(path, entry, result);
        if (result.tally) {
          bytes += result.tally.payloadBytes;
          hashedBytes += result.tally.hashedBytes;
        }
        found.forEach(complain);
        if (found.length > 0) damagedBags.push({ bagPath: path, identifier: entry?.identifier ?? null, problems: found.length });
        const shown = found.slice(0, 20).map((problem) => problem.message.slice(path.length + 2));
        events.add(
          path,
          found.length === 0 ? 'success' : 'failure',
          found.length === 0 ? 'intact' : `${found.length} problem(s): ${shown.join('; ')}${found.length > shown.length ? '; …' : ''}`,
        );
        options.progress?.(++done, toCheck.length, bytes);
      },
    );
    events.flush();
    if (events.unrecorded > 0) {
      notes.push(
        `catalog: no room left on its file system: ${events.unrecorded} fixity-check event(s) not recorded; free space and verify again to record them`,
      );
    }

    damagedBags.sort((a, b) => byCodeUnit(a.bagPath, b.bagPath));
    const all = [...problems.keys()].sort(byCodeUnit).flatMap((path) => problems.get(path)!);
    return {
      fast,
      jobs,
      bags: toCheck.length,
      valid: toCheck.length - damagedBags.length,
      damaged: damagedBags.length,
      missingBags: missing.length,
      uncataloguedBags: uncatalogued,
      pendingBags: pending,
      tmpLeftovers,
      damagedBags,
      problems: all,
      notes,
      bytes,
      hashedBytes,
      events: events.recorded,
      seconds: (Date.now() - started) / 1000,
      ok: all.length === 0,
    };
  } finally {
    catalog?.close();
    await lock.release();
  }
}

/** ERR_ARCHIVE_CATALOG unless the archive has a catalog: verify never creates one. */
async function requireCatalogFile(archiveDir: string): Promise<void> {
  const catalogFile = join(archiveDir, CATALOG_FILE_NAME);
  const isFile = await stat(catalogFile).then(
    (info) => info.isFile(),
    () => false,
  );
  if (!isFile) {
    throw new ArchiverError('ERR_ARCHIVE_CATALOG', `no catalog at ${catalogFile}`, {
      path: catalogFile,
      hint: 'check --archive names an archive made by oaibag harvest',
    });
  }
}

/**
 * The catalog against the disk: the bags to check (every bag found, in code-unit order), the
 * catalogued ones missing from disk, and the found ones the catalog does not list (problems)
 * or noted as pending (a note).
 */
function takeInventory(
  known: Map<string, Known>,
  onDisk: Set<string>,
  complain: (problem: ArchiveProblem) => void,
  notes: string[],
): { toCheck: string[]; missing: string[]; uncatalogued: number; pending: number } {
  const toCheck = [...onDisk].sort(byCodeUnit);
  const missing = [...known]
    .filter(([path, entry]) => !entry.pending && !onDisk.has(path))
    .map(([path]) => path)
    .sort(byCodeUnit);
  for (const path of missing) {
    const entry = known.get(path)!;
    complain({
      kind: 'missing-bag',
      bagPath: path,
      message: `${path}: missing-bag: the catalog lists it (version ${entry.versionId} of ${entry.identifier}) but it is not on disk`,
    });
  }
  let uncatalogued = 0;
  let pending = 0;
  for (const path of toCheck) {
    const entry = known.get(path);
    if (entry === undefined) {
      uncatalogued++;
      complain({ kind: 'uncatalogued-bag', bagPath: path, message: `${path}: uncatalogued-bag: a bag on disk that the catalog does not list` });
    } else if (entry.pending) {
      pending++;
      notes.push(`${path}: pending: noted by an interrupted harvest (${entry.identifier}); the next harvest records it`);
    }
  }
  return { toCheck, missing, uncatalogued, pending };
}

/** The problems of one bag's result: the verifier's, an unreadable bag, or a payload size other than the catalog's. */
function problemsOf(path: string, entry: Known | undefined, result: VerifyJobResult): ArchiveProblem[] {
  if (result.error !== undefined) return [{ kind: 'unreadable', bagPath: path, message: `${path}: cannot be read: ${result.error}` }];
  const found: ArchiveProblem[] = result.report!.problems.map((problem) => ({ ...problem, bagPath: path, message: `${path}: ${problem.message}` }));
  const size = result.tally!.payloadBytes;
  if (entry?.size != null && entry.size !== size) {
    const expected = String(entry.size);
    found.push({
      kind: 'size',
      bagPath: path,
      expected,
      found: String(size),
      message: `${path}: payload is ${size} bytes on disk, the catalog records ${expected}`,
    });
  }
  return found;
}

/**
 * The fixity-check events of a verify, written to the catalog in batches as results come in. A
 * full disk must not stop the check itself: the bags are still verified and reported, only the
 * record of it in the catalog is missing (counted in `unrecorded`, said in the notes).
 */
class EventRecorder {
  private readonly events: NewEvent[] = [];
  recorded = 0;
  unrecorded = 0;

  constructor(
    private readonly catalog: Catalog,
    private readonly known: Map<string, Known>,
    private readonly mode: 'fast' | 'full',
  ) {}

  add(path: string, outcome: 'success' | 'failure', detail: string): void {
    const entry = this.known.get(path);
    this.events.push({
      sourceId: entry?.sourceId ?? null,
      resourceId: entry?.resourceId ?? null,
      versionId: entry?.versionId ?? null,
      type: 'fixity check',
      outcome,
      detail: `oaibag verify (${this.mode}): ${path}: ${detail}`,
    });
    if (this.events.length >= VERIFY_EVENT_BATCH) this.flush();
  }

  flush(): void {
    const batch = this.events.splice(0);
    if (batch.length === 0) return;
    if (this.unrecorded > 0) {
      this.unrecorded += batch.length;
      return;
    }
    try {
      this.catalog.transaction(() => {
        for (const event of batch) this.catalog.addEvent(event);
      });
      this.recorded += batch.length;
    } catch (error) {
      if (!isStorageExhausted(error)) throw error;
      this.unrecorded += batch.length;
    }
  }
}

/** Every bag path the catalog knows: recorded versions, and bags noted as pending. */
function catalogueBags(catalog: Catalog): Map<string, Known> {
  const known = new Map<string, Known>();
  for (const bag of cataloguedBags(catalog)) {
    known.set(bag.bagPath, {
      versionId: bag.versionId,
      resourceId: bag.resourceId,
      sourceId: bag.sourceId,
      identifier: bag.identifier,
      size: bag.size,
      pending: false,
    });
  }
  for (const bag of catalog.pendingBags()) {
    if (!known.has(bag.bagPath))
      known.set(bag.bagPath, { versionId: null, resourceId: null, sourceId: bag.sourceId, identifier: bag.identifier, size: bag.size, pending: true });
  }
  return known;
}

const LEVELS = [/^[0-9a-f]{2}$/, /^[0-9a-f]{2}$/, /^[0-9a-f]{64}$/];

/**
 * The bags on disk: directories at aips/<h0-1>/<h2-3>/<h>/<version>/ holding bagit.txt, and
 * any catalogued bag path that exists as a directory (wherever it is). Anything else in
 * aips/ — a file, a link, a folder of the wrong name or a version folder without bagit.txt
 * that nothing lists — is a `stray` problem. Links are never followed.
 */
async function findBags(archiveDir: string, known: Map<string, Known>, complain: (problem: ArchiveProblem) => void): Promise<Set<string>> {
  const bags = new Set<string>();
  const stray = (path: string, why: string): void => complain({ kind: 'stray', bagPath: path, message: `${path}: stray: ${why}` });
  const visit = async (rel: string, depth: number): Promise<void> => {
    let entries: Dirent[];
    try {
      entries = await readdir(join(archiveDir, ...rel.split('/')), { withFileTypes: true });
    } catch (error) {
      if (depth === 0 && (error as NodeJS.ErrnoException).code === 'ENOENT') return;
      return complain({
        kind: 'unreadable',
        bagPath: rel,
        message: `${rel}: cannot be listed: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      });
    }
    for (const entry of entries.sort((a, b) => byCodeUnit(a.name, b.name))) {
      const path = `${rel}/${entry.name}`;
      if (!entry.isDirectory()) {
        stray(path, entry.isSymbolicLink() ? 'a symbolic link in the bag tree' : 'a file where only folders belong');
      } else if (depth < 3) {
        if (!LEVELS[depth]!.test(entry.name)) stray(path, 'a folder whose name is not part of the aips/<h0-1>/<h2-3>/<h>/ layout');
        else if (depth === 2 && !entry.name.startsWith(`${rel.slice(-5, -3)}${rel.slice(-2)}`))
          stray(path, 'a resource folder under the wrong fan-out folders');
        else await visit(path, depth + 1);
      } else if (
        known.has(path) ||
        (await lstat(join(archiveDir, ...path.split('/'), 'bagit.txt')).then(
          () => true,
          () => false,
        ))
      ) {
        bags.add(path);
      } else {
        stray(path, 'a version folder without bagit.txt that the catalog does not list');
      }
    }
  };
  await visit(AIPS_DIRECTORY, 0);
  // Catalogued bags outside the documented layout (an older layout, a moved archive) are still checked.
  for (const path of known.keys()) {
    if (bags.has(path)) continue;
    let full: string;
    try {
      full = resolveArchivePath(archiveDir, path);
    } catch {
      continue; // a hostile catalog path: reported as missing, never opened
    }
    if (
      await lstat(full).then(
        (info) => info.isDirectory(),
        () => false,
      )
    )
      bags.add(path);
  }
  return bags;
}

/**
 * Runs the jobs on `jobs` worker threads (never more than there are jobs), one bag per worker
 * at a time, calling `onResult` as each answers. A worker that dies rejects the whole run.
 */
async function runPool(queue: VerifyJob[], jobs: number, onResult: (result: VerifyJobResult) => void): Promise<void> {
  if (queue.length === 0) return;
  const workers: Worker[] = [];
  let next = 0;
  let answered = 0;
  try {
    await new Promise<void>((resolve, reject) => {
      const feed = (worker: Worker): void => {
        if (next < queue.length) worker.postMessage(queue[next++]);
      };
      for (let i = 0; i < Math.min(jobs, queue.length); i++) {
        const worker = startWorker();
        workers.push(worker);
        worker.on('message', (result: VerifyJobResult) => {
          try {
            onResult(result);
          } catch (error) {
            return reject(error);
          }
          if (++answered === queue.length) resolve();
          else feed(worker);
        });
        worker.on('error', (error) => reject(new ArchiverError('ERR_ARCHIVE_IO', `a verify worker failed: ${error.message}`, { cause: error })));
        worker.on('exit', (code) => {
          if (answered < queue.length) reject(new ArchiverError('ERR_ARCHIVE_IO', `a verify worker exited early (code ${code})`));
        });
        feed(worker);
      }
    });
  } finally {
    await Promise.all(workers.map((worker) => worker.terminate()));
  }
}

/**
 * A worker running verify-worker. From dist/ that is the compiled .js file. From source (the
 * tests run .ts under tsx), Node 20 does not pass tsx's loader hooks on to worker threads, so
 * the worker registers tsx itself before importing the .ts file.
 */
function startWorker(): Worker {
  const self = import.meta.url;
  if (!self.endsWith('.ts')) return new Worker(new URL('./verify-worker.js', self));
  const entry = new URL('./verify-worker.ts', self).href;
  const tsx = import.meta.resolve('tsx/esm/api');
  return new Worker(`import(${JSON.stringify(tsx)}).then((api) => { api.register(); return import(${JSON.stringify(entry)}); });`, { eval: true });
}

function byCodeUnit(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The text report of `oaibag verify`: each damaged bag with every problem (one stable line
 * each, naming the bag and the file), the archive's own problems, notes, then the totals.
 */
export function formatVerifyReport(report: VerifyReport): string {
  const lines: string[] = [];
  const damaged = new Map(report.damagedBags.map((bag) => [bag.bagPath, bag]));
  let current: string | undefined;
  for (const problem of report.problems) {
    if (problem.bagPath !== current) {
      current = problem.bagPath;
      const bag = damaged.get(current);
      if (bag !== undefined) lines.push(`damaged bag ${bag.bagPath}${bag.identifier === null ? '' : ` (${bag.identifier})`}: ${bag.problems} problem(s)`);
    }
    lines.push(damaged.has(problem.bagPath) ? `  ${problem.message}` : problem.message);
  }
  for (const note of report.notes) lines.push(`note: ${note}`);
  const mb = (bytes: number): string => `${(bytes / 1e6).toFixed(1)} MB`;
  lines.push(
    `verify (${report.fast ? 'fast: completeness, sizes and Payload-Oxum' : 'full: every checksum'}, ${report.jobs} job(s)): ` +
      `${report.bags} bag(s) checked, ${report.valid} valid, ${report.damaged} damaged; ${report.missingBags} missing bag(s), ` +
      `${report.uncataloguedBags} uncatalogued bag(s), ${report.pendingBags} pending; ${report.problems.length} problem(s); ` +
      `${mb(report.bytes)} of payload, ${mb(report.hashedBytes)} hashed in ${report.seconds.toFixed(1)} s; ${report.events} event(s) recorded`,
  );
  lines.push(report.ok ? 'archive OK' : 'archive NOT OK');
  return `${lines.join('\n')}\n`;
}
