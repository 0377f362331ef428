// `oaibag restore`: rebuilds a web site from the archive's AIPs. The catalog says which
// version of which resource is current at the chosen instant (restore-plan.ts), the URL says
// where it goes (restore-path.ts), and the bag gives the bytes, which are checked against the
// bag's manifest and the catalog while they are written to a temporary file beside their
// target; only verified bytes are renamed into place. A damaged bag, a refused URL or a path
// that cannot be written is reported and skipped; the others are still restored.
//
// No archive lock: bags are immutable once in place, and the catalog is only read (in one
// read transaction, so a harvest committing meanwhile is not half seen).

import { createHash, randomBytes } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import { type FileHandle, lstat, mkdir, open, readdir, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fsyncFolderIfPossible, openDiskFlusher } from '../archive/flush-to-disk.js';
import { resolveArchivePath } from '../archive/storage-path.js';
import { Catalog } from '../catalog/catalog.js';
import { deletionsOfSource, sourceList, versionsOfSource } from '../catalog/restore-queries.js';
import { ArchiverError, isStorageExhausted, noRoomError } from '../core/errors.js';
import { writeFully } from '../core/write-fully.js';
import { Damage, lastModified, OPEN_PAYLOAD, parseManifest, readTag, recordOrder, sha256 } from './restore-bag.js';
import { findCollisions, restorePathFor } from './restore-path.js';
import { datestampSeconds, formatInstant, type PlanDeletion, type PlanVersion, parseAsOf, planRestore } from './restore-plan.js';

export interface RestoreOptions {
  archiveDir: string;
  /** The folder the site is rebuilt in (created when missing). */
  to: string;
  /** Restore only this source (its OAI-PMH base URL, as harvested); default: every source. */
  source?: string;
  /** `YYYY-MM-DD` (end of that day, UTC) or a date-time with a zone; default: the latest state. */
  asOf?: string;
  /** Decide and report what would be written, write nothing. */
  dryRun?: boolean;
  /** Each problem, one line, as it is found (the command prints them on stderr). */
  log?: (line: string) => void;
  /** After each file, with the totals planned (bytes as the catalog records them). */
  progress?: (done: RestoreCounts, total: RestoreCounts) => void;
}

export interface RestoreCounts {
  files: number;
  bytes: number;
}

/** A file written (or, with `dryRun`, that would be written). */
export interface RestoredFile {
  /** Relative to the restore folder, `/`-separated. */
  path: string;
  identifier: string;
  /** Bytes (dry run: the catalog's size of the version, for a compound object all its parts). */
  size: number;
  datestamp: string;
}

/** A resource not restored, and why. `kind`: the URL is refused, or two resources claim one path, or something in the folder is in the way. */
export interface RefusedResource {
  kind: 'path' | 'collision' | 'in-the-way';
  identifier: string;
  reason: string;
}

/** A bag whose bytes or tag files fail verification: nothing of it is written. */
export interface DamagedBag {
  identifier: string;
  /** The bag folder, as a path the user can hand to `oaibag verify`. */
  bag: string;
  problem: string;
  expected?: string;
  found?: string;
}

/** What `oaibag restore` did; `--json` prints this. */
export interface RestoreSummary {
  archive: string;
  to: string;
  /** The instant restored (`YYYY-MM-DDThh:mm:ssZ`), null for the latest state. */
  asOf: string | null;
  dryRun: boolean;
  sources: string[];
  /** Files written (dry run: that would be written). */
  restored: number;
  bytes: number;
  /** Resources that had a version but are deleted at the instant. */
  deleted: number;
  /** Resources live at the instant whose record carried no datastream (metadata only): nothing to write. */
  metadataOnly: number;
  refused: RefusedResource[];
  damaged: DamagedBag[];
  /** Resources whose file could not be written (I/O errors), with the message. */
  failed: Array<{ identifier: string; path: string; message: string }>;
  /** Compound objects: the first part is restored at the URL's path, these parts are not. */
  extraParts: Array<{ identifier: string; bag: string; parts: string[] }>;
  /** Dry run only: every file that would be written, in path order. */
  planned: RestoredFile[];
  /** refused + damaged + failed (+ unreadable datestamps): the command exits 1 when > 0. */
  problems: number;
}

/** Names of the files a restore leaves only while it writes one (a crash can leave one behind). */
export const RESTORE_TEMP_PREFIX = '.oaibag-restore-';

