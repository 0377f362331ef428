// `oaibag verify`: the fixity check of a whole archive. It holds the archive lock (no harvest
// writes meanwhile) but changes nothing in the archive's files: it reads bags and writes
// PREMIS-style events into the catalog, never into bags (a bag is immutable: editing a tag
// file would break its tag manifest).
//
// The catalog and the aips/ tree are compared both ways: a batch bag the catalog lists that is
// gone is a `missing-bag`, a bag the catalog does not list an `uncatalogued-bag` (one noted as
// pending — a harvest interrupted between rename and record — is only a note: the next harvest
// records it). Every bag found is verified by verifyBag in a pool of worker threads, whole bags
// per worker, and the report is sorted by bag path, so it is the same whatever the number of
// jobs. A payload file found damaged (or missing) is named with every version that relies on it:
// the version that brought the bytes and every revisit of them recorded in later bags.
//
// On an archive whose bags are on object storage, the bags found are the committed ones (their
// commit records, aip/s3-commit.ts); each is verified through the store by a worker that opens
// the store itself (verify-stored-bag.ts), which also compares the bag's objects with its commit
// record. Damage is reported in the same lines and kinds as in a folder.

import type { Dirent } from 'node:fs';
import { lstat, readdir, stat } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { AIPS_DIRECTORY, parseBatchFolder, parseHarvestFolder } from '../aip/layout-names.js';
import { S3Storage } from '../aip/s3-storage.js';
import { catalogLocation, type StoreLocation, storeLocation } from '../archive/archive-locations.js';
import type { ArchiveLock } from '../archive/archive-lock.js';
import { lockArchiveForWriting, lockArchiveIfWritable } from '../archive/read-only-archive.js';
import { resolveArchivePath, TEMP_DIRECTORY } from '../archive/storage-path.js';
import type { BagProblem, BagProblemKind } from '../bag/bag-verifier.js';
import { CATALOG_FILE_NAME, Catalog } from '../catalog/catalog.js';
import type { CatalogVerification, NewEvent } from '../catalog/catalog-types.js';
import { payloadsOfBag, type RelyingVersion, versionsRelyingOn, versionsRelyingOnBag } from '../catalog/verify-queries.js';
import { ArchiverError, isStorageExhausted } from '../core/errors.js';
import { startWorker } from '../core/start-worker.js';
import { runVerifyJob, type VerifyJob, type VerifyJobResult } from './verify-worker.js';

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
  /**
   * Record the check in the catalog: its fixity-check events and its summary (default true).
   * False (`--no-record`) writes nothing: the catalog is opened read-only and the lock is taken
   * only where it can be created, so that a read-only archive can be verified.
   */
  record?: boolean;
}

/**
 * What can be wrong: a bag's own problems (bag-verifier.ts), or the archive's: `missing-bag`
 * (catalogued, not on disk), `uncatalogued-bag`, `size` (the payload on disk, or one payload
 * file, is not the size the catalog recorded), `stray` (something in aips/ that is not a bag),
 * `unreadable`.
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
  problems: number;
}

/** A version that relies on a damaged payload file or a missing bag. */
export interface ReliantVersion {
  /** The source's OAI-PMH base URL. */
  source: string;
  identifier: string;
  datestamp: string;
  /** The batch bag holding the version's record. */
  bagPath: string;
  /** True when the record is in another bag: it revisits bytes held in the damaged one. */
  revisit: boolean;
}

