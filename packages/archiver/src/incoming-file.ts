import { createHash, randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { mkdir, open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { TEMP_DIRECTORY } from './bag-writer.js';

/** A datastream received into a temporary file, with what was measured on the way. */
export interface IncomingFile {
  path: string;
  size: number;
  sha256: string;
  sha512: string;
}

/**
 * Streams a datastream (decoded By-Value bytes, or a By-Reference response body) into a
 * temporary file inside the archive, hashing it with sha-256 and sha-512 as it is written,
 * so that nothing is read twice: the bag then takes the file by hard link. The file is not
 * fsynced here: it reaches the disk with the bag that links it (see `placeSealedBags`). On
 * failure the partial file is removed.
 */
export async function receiveIncoming(archiveDir: string, source: AsyncIterable<Uint8Array>): Promise<IncomingFile> {
  const dir = join(archiveDir, TEMP_DIRECTORY);
  const path = join(dir, `incoming-${randomBytes(8).toString('hex')}`);
  const handle = await open(path, 'wx').catch(async (error: NodeJS.ErrnoException) => {
    if (error.code !== 'ENOENT') throw error;
    await mkdir(dir, { recursive: true }); // the first datastream of this archive
    return open(path, 'wx');
  });
  const sha256 = createHash('sha256');
  const sha512 = createHash('sha512');
  let size = 0;
  try {
    for await (const chunk of source) {
      sha256.update(chunk);
      sha512.update(chunk);
      size += chunk.byteLength;
      await handle.write(chunk);
    }
  } catch (error) {
    await handle.close().catch(() => undefined);
    await rm(path, { force: true });
    throw error;
  }
  await handle.close();
  return { path, size, sha256: sha256.digest('hex'), sha512: sha512.digest('hex') };
}

/** Removes an incoming file (once the bag links it, or when the record is refused). */
export async function discardIncoming(file: IncomingFile | undefined): Promise<void> {
  if (file) rmSync(file.path, { force: true }); // one unlink: cheaper than a thread-pool round trip
}