const OPEN_TEMP = fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW;
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;
/** Text from a remote repository shown on one line, control characters escaped. */
const show = (text: string): string => text.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

class InTheWay extends Error {}

/** A verified file under its temporary name, waiting for its batch to be made durable. */
interface StagedFile {
  temp: string;
  target: string;
  folder: string;
  size: number;
  extraParts: string[];
  version: PlanVersion;
  bag: string;
  path: string;
}

/** A batch is made durable and renamed at this many files or bytes, whichever comes first. */
const BATCH_FILES = 256;
const BATCH_BYTES = 256 * 1024 * 1024;
/** Files read from their bags and written at once. */
const PARALLEL_FILES = 4;

/**
 * Rebuilds the site(s) of an archive in `options.to`: every resource live at `asOf` (default:
 * latest), in its version current then, at the path its URL gives, with its Last-Modified as
 * mtime. Never throws for one resource's trouble (it is in the summary); throws
 * ERR_ARCHIVE_USAGE for a bad `asOf` or unknown `source`, ERR_ARCHIVE_CATALOG when there is no
 * catalog, ERR_ARCHIVE_IO when the restore folder cannot be made.
 */
export async function restoreSite(options: RestoreOptions): Promise<RestoreSummary> {
  const asOf = options.asOf === undefined ? undefined : parseAsOf(options.asOf);
  const log = options.log ?? (() => undefined);
  const catalog = Catalog.open(options.archiveDir, { create: false });
  let rows: { sources: string[]; versions: PlanVersion[]; deletions: PlanDeletion[]; identifiers: Map<number, string> };
  try {
    rows = readCatalog(catalog, options.source);
  } finally {
    catalog.close();
  }
  const summary: RestoreSummary = {
    archive: options.archiveDir,
    to: options.to,
    asOf: asOf === undefined ? null : formatInstant(asOf),
    dryRun: options.dryRun === true,
    sources: rows.sources,
    restored: 0,
    bytes: 0,
    deleted: 0,
    metadataOnly: 0,
    refused: [],
    damaged: [],
    failed: [],
    extraParts: [],
    planned: [],
    problems: 0,
  };
  const refuse = (kind: RefusedResource['kind'], identifier: string, reason: string): void => {
    summary.refused.push({ kind, identifier, reason });
    log(`${kind === 'path' ? 'refused' : kind} ${show(identifier)}: ${show(reason)}`);
  };

  const plan = planRestore(rows.versions, rows.deletions, asOf);
  summary.deleted = plan.deleted.length;
  for (const row of plan.unreadable) {
    summary.failed.push({ identifier: rows.identifiers.get(row.resourceId) ?? '', path: '', message: `unreadable ${row.kind} datestamp ${row.datestamp}` });
    log(`failed ${show(rows.identifiers.get(row.resourceId) ?? `resource ${row.resourceId}`)}: unreadable ${row.kind} datestamp ${show(row.datestamp)}`);
  }

  // Paths first, for the whole plan: collisions are decided before anything is written.
  const withHost = rows.sources.length > 1;
  const mapped: Array<{ version: PlanVersion; path: string; segments: string[] }> = [];
  const withPayload = plan.live.filter((version) => version.payloadFiles !== 0);
  summary.metadataOnly = plan.live.length - withPayload.length;
  for (const version of withPayload) {
    const target = restorePathFor(version.identifier, { withHost });
    if (target.ok) mapped.push({ version, path: target.path, segments: target.segments });
    else refuse('path', version.identifier, `the URL ${target.reason}`);
  }
  mapped.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const lost = findCollisions(mapped.map((entry) => entry.path));
  for (const [index, winner] of lost) {
    const { version, path } = mapped[index]!;
    refuse('collision', version.identifier, `its path ${path} is taken by ${mapped[winner]!.version.identifier} (${mapped[winner]!.path})`);
  }
  const work = mapped.filter((_, index) => !lost.has(index));
  const total = { files: work.length, bytes: work.reduce((sum, entry) => sum + entry.version.size, 0) };

  if (summary.dryRun) {
    for (const { version, path } of work) summary.planned.push({ path, identifier: version.identifier, size: version.size, datestamp: version.datestamp });
    summary.restored = work.length;
    summary.bytes = total.bytes;
  } else {
    const root = resolve(options.to);
    await mkdir(root, { recursive: true }).catch((error: unknown) => {
      throw new ArchiverError('ERR_ARCHIVE_IO', `cannot create the restore folder ${root}: ${(error as Error).message}`, { cause: error, path: root });
    });
    const stale = await removeStaleTemporaries(root);
    if (stale > 0) log(`removed ${stale} temporary file(s) left by an interrupted restore`);
    const folders = new Set<string>(); // relative folders known to be real directories
    const touched = new Set<string>([root]); // folders whose entries changed: flushed at the end
    const damaged = (version: PlanVersion, bag: string, error: Damage): void => {
      summary.damaged.push({
        identifier: version.identifier,
        bag,
        problem: error.message,
        ...(error.expected !== undefined ? { expected: error.expected } : {}),
        ...(error.found !== undefined ? { found: error.found } : {}),
      });
      log(`damaged bag ${show(bag)} (${show(version.identifier)}): ${show(error.message)}`);
    };
    const failed = (version: PlanVersion, path: string, error: unknown): void => {
      // No room left fails every file after this one too: stop, with one line, instead.
      if (isStorageExhausted(error)) {
        throw noRoomError(`the restore folder ${root}`, root, error, 'free space there, then run the same restore again');
      }
      const message = (error as Error).message;
      summary.failed.push({ identifier: version.identifier, path, message });
      log(`failed ${show(version.identifier)}: cannot write ${show(path)}: ${show(message)}`);
    };
    // Verified files wait under their temporary names and are made durable a batch at a time
    // (one syncfs where available), then renamed: the same guarantee as fsyncing each, for a
    // fraction of the cost (see flush-to-disk.ts).
    const flusher = await openDiskFlusher(root);
    let batch: StagedFile[] = [];
    let batchBytes = 0;
    const place = async (): Promise<void> => {
      const staged = batch;
      batch = [];
      batchBytes = 0;
      try {
        await flusher.flush({ files: staged.map((file) => file.temp) });
      } catch (error) {
        for (const file of staged) {
          await rm(file.temp, { force: true }).catch(() => undefined);
          failed(file.version, file.path, error);
        }
        return;
      }
      for (const file of staged) {
        try {
          const existing = await lstat(file.target).catch(() => undefined);
          if (existing?.isDirectory()) throw new InTheWay(`${file.path} is a folder in the restore folder`);
          await rename(file.temp, file.target);
          touched.add(file.folder);
          summary.restored += 1;
          summary.bytes += file.size;
          if (file.extraParts.length > 0) summary.extraParts.push({ identifier: file.version.identifier, bag: file.bag, parts: file.extraParts });
        } catch (error) {
          await rm(file.temp, { force: true }).catch(() => undefined);
          if (error instanceof InTheWay) refuse('in-the-way', file.version.identifier, error.message);
          else failed(file.version, file.path, error);
        }
        options.progress?.({ files: summary.restored, bytes: summary.bytes }, total);
      }
    };
    // A few files are read and written at once (each is a dozen file-system calls, mostly
    // waiting: one at a time left the process idle 70% of a restore); outcomes are taken in
    // the plan's order, so reports and the summary do not depend on timing.
    type Outcome = { entry: (typeof work)[number]; bag: string; staged?: Awaited<ReturnType<typeof stageOne>>; error?: unknown };
    const window: Array<Promise<Outcome>> = [];
    const take = async (outcome: Outcome): Promise<void> => {
      const { entry, bag, staged, error } = outcome;
      if (staged) {
        batch.push({ ...staged, version: entry.version, bag, path: entry.path });
        batchBytes += staged.size;
        if (batch.length >= BATCH_FILES || batchBytes >= BATCH_BYTES) await place();
        return;
      }
      // Out of room: the verified files staged so far are still placed, then the restore stops.
      if (isStorageExhausted(error)) await place();
      if (error instanceof Damage) damaged(entry.version, bag, error);
      else if (error instanceof InTheWay) refuse('in-the-way', entry.version.identifier, error.message);
      else failed(entry.version, entry.path, error);
      options.progress?.({ files: summary.restored, bytes: summary.bytes }, total);
    };
    try {
      for (const entry of work) {
        const bag = join(options.archiveDir, entry.version.bagPath);
        window.push(
          stageOne(options.archiveDir, root, entry.version, entry.segments, folders, touched).then(
            (staged) => ({ entry, bag, staged }),
            (error: unknown) => ({ entry, bag, error }),
          ),
        );
        if (window.length >= PARALLEL_FILES) await take(await window.shift()!);
      }
      while (window.length > 0) await take(await window.shift()!);
      await place();
      if (flusher.mode === 'filesystem') await flusher.flush({ folders: [root] }).catch(() => undefined);
      else for (const folder of touched) await fsyncFolderIfPossible(folder);
    } finally {
      // Files still being staged when something failed: let them finish, then remove them.
      for (const outcome of await Promise.all(window))
        if (outcome.staged) batch.push({ ...outcome.staged, version: outcome.entry.version, bag: outcome.bag, path: outcome.entry.path });
      for (const file of batch) await rm(file.temp, { force: true }).catch(() => undefined);
      await flusher.close();
    }
  }
  summary.problems = summary.refused.length + summary.damaged.length + summary.failed.length;
  return summary;
}

