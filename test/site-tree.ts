// A folder as the restore and export tests compare it: every regular file below it, by relative
// path, with its digest, size and mtime in whole seconds; symbolic links reported as such.
import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Relative `/` path → sha-256, size and mtime in whole seconds, or 'symlink'. */
export type Tree = Map<string, { sha256: string; size: number; mtime: number } | 'symlink'>;

/** Every file below `dir`, in code-unit order of the paths. */
export function snapshot(dir: string, into: Tree = new Map(), prefix = ''): Tree {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    const rel = prefix === '' ? name : `${prefix}/${name}`;
    const info = lstatSync(path);
    if (info.isSymbolicLink()) into.set(rel, 'symlink');
    else if (info.isDirectory()) snapshot(path, into, rel);
    else {
      const bytes = readFileSync(path);
      into.set(rel, { sha256: createHash('sha256').update(bytes).digest('hex'), size: bytes.length, mtime: Math.floor(info.mtimeMs / 1000) });
    }
  }
  return into;
}