/** A payload file damaged or missing (or a whole bag missing), with every version that relies on it. */
export interface DamagedPayload {
  bagPath: string;
  /** The file (`data/…`); null for a missing bag: every record and payload file in it is lost. */
  path: string | null;
  /** What is wrong, the worst when several: missing, then size, then checksum. */
  problem: 'missing-bag' | 'missing' | 'size' | 'checksum';
  /** Oldest first; empty when the catalog knows no version using the file (an uncatalogued bag). */
  versions: ReliantVersion[];
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
  /** Each damaged or missing payload file, and each missing bag, sorted by bag path then file. */
  damagedPayloads: DamagedPayload[];
  /** Distinct versions that rely on a damaged payload file or a missing bag. */
  affectedVersions: number;
  problems: ArchiveProblem[];
  /** Lines that are not problems (pending bags, tmp/ leftovers). */
  notes: string[];
  /** Payload bytes of the bags checked. */
  bytes: number;
  /** Bytes read to compute checksums (tag files, and payload unless fast). */
  hashedBytes: number;
  /** Fixity-check events written to the catalog. */
  events: number;
  /** False for a check run with `record: false` (`--no-record`): nothing was written. */
  recorded: boolean;
  seconds: number;
  /** True when nothing is wrong (exit 0). */
  ok: boolean;
}

/** What the catalog says about a bag path. */
interface Known {
  sourceId: number | null;
  harvestId: number | null;
  records: number | null;
  /** The bag's payload bytes, as recorded. */
  size: number | null;
  pending: boolean;
}

/** The problems that damage a payload file, worst first (see {@link DamagedPayload.problem}). */
const PAYLOAD_DAMAGE: ReadonlyArray<DamagedPayload['problem']> = ['missing', 'size', 'checksum'];

/**
 * Checks the fixity of the archive at `archiveDir`: every catalogued and every found bag is
 * verified (in full, or `fast`), each payload file the catalog places in a bag is measured
 * against the size it recorded, missing and uncatalogued bags are reported, every damaged payload
 * is named with the versions relying on it, and one `fixity check` event per bag checked (and
 * per missing bag) is written to the catalog, 500 per transaction. Throws ERR_ARCHIVE_CATALOG
 * when there is no catalog, ERR_ARCHIVE_LOCKED while a harvest runs, ERR_ARCHIVE_USAGE for a
 * bad `jobs`.
 */
export async function verifyArchive(options: VerifyArchiveOptions): Promise<VerifyReport> {
  const started = Date.now();
  const fast = options.fast === true;
  const jobs = options.jobs ?? availableParallelism();
  if (!Number.isSafeInteger(jobs) || jobs < 1) throw new ArchiverError('ERR_ARCHIVE_USAGE', `jobs must be a whole number of at least 1, not ${jobs}`);
  const archiveDir = options.archiveDir;
  await requireCatalogFile(archiveDir);
  const record = options.record !== false;
  const lock = await lockVerify(archiveDir, record);
  let catalog: Catalog | undefined;
  try {
    catalog = record ? Catalog.open(archiveDir, { create: false }) : Catalog.openForReading(archiveDir);
    const report = await check(catalog, { ...options, fast, jobs, record }, started);
    if (lock === undefined) report.notes.push('the archive is read-only: checked without its lock (nothing can change it meanwhile but its owner)');
    return report;
  } finally {
    catalog?.close();
    await lock?.release();
  }
}

/**
 * The lock, so that no harvest changes the archive under the check. Without recording, a
 * read-only archive (where no lock file can be created) is checked without it.
 */
function lockVerify(archiveDir: string, record: boolean): Promise<ArchiveLock | undefined> {
  if (!record) return lockArchiveIfWritable(archiveDir, 'verify --no-record');
  return lockArchiveForWriting(archiveDir, 'verify', {
    writes: 'verify records its fixity-check events in the catalog',
    hint: 'check it without recording: oaibag verify --no-record',
  });
}

/**
 * Checks the bags at `bagPaths` again, in full and in this thread, as {@link verifyArchive}
 * checks each bag (the verifier, then the payload sizes the catalog recorded): what `oaibag
 * repair` runs on the bags it wrote into, under its lock. Records nothing.
 */
