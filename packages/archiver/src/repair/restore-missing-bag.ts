// A whole missing bag brought back from a replica archive folder (`--from DIR` with aips/): the
// replica's bag at the same path is copied into the archive's tmp/ (regular files and folders
// only: a link anywhere refuses that copy), checked there — the strict verifier in full (every
// manifest, every checksum, the tag manifest), and every payload file exactly the catalog's:
// the same paths, sizes and sha-256 — flushed to disk, then renamed into place whole. A bag that
// fails any of this is removed from tmp/ and the next replica is tried. ZIPs are not unpacked
// here (see docs/repair.md).
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, mkdir, open, readdir, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { AIPS_DIRECTORY } from '../aip/layout-names.js';
import { flushToDisk, fsyncFolder } from '../archive/flush-to-disk.js';
import { resolveArchivePath, TEMP_DIRECTORY } from '../archive/storage-path.js';
import { verifyBag } from '../bag/bag-verifier.js';
import { readManifestLines } from '../bag/manifest-lines.js';
import type { Catalog } from '../catalog/catalog.js';
import { recordedPayloadsOfBag } from '../catalog/repair-queries.js';
import { archiveIoError } from '../core/errors.js';
import { writeFully } from '../core/write-fully.js';
import { reasonOf } from './byte-offer.js';

/** A tag file (records, PREMIS, bag-info) larger than this is not copied from a replica. */
const MAX_TAG_FILE_BYTES = 1024 * 1024 * 1024;

/**
 * Restores the missing bag `bagPath` from the first archive folder of `fromList` holding a copy
 * that passes every check; the origin, or why none did (with each copy refused).
 */
