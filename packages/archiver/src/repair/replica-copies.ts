// The replicas `oaibag repair --from` reads: another archive folder (a copy, an offsite mirror),
// a ZIP of `oaibag export --bags`, or a folder of them. A replica is never trusted: its bags'
// manifests only say where to look for bytes with a wanted sha-256; the bytes are checked
// against the damaged bag's own manifests before they are written (place-payload.ts). Its
// catalog is not read: the manifests are enough, need no schema and no write access, and are
// there in a copy of aips/ alone. Nothing of a replica is ever written.
import { constants, type Dirent } from 'node:fs';
import { type FileHandle, lstat, open, readdir, readFile, realpath, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import yauzl from 'yauzl';
import { AIPS_DIRECTORY, parseBatchFolder, parseHarvestFolder } from '../aip/layout-names.js';
import { readManifestLines } from '../bag/manifest-lines.js';
import { ArchiverError } from '../core/errors.js';
import { openZipEntry, readZipEntries, zipEntryFileType } from '../core/zip-entries.js';
import { type ByteOffer, reasonOf } from './byte-offer.js';

/** A manifest larger than this is not read (a batch bag of 5,000 parts has one of about 1 MB). */
export const MAX_REPLICA_MANIFEST_BYTES = 64 * 1024 * 1024;
/** Copies of one digest kept per replica: enough to survive one bad copy, bounded for a hostile one. */
const COPIES_PER_DIGEST = 4;

/** One `--from`: where it is, and the offers it holds for each wanted digest. */
export interface Replica {
  /** `replica DIR`, `zip FILE` or `zips DIR`. */
  readonly description: string;
  /** Offers of the bytes with this sha-256 and size, in the order found. */
  offers(sha256: string, size: number): ByteOffer[];
  /** Lines that are not errors: ZIPs or manifests that could not be read. */
  readonly notes: string[];
}

/**
 * ERR_ARCHIVE_USAGE unless each `--from` exists, is not the archive itself, and is an archive
 * (it has aips/), a ZIP, or a folder holding ZIPs. Cheap: run before the fixity check.
 */
export async function checkFrom(fromList: readonly string[], archiveDir: string): Promise<void> {
  const archiveReal = await realpath(archiveDir).catch(() => resolve(archiveDir));
  for (const from of fromList) {
    const info = await stat(from).catch(() => undefined);
    if (info === undefined) throw usage(`--from ${from} does not exist`);
    if ((await realpath(from)) === archiveReal) throw usage(`--from ${from} is the archive being repaired`);
    if (info.isFile()) continue;
    const { hasAips, zips } = await replicaKinds(from);
    if (!hasAips && zips.length === 0) throw usage(`--from ${from} is neither an archive (no aips/ folder), a ZIP, nor a folder of ZIPs`);
  }
}

/** Opens each `--from` (in order, checked by {@link checkFrom}) and indexes the payload files whose sha-256 is `wanted`. */
export async function openReplicas(fromList: readonly string[], archiveDir: string, wanted: ReadonlySet<string>): Promise<Replica[]> {
  await checkFrom(fromList, archiveDir);
  const replicas: Replica[] = [];
  for (const from of fromList) {
    if ((await stat(from)).isFile()) {
      replicas.push(await zipReplica(`zip ${from}`, [from], wanted));
      continue;
    }
    const { hasAips, zips } = await replicaKinds(from);
    if (hasAips) replicas.push(await archiveReplica(from, wanted));
    if (zips.length > 0) replicas.push(await zipReplica(`zips ${from}`, zips, wanted));
  }
  return replicas;
}

/** Whether a folder is an archive (aips/ in it) and the ZIPs directly in it. */
async function replicaKinds(from: string): Promise<{ hasAips: boolean; zips: string[] }> {
  const entries = await listed(from);
  return {
    hasAips: entries.some((entry) => entry.name === AIPS_DIRECTORY && entry.isDirectory()),
    zips: entries.filter((entry) => entry.isFile() && entry.name.toLowerCase().endsWith('.zip')).map((entry) => join(from, entry.name)),
  };
}

function usage(message: string): ArchiverError {
  return new ArchiverError('ERR_ARCHIVE_USAGE', message, { hint: 'give --from an archive folder, a ZIP of oaibag export --bags, or a folder of them' });
}

/** A folder's entries, sorted; none when it cannot be listed. */
async function listed(dir: string): Promise<Dirent[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => [] as Dirent[]);
  return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Keeps the wanted lines of a sha-256 manifest: digest → the bag-relative paths found. */
function indexManifest(text: string, wanted: ReadonlySet<string>, add: (digest: string, path: string) => void): void {
  for (const line of readManifestLines(text, 64)) {
    if (line.problem === undefined && wanted.has(line.digest) && line.path.startsWith('data/')) add(line.digest, line.path);
  }
}

/** An index of found copies, at most COPIES_PER_DIGEST per digest. */
class CopyIndex<T> {
  private readonly copies = new Map<string, T[]>();
  add(digest: string, copy: T): void {
    const list = this.copies.get(digest) ?? [];
    if (list.length < COPIES_PER_DIGEST) list.push(copy);
    this.copies.set(digest, list);
  }
  get(digest: string): T[] {
    return this.copies.get(digest) ?? [];
  }
}

/** Another archive folder: its bags at aips/harvest-<n>/batch-<n>/, found without following links. */
async function archiveReplica(root: string, wanted: ReadonlySet<string>): Promise<Replica> {
  const notes: string[] = [];
  const index = new CopyIndex<{ bagDir: string; path: string }>();
  const description = `replica ${root}`;
  for (const harvest of await listed(join(root, AIPS_DIRECTORY))) {
    if (!harvest.isDirectory() || parseHarvestFolder(harvest.name) === undefined) continue;
    for (const batch of await listed(join(root, AIPS_DIRECTORY, harvest.name))) {
      if (!batch.isDirectory() || parseBatchFolder(batch.name) === undefined) continue;
      const bagDir = join(root, AIPS_DIRECTORY, harvest.name, batch.name);
      const manifest = join(bagDir, 'manifest-sha256.txt');
      const info = await lstat(manifest).catch(() => undefined);
      if (info === undefined) continue;
      if (!info.isFile() || info.size > MAX_REPLICA_MANIFEST_BYTES) {
        notes.push(`${description}: ${manifest} is not a regular file of at most ${MAX_REPLICA_MANIFEST_BYTES} bytes; not read`);
        continue;
      }
      const text = await readFile(manifest, 'utf8').catch(() => undefined);
      if (text !== undefined) indexManifest(text, wanted, (digest, path) => index.add(digest, { bagDir, path }));
    }
  }
  return {
    description,
    notes,
    offers: (sha256, size) =>
      index.get(sha256).map(({ bagDir, path }) => ({
        origin: `${description}: ${bagDir
          .slice(root.length + 1)
          .split('\\')
          .join('/')}/${path}`,
        open: () => openReplicaFile(bagDir, path, size),
      })),
  };
}

/**
 * A payload file of a replica's bag, opened without following any link on the way from the bag
 * folder (each folder lstat'ed, the file opened O_NOFOLLOW) and only when it is a regular file
 * of the recorded size: a link or a larger file is refused before a byte is read.
 */
async function openReplicaFile(bagDir: string, path: string, size: number): Promise<{ bytes: Readable } | { why: string }> {
  const segments = path.split('/');
  let current = bagDir;
  for (const name of segments.slice(0, -1)) {
    current = join(current, name);
    const info = await lstat(current).catch(() => undefined);
    if (info === undefined) return { why: 'not there' };
    if (!info.isDirectory()) return { why: `${name}/ is ${info.isSymbolicLink() ? 'a symbolic link' : 'not a folder'}; not followed` };
  }
  const file = join(bagDir, ...segments);
  let handle: FileHandle;
  try {
    handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') return { why: 'a symbolic link; not followed' };
    return { why: code === 'ENOENT' ? 'not there' : reasonOf(error) };
  }
  const info = await handle.stat();
  if (!info.isFile() || info.size !== size) {
    await handle.close();
    return { why: info.isFile() ? `${info.size} bytes, the catalog records ${size}` : 'not a regular file' };
  }
  return { bytes: handle.createReadStream({ highWaterMark: 1 << 20 }) };
}

/** ZIPs of `oaibag export --bags`: each one bag, unpacking to one folder. */
async function zipReplica(description: string, files: readonly string[], wanted: ReadonlySet<string>): Promise<Replica> {
  const notes: string[] = [];
  const index = new CopyIndex<{ file: string; entryName: string }>();
  for (const file of files) {
    try {
      await indexZip(file, wanted, (digest, entryName) => index.add(digest, { file, entryName }));
    } catch (error) {
      notes.push(`${description}: ${file} cannot be read as a ZIP: ${reasonOf(error)}`);
    }
  }
  return {
    description,
    notes,
    offers: (sha256, size) =>
      index.get(sha256).map(({ file, entryName }) => ({ origin: `zip ${file}: ${entryName}`, open: () => openZipCopy(file, entryName, size) })),
  };
}

function openZip(file: string): Promise<yauzl.ZipFile> {
  return new Promise((resolvePromise, reject) =>
    yauzl.open(file, { lazyEntries: true, autoClose: false, strictFileNames: true, validateEntrySizes: true }, (error, zip) =>
      error ? reject(error) : resolvePromise(zip),
    ),
  );
}

/** Reads the sha-256 manifest of each bag folder in the ZIP and keeps the wanted lines. */
async function indexZip(file: string, wanted: ReadonlySet<string>, add: (digest: string, entryName: string) => void): Promise<void> {
  const zip = await openZip(file);
  try {
    for await (const entry of readZipEntries(zip)) {
      const parts = entry.fileName.split('/');
      if (parts.length !== 2 || parts[1] !== 'manifest-sha256.txt' || entry.uncompressedSize > MAX_REPLICA_MANIFEST_BYTES) continue;
      if (zipEntryFileType(entry) !== 'file' || (entry.generalPurposeBitFlag & 0x1) !== 0) continue;
      const chunks: Buffer[] = [];
      for await (const chunk of await openZipEntry(zip, entry)) chunks.push(chunk as Buffer);
      indexManifest(Buffer.concat(chunks).toString('utf8'), wanted, (digest, path) => add(digest, `${parts[0]}/${path}`));
    }
  } finally {
    zip.close();
  }
}

/**
 * One entry of a ZIP, streamed (the ZIP is opened again and closed with the stream): refused
 * when it is a link, encrypted, or not of the recorded size by the ZIP's own directory.
 */
async function openZipCopy(file: string, entryName: string, size: number): Promise<{ bytes: Readable } | { why: string }> {
  let zip: yauzl.ZipFile;
  try {
    zip = await openZip(file);
  } catch (error) {
    return { why: `cannot be read as a ZIP: ${reasonOf(error)}` };
  }
  try {
    for await (const entry of readZipEntries(zip)) {
      if (entry.fileName !== entryName) continue;
      if (zipEntryFileType(entry) !== 'file') {
        zip.close();
        return { why: `a ${zipEntryFileType(entry)} entry; not followed` };
      }
      if ((entry.generalPurposeBitFlag & 0x1) !== 0 || entry.uncompressedSize !== size) {
        zip.close();
        return { why: (entry.generalPurposeBitFlag & 0x1) !== 0 ? 'encrypted' : `${entry.uncompressedSize} bytes, the catalog records ${size}` };
      }
      const bytes = await openZipEntry(zip, entry);
      bytes.once('close', () => zip.close());
      return { bytes };
    }
    zip.close();
    return { why: 'not there' };
  } catch (error) {
    zip.close();
    return { why: reasonOf(error) };
  }
}
