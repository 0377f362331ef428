// An entry's bytes, streamed: measured once by the screening (size, sha-256, CRC-32), then
// streamed again for the import and held to what the screening measured. Chunks pass through
// one at a time: memory stays flat whatever the entry's size.
import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { ArchiverError } from '../core/errors.js';
import { type DeliveryEntry, type DeliveryListing, type DeliveryRefusal, quoteName } from './delivery-model.js';

/** Bytes per read of a file (a ZIP hashed whole, a folder's files): large enough for throughput, small enough to keep memory flat. */
export const READ_CHUNK_BYTES = 256 * 1024;

export interface MeasuredBytes {
  size: number;
  sha256: string;
  /** CRC-32 as an unsigned number (ZIP's checksum; yauzl does not check it). */
  crc32: number;
  /** More than the bytes allowed came: reading stopped there, `size` is where (hashes empty). */
  overflow: boolean;
}

/**
 * What the screening does with an entry's bytes besides measuring them, when the caller wants
 * to keep them (an import writes them into its archive's tmp/ as it screens, so that the
 * delivery is not read twice): it is given the bytes as they are measured and must read them
 * to their end.
 */
export type KeepBytes = (bytes: AsyncIterable<Uint8Array>) => Promise<void>;

/** What the caller of a screening hears of it, and does with the bytes it reads (see delivery.ts). */
export interface ScreeningHooks {
  /** bytes read so far, bytes to read (for a progress line) */
  progress?: (done: number, total: number) => void;
  /**
   * Whether to keep a file's bytes as the screening reads them, and how (see KeepBytes): an
   * import of a site's files writes them into the archive's tmp/, reading the delivery once.
   * When the delivery is refused, what was kept is the caller's to discard.
   */
  keep?: (name: string, size: number) => KeepBytes | undefined;
  /** Told the files once they are listed, before `keep` is asked about any (an import of one bag ZIP decides there to unpack it). */
  listed?: (listing: DeliveryListing) => void;
  /**
   * A ZIP file's sha-256 when the caller measured it already (a bag ZIP in a folder delivery):
   * the file is then not read whole once more for it.
   */
  sha256?: string;
}

/** Keeping an entry's bytes failed for a reason of the keeper's (see KeepBytes): `cause` is it. */
export class KeepFailed extends Error {
  constructor(readonly failure: unknown) {
    super(`keeping the bytes failed: ${errorText(failure)}`, { cause: failure });
  }
}

/**
 * Reads `chunks` to the end (or one chunk past `maxBytes`), reporting each chunk's length to
 * `onBytes`; with `keep`, the chunks go on to it as they are measured (it drives the reading).
 */
export async function measureBytes(
  chunks: AsyncIterable<Uint8Array>,
  maxBytes: number,
  onBytes?: (bytes: number) => void,
  keep?: KeepBytes,
): Promise<MeasuredBytes> {
  const hash = createHash('sha256');
  let size = 0;
  let crc = 0;
  let overflow = false;
  let unreadable: { error: unknown } | undefined;
  async function* measured(): AsyncGenerator<Uint8Array> {
    try {
      for await (const chunk of chunks) {
        size += chunk.byteLength;
        // Leaving the loop destroys the stream: a lying size field inflates no further.
        if (size > maxBytes) {
          overflow = true;
          return;
        }
        hash.update(chunk);
        crc = crc32(chunk, crc);
        onBytes?.(chunk.byteLength);
        yield chunk;
      }
    } catch (error) {
      unreadable = { error };
      throw error;
    }
  }
  const bytes = measured();
  if (keep) {
    // A failure of the delivery's bytes is the delivery's; any other is keep's own (no room
    // left in the archive…), passed on as KeepFailed so that it is not taken for damage.
    await keep(bytes).catch((error: unknown) => {
      throw unreadable ? unreadable.error : new KeepFailed(error);
    });
  }
  for await (const _ of bytes); // whatever `keep` left (nothing, when it read to the end)
  if (overflow) return { size, sha256: '', crc32: 0, overflow: true };
  return { size, sha256: hash.digest('hex'), crc32: crc >>> 0, overflow: false };
}

/**
 * The entry's bytes from `open()`, chunk by chunk, throwing ERR_IMPORT_DAMAGED as soon as more
 * bytes come than the screening counted, and at the end when the count or the sha-256 differ
 * (the delivery changed since it was screened) or when reading fails.
 */
export async function* checkedBytes(entry: DeliveryEntry, open: () => Promise<AsyncIterable<Uint8Array>>, refuse: DeliveryRefusal): AsyncGenerator<Uint8Array> {
  const changed = (found: string) =>
    refuse(
      'ERR_IMPORT_DAMAGED',
      `entry ${quoteName(entry.name)} changed since it was screened: ${found}, the screening read ${entry.size} bytes of sha-256 ${entry.sha256}`,
    );
  const hash = createHash('sha256');
  let size = 0;
  try {
    for await (const chunk of await open()) {
      size += chunk.byteLength;
      if (size > entry.size) throw changed(`more than ${entry.size} bytes`);
      hash.update(chunk);
      yield chunk;
    }
  } catch (error) {
    if (error instanceof ArchiverError) throw error;
    throw refuse('ERR_IMPORT_DAMAGED', `entry ${quoteName(entry.name)} cannot be read again: ${errorText(error)}`, error);
  }
  const sha256 = hash.digest('hex');
  if (size !== entry.size || sha256 !== entry.sha256) throw changed(`${size} bytes of sha-256 ${sha256}`);
}

/** An error as a message ends: its code when it is a system error, else its message. */
export function errorText(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const message = error instanceof Error ? error.message : String(error);
  return typeof code === 'string' && !message.includes(code) ? `${message} (${code})` : message;
}
