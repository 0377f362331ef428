import { createHash } from 'node:crypto';
import { type BigIntStats, closeSync, constants, fstatSync, openSync, read, readlinkSync, readSync, realpathSync, statSync } from 'node:fs';
import { join, sep } from 'node:path';
import { promisify } from 'node:util';
import { type ExportPolicy, isAddressablePath, mimeTypeForPath } from '@oaibag/oai-pmh';
import type { IndexedFile } from '../core/model.js';
import type { FileFacts } from './file-index.js';
import { setSpecForMimeType } from './set-spec.js';

/** Why a path that exists is not exported (beyond the name rules of the export policy). */
export type NotExportedReason =
  | 'hidden'
  | 'excluded'
  | 'runs-on-server'
  | 'reserved'
  | 'unreadable'
  | 'not-a-regular-file'
  | 'outside-root'
  | 'unaddressable'
  | 'through-folder-link'
  | 'link-less-protected';

export type Inspection = { kind: 'file'; facts: FileFacts; unchanged: boolean } | { kind: 'not-exported'; reason: NotExportedReason } | { kind: 'absent' };

/** The root directory, resolved once: every served file must resolve below `real`. */
export interface SiteRoot {
  real: string;
}

// O_NONBLOCK: opening a fifo must not wait for a writer; O_NOCTTY: never adopt a terminal.
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;
const HASH_CHUNK = 1 << 20;
const readAsync = promisify(read);

/**
 * Looks at one path as the server would serve it: applies the export rules, opens it,
 * checks that what was opened is a readable regular file whose real location is inside the
 * root (a symbolic link may point elsewhere), and hashes it unless the index already holds
 * this exact version. Every check is made on the opened descriptor, so a symlink swapped in
 * between two checks cannot point the answer at another file.
 *
 * The open, the checks and the reading of a file up to HASH_CHUNK are synchronous calls: the
 * kernel answers them in microseconds from its cache, where each promise was a round trip
 * through libuv's thread pool (a rescan's largest cost, docs/repository.md). Larger files
 * are read through the pool, a chunk at a time, so a big file never holds up requests.
 */
