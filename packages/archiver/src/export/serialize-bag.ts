// One batch bag as one ZIP file (docs/import-export.md, "Serialized bags"), written with yazl:
// it unpacks to exactly one folder, `harvest-NNNNNN-batch-NNNNN/`, holding the bag as it is in
// aips/. Deterministic, so that a partner can compare SHA-256s: entries in code-unit order of
// their paths, every time the bag's Bagged-At, every mode 0644, every entry stored (method 0:
// deflate's output depends on the zlib build, the stored bytes do not). ZIP64 when needed.
// Streamed: memory does not grow with file size.
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { lstat, open, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import yazl from 'yazl';
import { readBagInfo } from '../bag/batch-bag-reader.js';
import { ArchiverError, archiveIoError } from '../core/errors.js';

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
const FALLBACK_MTIME = new Date(Date.UTC(1980, 0, 1));

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
  const mtime = Number.isNaN(baggedAt) ? FALLBACK_MTIME : new Date(baggedAt);
  const zip = new yazl.ZipFile();
  for (const file of files) {
    zip.addReadStreamLazy(
      `${folder}/${file.path}`,
      { mtime, mode: 0o100644, compress: false, size: file.size },
      (done: (error: Error | null, stream: NodeJS.ReadableStream) => void) => done(null, createReadStream(join(bagDir, ...file.path.split('/')))),
    );
  }
  zip.end();
  const target = join(toDir, `${folder}.zip`);
  const partial = `${target}.partial`;
  const hash = createHash('sha256');
  let bytes = 0;
  const out = createWriteStream(partial);
  try {
    for await (const chunk of zip.outputStream as AsyncIterable<Buffer>) {
      hash.update(chunk);
      bytes += chunk.length;
      if (!out.write(chunk)) await once(out, 'drain');
    }
    out.end();
    await finished(out);
    const handle = await open(partial, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(partial, target);
  } catch (error) {
    out.destroy();
    await rm(partial, { force: true });
    throw archiveIoError(error, `cannot write ${target}`, target);
  }
  return { file: target, folder, bytes, sha256: hash.digest('hex'), entries: files.length };
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
