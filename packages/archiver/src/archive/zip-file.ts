// What the exports share to write one ZIP with yazl (export/serialize-bag.ts for `export --bags`,
// restore/site-zip.ts for `export --site`): entries whose read streams are made only when yazl
// reaches them, entries with exact mtimes (the site's), and the ZIP file hashed on the way and
// written durably, never left half-written (durable-file.ts).
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import yazl from 'yazl';
import { archiveIoError } from '../core/errors.js';
import { type DurableFileSink, streamFileDurably } from './durable-file.js';

/** A ZIP file written: its size and SHA-256. */
export interface WrittenZip {
  bytes: number;
  sha256: string;
}

type GetReadStream = (done: (error: unknown, stream: NodeJS.ReadableStream) => void) => void;

/** What of yazl's entries (not its public API) {@link exactTimeZipFile} relies on. */
interface YazlEntry {
  mtime?: unknown;
  forceDosTimestamp?: unknown;
  getLocalFileHeader?: () => Buffer;
}

/** The Info-ZIP extended timestamp ("UT", 0x5455) as a local header carries it: mtime and atime. */
const LOCAL_TIMESTAMP_SIZE = 13;

/**
 * A yazl ZipFile whose entries keep their mtimes to the second whichever tool unpacks them, and
 * whose bytes do not depend on the time zone of the machine that writes it, when each entry's
 * `mtime` is a {@link zipTime}.
 *
 * yazl (3.3) writes an mtime twice: exactly, in the Info-ZIP extended timestamp of the central
 * directory (UTC, 1901 to 2038), and in the entry's DOS date and time (2-second steps, 1980 to
 * 2107), which it computes from the Date's local-time getters. Info-ZIP's unzip 6.00 reads the
 * extended timestamp only from an entry's local header, and without one there takes the DOS
 * time, rounded to 2 seconds and read as local time. So each entry's local header gets the
 * extended timestamp too (mtime, and atime the same, as restore sets them). yazl has no option
 * for it: each entry is extended as yazl files it in `ZipFile.entries`, before yazl writes its
 * local header (offsets stay right: yazl counts the bytes it writes). Should a later yazl write
 * an extra field there itself, its header is left as it is; should it file its entries
 * otherwise, this throws rather than write ZIPs without exact times.
 */
export function exactTimeZipFile(): yazl.ZipFile {
  const zip = new yazl.ZipFile();
  const entries = (zip as unknown as { entries?: unknown }).entries;
  if (!Array.isArray(entries)) throw new Error('this yazl keeps no ZipFile.entries: its ZIPs cannot carry exact mtimes');
  const push = entries.push;
  entries.push = (...added: YazlEntry[]): number => {
    for (const entry of added) withLocalTimestamp(entry);
    return push.apply(entries, added);
  };
  return zip;
}

function withLocalTimestamp(entry: YazlEntry): void {
  const localHeader = entry.getLocalFileHeader;
  if (typeof localHeader !== 'function') throw new Error('this yazl has no Entry.getLocalFileHeader: its ZIPs cannot carry exact mtimes');
  entry.getLocalFileHeader = () => {
    const header = localHeader.call(entry);
    if (entry.forceDosTimestamp === true || !(entry.mtime instanceof Date) || header.readUInt16LE(28) !== 0) return header;
    const seconds = Math.min(Math.max(Math.floor(entry.mtime.getTime() / 1000), 0), 0x7fffffff);
    const timestamp = Buffer.alloc(LOCAL_TIMESTAMP_SIZE);
    timestamp.writeUInt16LE(0x5455, 0); // "UT"
    timestamp.writeUInt16LE(LOCAL_TIMESTAMP_SIZE - 4, 2);
    timestamp.writeUInt8(0b11, 4); // mtime and atime follow
    timestamp.writeUInt32LE(seconds, 5);
    timestamp.writeUInt32LE(seconds, 9);
    const extended = Buffer.concat([header, timestamp]);
    extended.writeUInt16LE(LOCAL_TIMESTAMP_SIZE, 28); // extra field length
    return extended;
  };
}

/**
 * An mtime (seconds since the epoch) as yazl's `mtime`: a Date that answers the local-time
 * getters yazl computes the DOS date and time from in UTC, so that those fields do not depend
 * on the exporting machine's time zone (a tool that reads only them shows the UTC time). Times
 * before 1970 become 1970-01-01T00:00:00Z (yazl cannot write negative ones).
 */
export function zipTime(seconds: number): Date {
  return new UtcFieldsDate(Math.max(Math.floor(seconds), 0) * 1000);
}

/** A Date whose local-time getters answer in UTC: yazl computes the DOS date and time from them. */
class UtcFieldsDate extends Date {
  override getFullYear(): number {
    return this.getUTCFullYear();
  }
  override getMonth(): number {
    return this.getUTCMonth();
  }
  override getDate(): number {
    return this.getUTCDate();
  }
  override getHours(): number {
    return this.getUTCHours();
  }
  override getMinutes(): number {
    return this.getUTCMinutes();
  }
  override getSeconds(): number {
    return this.getUTCSeconds();
  }
}

/**
 * For yazl's addReadStreamLazy: the stream `openStream` gives when yazl reaches the entry. A
 * failure to open it and any error of the stream become the ZipFile's error, which
 * {@link writeZipFile} throws (yazl does not listen to a read stream's errors itself: the ZIP
 * would wait for its end forever).
 */
export function lazyEntry(zip: yazl.ZipFile, openStream: () => Readable | Promise<Readable>): GetReadStream {
  return (done) => {
    Promise.resolve()
      .then(openStream)
      .then(
        (stream) => {
          stream.on('error', (error) => zip.emit('error', error));
          done(null, stream);
        },
        (error: unknown) => zip.emit('error', error),
      );
  };
}

/**
 * Writes the ZIP `zip` produces (its entries added and `end()` called) to `target` durably and
 * whole (durable-file.ts: a temporary name, its size checked, fsynced, renamed, its folder
 * fsynced), hashed on the way. Streamed: memory does not grow with the ZIP. On any failure
 * (the ZipFile's error, an I/O error) the temporary file is removed and nothing is left under
 * `target`; an ArchiverError is thrown as it is, anything else as ERR_ARCHIVE_IO.
 */
export async function writeZipFile(zip: yazl.ZipFile, target: string): Promise<WrittenZip> {
  const output = zip.outputStream as Readable;
  zip.on('error', (error: Error) => output.destroy(error));
  const hash = createHash('sha256');
  const produce = async (file: DurableFileSink): Promise<WrittenZip> => {
    try {
      for await (const chunk of output as AsyncIterable<Buffer>) {
        hash.update(chunk);
        await file.write(chunk);
      }
    } catch (error) {
      throw archiveIoError(error, `cannot write ${target}`, target);
    }
    return { bytes: file.bytes, sha256: hash.digest('hex') };
  };
  try {
    return await streamFileDurably(target, produce, { fullHint: 'free space there, then run the same export again' });
  } catch (error) {
    output.destroy(); // stops yazl and closes the entry it was reading
    throw error;
  }
}