export async function inspectFile(
  root: SiteRoot,
  relPath: string,
  policy: ExportPolicy,
  known?: IndexedFile,
  linkAllowed: LinkRule = () => true,
): Promise<Inspection> {
  const nameReason = policy.excludedReason(relPath);
  if (nameReason) return { kind: 'not-exported', reason: nameReason };
  // A name no URL can carry (control characters, backslashes, over-long): it has no identifier.
  if (!isAddressablePath(relPath)) return { kind: 'not-exported', reason: 'unaddressable' };

  let fd: number;
  try {
    fd = openSync(join(root.real, relPath), OPEN_FLAGS);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return { kind: 'absent' };
    if (code === 'ENXIO') return { kind: 'not-exported', reason: 'not-a-regular-file' }; // a socket
    return { kind: 'not-exported', reason: 'unreadable' };
  }
  try {
    for (let attempt = 0; ; attempt++) {
      const stats = fstatSync(fd, { bigint: true });
      if (!stats.isFile()) return { kind: 'not-exported', reason: 'not-a-regular-file' };
      // Mode 000 (or no read bit at all) means nobody is meant to read it, even a server run as root.
      if ((stats.mode & 0o444n) === 0n) return { kind: 'not-exported', reason: 'unreadable' };

      const realRelPath = realPathBelowRoot(root, fd, join(root.real, relPath), stats);
      if (realRelPath === null) return { kind: 'not-exported', reason: 'outside-root' };
      if (realRelPath !== relPath) {
        const targetReason = policy.excludedReason(realRelPath);
        if (targetReason) return { kind: 'not-exported', reason: targetReason };
        // Links to folders are not followed (loops, and one file under two identifiers):
        // the folders on the way must be real folders, only the last step may be a link.
        if (!folderIsReal(root, relPath)) return { kind: 'not-exported', reason: 'through-folder-link' };
        if (!linkAllowed(relPath, realRelPath)) return { kind: 'not-exported', reason: 'link-less-protected' };
      }

      const signature = statSignature(stats);
      if (known && !known.deleted && sameSignature(known, signature)) {
        return { kind: 'file', facts: factsOf(known), unchanged: true };
      }
      const { sha256, bytes } = await hashDescriptor(fd, Number(stats.size));
      const after = statSignature(fstatSync(fd, { bigint: true }));
      // Written to while we read it: look again (a few times), so digest and size agree.
      if ((bytes !== Number(stats.size) || !sameSignature(after, signature)) && attempt < 3) continue;
      const mimeType = mimeTypeForPath(relPath);
      return {
        kind: 'file',
        unchanged: false,
        facts: { ...signature, path: relPath, mimeType, setSpec: setSpecForMimeType(mimeType), size: bytes, sha256 },
      };
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * Whether a symbolic link `linkPath` to `targetPath` may be exported. The repository uses it
 * to refuse links that would publish a protected file at a less protected URL.
 */
export type LinkRule = (linkPath: string, targetPath: string) => boolean;

function folderIsReal(root: SiteRoot, relPath: string): boolean {
  const slash = relPath.lastIndexOf('/');
  if (slash === -1) return true;
  const folder = join(root.real, relPath.slice(0, slash));
  try {
    return realpathSync(folder) === folder;
  } catch {
    return false;
  }
}

/** The facts that tell whether a file may have changed since it was hashed. */
export interface StatSignature {
  size: number;
  mtimeNs: bigint;
  ctimeNs: bigint;
  fileKey: string;
}

export function statSignature(stats: BigIntStats): StatSignature {
  return { size: Number(stats.size), mtimeNs: stats.mtimeNs, ctimeNs: stats.ctimeNs, fileKey: `${stats.dev}:${stats.ino}` };
}

export function sameSignature(a: StatSignature, b: StatSignature): boolean {
  return a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs && a.fileKey === b.fileKey;
}

function factsOf(file: IndexedFile): FileFacts {
  const { id: _id, datestamp: _datestamp, deleted: _deleted, ...facts } = file;
  return facts;
}

/**
 * Where the opened file really is, relative to the root, or null when outside it. On Linux
 * /proc/self/fd names the descriptor's own path (race-free); elsewhere realpath() is
 * checked against the descriptor's device and inode.
 */
function realPathBelowRoot(root: SiteRoot, fd: number, path: string, stats: BigIntStats): string | null {
  let real: string;
  try {
    real = readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    try {
      real = realpathSync(path);
      const check = statSync(real, { bigint: true });
      if (check.dev !== stats.dev || check.ino !== stats.ino) return null;
    } catch {
      return null;
    }
  }
  const prefix = root.real.endsWith(sep) ? root.real : root.real + sep;
  if (!real.startsWith(prefix)) return null;
  return real.slice(prefix.length).split(sep).join('/');
}

/** The buffer of the synchronous reads: used and done with before anything else runs. */
const smallReads = Buffer.allocUnsafe(HASH_CHUNK);

/** The sha-256 and length of what the descriptor holds now: at once when small, else a chunk per round trip. */
async function hashDescriptor(fd: number, expectedSize: number): Promise<{ sha256: string; bytes: number }> {
  const hash = createHash('sha256');
  let bytes = 0;
  let ended = false;
  // A small file in one synchronous read of its size + 1: a short read of a regular file is
  // its end. One that grows meanwhile goes on through the pool after its first MiB.
  while (!ended && expectedSize < HASH_CHUNK && bytes < HASH_CHUNK) {
    const bytesRead = readSync(fd, smallReads, 0, expectedSize + 1, bytes);
    hash.update(smallReads.subarray(0, bytesRead));
    bytes += bytesRead;
    ended = bytesRead <= expectedSize;
  }
  const buffer = ended ? smallReads : Buffer.allocUnsafe(HASH_CHUNK);
  while (!ended) {
    const { bytesRead } = await readAsync(fd, buffer, 0, buffer.length, bytes);
    hash.update(buffer.subarray(0, bytesRead));
    bytes += bytesRead;
    ended = bytesRead === 0;
  }
  return { sha256: hash.digest('hex'), bytes };
}
