/**
 * One file as the index knows it: the unit the repository exports as an OAI-PMH item,
 * and the file the static server answers for its URL.
 */
export interface IndexedFile {
  /** Stable row id; with the datestamp it orders every list (keyset paging). */
  id: number;
  /** Path below the root, `/`-separated, no leading slash, exactly as on disk. */
  path: string;
  /** OAI-PMH datestamp in whole seconds since the epoch (see docs/repository.md for the rule). */
  datestamp: number;
  /** True once the file has disappeared; the row stays so the deletion can be reported. */
  deleted: boolean;
  /** MIME type without parameters, lower case, e.g. `image/svg+xml`. */
  mimeType: string;
  /** The set this item belongs to, encoded, e.g. `mime:image:svg~2Bxml`. */
  setSpec: string;
  /** Facts of the last version seen (kept when deleted). */
  size: number;
  /** Modification time in nanoseconds since the epoch (Last-Modified is this, in seconds). */
  mtimeNs: bigint;
  /** Change time in nanoseconds; with size, mtime and fileKey it tells whether to re-hash. */
  ctimeNs: bigint;
  /** `dev:ino` of the file served (for a symbolic link: of its target). */
  fileKey: string;
  /** sha-256 of the content, lower-case hex. */
  sha256: string;
}

/** An HTTP header as it is written into records and onto responses. */
export interface HeaderField {
  name: string;
  value: string;
}
