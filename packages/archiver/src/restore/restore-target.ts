// Where a restore may write: the checks on `--to` made before anything is written or removed
// (also by a dry run, which must refuse what the restore would refuse). A restore into a folder
// that already holds files would mix two states, so a non-empty `--to` needs `--force` (restore
// over it) or `--clean` (make it exactly the state); and `--clean` removes files, so it is never
// aimed at `/`, a home folder or any folder around the archive. See docs/restore.md.
import type { Stats } from 'node:fs';
import { lstat, readdir, realpath, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { ArchiverError } from '../core/errors.js';
import { RESTORE_TEMP_PREFIX } from './stage-version.js';

/** What to do with a `--to` that is not empty: refuse (the default), restore over it, or make it exactly the state. */
export interface ExistingFolderChoice {
  force?: boolean;
  clean?: boolean;
}

/** The restore folder as checked. */
export interface RestoreTarget {
  /** Absolute, with symbolic links resolved (a `--to` that is a link to a folder is that folder). */
  root: string;
  exists: boolean;
  /** It holds something besides temporary files of a killed restore: `force` or `clean` was needed. */
  nonEmpty: boolean;
}

/**
 * Checks `to` before a restore (ERR_ARCHIVE_USAGE, nothing written, for each of): `force` with
 * `clean`; `to` a file or a link to nothing; `clean` on `/`, the home folder or a folder holding
 * it; `to` the archive folder, inside it, or holding it; `to` not empty without `force` or
 * `clean`. The archive relation is decided on real paths (links resolved), as is `/` and home.
 */
export async function checkRestoreTarget(to: string, archiveDir: string, choice: ExistingFolderChoice): Promise<RestoreTarget> {
  const usage = (message: string, hint?: string): ArchiverError => new ArchiverError('ERR_ARCHIVE_USAGE', message, { path: to, ...(hint ? { hint } : {}) });
  if (choice.force && choice.clean)
    throw usage('--force and --clean exclude each other', 'give --force to leave what is not part of the state, --clean to remove it');

  const info = await folderAt(to, usage);
  const root = info === undefined ? await realPathOfMissing(resolve(to)) : await realpath(to);

  if (choice.clean) {
    const home = await homeFolder();
    if (root === dirname(root)) throw usage(`--clean refuses --to ${to}: it is the root of the file system`, 'restore into a folder of its own');
    if (home !== undefined && (root === home || isInside(root, home)))
      throw usage(`--clean refuses --to ${to}: it ${root === home ? 'is' : 'holds'} the home folder ${home}`, 'restore into a folder of its own');
  }

  const archive = await realpath(archiveDir).catch(() => resolve(archiveDir));
  if (root === archive || isInside(archive, root)) {
    throw usage(
      `--to ${to} is ${root === archive ? 'the archive folder' : `inside the archive ${archiveDir}`}: a restore never writes among the bags`,
      'restore into a folder outside the archive',
    );
  }
  if (isInside(root, archive)) {
    throw usage(
      `--to ${to} holds the archive ${archiveDir}: ${choice.clean ? '--clean would remove it' : 'a restore over it could overwrite it'}`,
      'restore into a folder outside the archive',
    );
  }

  const entries = info === undefined ? [] : (await readdir(root)).filter((name) => !name.startsWith(RESTORE_TEMP_PREFIX));
  const nonEmpty = entries.length > 0;
  if (nonEmpty && !choice.force && !choice.clean) {
    throw usage(
      `--to ${to} is not empty (it holds ${entries.length} ${entries.length === 1 ? 'entry' : 'entries'}): give --force to restore over it (what is not part of the state is left and listed) or --clean to make it exactly the state (what is not part of it is removed)`,
      'or restore into an empty folder',
    );
  }
  return { root, exists: info !== undefined, nonEmpty };
}

/** Whether `inner` lies strictly below `outer` (both absolute). */
function isInside(outer: string, inner: string): boolean {
  const rel = relative(outer, inner);
  return rel !== '' && rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
}

/**
 * What is at `to`: undefined when nothing is, its folder's stat when it is a folder or a link to
 * one; a usage error for a file, a link to a file or to nothing, or a path through a file.
 */
async function folderAt(to: string, usage: (message: string, hint?: string) => ArchiverError): Promise<Stats | undefined> {
  const missing = (error: NodeJS.ErrnoException): undefined => {
    if (error.code === 'ENOENT') return undefined;
    if (error.code === 'ENOTDIR') throw usage(`--to ${to} is below a file, not a folder`);
    throw error;
  };
  const link = await lstat(to).catch(missing);
  if (link === undefined) return undefined;
  const info = link.isSymbolicLink() ? await stat(to).catch(missing) : link;
  if (info === undefined) throw usage(`--to ${to} is a symbolic link to nothing`, 'give a folder (it is created when missing)');
  if (!info.isDirectory()) throw usage(`--to ${to} is a file, not a folder`, 'give a folder (it is created when missing)');
  return info;
}

/** The user's home folder, links resolved; undefined when the system cannot tell (no HOME, no passwd entry). */
async function homeFolder(): Promise<string | undefined> {
  let home: string;
  try {
    home = homedir();
  } catch {
    return undefined;
  }
  return home === '' ? undefined : await realpath(home).catch(() => resolve(home));
}

/** The real path a missing folder will have: its nearest existing ancestor's real path, plus the rest. */
async function realPathOfMissing(path: string): Promise<string> {
  const rest: string[] = [];
  let current = path;
  for (;;) {
    const real = await realpath(current).catch(() => undefined);
    if (real !== undefined) return join(real, ...rest.reverse());
    const parent = dirname(current);
    if (parent === current) return path;
    rest.push(basename(current));
    current = parent;
  }
}
