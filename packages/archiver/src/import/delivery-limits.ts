// The caps a delivery is screened against (`oaibag import --max-entries …`), checked on the
// sizes a ZIP declares in its central directory before any byte is inflated: a ZIP bomb is
// refused from its directory, and the declared sizes are then held to (see zip-delivery.ts).
import { ArchiverError } from '../core/errors.js';
import { type DeliveryRefusal, quoteName } from './delivery-model.js';

export interface DeliveryLimits {
  /** Files (entries) in the delivery. */
  maxEntries: number;
  /** Uncompressed bytes of one entry. */
  maxEntryBytes: number;
  /** Uncompressed bytes of all entries. */
  maxTotalBytes: number;
  /** Uncompressed ÷ compressed bytes, of an entry (of at least 1 MiB uncompressed) and of the whole ZIP (sum of uncompressed ÷ ZIP file size). */
  maxRatio: number;
}

const GiB = 1024 ** 3;

/**
 * Generous for any honest delivery, small enough that a hostile one costs little:
 * - 1,000,000 entries: a whole site or repository export is tens of thousands of files; the
 *   screening keeps every entry's facts in memory (a few hundred bytes each), so this also
 *   bounds that memory to a few hundred MB.
 * - 64 GiB per entry: above any single file a repository serves (video masters, disk images),
 *   far below what a forged ZIP64 size field can claim.
 * - 1 TiB in all: a delivery is read twice (screened, then stored), so this bounds the time and
 *   the archive space one import may take.
 * - ratio 200: deflate cannot exceed about 1032:1; real files compress 2–10:1, text and XML up to
 *   about 50:1, while a bomb relies on ratios near deflate's maximum (or on overlapping entries,
 *   which the ratio of the whole ZIP catches). Small entries are exempt from the per-entry ratio:
 *   a few KiB of spaces compress past 200 and harm no one.
 */
export const DEFAULT_DELIVERY_LIMITS: DeliveryLimits = {
  maxEntries: 1_000_000,
  maxEntryBytes: 64 * GiB,
  maxTotalBytes: 1024 * GiB,
  maxRatio: 200,
};

/** Entries smaller than this (uncompressed) are not held to the per-entry ratio. */
export const RATIO_MIN_ENTRY_BYTES = 1024 * 1024;

/** The defaults, overridden by the limits given (undefined ones ignored); each must be a positive number. */
export function resolveLimits(limits: Partial<DeliveryLimits> = {}): DeliveryLimits {
  const resolved = { ...DEFAULT_DELIVERY_LIMITS };
  for (const key of Object.keys(resolved) as (keyof DeliveryLimits)[]) {
    const value = limits[key];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !(value > 0))
      throw new ArchiverError('ERR_ARCHIVE_USAGE', `delivery limit ${key} must be a positive number, not ${String(value)}`);
    resolved[key] = value;
  }
  return resolved;
}

/** 1234567 as "1,234,567". */
export function grouped(value: number): string {
  return String(value).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/**
 * Counts a delivery's entries and declared bytes against the caps, refusing (ERR_IMPORT_UNSAFE)
 * the first entry over one, with the cap, its value and the option that raises it.
 */
export class DeliveryCaps {
  private entries = 0;
  private total = 0;

  constructor(
    private readonly limits: DeliveryLimits,
    private readonly refuse: DeliveryRefusal,
  ) {}

  /** Uncompressed bytes declared so far. */
  get totalBytes(): number {
    return this.total;
  }

  /** One more entry (a ZIP's folder entries and a folder's subfolders count too: they cost the same to screen). */
  countEntry(name: string): void {
    this.entries++;
    if (this.entries > this.limits.maxEntries) {
      throw this.refuse(
        'ERR_IMPORT_UNSAFE',
        `entry ${quoteName(name)} is entry ${grouped(this.entries)}, over the cap of ${grouped(this.limits.maxEntries)} entries (raise it with --max-entries)`,
      );
    }
  }

  /** A file of `size` bytes, stored in `compressedSize` bytes when it is in a ZIP. */
  addFile(name: string, size: number, compressedSize?: number): void {
    const { maxEntryBytes, maxTotalBytes, maxRatio } = this.limits;
    if (size > maxEntryBytes) {
      throw this.refuse(
        'ERR_IMPORT_UNSAFE',
        `entry ${quoteName(name)} is ${grouped(size)} bytes, over the cap of ${grouped(maxEntryBytes)} bytes per entry (raise it with --max-entry-size)`,
      );
    }
    this.total += size;
    if (this.total > maxTotalBytes) {
      throw this.refuse(
        'ERR_IMPORT_UNSAFE',
        `entry ${quoteName(name)} brings the delivery to ${grouped(this.total)} bytes, over the cap of ${grouped(maxTotalBytes)} bytes in all (raise it with --max-total-size)`,
      );
    }
    if (compressedSize !== undefined && size >= RATIO_MIN_ENTRY_BYTES && size > maxRatio * compressedSize) {
      throw this.refuse(
        'ERR_IMPORT_UNSAFE',
        `entry ${quoteName(name)} inflates ${grouped(compressedSize)} bytes to ${grouped(size)}, a ratio of ${ratio(size, compressedSize)}, over the cap of ${maxRatio} (raise it with --max-ratio)`,
      );
    }
  }

  /** The whole ZIP: all its entries' declared bytes against the size of the file (overlapping entries are caught here). */
  checkZipRatio(zipBytes: number): void {
    // As for one entry: a ZIP that inflates to less than RATIO_MIN_ENTRY_BYTES is no bomb, whatever its ratio.
    if (this.total >= RATIO_MIN_ENTRY_BYTES && this.total > this.limits.maxRatio * zipBytes) {
      throw this.refuse(
        'ERR_IMPORT_UNSAFE',
        `its entries inflate to ${grouped(this.total)} bytes from a ZIP of ${grouped(zipBytes)}, a ratio of ${ratio(this.total, zipBytes)}, over the cap of ${this.limits.maxRatio} (raise it with --max-ratio)`,
      );
    }
  }
}

function ratio(size: number, compressed: number): string {
  return compressed === 0 ? 'infinity' : grouped(Math.round(size / compressed));
}