export async function recheckBags(
  catalog: Catalog,
  archiveDir: string,
  bagPaths: readonly string[],
): Promise<{ problems: ArchiveProblem[]; bytes: number; hashedBytes: number }> {
  const known = catalogueBags(catalog);
  const problems: ArchiveProblem[] = [];
  let bytes = 0;
  let hashedBytes = 0;
  for (const [id, path] of [...bagPaths].sort(byCodeUnit).entries()) {
    const files = known.get(path)?.pending === false ? payloadsOfBag(catalog, path) : [];
    const result = await runVerifyJob({ id, bagDir: resolveArchivePath(archiveDir, path), fast: false, payloads: files.map((file) => file.path) });
    bytes += result.tally?.payloadBytes ?? 0;
    hashedBytes += result.tally?.hashedBytes ?? 0;
    problems.push(...problemsOf(path, known.get(path), result, files));
  }
  return { problems, bytes, hashedBytes };
}

/** The check itself, under the lock, with the catalog open. */
async function check(
  catalog: Catalog,
  options: VerifyArchiveOptions & { fast: boolean; jobs: number; record: boolean },
  started: number,
): Promise<VerifyReport> {
  const { archiveDir, fast, jobs, record } = options;
  const known = catalogueBags(catalog);
  const problems = new Map<string, ArchiveProblem[]>();
  const complain = (problem: ArchiveProblem): void => {
    const list = problems.get(problem.bagPath);
    if (list === undefined) problems.set(problem.bagPath, [problem]);
    else list.push(problem);
  };
  const notes: string[] = [];

  const location = storeLocation(archiveDir);
  const onDisk = location === undefined ? await findBags(archiveDir, known, complain) : await committedBags(location);
  const { toCheck, missing, uncatalogued, pending } = takeInventory(known, onDisk, complain, notes);
  const tmpLeftovers = (await readdir(join(archiveDir, TEMP_DIRECTORY)).catch(() => [])).length;
  if (tmpLeftovers > 0) notes.push(`${TEMP_DIRECTORY}/: ${tmpLeftovers} leftover(s) of an interrupted harvest; the next harvest removes them`);

  // Verify, writing the events in batches as results come in.
  const events = new EventRecorder(catalog, known, fast ? 'fast' : 'full', record);
  const damagedPayloads = missing.map(
    (path): DamagedPayload => ({ bagPath: path, path: null, problem: 'missing-bag', versions: reliant(versionsRelyingOnBag(catalog, path)) }),
  );
  for (const lost of damagedPayloads) events.add(lost.bagPath, 'failure', `the bag is missing; ${lost.versions.length} version(s) rely on it`);

  let bytes = 0;
  let hashedBytes = 0;
  let done = 0;
  const damagedBags: DamagedBag[] = [];
  const payloads = new Map<number, Array<{ path: string; size: number }>>();
  await runPool(
    toCheck.length,
    jobs,
    (id): VerifyJob => {
      const path = toCheck[id]!;
      const files = known.get(path)?.pending === false ? payloadsOfBag(catalog, path) : [];
      payloads.set(id, files);
      const payloadPaths = files.map((file) => file.path);
      if (location !== undefined) return { id, bagDir: path, stored: { location, bagPath: path }, fast, payloads: payloadPaths };
      return { id, bagDir: resolveArchivePath(archiveDir, path), fast, payloads: payloadPaths };
    },
    (result) => {
      const path = toCheck[result.id]!;
      const found = problemsOf(path, known.get(path), result, payloads.get(result.id) ?? []);
      payloads.delete(result.id);
      if (result.tally) {
        bytes += result.tally.payloadBytes;
        hashedBytes += result.tally.hashedBytes;
      }
      found.forEach(complain);
      const damage = damagedPayloadsOf(catalog, path, found);
      damagedPayloads.push(...damage);
      if (found.length > 0) damagedBags.push({ bagPath: path, problems: found.length });
      events.add(path, found.length === 0 ? 'success' : 'failure', eventDetail(path, found, damage));
      options.progress?.(++done, toCheck.length, bytes);
    },
  );
  events.flush();
  if (events.unrecorded > 0) {
    notes.push(`catalog: no room left on its file system: ${events.unrecorded} fixity-check event(s) not recorded; free space and verify again to record them`);
  }

  damagedBags.sort((a, b) => byCodeUnit(a.bagPath, b.bagPath));
  damagedPayloads.sort((a, b) => byCodeUnit(a.bagPath, b.bagPath) || byCodeUnit(a.path ?? '', b.path ?? ''));
  const all = [...problems.keys()].sort(byCodeUnit).flatMap((path) => problems.get(path)!);
  const affected = new Set(damagedPayloads.flatMap((damage) => damage.versions.map((v) => `${v.source}\n${v.identifier}\n${v.datestamp}\n${v.bagPath}`)));
  // The check's summary, for `oaibag status` and monitoring (recorded with the events).
  events.recordSummary({
    kind: fast ? 'fast' : 'full',
    startedAt: new Date(started).toISOString(),
    endedAt: new Date().toISOString(),
    bags: toCheck.length + missing.length,
    bytes: hashedBytes,
    damaged: all.length,
  });
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
    damagedPayloads,
    affectedVersions: affected.size,
    problems: all,
    notes,
    bytes,
    hashedBytes,
    events: events.recorded,
    recorded: record,
    seconds: (Date.now() - started) / 1000,
    ok: all.length === 0,
  };
}