/** The sources restored and their versions and deletions, read in one transaction. */
function readCatalog(
  catalog: Catalog,
  only: string | undefined,
): { sources: string[]; versions: PlanVersion[]; deletions: PlanDeletion[]; identifiers: Map<number, string> } {
  return catalog.read(() => {
    let sources = sourceList(catalog);
    if (only !== undefined) {
      const chosen = sources.filter((source) => source.baseUrl === only || source.baseUrl === only.replace(/\/+$/, ''));
      if (chosen.length === 0) {
        throw new ArchiverError('ERR_ARCHIVE_USAGE', `the archive has no source ${only}`, {
          hint: sources.length > 0 ? `its sources: ${sources.map((source) => source.baseUrl).join(', ')}` : 'the archive has no source yet',
        });
      }
      sources = chosen;
    }
    const versions: PlanVersion[] = [];
    const deletions: PlanDeletion[] = [];
    const identifiers = new Map<number, string>();
    for (const source of sources) {
      for (const version of versionsOfSource(catalog, source.id)) {
        versions.push(version);
        identifiers.set(version.resourceId, version.identifier);
      }
      for (const deletion of deletionsOfSource(catalog, source.id)) {
        deletions.push({ resourceId: deletion.resourceId, datestamp: deletion.datestamp });
        identifiers.set(deletion.resourceId, deletion.identifier);
      }
    }
    return { sources: sources.map((source) => source.baseUrl), versions, deletions, identifiers };
  });
}

