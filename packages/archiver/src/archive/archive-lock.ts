import { randomBytes } from 'node:crypto';
import { constants, readFileSync, type Stats, unlinkSync } from 'node:fs';
import { type FileHandle, link, open, readdir, readFile, stat, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { ArchiverError, archiveFullError, archiveIoError, isStorageExhausted } from '../core/errors.js';
import { fsyncFolderIfPossible } from './flush-to-disk.js';

/** The lock file's name inside an archive directory. */
export const ARCHIVE_LOCK_FILE_NAME = 'lock';

/**
 * A lock file younger than this that cannot be read as a lock is assumed to be being written:
 * it counts as held. Older, it is garbage and is taken over. oaibag itself never leaves one
 * (the lock is written under another name and linked into place whole, see createExclusive);
 * an older oaibag created it empty and then filled it, so a kill in between locked the
 * archive for this long.
 */
export const GARBAGE_LOCK_GRACE_MS = 60_000;

/** A takeover takes milliseconds: a guard this old was left by a taker that died. */
export const TAKEOVER_GUARD_STALE_MS = 30_000;

/** What a lock file says about its holder. */
export interface ArchiveLockHolder {
  pid: number;
  hostname: string;
  /** ISO 8601 instant the lock was taken. */
  startedAt: string;
  /** What the holder is doing, e.g. `harvest https://example.org/oai`. */
  purpose: string;
}

/**
 * The archive lock held by this process: one harvest (or other writer) per archive at a time,
 * because the catalog and the bag tree assume a single writer. Release it when done; a holder
 * killed without releasing is detected as stale by the next {@link acquireArchiveLock} on the
 * same host.
 */
export class ArchiveLock {
  readonly file: string;
  readonly holder: ArchiveLockHolder;
  private readonly content: string;
  private released = false;

  /** @internal */
  constructor(file: string, holder: ArchiveLockHolder, content: string) {
    this.file = file;
    this.holder = holder;
    this.content = content;
  }

  /** Removes the lock file if it is still ours (a taken-over or replaced lock is left alone). Idempotent. */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    let current: string;
    try {
      current = await readFile(this.file, 'utf8');
    } catch {
      return;
    }
    if (current === this.content) await unlink(this.file).catch(() => undefined);
  }

  /** The same as {@link release}, synchronously, for `process.on('exit')` handlers. */
  releaseSync(): void {
    if (this.released) return;
    this.released = true;
    try {
      if (readFileSync(this.file, 'utf8') === this.content) unlinkSync(this.file);
    } catch {
      // Already gone, or unreadable: either way not ours to remove any more.
    }
  }
}

/**
 * Takes the lock of `archiveDir` by creating `<archiveDir>/lock` exclusively (O_CREAT|O_EXCL)
 * with JSON naming this process, fsynced. When a lock exists and its holder is a dead process
 * on this host (or the file is unreadable garbage older than {@link GARBAGE_LOCK_GRACE_MS}),
 * it is taken over; otherwise this throws `ERR_ARCHIVE_LOCKED` naming the holder. A holder on
 * another host cannot be checked, so it always counts as alive.
 *
 * The takeover race: several processes may judge the same lock stale at once. Only the one
 * that creates `<lock>.takeover` exclusively may remove it, and only after judging it stale
 * again under that guard with the same inode: nobody else ever removes a lock, so a fresh one
 * created meanwhile by another process can never be removed by mistake (moving the stale file
 * aside and checking afterwards could, for an instant, leave the name free for a third process
 * while the second put back the winner's lock: two holders). The others report the archive
 * locked. A guard older than {@link TAKEOVER_GUARD_STALE_MS} was left by a taker that died and
 * is removed. Then each tries the exclusive create once more; only one can succeed.
 */
export async function acquireArchiveLock(archiveDir: string, purpose: string): Promise<ArchiveLock> {
  const file = join(archiveDir, ARCHIVE_LOCK_FILE_NAME);
  const holder: ArchiveLockHolder = { pid: process.pid, hostname: hostname(), startedAt: new Date().toISOString(), purpose };
  const content = `${JSON.stringify(holder)}\n`;
  for (let attempt = 0; ; attempt++) {
    if (await createExclusive(file, content)) return new ArchiveLock(file, holder, content);
    const existing = await inspectLock(file);
    if (existing.kind === 'gone') {
      if (attempt < 2) continue;
      throw lockedError(file, existing);
    }
    if (existing.kind === 'held' || attempt > 0 || !(await takeOver(file, existing.ino))) throw lockedError(file, existing);
  }
}

type LockState = { kind: 'gone' } | { kind: 'held'; holder?: ArchiveLockHolder; ino: number } | { kind: 'stale'; holder?: ArchiveLockHolder; ino: number };

/** The prefix of the names a lock is written under before it is linked into place. */
const PENDING_PREFIX = `${ARCHIVE_LOCK_FILE_NAME}.pending-`;

/**
 * Creates the lock file whole: written and fsynced under a name of this process's own, then
 * hard-linked to the lock's name, which fails with EEXIST when a lock stands (as O_EXCL would).
 * The lock's name therefore never holds a lock half-written, whatever instant a kill -9 comes
 * at; a kill before the link leaves only the pending file, removed by the next holder. False
 * when a lock exists already.
 */