/** ERR_ARCHIVE_CATALOG unless the archive has a catalog: verify never creates one (a PostgreSQL catalog is checked when opened). */
async function requireCatalogFile(archiveDir: string): Promise<void> {
  if (catalogLocation(archiveDir) !== undefined) return;
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
      message: `${path}: missing-bag: the catalog lists it (harvest ${entry.harvestId ?? '?'}, ${entry.records} record(s), ${entry.size} payload bytes) but it is not on disk`,
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
      notes.push(`${path}: pending: noted by an interrupted harvest (harvest ${entry.harvestId ?? '?'}); the next harvest records it`);
    }
  }
  return { toCheck, missing, uncatalogued, pending };
}

/**
 * The problems of one bag's result: the verifier's, an unreadable bag, a payload size other than
 * the catalog's (the bag's, and each payload file's), or a catalogued payload file not there
 * that the manifests do not name either.
 */
function problemsOf(path: string, entry: Known | undefined, result: VerifyJobResult, payloads: Array<{ path: string; size: number }>): ArchiveProblem[] {
  if (result.error !== undefined) return [{ kind: 'unreadable', bagPath: path, message: `${path}: cannot be read: ${result.error}` }];
  const found: ArchiveProblem[] = result.report!.problems.map((problem) => ({ ...problem, bagPath: path, message: `${path}: ${problem.message}` }));
  for (const problem of result.commitProblems ?? []) found.push({ ...problem, bagPath: path, message: `${path}: ${problem.message}` });
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
  const named = new Set(found.filter((problem) => problem.kind === 'missing').map((problem) => problem.path));
  payloads.forEach((file, index) => {
    const onDisk = result.sizes?.[index] ?? null;
    if (onDisk === null && !named.has(file.path)) {
      found.push({ kind: 'missing', bagPath: path, path: file.path, message: `${path}: ${file.path} is in the catalog but not a file on disk` });
    } else if (onDisk !== null && onDisk !== file.size) {
      const expected = String(file.size);
      found.push({
        kind: 'size',
        bagPath: path,
        path: file.path,
        expected,
        found: String(onDisk),
        message: `${path}: ${file.path} is ${onDisk} bytes on disk, the catalog records ${expected}`,
      });
    }
  });
  return found;
}