/**
 * Writes one version beside its place below `root`, under a temporary name: the bag's tag
 * files that are used are checked against tagmanifest-sha256.txt, the payload streamed into
 * the temporary file while hashed, compared with the manifest and the catalog, and given its
 * mtime. The caller makes it durable and renames it (see restoreSite). Throws Damage (the
 * bag), InTheWay (the restore folder) or an I/O error, and then leaves no temporary file.
 */
async function stageOne(
  archiveDir: string,
  root: string,
  version: PlanVersion,
  segments: string[],
  folders: Set<string>,
  touched: Set<string>,
): Promise<{ temp: string; target: string; folder: string; size: number; extraParts: string[] }> {
  let bagDir: string;
  try {
    bagDir = resolveArchivePath(archiveDir, version.bagPath);
  } catch (error) {
    throw new Damage(`the catalog's bag path is unsafe: ${(error as Error).message}`);
  }
  const tagManifest = parseManifest(await readTag(bagDir, 'tagmanifest-sha256.txt'), 'tagmanifest-sha256.txt');
  const readListed = async (name: string): Promise<Buffer | undefined> => {
    const expected = tagManifest.find((entry) => entry.path === name)?.digest;
    if (expected === undefined) return undefined;
    const bytes = await readTag(bagDir, name);
    const found = sha256(bytes);
    if (found !== expected) throw new Damage(`${name} does not match tagmanifest-sha256.txt`, expected, found);
    return bytes;
  };
  const manifestBytes = await readListed('manifest-sha256.txt');
  if (manifestBytes === undefined) throw new Damage('manifest-sha256.txt is not listed in tagmanifest-sha256.txt');
  const payload = parseManifest(manifestBytes, 'manifest-sha256.txt').filter((entry) => entry.path.startsWith('data/'));
  if (payload.length === 0) throw new Damage('manifest-sha256.txt lists no payload file');
  const parts = recordOrder(payload, version);
  const first = parts[0]!;
  const headers = await readListed('metadata/http-headers.txt');
  const mtime = lastModified(headers) ?? datestampSeconds(version.datestamp) ?? Math.floor(Date.now() / 1000);

  const folder = await prepareFolder(root, segments.slice(0, -1), folders, touched);
  const target = join(folder, segments[segments.length - 1]!);
  let source: FileHandle;
  try {
    source = await open(join(bagDir, ...first.path.split('/')), OPEN_PAYLOAD);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new Damage(`${first.path} is missing`);
    if (code === 'ELOOP') throw new Damage(`${first.path} is a symbolic link`);
    throw error;
  }
  // The pid in the name tells a later restore whether the writer is still running (see removeStaleTemporaries).
  const temp = join(folder, `${RESTORE_TEMP_PREFIX}${process.pid}-${randomBytes(8).toString('hex')}`);
  let written: FileHandle | undefined;
  let placed = false;
  try {
    written = await open(temp, OPEN_TEMP, 0o644);
    const hash = createHash('sha256');
    let size = 0;
    for await (const chunk of source.createReadStream({ highWaterMark: 1 << 20, autoClose: false }) as AsyncIterable<Buffer>) {
      hash.update(chunk);
      size += chunk.byteLength;
      await writeFully(written, chunk);
    }
    const found = hash.digest('hex');
    if (found !== first.digest) throw new Damage(`${first.path} does not match manifest-sha256.txt`, first.digest, found);
    if (parts.length === 1 && (found !== version.sha256 || size !== version.size)) {
      throw new Damage(`${first.path} does not match the catalog (sha-256 ${version.sha256}, ${version.size} bytes)`, version.sha256, `${found} ${size} bytes`);
    }
    // What landed on disk, not only what was read, must be the size the manifest describes.
    const landed = (await written.stat()).size;
    if (landed !== size) throw Object.assign(new Error(`${landed} bytes written of ${size}`), { code: 'EIO' });
    await written.utimes(mtime, mtime);
    await written.close();
    written = undefined;
    placed = true; // handed to the caller, which renames or removes it
    return { temp, target, folder, size, extraParts: parts.slice(1).map((part) => part.path) };
  } finally {
    await source.close().catch(() => undefined);
    await written?.close().catch(() => undefined);
    if (!placed) await rm(temp, { force: true }).catch(() => undefined);
  }
}

