// Makes what a page of a harvest wrote durable in one step instead of one fsync per file.
//
// A bag is a dozen small files and three folders. Fsyncing each (what bag-writer did until
// November 2026) cost about 18 fsyncs per record: on the 2-core ext4 test machine, about 2,500
// small write+fsync+rename a second, which was the whole wall time of a baseline harvest. On
// Linux, `syncfs(2)` on the archive's file system writes back everything dirty and waits for it
// in one journal commit: 500 small files in 11 ms where fsyncing each took 150 to 210 ms.
// Node has no binding for syncfs; GNU coreutils' and busybox's `sync -f PATH` is exactly that
// call. A harvest starts one small shell at the beginning (`openDiskFlusher`) that runs it on
// request: forking `sync` from the harvester itself, with its 150 MB of memory mapped, cost
// 8 ms a flush, against 1.1 ms through the small shell (both measured on an idle file system).
//
// Elsewhere (or with OAIBAG_SYNC=files, for an archive on a file system shared with heavy
// writers, whose dirty data syncfs would also have to write) every file and folder named is
// fsynced, a few at a time.

import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { open, readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ArchiverError, archiveIoError } from '../core/errors.js';

/** `filesystem`: one syncfs of the archive's file system; `files`: one fsync per file and folder. */
export type FlushMode = 'filesystem' | 'files';

export interface FlushRequest {
  /** Trees whose every file and folder must reach the disk (bags built in tmp/). */
  trees?: readonly string[];
  /** Single files that must reach the disk (a restore's verified files before their rename). */
  files?: readonly string[];
  /** Folders whose entries must reach the disk (where bags were renamed to, new folders). */
  folders?: readonly string[];
}

/** How many fsyncs run at once in `files` mode: enough for the journal to batch them. */
const PARALLEL_FSYNCS = 16;

let syncCommandMissing = false;

/** The mode used when none is asked for: OAIBAG_SYNC, else syncfs on Linux. */
export function defaultFlushMode(): FlushMode {
  const asked = process.env.OAIBAG_SYNC;
  if (asked === 'files' || asked === 'filesystem') return asked;
  if (asked !== undefined && asked !== '') {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `OAIBAG_SYNC is ${JSON.stringify(asked)}: it must be files or filesystem`, {
      hint: 'unset it to use the default (filesystem on Linux)',
    });
  }
  return process.platform === 'linux' && !syncCommandMissing ? 'filesystem' : 'files';
}

/**
 * Returns once everything in `request` is on stable storage. `archiveDir` names the file system
 * for syncfs; it must hold every path of the request (all of an archive's writes stay inside it).
 * An I/O error reported by the flush is an ArchiverError (ERR_ARCHIVE_IO): what was written is
 * not known to be durable and must not be recorded as stored.
 */
export async function flushToDisk(archiveDir: string, request: FlushRequest, mode: FlushMode = defaultFlushMode()): Promise<void> {
  if (isEmpty(request)) return;
  if (mode === 'filesystem' && (await syncFileSystem(archiveDir))) return;
  const paths: string[] = [...(request.files ?? [])];
  for (const tree of request.trees ?? []) await collectTree(tree, paths);
  paths.push(...(request.folders ?? []));
  await fsyncAll(paths);
}

function isEmpty(request: FlushRequest): boolean {
  return (request.trees?.length ?? 0) === 0 && (request.files?.length ?? 0) === 0 && (request.folders?.length ?? 0) === 0;
}

/** Makes what a request names durable; see {@link openDiskFlusher}. */
export interface DiskFlusher {
  /** The mode in use (`files` when syncfs was asked for but is not available). */
  readonly mode: FlushMode;
  flush(request: FlushRequest): Promise<void>;
  /** Stops the helper process, if any. */
  close(): Promise<void>;
}

