// Writing one version of the plan beside its place in the restore folder, under a temporary
// name, every byte checked on the way (see stageVersion); and the folder work around it: real
// folders only (never through a link), and the temporary files a killed restore left behind.
//
// Synchronous system calls, on purpose: a restored file is a dozen of them (open, fstat, read,
// write, futimes, close…), each a few microseconds for a site's small files. Through the
// promise API each went through libuv's thread pool, and the hand-offs cost 0.6 ms of CPU a
// file on the 2-core test machine against 0.1 ms this way (bench/README.md, issue 27).
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, constants as fsConstants, fstatSync, futimesSync, lstatSync, mkdirSync, openSync, readSync, rmSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { AipStorage } from '../aip/aip-storage.js';
import { writeFullySync } from '../core/write-fully.js';
import { checkPayload, locatePayload, openPayloadSync, payloadName, readStoredVerified } from './restore-bag.js';
import { datestampSeconds, type PlanVersion } from './restore-plan.js';

/** Names of the files a restore leaves only while it writes one (a crash can leave one behind). */
export const RESTORE_TEMP_PREFIX = '.oaibag-restore-';

const OPEN_TEMP = fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW;

/** Bytes read and written at a time; one buffer, reused for every file (memory does not grow with file size). */
const CHUNK_BYTES = 1 << 20;
let chunk: Buffer | undefined;

/**
 * The temporary names of this process: `<pid>-<16 random hex digits, once><counter in hex>`.
 * Unique as a random name per file was (O_EXCL refuses a clash anyway), without a call to the
 * random source per file.
 */
const TEMP_STEM = `${RESTORE_TEMP_PREFIX}${process.pid}-${randomBytes(8).toString('hex')}`;
let tempCount = 0;

/** Something in the restore folder stands where a file or folder of the site must go. */
export class InTheWay extends Error {}

/** A version written and verified under its temporary name, beside its target. */
export interface StagedVersion {
  temp: string;
  target: string;
  folder: string;
  size: number;
  /** A compound object's parts 2.., as archive paths (`<bag>/data/…`): not written. */
  extraParts: string[];
}

/**
 * The version's mtime in seconds: its record's Last-Modified header (whole seconds, as HTTP
 * gives it) when it has a readable one, else its datestamp, else now.
 */
export function versionMtime(version: PlanVersion): number {
  const ms = version.lastModified === undefined ? Number.NaN : Date.parse(version.lastModified);
  if (Number.isFinite(ms)) return Math.floor(ms / 1000);
  return datestampSeconds(version.datestamp) ?? Math.floor(Date.now() / 1000);
}

/**
 * Writes one version beside its place below `root`, under a temporary name. The bytes are those
 * of the version's first part, wherever the catalog's payload index says the archive holds them
 * (its own batch bag, or an earlier one for a revisit): the payload file is opened without
 * following a link, copied into the temporary file while hashed, compared with the part's
 * sha-256 and size (and, for a one-part version, the version's; see restore-bag.ts), and the
 * file given its mtime. The caller makes it durable and renames it (see SiteWriter). Throws
 * Damage (the payload file, named by its archive path), InTheWay (the restore folder) or an I/O
 * error, and then leaves no temporary file.
 */
export function stageVersion(
  archiveDir: string,
  root: string,
  version: PlanVersion,
  segments: string[],
  folders: Set<string>,
  touched: Set<string>,
): StagedVersion {
  const payload = locatePayload(archiveDir, version);
  const mtime = versionMtime(version);

  const folder = prepareFolder(root, segments.slice(0, -1), folders, touched);
  const target = join(folder, segments[segments.length - 1]!);
  const source = openPayloadSync(payload);
  // The pid in the name tells a later restore whether the writer is still running (see removeStaleTemporaries).
  const temp = join(folder, `${TEMP_STEM}${(tempCount++).toString(16)}`);
  let written: number | undefined;
  let placed = false;
  try {
    written = openSync(temp, OPEN_TEMP, 0o644);
    const buffer = (chunk ??= Buffer.allocUnsafe(CHUNK_BYTES));
    const hash = createHash('sha256');
    let size = 0;
    // Until read says the end: a short read is not taken for it.
    for (let read = readSync(source, buffer, 0, CHUNK_BYTES, null); read > 0; read = readSync(source, buffer, 0, CHUNK_BYTES, null)) {
      const bytes = buffer.subarray(0, read);
      hash.update(bytes);
      size += read;
      writeFullySync(written, bytes);
    }
    // Checked before anything else is done with the file: a mismatch throws Damage, and the temporary file is removed.
    checkPayload(payload, version, hash.digest('hex'), size);
    finishTemporary(written, size, mtime);
    written = undefined;
    placed = true; // handed to the caller, which renames or removes it
    return { temp, target, folder, size, extraParts: version.parts.slice(1).map(payloadName) };
  } finally {
    closeQuietly(source);
    if (written !== undefined) closeQuietly(written);
    if (!placed) quietly(() => rmSync(temp, { force: true }));
  }
}

