// A delivery that is a ZIP file, screened in three passes before anything is returned:
// 1. the central directory, metadata only: every name, type, flag and declared size is checked,
//    so a hostile or bomb ZIP is refused before a byte inflates;
// 2. every file entry's local header located and its data read once (eight at a time), its size
//    held to the declared one (yauzl's validateEntrySizes, and our own count), its CRC-32
//    checked, its sha-256 measured, its bytes handed to the caller's `keep` when it wants them;
// 3. the ZIP file itself hashed (unless its caller measured it already).
// All three read one file descriptor, so a file renamed over the delivery meanwhile is not read.
// An entry made on Unix whose mode gives nobody read permission is screened like the others (a
// bomb is a bomb) but withheld (read-permission.ts): never kept, not among the entries.
import { close, createReadStream, fstatSync, open as openFile, readSync } from 'node:fs';
import { basename } from 'node:path';
import type { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { inflateRawSync } from 'node:zlib';
import yauzl, { type Entry, type ZipFile } from 'yauzl';
import { readZipEntries, zipEntryFileType } from '../core/zip-entries.js';
import { CachedZipReader } from './cached-zip-reader.js';
import { DeliveryCaps, type DeliveryLimits, grouped } from './delivery-limits.js';
import { byName, type Delivery, type DeliveryEntry, type DeliveryRefusal, deliveryRefusal, quoteName, type WithheldEntry } from './delivery-model.js';
import { NameTree, nameProblem } from './delivery-names.js';
import { checkedBytes, errorText, type KeepBytes, KeepFailed, measureBytes, READ_CHUNK_BYTES, type ScreeningHooks } from './entry-bytes.js';
import { nobodyMayRead, zipEntryUnixMode } from './read-permission.js';

const openFd = promisify(openFile);

/** strictFileNames: yauzl refuses `..`, absolute names and backslashes itself (we turn its errors into ours). */
const ZIP_OPTIONS = { lazyEntries: true, autoClose: false, decodeStrings: true, strictFileNames: true, validateEntrySizes: true } as const;

/** yauzl's validateFileName messages, which end with the name. */
const YAUZL_NAME_ERROR = /^(?:invalid characters in fileName|absolute path|invalid relative path): ([\s\S]*)$/;

/** A file entry as the directory pass leaves it: what reading its data needs, no yauzl Entry kept (memory). */
interface ZipFileEntry {
  name: string;
  size: number;
  mtimeNs: bigint;
  crc32: number;
  compressedSize: number;
  deflated: boolean;
  /** Its Unix mode gives nobody read permission: screened, then left out of the delivery's entries. */
  withheld: boolean;
  /** Where its local header is; the data follows it (read in pass 2, see dataStart). */
  localHeaderOffset: number;
  /** Where its data starts, once pass 2 read the local header. */
  fileDataStart?: number;
}

/**
 * Entries of at most this many bytes (compressed and inflated) are read with one read and
 * inflated in one call rather than streamed: most of a web site's files, whose per-stream cost
 * would otherwise be most of the time. Several are in flight at once, each at most this size.
 */
const WHOLE_ENTRY_BYTES = 1024 * 1024;

/** Entries screened at once (their reads and inflating run on libuv's threads). */
const SCREEN_CONCURRENCY = 8;

export async function openZipDelivery(path: string, limits: DeliveryLimits, hooks: ScreeningHooks = {}): Promise<Delivery> {
  const { progress, keep } = hooks;
  const refuse = deliveryRefusal(path);
  const fd = await openFd(path, 'r').catch((error: unknown) => {
    throw refuse('ERR_IMPORT_DAMAGED', `cannot be read: ${errorText(error)}`, error);
  });
  let zip: ZipFile;
  try {
    zip = await yauzl.fromRandomAccessReaderPromise(new CachedZipReader(fd, fstatSync(fd).size), fstatSync(fd).size, ZIP_OPTIONS);
  } catch (error) {
    close(fd, () => {});
    throw refuse('ERR_IMPORT_DAMAGED', `not a ZIP file oaibag can read (${errorText(error)})`, error);
  }
  try {
    const files = await screenDirectory(zip, path, limits, refuse);
    hooks.listed?.({ kind: 'zip', files });
    const total = files.reduce((sum, file) => sum + file.size, 0) + (hooks.sha256 === undefined ? zip.fileSize : 0);
    let done = 0;
    const onBytes = progress && ((bytes: number) => progress((done += bytes), total));
    progress?.(0, total);

    const located = new Map<string, { entry: DeliveryEntry; file: ZipFileEntry }>();
    const withheld: WithheldEntry[] = [];
    await eachAtOnce(files, SCREEN_CONCURRENCY, async (file) => {
      const entry = await screenData(zip, fd, file, refuse, onBytes, file.withheld ? undefined : keep?.(file.name, file.size));
      if (file.withheld) withheld.push({ name: file.name, size: file.size });
      else located.set(file.name, { entry, file });
    });

    const sha256 = hooks.sha256 ?? (await measureWhole(path, fd, zip.fileSize, refuse, onBytes));

    let closed = false;
    const opened = zip;
    return {
      kind: 'zip',
      path,
      name: basename(path),
      size: zip.fileSize,
      sha256,
      entries: [...located.values()].map(({ entry }) => entry).sort(byName),
      withheld: withheld.sort(byName),
      open(entry) {
        const found = located.get(entry.name);
        if (!found) throw new Error(`${path}: no entry ${quoteName(entry.name)}`);
        if (closed) throw new Error(`${path}: the delivery is closed`);
        const { file } = found;
        return checkedBytes(found.entry, () => openData(opened, fd, file), refuse);
      },
      async close() {
        closed = true;
        closeZip(opened);
      },
    };
  } catch (error) {
    closeZip(zip);
    throw error;
  }
}

/** Pass 3: the ZIP file itself, hashed; refused when it is not the size it had when opened. */
async function measureWhole(path: string, fd: number, fileSize: number, refuse: DeliveryRefusal, onBytes?: (bytes: number) => void): Promise<string> {
  const whole = await measureBytes(createReadStream(path, { fd, start: 0, autoClose: false, highWaterMark: READ_CHUNK_BYTES }), fileSize, onBytes).catch(
    (error: unknown) => {
      throw refuse('ERR_IMPORT_DAMAGED', `cannot be read: ${errorText(error)}`, error);
    },
  );
  if (whole.overflow || whole.size !== fileSize) {
    throw refuse(
      'ERR_IMPORT_DAMAGED',
      `changed while it was screened: ${grouped(fileSize)} bytes when opened, now ${whole.overflow ? 'more' : grouped(whole.size)}`,
    );
  }
  return whole.sha256;
}

/** Pass 1: the central directory, checked entry by entry; its file entries, in its order. */
async function screenDirectory(zip: ZipFile, path: string, limits: DeliveryLimits, refuse: DeliveryRefusal): Promise<ZipFileEntry[]> {
  const caps = new DeliveryCaps(limits, refuse);
  const names = new NameTree();
  const files: ZipFileEntry[] = [];
  const entries = readZipEntries(zip);
  for (let index = 0; ; index++) {
    let entry: Entry;
    try {
      const next = await entries.next();
      if (next.done) break;
      entry = next.value;
    } catch (error) {
      throw await directoryError(path, index, error, refuse);
    }
    const name = entry.fileName;
    const isFolder = name.endsWith('/');
    const mode = zipEntryUnixMode(entry);
    const problem = entryProblem(entry) ?? names.add(name, isFolder);
    if (problem) throw refuse('ERR_IMPORT_UNSAFE', `entry ${quoteName(name)} ${problem}`);
    caps.countEntry(name);
    if (isFolder) continue; // folders are implied by the files' names
    caps.addFile(name, entry.uncompressedSize, entry.compressedSize);
    if (entry.compressionMethod !== 0 && entry.compressionMethod !== 8) {
      throw refuse(
        'ERR_IMPORT_DAMAGED',
        `entry ${quoteName(name)} is compressed with method ${entry.compressionMethod}; oaibag reads stored and deflated entries only`,
      );
    }
    files.push({
      name,
      size: entry.uncompressedSize,
      mtimeNs: BigInt(entry.getLastModDate().getTime()) * 1_000_000n,
      crc32: entry.crc32,
      compressedSize: entry.compressedSize,
      deflated: entry.compressionMethod === 8,
      withheld: mode !== null && nobodyMayRead(mode),
      localHeaderOffset: entry.relativeOffsetOfLocalHeader,
    });
  }
  // Overlapping entries (one deflated stream named by many entries) pass every per-entry cap.
  caps.checkZipRatio(zip.fileSize);
  return files;
}

/** Why the entry cannot be imported whatever the other entries are (ERR_IMPORT_UNSAFE), or null. */
function entryProblem(entry: Entry): string | null {
  const problem = nameProblem(entry.fileName, entry.fileName.endsWith('/'));
  if (problem) return problem;
  const type = zipEntryFileType(entry);
  if (type === 'symbolic link') return 'is a symbolic link';
  if (type !== 'file' && type !== 'folder') return `is a ${type}, not a regular file`;
  if (entry.isEncrypted()) return 'is encrypted';
  return null;
}

/** Pass 2: one file entry read whole, held to its declared size and CRC-32. */
async function screenData(
  zip: ZipFile,
  fd: number,
  file: ZipFileEntry,
  refuse: DeliveryRefusal,
  onBytes?: (bytes: number) => void,
  keep?: KeepBytes,
): Promise<DeliveryEntry> {
  const name = quoteName(file.name);
  let measured: Awaited<ReturnType<typeof measureBytes>>;
  try {
    file.fileDataStart = dataStart(fd, file, zip.fileSize);
    const stream = await openData(zip, fd, file);
    measured = await measureBytes(stream, file.size, onBytes, keep);
  } catch (error) {
    if (error instanceof KeepFailed) throw error.failure;
    // zlib's errors, yauzl's byte counts ("too many bytes in the stream…"), read errors.
    throw refuse('ERR_IMPORT_DAMAGED', `entry ${name} is damaged: ${errorText(error)}`, error);
  }
  if (measured.overflow) throw refuse('ERR_IMPORT_DAMAGED', `entry ${name} holds more than the ${grouped(file.size)} bytes its ZIP declares`);
  if (measured.size !== file.size)
    throw refuse('ERR_IMPORT_DAMAGED', `entry ${name} holds ${grouped(measured.size)} bytes, its ZIP declares ${grouped(file.size)}`);
  if (measured.crc32 !== file.crc32) {
    throw refuse('ERR_IMPORT_DAMAGED', `entry ${name} fails its CRC-32: its bytes give ${hex(measured.crc32)}, its ZIP declares ${hex(file.crc32)}`);
  }
  return { name: file.name, size: file.size, mtimeNs: file.mtimeNs, sha256: measured.sha256 };
}

/**
 * The refusal for an error yauzl raised reading the directory's entry `index`. Its name errors
 * end with the name; for the others (a stored entry whose two sizes differ, strong encryption…)
 * the entry is read again, leniently, to be named and checked like any other.
 */
async function directoryError(path: string, index: number, error: unknown, refuse: DeliveryRefusal): Promise<Error> {
  const message = errorText(error);
  const named = YAUZL_NAME_ERROR.exec(message);
  if (named) {
    const name = named[1]!;
    return refuse('ERR_IMPORT_UNSAFE', `entry ${quoteName(name)} ${nameProblem(name, name.endsWith('/')) ?? `has a name yauzl refuses (${message})`}`, error);
  }
  const entry = await entryAt(path, index);
  if (entry) {
    const problem = entryProblem(entry);
    if (problem) return refuse('ERR_IMPORT_UNSAFE', `entry ${quoteName(entry.fileName)} ${problem}`, error);
    return refuse('ERR_IMPORT_DAMAGED', `entry ${quoteName(entry.fileName)} is damaged: ${message}`, error);
  }
  if (/encrypt/i.test(message)) return refuse('ERR_IMPORT_UNSAFE', `entry ${index + 1} of its central directory is encrypted (${message})`, error);
  return refuse('ERR_IMPORT_DAMAGED', `not a ZIP file oaibag can read: entry ${index + 1} of its central directory: ${message}`, error);
}

/** The directory's entry `index`, read without the size check, or undefined when even that fails. */
async function entryAt(path: string, index: number): Promise<Entry | undefined> {
  const zip = await yauzl.openPromise(path, { ...ZIP_OPTIONS, validateEntrySizes: false }).catch(() => undefined);
  if (!zip) return undefined;
  try {
    let at = 0;
    for await (const entry of readZipEntries(zip)) if (at++ === index) return entry;
  } catch {
    // the same damage again
  } finally {
    closeZip(zip);
  }
  return undefined;
}

/**
 * Where the entry's data starts: after its local header, whose signature and lengths are read
 * here (as yauzl's readLocalFileHeader does, without keeping its Entry), inside the file.
 */
function dataStart(fd: number, file: ZipFileEntry, fileSize: number): number {
  const header = Buffer.alloc(30);
  const bytesRead = readSync(fd, header, 0, 30, file.localHeaderOffset);
  if (bytesRead < 30 || header.readUInt32LE(0) !== 0x04034b50) throw new Error(`no local file header at offset ${file.localHeaderOffset}`);
  const start = file.localHeaderOffset + 30 + header.readUInt16LE(26) + header.readUInt16LE(28);
  if (start + file.compressedSize > fileSize) throw new Error(`its data would end past the end of the file (offset ${start} + ${file.compressedSize} bytes)`);
  return start;
}

/**
 * The entry's data, inflated: a small entry read and inflated whole (one chunk, see
 * WHOLE_ENTRY_BYTES), a larger one streamed by yauzl with its byte count held to the declared
 * size (validateEntrySizes). yauzl 3.4's openReadStreamLowLevelPromise calls openReadStream by
 * mistake, hence the callback form.
 */
async function openData(zip: ZipFile, fd: number, file: ZipFileEntry): Promise<AsyncIterable<Uint8Array>> {
  const start = file.fileDataStart!;
  if (file.compressedSize <= WHOLE_ENTRY_BYTES && file.size <= WHOLE_ENTRY_BYTES) {
    // Read and inflated synchronously: a thread-pool round trip and a zlib stream cost more than
    // the work for entries this small (most of them are in the page cache from the screening).
    const raw = Buffer.allocUnsafe(file.compressedSize);
    const bytesRead = readSync(fd, raw, 0, raw.length, start);
    if (bytesRead !== raw.length) throw new Error(`only ${bytesRead} of its ${raw.length} bytes could be read`);
    // One byte more than declared is allowed out, so that a lying size is seen (measureBytes).
    const data = file.deflated ? inflateRawSync(raw, { maxOutputLength: file.size + 1 }) : raw;
    return (async function* () {
      yield data;
    })();
  }
  return new Promise((resolve, reject) =>
    zip.openReadStreamLowLevel(start, file.compressedSize, 0, file.compressedSize, file.deflated, file.size, (error, stream) =>
      error ? reject(error) : resolve(stream as Readable),
    ),
  );
}

/** Runs `work` over `items`, `limit` at a time; the first failure rejects once the others settled. */
async function eachAtOnce<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: unknown;
  const worker = async () => {
    while (failure === undefined && next < items.length) {
      const item = items[next++]!;
      await work(item).catch((error: unknown) => {
        failure ??= error;
      });
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure !== undefined) throw failure;
}

function closeZip(zip: ZipFile): void {
  if (!zip.isOpen) return;
  zip.on('error', () => {}); // an error closing the descriptor, after everything was read
  zip.close();
}

function hex(crc: number): string {
  return `0x${crc.toString(16).padStart(8, '0')}`;
}
