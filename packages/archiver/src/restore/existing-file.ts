// What is already at a planned file's place in a restore folder that was not empty: nothing,
// the state's bytes, or something else (which the restore replaces and reports as replaced).
import { createHash } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import { lstat, open } from 'node:fs/promises';
import type { PayloadLocation } from '../catalog/catalog-types.js';

/** `same`: a regular file with the part's size and sha-256; `folder`: a real folder (in the way, not replaced). */
export type ExistingFile = 'absent' | 'same' | 'different' | 'folder';

/**
 * Compares what is at `target` (never following a link there) with the bytes a version's first
 * part should have: size first, the sha-256 only when the sizes agree. A link, a socket or a file
 * that cannot be read is `different`: the restore puts the state's bytes in its place.
 */
export async function compareExisting(target: string, part: Pick<PayloadLocation, 'sha256' | 'size'>): Promise<ExistingFile> {
  const info = await lstat(target).catch(() => undefined);
  if (info === undefined) return 'absent';
  if (info.isDirectory()) return 'folder';
  if (!info.isFile() || info.size !== part.size) return 'different';
  try {
    const handle = await open(target, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
    try {
      const hash = createHash('sha256');
      for await (const chunk of handle.createReadStream({ highWaterMark: 1 << 20, autoClose: false }) as AsyncIterable<Buffer>) hash.update(chunk);
      return hash.digest('hex') === part.sha256 ? 'same' : 'different';
    } finally {
      await handle.close().catch(() => undefined);
    }
  } catch {
    return 'different';
  }
}