/** A flusher without a helper process: each flush runs `flushToDisk` (one `sync` process). */
export function oneShotFlusher(archiveDir: string, mode: FlushMode = defaultFlushMode()): DiskFlusher {
  return { mode, flush: (request) => flushToDisk(archiveDir, request, mode), close: async () => undefined };
}

/**
 * A flusher for one harvest of `archiveDir`. In `filesystem` mode it starts a small shell that
 * runs `sync -f ARCHIVE` each time it is asked, and checks it once; when that cannot work (no
 * `sh`, no `sync -f`), it falls back to `files` mode. Close it when the harvest ends.
 */
export async function openDiskFlusher(archiveDir: string, mode: FlushMode = defaultFlushMode()): Promise<DiskFlusher> {
  if (mode === 'files') return oneShotFlusher(archiveDir, 'files');
  const helper = await SyncHelper.start(resolve(archiveDir));
  if (helper === null) return oneShotFlusher(archiveDir, 'files');
  const files = oneShotFlusher(archiveDir, 'files');
  return {
    mode: 'filesystem',
    flush: async (request) => {
      if (isEmpty(request)) return;
      // A helper that is gone (killed from outside) costs speed, not safety: fsync file by file.
      if (helper.gone || !(await helper.sync())) await files.flush(request);
    },
    close: () => helper.stop(),
  };
}

/**
 * A flusher to hand out before `starting` (an `openDiskFlusher`) has settled: its check is one
 * syncfs, which writes back whatever the file system holds dirty (seconds after a large copy),
 * and nothing needs a flush until the first batch is sealed. The first flush waits for it.
 */
export function flusherWhenReady(starting: Promise<DiskFlusher>, mode: FlushMode = defaultFlushMode()): DiskFlusher {
  let ready: DiskFlusher | undefined;
  const settled = starting.then((flusher) => (ready = flusher));
  settled.catch(() => undefined); // reported by the first flush or by close
  return {
    get mode() {
      return ready?.mode ?? mode;
    },
    flush: async (request) => (await settled).flush(request),
    close: async () => (await settled.catch(() => undefined))?.close(),
  };
}

/**
 * `sh` reading one line per request from its stdin and answering `ok` or `failed` after running
 * `sync -f` on the archive (whose path is the shell's `$1`, never part of the script).
 */