/** The payload files of one bag that its problems damage, each once with the versions relying on it. */
function damagedPayloadsOf(catalog: Catalog, bagPath: string, found: ArchiveProblem[]): DamagedPayload[] {
  const worst = new Map<string, DamagedPayload['problem']>();
  for (const problem of found) {
    const kind = PAYLOAD_DAMAGE.find((damage) => damage === problem.kind);
    if (kind === undefined || problem.path === undefined || !problem.path.startsWith('data/') || problem.path === 'data/') continue;
    const before = worst.get(problem.path);
    if (before === undefined || PAYLOAD_DAMAGE.indexOf(kind) < PAYLOAD_DAMAGE.indexOf(before)) worst.set(problem.path, kind);
  }
  return [...worst].map(([path, problem]) => ({ bagPath, path, problem, versions: reliant(versionsRelyingOn(catalog, bagPath, path)) }));
}

function reliant(versions: RelyingVersion[]): ReliantVersion[] {
  return versions.map(({ source, identifier, datestamp, bagPath, revisit }) => ({ source, identifier, datestamp, bagPath, revisit }));
}

/** A fixity-check event's detail: the bag's problems (at most 20) and the versions relying on its damaged payloads. */
function eventDetail(bagPath: string, found: ArchiveProblem[], damage: DamagedPayload[]): string {
  if (found.length === 0) return 'intact';
  const shown = found.slice(0, 20).map((problem) => problem.message.slice(bagPath.length + 2));
  const relying = new Set(damage.flatMap((file) => file.versions.map((version) => `${version.identifier}\n${version.datestamp}`))).size;
  const payloads = damage.length === 0 ? '' : `; ${damage.length} damaged payload file(s), ${relying} version(s) rely on them`;
  return `${found.length} problem(s)${payloads}: ${shown.join('; ')}${found.length > shown.length ? '; …' : ''}`;
}

/**
 * The fixity-check events of a verify, written to the catalog in batches as results come in:
 * one per bag, tied to the bag's source only (a batch bag holds many versions, and the check
 * is no part of the harvest that wrote it: the bag's path is in the detail). A full disk must
 * not stop the check itself: the bags are still verified and reported, only the record of it in
 * the catalog is missing (counted in `unrecorded`, said in the notes). With `record` false
 * (`--no-record`) nothing at all is written: the one flag every write of verify depends on.
 */
class EventRecorder {
  private readonly events: NewEvent[] = [];
  recorded = 0;
  unrecorded = 0;

  constructor(
    private readonly catalog: Catalog,
    private readonly known: Map<string, Known>,
    private readonly mode: 'fast' | 'full',
    private readonly record: boolean,
  ) {}

  add(path: string, outcome: 'success' | 'failure', detail: string): void {
    if (!this.record) return;
    const entry = this.known.get(path);
    this.events.push({
      sourceId: entry?.sourceId ?? null,
      type: 'fixity check',
      outcome,
      detail: `oaibag verify (${this.mode}): ${path}: ${detail}`,
    });
    if (this.events.length >= VERIFY_EVENT_BATCH) this.flush();
  }

