// One batch bag as one ZIP file (docs/import-export.md, "Serialized bags"), written with yazl:
// it unpacks to exactly one folder, `harvest-NNNNNN-batch-NNNNN/`, holding the bag as it is in
// aips/. Deterministic, so that a partner can compare SHA-256s: entries in code-unit order of
// their paths, every time the bag's Bagged-At, every mode 0644, every entry stored (method 0:
// deflate's output depends on the zlib build, the stored bytes do not). ZIP64 when needed.
// Streamed: memory does not grow with file size (archive/zip-file.ts).
import { createReadStream } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { exactTimeZipFile, lazyEntry, writeZipFile, zipTime } from '../archive/zip-file.js';
import { readBagInfo } from '../bag/batch-bag-reader.js';
import { ArchiverError } from '../core/errors.js';

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

/** The folder (and ZIP name) of the bag at `bagPath` (`aips/harvest-000001/batch-00001`). */
export function serializedBagName(bagPath: string): string {
  return bagPath.split('/').slice(1).join('-');
}

/** Writes the bag at `bagPath` (relative to the archive) as `<toDir>/<name>.zip`. */
export async function serializeBag(archiveDir: string, bagPath: string, toDir: string): Promise<SerializedBag> {
  const bagDir = join(archiveDir, ...bagPath.split('/'));
  const folder = serializedBagName(bagPath);
  const files = await bagFiles(bagDir);
  const baggedAt = Date.parse((await readBagInfo(bagDir)).get('Bagged-At') ?? '');
  // The DOS fields in UTC and the exact time in every header: the same bytes in any time zone.
  const mtime = zipTime(Number.isNaN(baggedAt) ? FALLBACK_SECONDS : baggedAt / 1000);
  const zip = exactTimeZipFile();
  for (const file of files) {
    zip.addReadStreamLazy(
      `${folder}/${file.path}`,
      { mtime, mode: 0o100644, compress: false, size: file.size },
      lazyEntry(zip, () => createReadStream(join(bagDir, ...file.path.split('/')))),
    );
  }
  zip.end();
  const target = join(toDir, `${folder}.zip`);
  const { bytes, sha256 } = await writeZipFile(zip, target);
  return { file: target, folder, bytes, sha256, entries: files.length };
}

/** Every file of the bag, relative `/`-separated paths in code-unit order; a bag holds nothing else. */
async function bagFiles(bagDir: string): Promise<Array<{ path: string; size: number }>> {
  const found: Array<{ path: string; size: number }> = [];
  const walk = async (dir: string, prefix: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const path = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
      const full = join(dir, entry.name);
      if (entry.isDirectory()) await walk(full, path);
      else if (entry.isFile()) found.push({ path, size: (await lstat(full)).size });
      else throw new ArchiverError('ERR_ARCHIVE_DAMAGED', `${full} is neither a file nor a folder: a bag holds nothing else`, { path: full });
    }
  };
  await walk(bagDir, '');
  return found.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}