class SyncHelper {
  // Signals meant for the harvest (Ctrl-C reaches the whole process group, systemd signals the
  // whole unit) are ignored: the harvest finishes its records and flushes them before it exits.
  private static readonly SCRIPT = 'trap \'\' INT TERM HUP; while read -r _; do if sync -f "$1"; then echo ok; else echo failed; fi; done';
  private readonly waiting: Array<(answer: string) => void> = [];
  private buffered = '';
  private stderr = '';
  private exited = false;
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly child: ChildProcessWithoutNullStreams,
    private readonly dir: string,
  ) {
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      this.buffered += text;
      for (let end = this.buffered.indexOf('\n'); end >= 0; end = this.buffered.indexOf('\n')) {
        const line = this.buffered.slice(0, end);
        this.buffered = this.buffered.slice(end + 1);
        this.waiting.shift()?.(line);
      }
    });
    child.stderr.setEncoding('utf8').on('data', (text: string) => (this.stderr = (this.stderr + text).slice(-2000)));
    child.stdin.on('error', () => undefined); // a helper gone is reported by its exit
    child.on('exit', () => {
      this.exited = true;
      for (const resolveAnswer of this.waiting.splice(0)) resolveAnswer('exited');
    });
  }

  /** Starts and checks the helper; null when syncfs cannot be had this way (use fsyncs). */
  static async start(dir: string): Promise<SyncHelper | null> {
    if (process.platform !== 'linux' || syncCommandMissing) return null;
    let child: ChildProcessWithoutNullStreams;
    try {
      child = spawn('sh', ['-c', SyncHelper.SCRIPT, 'oaibag-sync', dir], { stdio: ['pipe', 'pipe', 'pipe'] });
    } catch {
      return null;
    }
    const started = await new Promise<boolean>((resolveStart) => {
      child.once('spawn', () => resolveStart(true));
      child.once('error', () => resolveStart(false));
    });
    if (!started) return null;
    const helper = new SyncHelper(child, dir);
    if ((await helper.ask()) === 'ok') return helper;
    await helper.stop();
    return null;
  }

  /** True once the helper process has exited. */
  get gone(): boolean {
    return this.exited;
  }

  /**
   * Runs syncfs (one at a time): true when done, false when the helper is gone (the caller
   * flushes another way); throws when sync reported an error (the data may not be on disk).
   */
  sync(): Promise<boolean> {
    const run = this.queue.then(async () => {
      const answer = await this.ask();
      if (answer === 'ok') return true;
      if (answer === 'exited') return false;
      throw new ArchiverError('ERR_ARCHIVE_IO', `sync -f ${this.dir} failed: ${this.stderr.trim().split('\n').pop() ?? ''}`, { path: this.dir });
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  async stop(): Promise<void> {
    if (this.exited) return;
    const exited = new Promise<void>((resolveExit) => this.child.once('exit', () => resolveExit()));
    this.child.stdin.end();
    await exited;
  }

  private ask(): Promise<string> {
    if (this.exited) return Promise.resolve('exited');
    return new Promise<string>((resolveAnswer) => {
      this.waiting.push(resolveAnswer);
      this.child.stdin.write('\n');
    });
  }
}

/** Fsyncs one folder: makes the entries added to or removed from it durable. */
export async function fsyncFolder(path: string): Promise<void> {
  await fsyncPath(path);
}

/**
 * fsyncFolder where losing the entry after a power cut is tolerable (a lock file, a restored
 * site's folders, an audit report): file systems and platforms that cannot open or fsync a
 * folder (Windows, some network mounts) are let be.
 */
export async function fsyncFolderIfPossible(path: string): Promise<void> {
  const handle = await open(path, 'r').catch(() => undefined);
  if (!handle) return;
  try {
    await handle.sync().catch(() => undefined);
  } finally {
    await handle.close();
  }
}

/** Runs `sync -f dir`; false when there is no such command (the caller falls back to fsyncs). */
function syncFileSystem(dir: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const child = spawn('sync', ['-f', dir], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text.slice(0, 2000)));
    child.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') {
        syncCommandMissing = true;
        resolve(false);
      } else reject(new ArchiverError('ERR_ARCHIVE_IO', `cannot run sync -f on ${dir}: ${error.code ?? error.message}`, { cause: error }));
    });
    child.on('close', (code) => {
      if (code === 0) resolve(true);
      else if (/invalid option|unrecognized option|usage/i.test(stderr)) {
        syncCommandMissing = true; // a `sync` without -f (coreutils before 8.24): fsync instead
        resolve(false);
      } else reject(new ArchiverError('ERR_ARCHIVE_IO', `sync -f ${dir} failed (exit ${code}): ${stderr.trim().split('\n')[0] ?? ''}`, { path: dir }));
    });
  });
}

/** Every folder and file of `root`, folders after their contents. */
async function collectTree(root: string, into: string[]): Promise<void> {
  const entries = await readdir(root, { withFileTypes: true }).catch((error: unknown) => {
    throw archiveIoError(error, `cannot list ${root} to flush it`, root);
  });
  for (const entry of entries) {
    const path = join(root, entry.name);
    if (entry.isDirectory()) await collectTree(path, into);
    else into.push(path);
  }
  into.push(root);
}

async function fsyncAll(paths: readonly string[]): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < paths.length) await fsyncPath(paths[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL_FSYNCS, paths.length) }, worker));
}

async function fsyncPath(path: string): Promise<void> {
  try {
    const handle = await open(path, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch (error) {
    throw archiveIoError(error, `cannot fsync ${path}`, path);
  }
}
