// A ZIP file written front to back in flat memory, for `export --site` (restore/site-zip.ts),
// whose ZIPs hold one entry per file of a site, millions at 1M files. yazl (zip-file.ts, still
// used for `export --bags`, whose bags are small and whose bytes must not change) keeps every
// entry until it writes the central directory at the end, about 2 KB an entry; here each
// entry's central-directory record goes to a spill file next to the ZIP as soon as the entry
// ends, and the file is copied in after the last entry. What stays in memory is one entry's
// buffers and counters. The npm writers looked at (yazl; zip-stream, archiver's; fflate's Zip)
// all keep every entry's record until the end, so this one is ours, with what `export --site`
// needs and no more.
//
// The format (PKWARE's APPNOTE 6.3), chosen for the widest set of readers:
// - every entry has general purpose bit 3: its CRC-32 and sizes follow its data in a data
//   descriptor (with its signature), as they are known only once the data is written; bit 11
//   too (the name is UTF-8). Deflate (method 8) at a given level, or stored (method 0).
// - times: the DOS date and time (UTC fields, so the bytes do not depend on the writer's time
//   zone) and the Info-ZIP extended timestamp ("UT", mtime and atime) in the local header and
//   the central directory (mtime), as zip-file.ts explains for yazl's ZIPs.
// - ZIP64 (version 4.5) where a field does not fit: an entry whose size (given before its bytes)
//   could make its data pass 0xFFFFFFFE bytes gets the ZIP64 extra field in its local header
//   (sizes zero, the fixed fields 0xFFFFFFFF) and an 8-byte-size data descriptor, as Python's
//   zipfile writes a streamed entry; its central record, or one whose local header starts past
//   that offset, gets the ZIP64 extra field with all three values; the end of the central
//   directory gets the ZIP64 record and locator from 65,535 entries (0xFFFF, the marker) or
//   when the central directory's size or offset does not fit, the classic record keeping the
//   values that fit. Below those sizes the bytes are the ones yazl wrote for the same entries
//   (with zip-file.ts's local timestamps), which is how export --site's ZIPs stayed the same.
import { createHash, randomBytes } from 'node:crypto';
import { type FileHandle, open, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { crc32, createDeflateRaw } from 'node:zlib';
import { archiveIoError, isStorageExhausted, noRoomError } from '../core/errors.js';
import { streamFileDurably } from './durable-file.js';
import type { WrittenZip } from './zip-file.js';

/** Where the ZIP's bytes go, in order (a durable file's sink: durable-file.ts). */
export interface ZipSink {
  write(chunk: Uint8Array): Promise<void>;
}

/** One entry of the ZIP. */
export interface ZipEntry {
  /** Its name, `/`-separated; at most 65,535 bytes of UTF-8. */
  name: string;
  /** Its modification time, in seconds since the epoch (clamped to what the fields hold). */
  mtime: number;
  /** Unix mode (type and permissions), in the high half of the external attributes. */
  mode: number;
  /** 0: stored; 1 to 9: deflated at that zlib level. */
  level: number;
  /** The number of bytes the entry will hold: the bytes given must agree (it decides ZIP64 before they are written). */
  size: number;
}

export interface ZipWriterOptions {
  /** Every entry and the end of the central directory in ZIP64 form, whatever their sizes (tests). */
  forceZip64?: boolean;
}

const LOCAL_HEADER = 0x04034b50;
const DATA_DESCRIPTOR = 0x08074b50;
const CENTRAL_RECORD = 0x02014b50;
const ZIP64_END_RECORD = 0x06064b50;
const ZIP64_END_LOCATOR = 0x07064b50;
const END_RECORD = 0x06054b50;
/** Unix (3), written to APPNOTE 6.3. */
const VERSION_MADE_BY = (3 << 8) | 63;
/** 2.0: deflate, folders, bit 3; 4.5: ZIP64. */
const VERSION_NEEDED = 20;
const VERSION_NEEDED_ZIP64 = 45;
/** General purpose bits: 3, CRC-32 and sizes in a data descriptor; 11, the name is UTF-8. */
const FLAGS = (1 << 3) | (1 << 11);
/** The largest value a 4-byte field holds that is not ZIP64's marker. */
const MAX_32 = 0xfffffffe;
/** From this many entries the end record's counts (0xFFFF is ZIP64's marker) move to the ZIP64 record. */
const MAX_ENTRIES_16 = 0xffff;
/** Central records gathered before one write to the spill file. */
const SPILL_GATHER_BYTES = 256 * 1024;
/** The spill file is copied into the ZIP this much at a time. */
const COPY_BYTES = 1024 * 1024;

/**
 * zlib's bound on what deflate makes of `size` bytes (deflateBound, for the default window and
 * memory level): an entry whose bound passes 4-byte fields is written as ZIP64 from its local header on.
 */
function deflateBound(size: number): number {
  return size + Math.floor(size / 4096) + Math.floor(size / 16384) + Math.floor(size / 33554432) + 13;
}

/** The DOS date and time fields of `seconds`, read as UTC, clamped to 1980-01-01 .. 2107-12-31 23:59:58. */
function dosDateTime(seconds: number): { date: number; time: number } {
  const instant = new Date(Math.min(Math.max(seconds * 1000, Date.UTC(1980, 0, 1)), Date.UTC(2107, 11, 31, 23, 59, 58)));
  return {
    date: ((instant.getUTCFullYear() - 1980) << 9) | ((instant.getUTCMonth() + 1) << 5) | instant.getUTCDate(),
    time: (instant.getUTCHours() << 11) | (instant.getUTCMinutes() << 5) | Math.floor(instant.getUTCSeconds() / 2),
  };
}

/** The extended timestamp's seconds: whole seconds, clamped to 1970 .. 2038-01-19 (a signed 32-bit field; no time before 1970, as yazl's). */
function unixSeconds(seconds: number): number {
  return Math.min(Math.max(Math.floor(seconds), 0), 0x7fffffff);
}

function writeUInt64(buffer: Buffer, value: number, offset: number): void {
  buffer.writeBigUInt64LE(BigInt(value), offset);
}

/** What the central record of a written entry needs. */
interface WrittenEntry {
  name: Buffer;
  entry: ZipEntry;
  zip64: boolean;
  crc: number;
  compressed: number;
  offset: number;
}

/**
 * Writes a ZIP to `sink`, entry by entry ({@link add}), then {@link finish}. `spillPath` names
 * the file where central records wait (created new, removed by {@link close}; on a system that
 * lets an open file be unlinked it is unlinked at once, so a killed process leaves nothing).
 * One entry at a time: {@link add} resolves once the entry is whole.
 */
export class ZipWriter {
  private offset = 0;
  private entries = 0;
  private centralBytes = 0;
  private gathered: Buffer[] = [];
  private gatheredBytes = 0;
  private spilled = 0;
  private finished = false;

  private constructor(
    private readonly sink: ZipSink,
    private readonly spill: FileHandle,
    private readonly spillPath: string | undefined,
    private readonly options: ZipWriterOptions,
  ) {}

  /** A writer to `sink`, its central records spilled to a new file at `spillPath`. */
  static async create(sink: ZipSink, spillPath: string, options: ZipWriterOptions = {}): Promise<ZipWriter> {
    const spill = await open(spillPath, 'wx+');
    const unlinked = await rm(spillPath).then(
      () => true,
      () => false,
    );
    return new ZipWriter(sink, spill, unlinked ? undefined : spillPath, options);
  }

  /** The bytes written to the sink so far. */
  get bytes(): number {
    return this.offset;
  }

  /**
   * Writes one entry: its local header, its bytes (deflated or stored) as `bytes` yields them,
   * its data descriptor; its central record is kept for {@link finish}. What `bytes` throws is
   * thrown as it is (the ZIP is then unusable: the caller removes it); bytes that do not
   * agree with `entry.size` are an error.
   */
  async add(entry: ZipEntry, bytes: AsyncIterable<Uint8Array>): Promise<void> {
    if (this.finished) throw new Error('ZipWriter: an entry added after finish');
    const name = Buffer.from(entry.name, 'utf8');
    if (name.length > 0xffff) throw new Error(`ZipWriter: the name of ${entry.name.slice(0, 80)}… is longer than 65,535 bytes`);
    const zip64 = this.options.forceZip64 === true || deflateBound(entry.size) > MAX_32;
    const offset = this.offset;
    await this.put(localHeader(name, entry, zip64));
    let crc = 0;
    let size = 0;
    let compressed = 0;
    const counted = async function* (): AsyncGenerator<Uint8Array> {
      for await (const chunk of bytes) {
        crc = crc32(chunk, crc);
        size += chunk.byteLength;
        yield chunk;
      }
    };
    const store = async (out: AsyncIterable<Uint8Array>): Promise<void> => {
      for await (const chunk of out) {
        compressed += chunk.byteLength;
        await this.put(chunk);
      }
    };
    if (entry.level === 0) await store(counted());
    else await pipeline(counted, createDeflateRaw({ level: entry.level }), store);
    if (size !== entry.size) throw new Error(`ZipWriter: ${entry.name} was given as ${entry.size} bytes and has ${size}`);
    if (!zip64 && compressed > MAX_32) throw new Error(`ZipWriter: ${entry.name} deflated past deflate's bound`);
    await this.put(dataDescriptor(crc, compressed, size, zip64));
    await this.keep(centralRecord({ name, entry, zip64, crc, compressed, offset }));
  }

  /** Writes the central directory (copied from the spill file) and its end; no entry can follow. */
  async finish(): Promise<void> {
    this.finished = true;
    await this.flushSpill();
    const start = this.offset;
    const chunk = Buffer.allocUnsafe(Math.min(COPY_BYTES, Math.max(this.spilled, 1)));
    for (let at = 0; at < this.spilled; ) {
      const { bytesRead } = await this.spill.read(chunk, 0, Math.min(chunk.length, this.spilled - at), at);
      if (bytesRead === 0) throw new Error('ZipWriter: the spill file ended early');
      await this.put(Buffer.from(chunk.subarray(0, bytesRead)));
      at += bytesRead;
    }
    await this.put(this.endOfCentralDirectory(start, this.offset - start));
  }

  /** Closes and removes the spill file (always call it, after {@link finish} or a failure). */
  async close(): Promise<void> {
    await this.spill.close().catch(() => undefined);
    if (this.spillPath !== undefined) await rm(this.spillPath, { force: true }).catch(() => undefined);
  }

  private async put(chunk: Uint8Array): Promise<void> {
    await this.sink.write(chunk);
    this.offset += chunk.byteLength;
  }

  private async keep(record: Buffer): Promise<void> {
    this.entries += 1;
    this.centralBytes += record.length;
    this.gathered.push(record);
    this.gatheredBytes += record.length;
    if (this.gatheredBytes >= SPILL_GATHER_BYTES) await this.flushSpill();
  }

  private async flushSpill(): Promise<void> {
    if (this.gatheredBytes === 0) return;
    const block = Buffer.concat(this.gathered, this.gatheredBytes);
    this.gathered = [];
    this.gatheredBytes = 0;
    for (let at = 0; at < block.length; ) {
      const { bytesWritten } = await this.spill.write(block, at, block.length - at, this.spilled);
      at += bytesWritten;
      this.spilled += bytesWritten;
    }
  }

  private endOfCentralDirectory(start: number, size: number): Buffer {
    // A field too small for its value holds the marker (all of them when forced), and the ZIP64 record has them all.
    const force = this.options.forceZip64 === true;
    const countMarked = force || this.entries >= MAX_ENTRIES_16;
    const sizeMarked = force || size > MAX_32;
    const startMarked = force || start > MAX_32;
    const zip64 = countMarked || sizeMarked || startMarked;
    const end = Buffer.alloc(22);
    end.writeUInt32LE(END_RECORD, 0);
    // 4, 6: this disk and the central directory's disk, both 0
    end.writeUInt16LE(countMarked ? MAX_ENTRIES_16 : this.entries, 8);
    end.writeUInt16LE(countMarked ? MAX_ENTRIES_16 : this.entries, 10);
    end.writeUInt32LE(sizeMarked ? 0xffffffff : size, 12);
    end.writeUInt32LE(startMarked ? 0xffffffff : start, 16);
    // 20: no comment
    if (!zip64) return end;
    const record = Buffer.alloc(56);
    record.writeUInt32LE(ZIP64_END_RECORD, 0);
    writeUInt64(record, 56 - 12, 4);
    record.writeUInt16LE(VERSION_MADE_BY, 12);
    record.writeUInt16LE(VERSION_NEEDED_ZIP64, 14);
    // 16, 20: disks, 0
    writeUInt64(record, this.entries, 24);
    writeUInt64(record, this.entries, 32);
    writeUInt64(record, size, 40);
    writeUInt64(record, start, 48);
    const locator = Buffer.alloc(20);
    locator.writeUInt32LE(ZIP64_END_LOCATOR, 0);
    // 4: the disk of the ZIP64 end record, 0
    writeUInt64(locator, start + size, 8);
    locator.writeUInt32LE(1, 16); // disks in all
    return Buffer.concat([record, locator, end]);
  }
}

/** The Info-ZIP extended timestamp: mtime (and, in a local header, atime the same). */
function extendedTimestamp(seconds: number, local: boolean): Buffer {
  const field = Buffer.alloc(local ? 13 : 9);
  field.writeUInt16LE(0x5455, 0); // "UT"
  field.writeUInt16LE(field.length - 4, 2);
  field.writeUInt8(0b11, 4); // mtime and atime (the central copy, by the format, holds mtime only)
  field.writeUInt32LE(unixSeconds(seconds), 5);
  if (local) field.writeUInt32LE(unixSeconds(seconds), 9);
  return field;
}

/** The ZIP64 extended information extra field (0x0001) holding `values`, 8 bytes each, in the format's order. */
function zip64Extra(values: number[]): Buffer {
  const field = Buffer.alloc(4 + 8 * values.length);
  field.writeUInt16LE(0x0001, 0);
  field.writeUInt16LE(8 * values.length, 2);
  values.forEach((value, index) => writeUInt64(field, value, 4 + 8 * index));
  return field;
}

function localHeader(name: Buffer, entry: ZipEntry, zip64: boolean): Buffer {
  const { date, time } = dosDateTime(entry.mtime);
  const timestamp = extendedTimestamp(entry.mtime, true);
  // ZIP64: the sizes are in the data descriptor; the extra field says so, with zeros.
  const zip64Field = zip64 ? zip64Extra([0, 0]) : Buffer.alloc(0);
  const fixed = Buffer.alloc(30);
  fixed.writeUInt32LE(LOCAL_HEADER, 0);
  fixed.writeUInt16LE(zip64 ? VERSION_NEEDED_ZIP64 : VERSION_NEEDED, 4);
  fixed.writeUInt16LE(FLAGS, 6);
  fixed.writeUInt16LE(entry.level === 0 ? 0 : 8, 8);
  fixed.writeUInt16LE(time, 10);
  fixed.writeUInt16LE(date, 12);
  // 14: CRC-32, 0 (in the data descriptor)
  fixed.writeUInt32LE(zip64 ? 0xffffffff : 0, 18);
  fixed.writeUInt32LE(zip64 ? 0xffffffff : 0, 22);
  fixed.writeUInt16LE(name.length, 26);
  fixed.writeUInt16LE(timestamp.length + zip64Field.length, 28);
  return Buffer.concat([fixed, name, timestamp, zip64Field]);
}

function dataDescriptor(crc: number, compressed: number, size: number, zip64: boolean): Buffer {
  const descriptor = Buffer.alloc(zip64 ? 24 : 16);
  descriptor.writeUInt32LE(DATA_DESCRIPTOR, 0);
  descriptor.writeUInt32LE(crc, 4);
  if (zip64) {
    writeUInt64(descriptor, compressed, 8);
    writeUInt64(descriptor, size, 16);
  } else {
    descriptor.writeUInt32LE(compressed, 8);
    descriptor.writeUInt32LE(size, 12);
  }
  return descriptor;
}

function centralRecord(written: WrittenEntry): Buffer {
  const { name, entry, crc, compressed, offset } = written;
  const zip64 = written.zip64 || compressed > MAX_32 || entry.size > MAX_32 || offset > MAX_32;
  const { date, time } = dosDateTime(entry.mtime);
  const timestamp = extendedTimestamp(entry.mtime, false);
  const zip64Field = zip64 ? zip64Extra([entry.size, compressed, offset]) : Buffer.alloc(0);
  const fixed = Buffer.alloc(46);
  fixed.writeUInt32LE(CENTRAL_RECORD, 0);
  fixed.writeUInt16LE(VERSION_MADE_BY, 4);
  fixed.writeUInt16LE(zip64 ? VERSION_NEEDED_ZIP64 : VERSION_NEEDED, 6);
  fixed.writeUInt16LE(FLAGS, 8);
  fixed.writeUInt16LE(entry.level === 0 ? 0 : 8, 10);
  fixed.writeUInt16LE(time, 12);
  fixed.writeUInt16LE(date, 14);
  fixed.writeUInt32LE(crc, 16);
  fixed.writeUInt32LE(zip64 ? 0xffffffff : compressed, 20);
  fixed.writeUInt32LE(zip64 ? 0xffffffff : entry.size, 24);
  fixed.writeUInt16LE(name.length, 28);
  fixed.writeUInt16LE(timestamp.length + zip64Field.length, 30);
  // 32: no comment; 34: disk 0; 36: internal attributes 0
  fixed.writeUInt32LE(((entry.mode & 0xffff) << 16) >>> 0, 38);
  fixed.writeUInt32LE(zip64 ? 0xffffffff : offset, 42);
  return Buffer.concat([fixed, name, timestamp, zip64Field]);
}

/**
 * Writes the ZIP that `fill` makes with the writer it is given (entries added one at a time) to
 * `target`, durably and whole (durable-file.ts), hashed on the way, its central records
 * spilled next to it meanwhile: memory does not grow with the number of entries nor their
 * size. On any failure nothing is left under `target` nor beside it; what `fill` throws as an
 * ArchiverError is thrown as it is, a full file system as ERR_ARCHIVE_FULL, anything else as
 * ERR_ARCHIVE_IO.
 */
export async function writeZipDurably(
  target: string,
  fill: (zip: ZipWriter) => Promise<void>,
  options: ZipWriterOptions & { fullHint?: string } = {},
): Promise<WrittenZip> {
  const fullHint = options.fullHint ?? 'free space there, then run the same export again';
  const hash = createHash('sha256');
  return streamFileDurably(
    target,
    async (file) => {
      const sink: ZipSink = {
        write: (chunk) => {
          hash.update(chunk);
          return file.write(chunk);
        },
      };
      const spillPath = join(dirname(target), `${basename(target)}.${randomBytes(4).toString('hex')}.central`);
      const zip = await ZipWriter.create(sink, spillPath, options).catch((error: unknown) => Promise.reject(zipError(target, error, fullHint)));
      try {
        await fill(zip);
        await zip.finish();
      } catch (error) {
        throw zipError(target, error, fullHint);
      } finally {
        await zip.close();
      }
      return { bytes: file.bytes, sha256: hash.digest('hex') };
    },
    { fullHint },
  );
}

function zipError(target: string, error: unknown, fullHint: string): Error {
  if (isStorageExhausted(error)) return noRoomError(`the folder of ${target}`, dirname(target), error, fullHint);
  return archiveIoError(error, `cannot write ${target}`, target);
}
