// What aip/ needs of the place the bags are kept (docs/architecture.md, "The AIP storage"): put a
// file durably, read a file or a range of it, list a bag's files, and place bags sealed in tmp/.
// A folder on a disk is the one implementation (folder-storage.ts); an object store is meant to
// be the next, behind the same few operations, so that the batch bag writer and reader do not
// change with it.
import type { Readable } from 'node:stream';
import type { SealedBag } from '../bag/sealed-bag.js';
import type { Placement, PlaceOptions } from './bag-placement.js';

/** A range of a file's bytes: `length` bytes from `offset` (fewer at the end of the file). */
export interface ByteRange {
  offset: number;
  length: number;
}

/** A file of a bag: its path in the bag (`data/…`, `bag-info.txt`) and its size. */
export interface StoredFile {
  path: string;
  size: number;
}

/**
 * The store of an archive's bags. Paths are relative to the store, `/`-separated
 * (`aips/harvest-000001/batch-00001/bag-info.txt`); one that is absolute, has an empty, `.` or
 * `..` segment, or leaves the store is refused (ERR_ARCHIVE_PATH) before anything is touched.
 */
export interface AipStorage {
  /** How messages name `path` (for a folder: the file's path on disk). */
  where(path: string): string;
  /**
   * Writes a whole file at `path`, durably: a reader finds what was there before or all of the
   * new content, never part of it, even after a crash. Resolves to the bytes written.
   */
  putFile(path: string, content: string | Uint8Array | AsyncIterable<Uint8Array>): Promise<number>;
  /**
   * The bytes of the file at `path`, or of `range` of them, as a stream. A missing file is an
   * error of the stream with code ENOENT, as any other read error comes: when it is read.
   */
  read(path: string, range?: ByteRange): Readable;
  /**
   * Every file of the bag at `bagPath`, paths relative to the bag in code-unit order. Anything
   * there that is neither a file nor a folder is damage (ERR_ARCHIVE_DAMAGED): a bag holds
   * nothing else.
   */
  listBag(bagPath: string): Promise<StoredFile[]>;
  /** Whether a bag's name is taken (a bag is there, or, on object storage, a writer claimed it). */
  taken(bagPath: string): Promise<boolean>;
  /**
   * Puts sealed bags (complete in tmp/) at their destinations, durably, with one Placement per
   * bag in order; a destination holding another bag is refused, never overwritten. See
   * bag-placement.ts for the order of the steps and what a crash leaves.
   */
  placeBags(bags: readonly SealedBag[], options?: PlaceOptions): Promise<Placement[]>;
}

/** One bag of a store: what the bag readers take. */
export interface StoredBag {
  storage: AipStorage;
  /** The bag's path in the store (`aips/harvest-000001/batch-00001`). */
  bagPath: string;
}
