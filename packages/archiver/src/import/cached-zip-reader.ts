// How yauzl reads a delivery ZIP: its small reads (each central directory record, each local
// header: two or three per entry) served from a 1 MiB block read once, instead of one thread-pool
// read each, which cost most of the screening of a ZIP of many small files; the entries' data
// streamed from the file as yauzl's own reader does.
import { close, read, readSync } from 'node:fs';
import { Readable } from 'node:stream';
import yauzl from 'yauzl';

const BLOCK_BYTES = 1024 * 1024;
/** Bytes per read of an entry's data. */
const STREAM_CHUNK_BYTES = 256 * 1024;

export class CachedZipReader extends yauzl.RandomAccessReader {
  private block = Buffer.alloc(0);
  private blockStart = 0;

  constructor(
    private readonly fd: number,
    private readonly fileSize: number,
  ) {
    super();
  }

  override read(buffer: Buffer, offset: number, length: number, position: number, callback: (error: Error | null) => void): void {
    try {
      if (length > BLOCK_BYTES) {
        let done = 0;
        while (done < length) {
          const bytes = readSync(this.fd, buffer, offset + done, length - done, position + done);
          if (bytes === 0) throw new Error('unexpected EOF');
          done += bytes;
        }
      } else {
        if (position < this.blockStart || position + length > this.blockStart + this.block.length) this.fill(position);
        if (position + length > this.blockStart + this.block.length) throw new Error('unexpected EOF');
        this.block.copy(buffer, offset, position - this.blockStart, position - this.blockStart + length);
      }
    } catch (error) {
      process.nextTick(callback, error as Error);
      return;
    }
    process.nextTick(callback, null);
  }

  /**
   * The bytes from `start` to `end`, read from the descriptor. Not an fs.ReadStream: destroying
   * one (as yauzl does with a stream it is done with) closes its descriptor, which is the ZIP's.
   */
  override _readStreamForRange(start: number, end: number): Readable {
    const fd = this.fd;
    let position = start;
    return new Readable({
      highWaterMark: STREAM_CHUNK_BYTES,
      read() {
        const length = Math.min(STREAM_CHUNK_BYTES, end - position);
        if (length <= 0) {
          this.push(null);
          return;
        }
        const buffer = Buffer.allocUnsafe(length);
        read(fd, buffer, 0, length, position, (error, bytes) => {
          if (error) this.destroy(error);
          else if (bytes === 0) this.destroy(new Error('unexpected EOF'));
          else {
            position += bytes;
            this.push(buffer.subarray(0, bytes));
          }
        });
      },
    });
  }

  /** yauzl closes its reader when the ZIP is closed: the descriptor goes with it. */
  override close(callback: (error: Error | null) => void): void {
    close(this.fd, (error) => callback(error ?? null));
  }

  private fill(position: number): void {
    const block = Buffer.allocUnsafe(Math.min(BLOCK_BYTES, Math.max(0, this.fileSize - position)));
    let filled = 0;
    while (filled < block.length) {
      const bytes = readSync(this.fd, block, filled, block.length - filled, position + filled);
      if (bytes === 0) break;
      filled += bytes;
    }
    this.block = block.subarray(0, filled);
    this.blockStart = position;
  }
}
