// One batch bag as one ZIP file (docs/import-export.md, "Serialized bags"), written with yazl:
// it unpacks to exactly one folder, `harvest-NNNNNN-batch-NNNNN/`, holding the bag as it is in
// aips/. Deterministic, so that a partner can compare SHA-256s: entries in code-unit order of
// their paths, every time the bag's Bagged-At, every mode 0644, every entry stored (method 0:
// deflate's output depends on the zlib build, the stored bytes do not). ZIP64 when needed.
// Streamed: memory does not grow with file size (archive/zip-file.ts).
import { join } from 'node:path';
import type { AipStorage } from '../aip/aip-storage.js';
import { readBatchBagInfo } from '../aip/bag-info.js';
import { folderStorage } from '../aip/folder-storage.js';
import { serializedBagFolder } from '../aip/layout-names.js';
import { exactTimeZipFile, lazyEntry, writeZipFile, zipTime } from '../archive/zip-file.js';

export interface SerializedBag {
  /** The ZIP file written. */
  file: string;
  /** The folder it unpacks to. */
  folder: string;
  bytes: number;
  sha256: string;
  entries: number;
}

/** When Bagged-At is missing or unreadable: the earliest time a ZIP's DOS date holds. */
const FALLBACK_SECONDS = Date.UTC(1980, 0, 1) / 1000;

/**
 * Writes the bag at `bagPath` (relative to the archive) as `<toDir>/<name>.zip`, read from
 * `storage` (default: the archive folder; on object storage, the committed bag's files).
 */
export async function serializeBag(
  archiveDir: string,
  bagPath: string,
  toDir: string,
  storage: AipStorage = folderStorage(archiveDir),
): Promise<SerializedBag> {
  const folder = serializedBagFolder(bagPath);
  const files = await storage.listBag(bagPath);
  const baggedAt = Date.parse((await readBatchBagInfo({ storage, bagPath })).baggedAt ?? '');
  // The DOS fields in UTC and the exact time in every header: the same bytes in any time zone.
  const mtime = zipTime(Number.isNaN(baggedAt) ? FALLBACK_SECONDS : baggedAt / 1000);
  const zip = exactTimeZipFile();
  for (const file of files) {
    zip.addReadStreamLazy(
      `${folder}/${file.path}`,
      { mtime, mode: 0o100644, compress: false, size: file.size },
      lazyEntry(zip, () => storage.read(`${bagPath}/${file.path}`)),
    );
  }
  zip.end();
  const target = join(toDir, `${folder}.zip`);
  const { bytes, sha256 } = await writeZipFile(zip, target);
  return { file: target, folder, bytes, sha256, entries: files.length };
}