export async function restoreMissingBag(
  catalog: Catalog,
  archiveDir: string,
  bagPath: string,
  fromList: readonly string[],
  dryRun: boolean,
): Promise<{ origin: string } | { reason: string; tried: string[] }> {
  const tried: string[] = [];
  const expected = recordedPayloadsOfBag(catalog, bagPath);
  for (const from of fromList) {
    const found = await replicaBagDir(from, bagPath);
    if (found === undefined) continue;
    const origin = `replica ${from}: ${bagPath}`;
    if ('why' in found) {
      tried.push(`${origin}: ${found.why}`);
      continue;
    }
    const staging = join(archiveDir, TEMP_DIRECTORY, `repair-bag-${randomBytes(8).toString('hex')}`);
    try {
      await mkdir(join(archiveDir, TEMP_DIRECTORY), { recursive: true });
      const refused = (await copyTree(found.dir, staging, expected)) ?? (await checkCopy(staging, expected));
      if (refused !== undefined) {
        tried.push(`${origin}: ${refused}`);
        continue;
      }
      if (dryRun) return { origin };
      await placeBag(archiveDir, bagPath, staging);
      return { origin };
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
  }
  const reason = tried.length === 0 ? 'no --from archive folder holds a bag at that path' : 'no copy of the bag passed every check';
  return { reason, tried };
}

/** The replica's bag folder; undefined when it has none; why not when the way there is not plain folders. */
async function replicaBagDir(from: string, bagPath: string): Promise<{ dir: string } | { why: string } | undefined> {
  const aips = await lstat(join(from, AIPS_DIRECTORY)).catch(() => undefined);
  if (aips?.isDirectory() !== true) return undefined;
  let current = from;
  for (const name of bagPath.split('/')) {
    current = join(current, name);
    const info = await lstat(current).catch(() => undefined);
    if (info === undefined) return undefined;
    if (!info.isDirectory()) return { why: `${name} is ${info.isSymbolicLink() ? 'a symbolic link' : 'not a folder'}; not followed` };
  }
  return { dir: current };
}

/**
 * Copies the bag folder `from` to `to`: folders and regular files only, no link followed, each
 * payload file no larger than the catalog's size for it, each tag file bounded. A reason when refused.
 */
async function copyTree(from: string, to: string, expected: ReadonlyArray<{ path: string; size: number }>): Promise<string | undefined> {
  const sizes = new Map(expected.map((file) => [file.path, file.size]));
  const walk = async (rel: string): Promise<string | undefined> => {
    const source = rel === '' ? from : join(from, ...rel.split('/'));
    await mkdir(rel === '' ? to : join(to, ...rel.split('/')));
    for (const entry of (await readdir(source, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const path = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (entry.isDirectory()) {
        const refused = await walk(path);
        if (refused !== undefined) return refused;
      } else if (!entry.isFile()) {
        return `${path} is ${entry.isSymbolicLink() ? 'a symbolic link' : 'not a regular file'}`;
      } else {
        const limit = path.startsWith('data/') ? sizes.get(path.normalize('NFC')) : MAX_TAG_FILE_BYTES;
        if (limit === undefined) return `${path} is a payload file the catalog does not place in this bag`;
        const refused = await copyFile(join(source, entry.name), join(to, ...path.split('/')), limit);
        if (refused !== undefined) return `${path}: ${refused}`;
      }
    }
    return undefined;
  };
  try {
    return await walk('');
  } catch (error) {
    return reasonOf(error);
  }
}

/** One file, opened without following a link, at most `limit` bytes. */
async function copyFile(from: string, to: string, limit: number): Promise<string | undefined> {
  const source = await open(from, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const info = await source.stat();
    if (!info.isFile()) return 'not a regular file';
    if (info.size > limit) return `${info.size} bytes, more than the ${limit} allowed`;
    const target = await open(to, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o644);
    try {
      let copied = 0;
      for await (const chunk of source.createReadStream({ autoClose: false, highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
        copied += chunk.length;
        if (copied > limit) return `more than the ${limit} bytes allowed`;
        await writeFully(target, chunk);
      }
    } finally {
      await target.close();
    }
    return undefined;
  } finally {
    await source.close();
  }
}

/** The copy checked: a valid bag in full, and its payload exactly the catalog's (paths, sizes, sha-256). */
async function checkCopy(staging: string, expected: ReadonlyArray<{ path: string; sha256: string; size: number }>): Promise<string | undefined> {
  const report = await verifyBag(staging);
  if (!report.valid) return `not a valid bag: ${report.problems[0]!.message}${report.problems.length > 1 ? ` (and ${report.problems.length - 1} more)` : ''}`;
  const manifest = await readManifestText(join(staging, 'manifest-sha256.txt'));
  const listed = new Map(
    readManifestLines(manifest, 64).flatMap((line) => (line.problem === undefined ? [[line.path.normalize('NFC'), line.digest] as const] : [])),
  );
  for (const file of expected) {
    const digest = listed.get(file.path.normalize('NFC'));
    if (digest !== file.sha256) return `${file.path}: ${digest === undefined ? 'not in its manifest' : `sha256 ${digest}`}, the catalog records ${file.sha256}`;
  }
  if (listed.size !== expected.length) return `its manifest lists ${listed.size} payload file(s), the catalog places ${expected.length} there`;
  return undefined;
}

async function readManifestText(file: string): Promise<string> {
  const handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    return await handle.readFile('utf8');
  } finally {
    await handle.close();
  }
}

/** Flushes the checked copy, makes the folders up to the bag's (no link on the way) and renames it into place. */
async function placeBag(archiveDir: string, bagPath: string, staging: string): Promise<void> {
  const target = resolveArchivePath(archiveDir, bagPath);
  try {
    await flushToDisk(archiveDir, { trees: [staging] }, 'files');
    let current = archiveDir;
    for (const name of bagPath.split('/').slice(0, -1)) {
      const parent = current;
      current = join(current, name);
      const info = await lstat(current).catch(() => undefined);
      if (info === undefined) {
        await mkdir(current);
        await fsyncFolder(parent);
      } else if (!info.isDirectory()) throw new Error(`${current} is not a folder`);
    }
    await rename(staging, target);
    await fsyncFolder(dirname(target));
    await fsyncFolder(join(archiveDir, TEMP_DIRECTORY));
  } catch (error) {
    throw archiveIoError(error, `cannot put the bag ${bagPath} back`, target);
  }
}
