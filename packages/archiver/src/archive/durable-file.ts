// The one way oaibag writes a whole file that a reader (or the next run, after a crash or a
// power cut) must find either as it was or complete: the audit report, the exported ZIPs and
// their SHA256SUMS, the export-rdf graph.
//   1. write under a temporary name in the same folder (`NAME.<random>.partial`, created
//      exclusively: two writers of the same NAME never share one);
//   2. check that the file holds every byte written, and fsync it;
//   3. rename it over NAME (atomic in one folder);
//   4. fsync the folder, where the platform allows (see fsyncFolderIfPossible).
// Whatever stops it before 3 removes the temporary file and leaves NAME as it was.
//
// Not npm's write-file-atomic (what pnpm uses): it takes the whole content in memory (the
// graph and the ZIPs are streamed, and may be larger than memory), does not fsync the folder,
// and reports raw fs errors where oaibag reports ERR_ARCHIVE_FULL and ERR_ARCHIVE_IO.
import { randomBytes } from 'node:crypto';
import { type FileHandle, open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { ArchiverError, isStorageExhausted, noRoomError } from '../core/errors.js';
import { writeFully } from '../core/write-fully.js';
import { fsyncFolderIfPossible } from './flush-to-disk.js';

/** Where a producer writes the file's content, in order. */
export interface DurableFileSink {
  /** Appends `chunk` (a string as UTF-8); resolves once the file system took it (back-pressure). */
  write(chunk: string | Uint8Array): Promise<void>;
  /** The bytes written so far. */
  readonly bytes: number;
}

export interface DurableFileOptions {
  /** The hint when the file system is full (default: free space there, then run the same command again). */
  fullHint?: string;
  /** The hint of any other I/O error (none by default). */
  ioHint?: string;
}

/** Chunks smaller than this are gathered into one write: a producer of small pieces costs few system calls. */
const GATHER_BYTES = 64 * 1024;

/**
 * Writes `content` (in memory, or chunks an iterable yields as they are needed) durably to
 * `target`; see {@link streamFileDurably}. Resolves to the bytes written.
 */
export async function writeFileDurably(
  target: string,
  content: string | Uint8Array | Iterable<string | Uint8Array> | AsyncIterable<string | Uint8Array>,
  options: DurableFileOptions = {},
): Promise<number> {
  return streamFileDurably(
    target,
    async (file) => {
      if (typeof content === 'string' || content instanceof Uint8Array) await file.write(content);
      else for await (const chunk of content) await file.write(chunk);
      return file.bytes;
    },
    options,
  );
}

/**
 * Runs `produce`, which writes the file's content to the sink it is given, and makes the
 * result `target`, durably and whole (the steps in the file comment). Memory does not grow with
 * the file. An I/O error of the file is an ArchiverError naming it: ERR_ARCHIVE_FULL when the
 * file system is full, ERR_ARCHIVE_IO otherwise; what `produce` itself throws is passed on as
 * it is. Either way the temporary file is removed and `target` left as it was.
 */
export async function streamFileDurably<T>(target: string, produce: (file: DurableFileSink) => Promise<T>, options: DurableFileOptions = {}): Promise<T> {
  const temporary = join(dirname(target), `${basename(target)}.${randomBytes(4).toString('hex')}.partial`);
  const coded = <V>(step: Promise<V>): Promise<V> => step.catch((error: unknown) => Promise.reject(fileError(target, error, options)));
  let handle: FileHandle | undefined;
  try {
    handle = await coded(open(temporary, 'wx'));
    const file = new GatheringSink(handle, coded);
    const result = await produce(file);
    await file.end();
    await coded(handle.sync());
    await coded(handle.close());
    handle = undefined;
    await coded(rename(temporary, target));
    await fsyncFolderIfPossible(dirname(target));
    return result;
  } catch (error) {
    await handle?.close().catch(() => undefined);
    await rm(temporary, { force: true }).catch(() => undefined);
    throw error;
  }
}

/** An I/O error of the file written as ERR_ARCHIVE_FULL or ERR_ARCHIVE_IO (an ArchiverError stays as it is). */
function fileError(target: string, error: unknown, options: DurableFileOptions): ArchiverError {
  if (isStorageExhausted(error)) {
    return noRoomError(`the folder of ${target}`, dirname(target), error, options.fullHint ?? 'free space there, then run the same command again');
  }
  if (error instanceof ArchiverError) return error;
  const code = (error as NodeJS.ErrnoException).code;
  return new ArchiverError('ERR_ARCHIVE_IO', `cannot write ${target}: ${code ?? String(error)}`, { cause: error, path: target, hint: options.ioHint });
}

/** Writes through `handle`, gathering small chunks; every error of the file comes out `coded`. */
class GatheringSink implements DurableFileSink {
  private gathered: Buffer[] = [];
  private gatheredBytes = 0;
  private written = 0;

  constructor(
    private readonly handle: FileHandle,
    private readonly coded: <V>(step: Promise<V>) => Promise<V>,
  ) {}

  get bytes(): number {
    return this.written + this.gatheredBytes;
  }

  async write(chunk: string | Uint8Array): Promise<void> {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (bytes.byteLength === 0) return;
    if (this.gatheredBytes === 0 && bytes.byteLength >= GATHER_BYTES) return this.put(bytes);
    this.gathered.push(typeof chunk === 'string' ? bytes : Buffer.from(bytes)); // a copy: the producer may reuse its buffer
    this.gatheredBytes += bytes.byteLength;
    if (this.gatheredBytes >= GATHER_BYTES) await this.flushGathered();
  }

  /** Writes what is gathered and checks that the file holds every byte written (some file systems lose them silently). */
  async end(): Promise<void> {
    await this.flushGathered();
    const landed = (await this.coded(this.handle.stat())).size;
    if (landed !== this.written) {
      await this.coded(Promise.reject(Object.assign(new Error(`${landed} bytes in the file of ${this.written} written`), { code: 'EIO' })));
    }
  }

  private async flushGathered(): Promise<void> {
    if (this.gatheredBytes === 0) return;
    const bytes = this.gathered.length === 1 ? this.gathered[0]! : Buffer.concat(this.gathered, this.gatheredBytes);
    this.gathered = [];
    this.gatheredBytes = 0;
    await this.put(bytes);
  }

  private async put(bytes: Uint8Array): Promise<void> {
    await this.coded(writeFully(this.handle, bytes));
    this.written += bytes.byteLength;
  }
}