async function createExclusive(file: string, content: string): Promise<boolean> {
  const pending = join(dirname(file), `${PENDING_PREFIX}${process.pid}-${randomBytes(4).toString('hex')}`);
  let handle: FileHandle;
  try {
    handle = await open(pending, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o644);
  } catch (error) {
    throw ioError(file, 'create', error);
  }
  try {
    await handle.writeFile(content, 'utf8');
    await handle.sync();
    await handle.close();
  } catch (error) {
    await handle.close().catch(() => undefined);
    await unlink(pending).catch(() => undefined);
    throw ioError(file, 'write', error);
  }
  let linked = false;
  try {
    await link(pending, file);
    linked = true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // ENOENT: a new holder cleared this pending file as a leftover before the link: it won.
    if (code !== 'EEXIST' && code !== 'ENOENT') throw ioError(file, 'create', error);
  } finally {
    await unlink(pending).catch(() => undefined);
  }
  if (!linked) return false;
  // A lock entry lost to a power cut only frees the archive.
  await fsyncFolderIfPossible(dirname(file));
  await removePendingLeftovers(dirname(file));
  return true;
}

/** Removes pending lock files left by processes killed before their link (called by the holder). */
async function removePendingLeftovers(archiveDir: string): Promise<void> {
  const names = await readdir(archiveDir).catch(() => [] as string[]);
  for (const name of names) {
    if (name.startsWith(PENDING_PREFIX)) await unlink(join(archiveDir, name)).catch(() => undefined);
  }
}

/** Reads an existing lock and judges whether its holder is gone. */
async function inspectLock(file: string): Promise<LockState> {
  let raw: string;
  let info: Stats;
  try {
    info = await stat(file);
    raw = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'gone' };
    throw ioError(file, 'read', error);
  }
  const holder = parseHolder(raw);
  if (!holder) {
    const old = Date.now() - info.mtimeMs > GARBAGE_LOCK_GRACE_MS;
    return { kind: old ? 'stale' : 'held', ino: info.ino };
  }
  const dead = holder.hostname === hostname() && holder.pid !== process.pid && !processIsAlive(holder.pid);
  return { kind: dead ? 'stale' : 'held', holder, ino: info.ino };
}

/** Removes the stale lock with inode `ino`; false when another process is taking it over or a fresh lock stands. */
async function takeOver(file: string, ino: number): Promise<boolean> {
  const guard = `${file}.takeover`;
  if (!(await createGuard(guard))) return false;
  try {
    const again = await inspectLock(file);
    if (again.kind === 'gone') return true;
    if (again.kind !== 'stale' || again.ino !== ino) return false;
    await unlink(file).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw ioError(file, 'take over', error);
    });
    return true;
  } finally {
    await unlink(guard).catch(() => undefined);
  }
}

/** Creates the takeover guard exclusively; removes one left by a dead taker first. */
async function createGuard(guard: string): Promise<boolean> {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await (await open(guard, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o644)).close();
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw ioError(guard, 'create', error);
    }
    const info = await stat(guard).catch(() => undefined);
    if (info && Date.now() - info.mtimeMs <= TAKEOVER_GUARD_STALE_MS) return false;
    await unlink(guard).catch(() => undefined);
  }
  return false;
}

function parseHolder(raw: string): ArchiveLockHolder | undefined {
  try {
    const value = JSON.parse(raw) as Partial<ArchiveLockHolder> | null;
    if (
      value &&
      Number.isSafeInteger(value.pid) &&
      (value.pid ?? 0) > 0 &&
      typeof value.hostname === 'string' &&
      typeof value.startedAt === 'string' &&
      typeof value.purpose === 'string'
    ) {
      return value as ArchiveLockHolder;
    }
  } catch {
    // Not JSON: garbage.
  }
  return undefined;
}

/** Signal 0 checks existence: ESRCH means no such process; EPERM means alive but not ours. */
function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

function lockedError(file: string, state: LockState): ArchiverError {
  const holder = state.kind === 'gone' ? undefined : state.holder;
  const who = holder
    ? `pid ${holder.pid} on ${holder.hostname} since ${holder.startedAt} (${holder.purpose})`
    : 'a process that has not finished writing it (or left it unreadable)';
  return new ArchiverError('ERR_ARCHIVE_LOCKED', `the archive is locked by ${who}: ${file}`, {
    path: file,
    hint: holder
      ? `wait for it to end; if it is surely gone (e.g. it ran on another host), remove ${file}`
      : `retry in a minute; an unreadable lock older than ${GARBAGE_LOCK_GRACE_MS / 1000} s is taken over`,
  });
}

/** ERR_ARCHIVE_IO for the lock file (archiveIoError), or ERR_ARCHIVE_FULL when its disk is full. */
function ioError(file: string, action: string, error: unknown): ArchiverError {
  const failure = archiveIoError(error, `cannot ${action} the archive lock ${file}`, file);
  return isStorageExhausted(error) ? archiveFullError(dirname(file), failure) : failure;
}

/**
 * Whether the process holding a lock may still run: false only when it ran on this host and is
 * gone (then a harvest it left 'running' was interrupted); a holder on another host is assumed alive.
 */
export function lockHolderIsAlive(holder: ArchiveLockHolder): boolean {
  return holder.hostname !== hostname() || processIsAlive(holder.pid);
}

/** Reads the holder of an archive's lock without taking it (for `oaibag status`); undefined when unlocked or unreadable. */
export function readArchiveLockHolder(archiveDir: string): ArchiveLockHolder | undefined {
  try {
    return parseHolder(readFileSync(join(archiveDir, ARCHIVE_LOCK_FILE_NAME), 'utf8'));
  } catch {
    return undefined;
  }
}