  /** Records the check's summary row; like the events, skipped (and noted) when the disk is full. */
  recordSummary(verification: CatalogVerification): void {
    if (!this.record) return;
    try {
      this.catalog.recordVerification(verification);
    } catch (error) {
      if (!isStorageExhausted(error)) throw error;
    }
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

/** Every bag path the catalog knows: recorded batch bags, and bags noted as pending. */
function catalogueBags(catalog: Catalog): Map<string, Known> {
  const known = new Map<string, Known>();
  for (const bag of catalog.bags()) {
    known.set(bag.bagPath, { sourceId: bag.sourceId, harvestId: bag.harvestId, records: bag.records, size: bag.payloadBytes, pending: false });
  }
  for (const bag of catalog.pendingBags()) {
    if (!known.has(bag.bagPath)) known.set(bag.bagPath, { sourceId: null, harvestId: bag.harvestId, records: null, size: null, pending: true });
  }
  return known;
}

/**
 * The bags on disk: directories at aips/harvest-<n>/batch-<n>/ holding bagit.txt, and any
 * catalogued bag path that exists as a directory (wherever it is). Anything else in aips/ — a
 * file, a link, a folder of another name, a batch folder without bagit.txt that nothing lists —
 * is a `stray` problem (a folder on the way to a catalogued bag excepted). Empty harvest folders
 * are ignored. Links are never followed.
 */
async function findBags(archiveDir: string, known: Map<string, Known>, complain: (problem: ArchiveProblem) => void): Promise<Set<string>> {
  const bags = new Set<string>();
  const leadsToKnown = (path: string): boolean => known.has(path) || [...known.keys()].some((bag) => bag.startsWith(`${path}/`));
  const stray = (path: string, entry: Dirent, why = 'a folder whose name is not part of the aips/harvest-<n>/batch-<n> layout'): void => {
    if (entry.isDirectory() && leadsToKnown(path)) return;
    const what = entry.isSymbolicLink() ? 'a symbolic link in the bag tree' : entry.isDirectory() ? why : 'a file where only folders belong';
    complain({ kind: 'stray', bagPath: path, message: `${path}: stray: ${what}` });
  };
  for (const harvest of await listFolder(archiveDir, AIPS_DIRECTORY, complain)) {
    const folder = `${AIPS_DIRECTORY}/${harvest.name}`;
    if (!harvest.isDirectory() || parseHarvestFolder(harvest.name) === undefined) {
      stray(folder, harvest);
      continue;
    }
    for (const batch of await listFolder(archiveDir, folder, complain)) {
      const path = `${folder}/${batch.name}`;
      if (!batch.isDirectory() || parseBatchFolder(batch.name) === undefined) stray(path, batch);
      else if (known.has(path) || (await exists(join(archiveDir, ...path.split('/'), 'bagit.txt')))) bags.add(path);
      else stray(path, batch, 'a batch folder without bagit.txt that the catalog does not list');
    }
  }
  // Catalogued bags outside the documented layout (a moved archive) are still checked.
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
 * The bags of an archive on object storage: every bag with a commit record. Objects no commit
 * names (a writer that died before committing) are no bag and never a problem: they were never
 * part of the archive.
 */
async function committedBags(location: StoreLocation): Promise<Set<string>> {
  const store = await S3Storage.openForReading(location);
  try {
    const bags = new Set<string>();
    for await (const bag of store.committedBags()) bags.add(bag);
    return bags;
  } finally {
    store.close();
  }
}

/** A folder's entries in code-unit order; none (and an `unreadable` problem) when it cannot be listed. A missing aips/ is empty. */
async function listFolder(archiveDir: string, rel: string, complain: (problem: ArchiveProblem) => void): Promise<Dirent[]> {
  try {
    const entries = await readdir(join(archiveDir, ...rel.split('/')), { withFileTypes: true });
    return entries.sort((a, b) => byCodeUnit(a.name, b.name));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (rel === AIPS_DIRECTORY && code === 'ENOENT') return [];
    complain({ kind: 'unreadable', bagPath: rel, message: `${rel}: cannot be listed: ${code ?? (error as Error).message}` });
    return [];
  }
}

function exists(path: string): Promise<boolean> {
  return lstat(path).then(
    () => true,
    () => false,
  );
}

/**
 * Runs `count` jobs (made by `makeJob` when a worker is free) on `jobs` worker threads (never
 * more than there are jobs), one bag per worker at a time, calling `onResult` as each answers.
 * A worker that dies rejects the whole run.
 */
async function runPool(count: number, jobs: number, makeJob: (id: number) => VerifyJob, onResult: (result: VerifyJobResult) => void): Promise<void> {
  if (count === 0) return;
  const workers: Worker[] = [];
  let next = 0;
  let answered = 0;
  try {
    await new Promise<void>((resolve, reject) => {
      const feed = (worker: Worker): void => {
        if (next >= count) return;
        try {
          worker.postMessage(makeJob(next++));
        } catch (error) {
          reject(error);
        }
      };
      for (let i = 0; i < Math.min(jobs, count); i++) {
        const worker = startVerifyWorker();
        workers.push(worker);
        worker.on('message', (result: VerifyJobResult) => {
          try {
            onResult(result);
          } catch (error) {
            return reject(error);
          }
          if (++answered === count) resolve();
          else feed(worker);
        });
        worker.on('error', (error) => reject(new ArchiverError('ERR_ARCHIVE_IO', `a verify worker failed: ${error.message}`, { cause: error })));
        worker.on('exit', (code) => {
          if (answered < count) reject(new ArchiverError('ERR_ARCHIVE_IO', `a verify worker exited early (code ${code})`));
        });
        feed(worker);
      }
    });
  } finally {
    await Promise.all(workers.map((worker) => worker.terminate()));
  }
}

/** A worker running verify-worker.ts. */
function startVerifyWorker(): Worker {
  return startWorker(import.meta.url, 'verify', 'verify-worker');
}

function byCodeUnit(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The text report of `oaibag verify`: each damaged bag with every problem (one stable line
 * each, naming the bag and the file) and, under the first line naming a damaged payload file
 * (or a missing bag), one line per version relying on it; the archive's own problems, notes,
 * then the totals.
 */
export function formatVerifyReport(report: VerifyReport): string {
  const lines: string[] = [];
  const damaged = new Map(report.damagedBags.map((bag) => [bag.bagPath, bag]));
  const reliance = new Map(report.damagedPayloads.map((payload) => [`${payload.bagPath}\n${payload.path ?? ''}`, payload]));
  let current: string | undefined;
  for (const problem of report.problems) {
    if (problem.bagPath !== current) {
      current = problem.bagPath;
      const bag = damaged.get(current);
      if (bag !== undefined) lines.push(`damaged bag ${bag.bagPath}: ${bag.problems} problem(s)`);
    }
    const indent = damaged.has(problem.bagPath) ? '  ' : '';
    lines.push(`${indent}${problem.message}`);
    const payload = reliance.get(`${problem.bagPath}\n${problem.kind === 'missing-bag' ? '' : (problem.path ?? '')}`);
    if (payload === undefined || (payload.problem !== 'missing-bag' && !PAYLOAD_DAMAGE.includes(problem.kind as DamagedPayload['problem']))) continue;
    reliance.delete(`${payload.bagPath}\n${payload.path ?? ''}`); // named once, under its first problem
    if (payload.versions.length === 0) lines.push(`${indent}  relied on by no version the catalog knows`);
    for (const version of payload.versions) {
      lines.push(
        `${indent}  relied on by ${version.identifier} (datestamp ${version.datestamp})${version.revisit ? `, a revisit recorded in ${version.bagPath}` : ''}`,
      );
    }
  }
  for (const note of report.notes) lines.push(`note: ${note}`);
  const mb = (bytes: number): string => `${(bytes / 1e6).toFixed(1)} MB`;
  lines.push(
    `verify (${report.fast ? 'fast: completeness, sizes and Payload-Oxum' : 'full: every checksum'}, ${report.jobs} job(s)): ` +
      `${report.bags} bag(s) checked, ${report.valid} valid, ${report.damaged} damaged; ${report.missingBags} missing bag(s), ` +
      `${report.uncataloguedBags} uncatalogued bag(s), ${report.pendingBags} pending; ${report.problems.length} problem(s); ` +
      `${report.affectedVersions} version(s) rely on a damaged payload or missing bag; ` +
      `${mb(report.bytes)} of payload, ${mb(report.hashedBytes)} hashed in ${report.seconds.toFixed(1)} s; ` +
      (report.recorded ? `${report.events} event(s) recorded` : 'nothing recorded (--no-record)'),
  );
  lines.push(report.ok ? 'archive OK' : 'archive NOT OK');
  return `${lines.join('\n')}\n`;
}
