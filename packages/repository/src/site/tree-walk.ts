import { type Dirent, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { ExportPolicy } from '@oaibag/oai-pmh';

/** A file the walk found: a regular file, or a symbolic link for the caller to look at. */
export interface WalkedFile {
  path: string;
  regular: boolean;
}

export interface WalkCounts {
  directories: number;
}

interface Entry {
  name: string;
  /** The name as it sorts among its siblings: a folder's files all follow `name/`. */
  key: string;
  folder: boolean;
  regular: boolean;
}

interface OpenFolder {
  path: string;
  entries: Entry[];
  next: number;
}

/**
 * The files below `folder` ('' for the whole tree) that the export rules let through, in the
 * index's path order: SQLite's BINARY order of the UTF-8 paths, which is code point order
 * ({@link comparePaths}). A folder's entries are read and sorted by `name` for a file and
 * `name/` for a folder, whose whole subtree then comes out at that place, so one pass over the
 * index's rows in path order meets every file where it belongs (site-indexer.ts).
 *
 * Memory: the entries of the folders on the current path, never the tree; a single folder
 * of a million files holds its million names while it is walked. Excluded folders (hidden
 * ones, `--exclude`) are not entered; links to folders are returned as links, not followed.
 */
export function* walkInPathOrder(rootReal: string, folder: string, policy: ExportPolicy, counts: WalkCounts): Generator<WalkedFile> {
  if (folder !== '' && policy.excludedDirectoryReason(folder)) return;
  const stack: OpenFolder[] = [];
  const enter = (path: string) => {
    const entries = readFolder(join(rootReal, path));
    if (entries === null) return; // vanished or unreadable: its rows find no file, and are looked at again
    counts.directories++;
    stack.push({ path, entries, next: 0 });
  };
  enter(folder);
  while (stack.length > 0) {
    const open = stack.at(-1)!;
    const entry = open.entries[open.next++];
    if (entry === undefined) {
      stack.pop();
      continue;
    }
    const path = open.path === '' ? entry.name : `${open.path}/${entry.name}`;
    if (entry.folder) {
      if (!policy.excludedDirectoryReason(path)) enter(path);
    } else if (!policy.excludedReason(path)) yield { path, regular: entry.regular };
  }
}

/** A folder's files, links and subfolders, sorted as their paths sort; null when it cannot be read. */
function readFolder(path: string): Entry[] | null {
  let dirents: Dirent[];
  try {
    dirents = readdirSync(path, { withFileTypes: true });
  } catch {
    return null;
  }
  const entries: Entry[] = [];
  for (const dirent of dirents) {
    const name = dirent.name;
    // Node puts U+FFFD where a name is not valid UTF-8: such a file cannot be named in a URL.
    if (name.includes('\uFFFD')) continue;
    const folder = dirent.isDirectory();
    // Symbolic links to folders are not followed (loops, and one file under two names):
    // a link is handed on as a file, which inspectFile refuses when it leads to a folder.
    if (!folder && !dirent.isFile() && !dirent.isSymbolicLink()) continue;
    entries.push({ name, key: folder ? `${name}/` : name, folder, regular: dirent.isFile() });
  }
  return entries.sort((a, b) => comparePaths(a.key, b.key));
}

/**
 * Code point order, which is the order of UTF-8 bytes and so of SQLite's BINARY collation on
 * the index's paths. JavaScript's `<` compares UTF-16 units, which differs only where a
 * surrogate (U+10000 and above) meets U+E000..U+FFFF: those two ranges are swapped here.
 */
export function comparePaths(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800 && y >= 0xd800) {
      x += x < 0xe000 ? 0x2000 : -0x800;
      y += y < 0xe000 ? 0x2000 : -0x800;
    }
    return x - y;
  }
  return a.length - b.length;
}
