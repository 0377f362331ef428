// The files of one `oaibag export --warc`, written whole or not at all: each is written under a
// temporary name in the output folder (`NAME.<8 hex digits>.partial`, created exclusively, so two
// exports never share one), hashed on the way, its size checked and fsynced; once every file of
// the export is complete they are renamed to their final names in the order given (the WARC
// files, then the index that names them), and the folder is fsynced. Whatever stops the export
// before that removes the temporary files; a killed process leaves `.partial` files only, never a
// partial file under a final name (a file from an earlier export stays as it was until replaced).
import { createHash, type Hash, randomBytes } from 'node:crypto';
import { type FileHandle, open, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fsyncFolderIfPossible } from '../archive/flush-to-disk.js';
import { ArchiverError, isStorageExhausted, noRoomError } from '../core/errors.js';
import { writeFully } from '../core/write-fully.js';

/** Chunks smaller than this are gathered into one write. */
const GATHER_BYTES = 256 * 1024;

/** A file of the export: written under its temporary name until {@link ExportFiles.commit}. */
export class ExportFile {
  private gathered: Buffer[] = [];
  private gatheredBytes = 0;
  private written = 0;
  private readonly hash: Hash = createHash('sha256');
  /** Set once complete: the file's SHA-256 (lowercase hex). */
  sha256 = '';

  constructor(
    /** Its final name, in the output folder. */
    readonly name: string,
    readonly temporary: string,
    private handle: FileHandle | undefined,
    private readonly coded: <V>(step: Promise<V>) => Promise<V>,
  ) {}

  /** The bytes written so far: the offset of the next write. */
  get bytes(): number {
    return this.written + this.gatheredBytes;
  }

  async write(chunk: Uint8Array): Promise<void> {
    if (chunk.byteLength === 0) return;
    this.hash.update(chunk);
    this.gathered.push(Buffer.from(chunk)); // a copy: the producer may reuse its buffer
    this.gatheredBytes += chunk.byteLength;
    if (this.gatheredBytes >= GATHER_BYTES) await this.flush();
  }

  /** Writes what is gathered, checks that the file holds every byte written, fsyncs and closes it. */
  async complete(): Promise<void> {
    await this.flush();
    const handle = this.handle!;
    const landed = (await this.coded(handle.stat())).size;
    if (landed !== this.written) {
      await this.coded(Promise.reject(Object.assign(new Error(`${landed} bytes in the file of ${this.written} written`), { code: 'EIO' })));
    }
    await this.coded(handle.sync());
    await this.coded(handle.close());
    this.handle = undefined;
    this.sha256 = this.hash.digest('hex');
  }

  /** Closes the file if it is open (after a failure). */
  async abandon(): Promise<void> {
    await this.handle?.close().catch(() => undefined);
    this.handle = undefined;
  }

  private async flush(): Promise<void> {
    if (this.gatheredBytes === 0) return;
    const bytes = this.gathered.length === 1 ? this.gathered[0]! : Buffer.concat(this.gathered, this.gatheredBytes);
    this.gathered = [];
    this.gatheredBytes = 0;
    await this.coded(writeFully(this.handle!, bytes));
    this.written += bytes.byteLength;
  }
}

/** The files of one export, in the folder `folder`. */
export class ExportFiles {
  private readonly files: ExportFile[] = [];

  constructor(readonly folder: string) {}

  /** Starts a file that will be named `name` in the folder. */
  async create(name: string): Promise<ExportFile> {
    const target = join(this.folder, name);
    const temporary = `${target}.${randomBytes(4).toString('hex')}.partial`;
    const coded = <V>(step: Promise<V>): Promise<V> => step.catch((error: unknown) => Promise.reject(fileError(target, error)));
    const handle = await coded(open(temporary, 'wx'));
    const file = new ExportFile(name, temporary, handle, coded);
    this.files.push(file);
    return file;
  }

  /** Forgets a complete file without renaming it (a part of a WACZ), and removes it. */
  async discard(file: ExportFile): Promise<void> {
    await file.abandon();
    await rm(file.temporary, { force: true });
    this.files.splice(this.files.indexOf(file), 1);
  }

  /** Renames every file still held, in the order created, to its final name, then fsyncs the folder. */
  async commit(): Promise<void> {
    for (const file of this.files) {
      await rename(file.temporary, join(this.folder, file.name)).catch((error: unknown) => Promise.reject(fileError(join(this.folder, file.name), error)));
    }
    this.files.length = 0;
    await fsyncFolderIfPossible(this.folder);
  }

  /** Closes and removes every temporary file still held (after a failure). */
  async abandon(): Promise<void> {
    for (const file of this.files) {
      await file.abandon();
      await rm(file.temporary, { force: true }).catch(() => undefined);
    }
    this.files.length = 0;
  }
}

/** An I/O error of a file written as ERR_ARCHIVE_FULL or ERR_ARCHIVE_IO (an ArchiverError stays as it is). */
export function fileError(target: string, error: unknown): ArchiverError {
  if (error instanceof ArchiverError) return error;
  if (isStorageExhausted(error)) return noRoomError(`the folder of ${target}`, target, error, 'free space there, then run the same export again');
  const code = (error as NodeJS.ErrnoException).code;
  return new ArchiverError('ERR_ARCHIVE_IO', `cannot write ${target}: ${code ?? String(error)}`, { cause: error, path: target });
}
