// What a screened delivery is (the types delivery.ts exports), and how a refusal reads: one
// line, the delivery's name first, then the entry, quoted.
import { basename } from 'node:path';
import { ArchiverError } from '../core/errors.js';

export interface DeliveryEntry {
  /** Relative, '/'-separated, as stored (not normalized), no leading slash, never a directory. */
  name: string;
  size: number;
  /** Modification time, ns since the epoch (ZIP: yauzl 3's getLastModDate(), which prefers the Info-ZIP extended timestamp (1 s) over the DOS time (2 s, local time); folder: lstat with bigint: true). */
  mtimeNs: bigint;
  /** sha-256 of the bytes, lower-case hex, measured by the screening pass. */
  sha256: string;
}

/** A delivery's files as the screening listed them (names checked, caps held), before it reads a byte of them. */
export interface DeliveryListing {
  kind: 'zip' | 'folder';
  files: ReadonlyArray<{ name: string; size: number }>;
}

/**
 * A file the delivery holds but keeps private: its Unix mode gives nobody read permission
 * (read-permission.ts). Never read into the archive; a folder's is not even opened.
 */
export interface WithheldEntry {
  name: string;
  size: number;
}

export interface Delivery {
  kind: 'zip' | 'folder';
  /** Absolute path of the ZIP or folder. */
  path: string;
  /** Its base name. */
  name: string;
  /** ZIP: the file's bytes; folder: sum of the entries' sizes. */
  size: number;
  /**
   * ZIP: sha-256 of the file; folder: sha-256 of its manifest text, one line
   * `<sha256>  <name>\n` per entry in entries order (BagIt's manifest form; names never hold
   * a line break, the screening refuses control characters), so two folders with the same
   * files under the same names have the same sha-256, whatever their mtimes.
   */
  sha256: string;
  /** Files only, sorted by name in code-unit order; the withheld ones are not among them. */
  entries: DeliveryEntry[];
  /** Files whose mode gives nobody read permission (mode 000), sorted by name; not in `entries` nor in a folder's sha-256. */
  withheld: WithheldEntry[];
  /** Streams an entry's bytes again; the iterable throws ArchiverError ERR_IMPORT_DAMAGED at its end if the size or sha-256 differ from the screening pass (the file changed while imported). Memory flat (no whole-entry buffers). */
  open(entry: DeliveryEntry): AsyncIterable<Uint8Array>;
  close(): Promise<void>;
}

/** Makes the refusal of one delivery: `code`, `<delivery name>: <message>`, the delivery's path. */
export type DeliveryRefusal = (code: 'ERR_IMPORT_UNSAFE' | 'ERR_IMPORT_DAMAGED', message: string, cause?: unknown) => ArchiverError;

export function deliveryRefusal(path: string): DeliveryRefusal {
  const name = basename(path);
  return (code, message, cause) => new ArchiverError(code, `${name}: ${message}`, { path, cause });
}

/** An entry's name as messages quote it: in JSON quotes (control characters and backslashes escaped), cut at 200 characters. */
export function quoteName(name: string): string {
  return name.length > 200 ? `${JSON.stringify(name.slice(0, 200))}…` : JSON.stringify(name);
}

/** Code-unit order (not locale order), the order of Delivery.entries. */
export function byName(a: { name: string }, b: { name: string }): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}