/**
 * Removes the `.oaibag-restore-<pid>-<random>` files a killed restore left below `root` (they
 * would stay in the restored site for good): regular files only, never through a symbolic link,
 * and only when no process with that pid runs on this machine, so that a restore still writing
 * into the same folder keeps its files. The repository never exports hidden names, so no
 * restored file is called that.
 */
async function removeStaleTemporaries(root: string): Promise<number> {
  let removed = 0;
  const visit = async (folder: string): Promise<void> => {
    const entries = await readdir(folder, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) await visit(path);
      else if (entry.isFile() && isStaleTemporary(entry.name)) {
        await rm(path, { force: true });
        removed++;
      }
    }
  };
  await visit(root);
  return removed;
}

function isStaleTemporary(name: string): boolean {
  if (!name.startsWith(RESTORE_TEMP_PREFIX)) return false;
  const match = /^(\d+)-[0-9a-f]+$/.exec(name.slice(RESTORE_TEMP_PREFIX.length));
  if (!match) return /^[0-9a-f]{16}$/.test(name.slice(RESTORE_TEMP_PREFIX.length)); // before the pid was in the name
  return !processRuns(Number(match[1]));
}

/** Whether a process with this pid exists here (EPERM: it does, as another user). */
function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Makes the folders of `segments` below `root`, one at a time and without following a link:
 * an existing folder is used only when lstat says it is a real directory, so a symbolic link
 * left in the restore folder can never lead a write elsewhere. Returns the absolute folder.
 */
async function prepareFolder(root: string, segments: string[], folders: Set<string>, touched: Set<string>): Promise<string> {
  let current = root;
  for (let n = 0; n < segments.length; n++) {
    const rel = segments.slice(0, n + 1).join('/');
    const next = join(current, segments[n]!);
    if (!folders.has(rel)) {
      let info = await lstat(next).catch((error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return undefined;
        throw error;
      });
      if (info === undefined) {
        await mkdir(next).catch((error: NodeJS.ErrnoException) => {
          if (error.code !== 'EEXIST') throw error;
        });
        touched.add(current);
        info = await lstat(next);
      }
      if (info.isSymbolicLink()) throw new InTheWay(`${rel} is a symbolic link in the restore folder (never followed)`);
      if (!info.isDirectory()) throw new InTheWay(`${rel} is a file in the restore folder, where a folder is needed`);
      folders.add(rel);
    }
    current = next;
  }
  return current;
}