/**
 * {@link stageVersion} for an archive whose bags are on object storage: the payload is read
 * through `store` as a stream (restore-bag.ts, readStoredVerified), with the same checks, and
 * written to the temporary file as it comes. The folder work and the temporary file are the
 * same synchronous calls as stageVersion's; only the read waits for the network.
 */
export async function stageStoredVersion(
  store: AipStorage,
  archiveDir: string,
  root: string,
  version: PlanVersion,
  segments: string[],
  folders: Set<string>,
  touched: Set<string>,
): Promise<StagedVersion> {
  const payload = locatePayload(archiveDir, version);
  const mtime = versionMtime(version);
  const folder = prepareFolder(root, segments.slice(0, -1), folders, touched);
  const target = join(folder, segments[segments.length - 1]!);
  const temp = join(folder, `${TEMP_STEM}${(tempCount++).toString(16)}`);
  let written: number | undefined;
  let placed = false;
  try {
    written = openSync(temp, OPEN_TEMP, 0o644);
    let size = 0;
    // The last chunk comes only once the bytes matched their sha-256 and size (else Damage is thrown).
    for await (const bytes of readStoredVerified(store, payload, version)) {
      writeFullySync(written, bytes);
      size += bytes.byteLength;
    }
    finishTemporary(written, size, mtime);
    written = undefined;
    placed = true;
    return { temp, target, folder, size, extraParts: version.parts.slice(1).map(payloadName) };
  } finally {
    if (written !== undefined) closeQuietly(written);
    if (!placed) quietly(() => rmSync(temp, { force: true }));
  }
}

/** A verified temporary file's end: its size on disk checked, its mtime set, closed (an error leaves it open for the caller). */
function finishTemporary(fd: number, size: number, mtime: number): void {
  // What landed on disk, not only what was read, must be the size the catalog records.
  const landed = fstatSync(fd).size;
  if (landed !== size) throw Object.assign(new Error(`${landed} bytes written of ${size}`), { code: 'EIO' });
  futimesSync(fd, mtime, mtime);
  closeSync(fd);
}

/** Cleanup that must not hide the error being thrown. */
function quietly(cleanup: () => void): void {
  try {
    cleanup();
  } catch {
    // the error that led here is the one reported
  }
}

function closeQuietly(fd: number): void {
  quietly(() => closeSync(fd));
}

/**
 * Removes the `.oaibag-restore-<pid>-<random>` files a killed restore left below `root` (they
 * would stay in the restored site for good): regular files only, never through a symbolic link,
 * and only when no process with that pid runs on this machine, so that a restore still writing
 * into the same folder keeps its files. The repository never exports hidden names, so no
 * restored file is called that.
 */
export async function removeStaleTemporaries(root: string): Promise<number> {
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
function prepareFolder(root: string, segments: string[], folders: Set<string>, touched: Set<string>): string {
  let current = root;
  let rel = '';
  for (const segment of segments) {
    rel = rel === '' ? segment : `${rel}/${segment}`;
    const next = join(current, segment);
    if (!folders.has(rel)) {
      let info = lstatSync(next, { throwIfNoEntry: false });
      if (info === undefined) {
        try {
          mkdirSync(next);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        }
        touched.add(current);
        info = lstatSync(next);
      }
      if (info.isSymbolicLink()) throw new InTheWay(`${rel} is a symbolic link in the restore folder (never followed)`);
      if (!info.isDirectory()) throw new InTheWay(`${rel} is a file in the restore folder, where a folder is needed`);
      folders.add(rel);
    }
    current = next;
  }
  return current;
}
