// The delivery reader of `oaibag import` (issue 16): opens an out-of-band delivery, a ZIP file
// or a folder, screens ALL of it before returning (so the caller stores nothing from a hostile
// one), then streams its entries again on demand, each held to what the screening measured.
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { ArchiverError } from '../core/errors.js';
import { type DeliveryLimits, resolveLimits } from './delivery-limits.js';
import type { Delivery } from './delivery-model.js';
import { errorText, type ScreeningHooks } from './entry-bytes.js';
import { openFolderDelivery } from './folder-delivery.js';
import { openZipDelivery } from './zip-delivery.js';

export { DEFAULT_DELIVERY_LIMITS, type DeliveryLimits } from './delivery-limits.js';
export type { Delivery, DeliveryEntry, DeliveryListing } from './delivery-model.js';
export type { KeepBytes } from './entry-bytes.js';

export interface OpenDeliveryOptions extends ScreeningHooks {
  limits?: Partial<DeliveryLimits>;
}

/**
 * Opens and screens the delivery at `path`: a regular file is read as a ZIP, a folder as a
 * folder. Refusals are ArchiverError, one line naming the delivery and the entry, `path` set to
 * the delivery: ERR_IMPORT_UNSAFE (a name leaving the delivery, a link, an encrypted entry, a
 * name clash, a cap exceeded), ERR_IMPORT_DAMAGED (bytes that are not what the delivery says, a
 * ZIP that cannot be read, a read error); ERR_ARCHIVE_USAGE when there is nothing to open.
 */
export async function openDelivery(path: string, options: OpenDeliveryOptions = {}): Promise<Delivery> {
  const absolute = resolve(path);
  const limits = resolveLimits(options.limits);
  const stats = await stat(absolute).catch((error: unknown) => {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR')
      throw new ArchiverError('ERR_ARCHIVE_USAGE', `${path}: no such file or folder`, { path: absolute, cause: error });
    throw new ArchiverError('ERR_IMPORT_DAMAGED', `${path}: cannot be read: ${errorText(error)}`, { path: absolute, cause: error });
  });
  if (stats.isDirectory()) return openFolderDelivery(absolute, limits, options);
  if (stats.isFile()) return openZipDelivery(absolute, limits, options);
  throw new ArchiverError('ERR_ARCHIVE_USAGE', `${path}: neither a ZIP file nor a folder`, { path: absolute });
}
