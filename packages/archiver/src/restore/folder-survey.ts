// What a non-empty restore folder holds besides the state being restored (`--force` leaves it
// and lists it, `--clean` removes it): a pure decision per entry (entryRole) and one walk that
// applies it. The walk never follows a symbolic link: entries are read with their own type
// (readdir's, which is lstat's), only real folders are entered, and a link is removed as a link
// (unlink), so nothing outside the restore folder is ever read or removed. Names come from
// readdir, never `.` or `..`.
import { readdir, rmdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { RestoreReport } from './restore-summary.js';
import { RESTORE_TEMP_PREFIX } from './stage-version.js';

/** The files a restore writes and the folders they need, as `/`-separated paths relative to the restore folder. */
export interface PlannedPaths {
  files: { has(path: string): boolean };
  folders: { has(path: string): boolean };
}

/** The planned files' paths and every folder above them, in memory (a restore asks its plan's database instead). */
export function plannedPaths(files: Iterable<string>): { files: Set<string>; folders: Set<string> } {
  const fileSet = new Set<string>();
  const folders = new Set<string>();
  for (const path of files) {
    fileSet.add(path);
    for (let slash = path.indexOf('/'); slash !== -1; slash = path.indexOf('/', slash + 1)) folders.add(path.slice(0, slash));
  }
  return { files: fileSet, folders };
}

/**
 * What an entry of the restore folder is to the state: a folder that planned files go into, a
 * non-folder at a planned file's path (the restore compares and replaces it), or extra: a folder
 * no planned file goes into, or anything else (a file, a link — even a link to a needed folder —,
 * a socket) at a path the state does not have.
 */
export function entryRole(path: string, isFolder: boolean, plan: PlannedPaths): 'needed-folder' | 'state-file' | 'extra' {
  if (isFolder) return plan.folders.has(path) ? 'needed-folder' : 'extra';
  return plan.files.has(path) ? 'state-file' : 'extra';
}

/**
 * Walks the restore folder `root` against the plan. Extra entries are reported (`report.extra`,
 * `report.extraFolder`) and, with `remove`, removed: a folder with everything in it, depth first,
 * each file or link unlinked, each folder removed once empty; what cannot be removed is reported
 * (`report.notRemoved`) and the walk goes on. Temporary files of a restore are skipped (the
 * writer removes the stale ones). The planned paths at which something other than a folder is
 * already present (reached through real folders only) are added to `present`, which is returned.
 */
export async function surveyFolder<P extends { add(path: string): unknown }>(
  root: string,
  plan: PlannedPaths,
  report: RestoreReport,
  remove: boolean,
  present: P,
): Promise<P> {
  const visit = async (folder: string, prefix: string, extra: boolean): Promise<void> => {
    const listed = await readdir(folder, { withFileTypes: true }).catch((error: unknown) => {
      if (!extra) throw error;
      report.notRemoved(prefix, error); // an extra folder that cannot be read stays, with its reason
      return undefined;
    });
    if (listed === undefined) return;
    const entries = listed.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      if (entry.name.startsWith(RESTORE_TEMP_PREFIX)) continue;
      const path = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
      const full = join(folder, entry.name);
      const isFolder = entry.isDirectory();
      const role = extra ? 'extra' : entryRole(path, isFolder, plan);
      if (role === 'needed-folder') await visit(full, path, false);
      else if (role === 'state-file') present.add(path);
      else if (isFolder) {
        await visit(full, path, true);
        report.extraFolder();
        if (remove) await rmdir(full).catch((error: unknown) => report.notRemoved(path, error));
      } else {
        report.extra(path);
        if (remove) await unlink(full).catch((error: NodeJS.ErrnoException) => error.code === 'ENOENT' || report.notRemoved(path, error));
      }
    }
  };
  await visit(root, '', false);
  return present;
}
