import { writeSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';

/**
 * Writes all of `bytes` at the handle's position. FileHandle.write may write fewer bytes than
 * asked and still succeed (a nearly full disk, some network file systems): a single call once
 * left a restored file 135,168 bytes long instead of 200,000, with no error. So: loop.
 */
export async function writeFully(handle: FileHandle, bytes: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < bytes.byteLength) {
    const { bytesWritten } = await handle.write(bytes, offset, bytes.byteLength - offset);
    if (bytesWritten <= 0) {
      throw Object.assign(new Error(`the file system took no byte (${offset} of ${bytes.byteLength} written)`), { code: 'EIO' });
    }
    offset += bytesWritten;
  }
}

/** {@link writeFully} for a file descriptor, in synchronous calls. */
export function writeFullySync(fd: number, bytes: Uint8Array): void {
  let offset = 0;
  while (offset < bytes.byteLength) {
    const bytesWritten = writeSync(fd, bytes, offset, bytes.byteLength - offset);
    if (bytesWritten <= 0) {
      throw Object.assign(new Error(`the file system took no byte (${offset} of ${bytes.byteLength} written)`), { code: 'EIO' });
    }
    offset += bytesWritten;
  }
}
