// The repository's rule for private files, applied to a delivery: a file whose Unix mode gives
// nobody read permission (mode 000, or no read bit at all) is one its owner keeps private, and
// oaibag-repository never exports it (packages/repository inspect-file.ts: checked on the mode
// bits, so a server run as root behaves like one that is not). An import neither reads it.
import type { Entry } from 'yauzl';

/** The "version made by" host of a ZIP entry made on Unix (APPNOTE 4.4.2): its external attributes carry a Unix mode. */
const ZIP_HOST_UNIX = 3;

/** Whether `mode` (st_mode, or a ZIP entry's Unix mode) gives nobody read permission. */
export function nobodyMayRead(mode: number | bigint): boolean {
  return (BigInt(mode) & 0o444n) === 0n;
}

/**
 * The Unix mode of a ZIP entry (the high 16 bits of its external attributes) when the entry was
 * made on Unix, or null. Other hosts (MS-DOS, NTFS…) leave those bits 0 and have no mode to
 * read. A Unix entry whose bits are all 0 (Python's ZipInfo without external_attr) is mode 000:
 * Info-ZIP's unzip creates such a file with no permission at all.
 */
export function zipEntryUnixMode(entry: Pick<Entry, 'versionMadeBy' | 'externalFileAttributes'>): number | null {
  return entry.versionMadeBy >>> 8 === ZIP_HOST_UNIX ? entry.externalFileAttributes >>> 16 : null;
}
