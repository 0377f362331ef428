// Writing one version of the plan beside its place in the restore folder, under a temporary
// name, every byte checked on the way (see stageVersion); and the folder work around it: real
// folders only (never through a link), and the temporary files a killed restore left behind.
import { randomBytes } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import { type FileHandle, lstat, mkdir, open, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFully } from '../core/write-fully.js';
import { locatePayload, openPayload, payloadName, readVerified } from './restore-bag.js';
import { datestampSeconds, type PlanVersion } from './restore-plan.js';

/** Names of the files a restore leaves only while it writes one (a crash can leave one behind). */
export const RESTORE_TEMP_PREFIX = '.oaibag-restore-';

const OPEN_TEMP = fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW;

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
 * following a link, streamed into the temporary file while hashed, compared with the part's
 * sha-256 and size (and, for a one-part version, the version's; see restore-bag.ts), and the
 * file given its mtime. The caller makes it durable and renames it (see SiteWriter). Throws
 * Damage (the payload file, named by its archive path), InTheWay (the restore folder) or an I/O
 * error, and then leaves no temporary file.
 */
export async function stageVersion(
  archiveDir: string,
  root: string,
  version: PlanVersion,
  segments: string[],
  folders: Set<string>,
  touched: Set<string>,
): Promise<StagedVersion> {
  const payload = locatePayload(archiveDir, version);
  const mtime = versionMtime(version);

  const folder = await prepareFolder(root, segments.slice(0, -1), folders, touched);
  const target = join(folder, segments[segments.length - 1]!);
  const source = await openPayload(payload);
  // The pid in the name tells a later restore whether the writer is still running (see removeStaleTemporaries).
  const temp = join(folder, `${RESTORE_TEMP_PREFIX}${process.pid}-${randomBytes(8).toString('hex')}`);
  let written: FileHandle | undefined;
  let placed = false;
  try {
    written = await open(temp, OPEN_TEMP, 0o644);
    let size = 0;
    for await (const chunk of readVerified(source, payload, version)) {
      size += chunk.byteLength;
      await writeFully(written, chunk);
    }
    // What landed on disk, not only what was read, must be the size the catalog records.
    const landed = (await written.stat()).size;
    if (landed !== size) throw Object.assign(new Error(`${landed} bytes written of ${size}`), { code: 'EIO' });
    await written.utimes(mtime, mtime);
    await written.close();
    written = undefined;
    placed = true; // handed to the caller, which renames or removes it
    return { temp, target, folder, size, extraParts: version.parts.slice(1).map(payloadName) };
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
