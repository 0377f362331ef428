// The names a delivery may hold: relative, '/'-separated paths that stay inside the delivery on
// every system the files may later be written to, and that no two entries share once Unicode
// NFC is applied (macOS normalizes names, so `é` precomposed and decomposed would be one file).
import { quoteName } from './delivery-model.js';

/**
 * Why `name` cannot be stored (the end of a sentence starting with the entry), or null when it
 * can. A folder entry's one trailing '/' is not part of the name.
 */
export function nameProblem(name: string, isFolder = false): string | null {
  const path = isFolder && name.endsWith('/') ? name.slice(0, -1) : name;
  if (/[\u0000-\u001f\u007f-\u009f]/.test(path)) return 'holds a control character';
  if (path === '') return 'has an empty name';
  if (path.startsWith('/')) return 'is an absolute path, which would land outside the delivery';
  if (/^[A-Za-z]:/.test(path)) return 'starts with a drive letter, which would land outside the delivery on Windows';
  if (path.includes('\\')) return 'holds a backslash, which Windows reads as a folder separator';
  const segments = path.split('/');
  if (segments.includes('..')) return 'would land outside the delivery (zip slip)';
  if (segments.includes('')) return 'has an empty path segment';
  if (segments.includes('.')) return 'has a "." path segment';
  return null;
}

interface NameNode {
  /** The entry stored here as a file, as named in the delivery. */
  file?: string;
  /** An entry that makes this node a folder (the folder entry itself, or a file below it). */
  folderOf?: string;
  children: Map<string, NameNode>;
}

/**
 * Every name seen so far, as a tree of NFC segments (linear in the names' length, however deep):
 * refuses a second entry with the same name after NFC, and a name that is a file for one entry
 * and a folder of another (`a` and `a/b`).
 */
export class NameTree {
  private readonly root: NameNode = { children: new Map() };

  /** Adds the entry (a checked name, see nameProblem): the problem when it clashes, else null. */
  add(name: string, isFolder: boolean): string | null {
    const path = isFolder && name.endsWith('/') ? name.slice(0, -1) : name;
    const segments = path.normalize('NFC').split('/');
    let node = this.root;
    for (let index = 0; index < segments.length; index++) {
      const last = index === segments.length - 1;
      if (node !== this.root) {
        if (node.file !== undefined)
          return `needs ${quoteName(segments.slice(0, index).join('/'))} to be a folder, but entry ${quoteName(node.file)} is a file`;
        node.folderOf ??= name;
      }
      let child = node.children.get(segments[index]!);
      if (!child) node.children.set(segments[index]!, (child = { children: new Map() }));
      node = child;
      if (!last) continue;
      if (node.file !== undefined) {
        if (isFolder) return `is a folder, but entry ${quoteName(node.file)} is a file`;
        if (node.file === name) return `has the same name as entry ${quoteName(node.file)}`;
        return `has the same name as entry ${quoteName(node.file)} after Unicode NFC (${escaped(name)} and ${escaped(node.file)})`;
      }
      if (isFolder) node.folderOf ??= name;
      else if (node.folderOf !== undefined) return `is a file, but entry ${quoteName(node.folderOf)} makes it a folder`;
      else node.file = name;
    }
    return null;
  }
}

/** The name with every character outside printable ASCII as \uXXXX: names equal after NFC look alike, their code points do not. */
function escaped(name: string): string {
  return quoteName(name).replace(/[^\x20-\x7e]/g, (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
