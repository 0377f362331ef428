// `oaibag verify --bag FILE.zip`: a serialized bag checked in place, read with yauzl, never
// unpacked (docs/import-export.md). First the ZIP's directory: one top-level folder, no link,
// no encrypted entry, no name twice (after Unicode NFC); then every entry streamed once: the
// tag files read, every payload hashed against the manifests, Payload-Oxum and the tag
// manifest checked. Every bad entry is named.
import { createHash, type Hash } from 'node:crypto';
import yauzl from 'yauzl';
import { readManifestLines } from '../bag/manifest-lines.js';
import { ArchiverError } from '../core/errors.js';
import { openZipEntry as openEntry, readZipEntries as readEntries, zipEntryFileType } from '../core/zip-entries.js';

export interface ZipBagReport {
  file: string;
  /** The folder the ZIP unpacks to. */
  folder: string | null;
  entries: number;
  payloadFiles: number;
  payloadBytes: number;
  /** One line each, naming the entry. */
  problems: string[];
  ok: boolean;
}

const DIGESTS: Record<string, number> = { sha256: 64, sha512: 128, sha1: 40, md5: 32 };
/** Tag files are read into memory to be parsed: none may be larger. */
const MAX_TAG_FILE_BYTES = 64 * 1024 * 1024;

interface ZipEntryFacts {
  name: string;
  size: number;
  entry: yauzl.Entry;
}

export async function verifyZipBag(file: string): Promise<ZipBagReport> {
  const problems: string[] = [];
  const zip = await openZip(file);
  const entries: ZipEntryFacts[] = [];
  try {
    const seen = new Set<string>();
    const tops = new Set<string>();
    for await (const entry of readEntries(zip)) {
      const name = entry.fileName;
      if ((entry.generalPurposeBitFlag & 0x1) !== 0) problems.push(`${name}: encrypted, which a bag never is`);
      if (zipEntryFileType(entry) === 'symbolic link') problems.push(`${name}: a symbolic link, which a bag never holds`);
      const normal = name.normalize('NFC');
      if (seen.has(normal)) problems.push(`${name}: a second entry of that name (after Unicode NFC)`);
      seen.add(normal);
      tops.add(name.split('/')[0]!);
      if (!name.endsWith('/')) entries.push({ name, size: entry.uncompressedSize, entry });
    }
    const folder = tops.size === 1 ? [...tops][0]! : null;
    if (folder === null) problems.push(`${file}: unpacks to ${tops.size} top-level names (${[...tops].slice(0, 3).join(', ')}…), not one folder`);
    if (entries.some((entry) => !entry.name.includes('/'))) problems.push(`${file}: holds files outside its folder`);
    const prefix = folder === null ? '' : `${folder}/`;
    const inBag = new Map(entries.filter((entry) => entry.name.startsWith(prefix)).map((entry) => [entry.name.slice(prefix.length), entry]));

    // The tag files, read whole (small), then every entry hashed with every algorithm named.
    const text = async (path: string): Promise<string | undefined> => {
      const entry = inBag.get(path);
      if (!entry) return undefined;
      if (entry.size > MAX_TAG_FILE_BYTES) {
        problems.push(`${prefix}${path}: a tag file of ${entry.size} bytes, larger than oaibag reads`);
        return undefined;
      }
      const chunks: Buffer[] = [];
      for await (const chunk of await openEntry(zip, entry.entry)) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    };
    const bagit = await text('bagit.txt');
    if (bagit === undefined || !/^BagIt-Version: 1\.0\r?\n/.test(bagit)) problems.push(`${prefix}bagit.txt: missing or not BagIt-Version 1.0`);
    const payloadManifests = new Map<string, Map<string, string>>();
    const tagManifests = new Map<string, Map<string, string>>();
    for (const [path] of inBag) {
      const match = /^(tag)?manifest-([a-z0-9]+)\.txt$/.exec(path);
      if (!match) continue;
      const length = DIGESTS[match[2]!];
      if (length === undefined) {
        problems.push(`${prefix}${path}: an algorithm oaibag does not check`);
        continue;
      }
      const lines = new Map<string, string>();
      for (const line of readManifestLines((await text(path)) ?? '', length)) {
        if (line.problem) problems.push(`${prefix}${path}:${line.line}: ${line.problem === 'unsafe' ? 'a path that leaves the bag' : 'not a manifest line'}`);
        else lines.set(line.path.normalize('NFC'), line.digest);
      }
      (match[1] ? tagManifests : payloadManifests).set(match[2]!, lines);
    }
    if (payloadManifests.size === 0) problems.push(`${prefix}: no payload manifest`);
    const bagInfo = (await text('bag-info.txt')) ?? '';
    let payloadFiles = 0;
    let payloadBytes = 0;
    for (const [path, entry] of inBag) {
      const isPayload = path.startsWith('data/');
      const manifests = isPayload ? payloadManifests : /^tagmanifest-/.test(path) ? new Map() : tagManifests;
      if (isPayload) {
        payloadFiles++;
        payloadBytes += entry.size;
      }
      const wanted = [...manifests].filter(([, lines]) => lines.has(path.normalize('NFC')));
      if (isPayload && wanted.length < manifests.size) problems.push(`${prefix}${path}: not in every payload manifest`);
      if (wanted.length === 0) continue;
      const hashes = new Map<string, Hash>(wanted.map(([algorithm]) => [algorithm, createHash(algorithm)]));
      let size = 0;
      try {
        for await (const chunk of await openEntry(zip, entry.entry)) {
          size += (chunk as Buffer).length;
          for (const hash of hashes.values()) hash.update(chunk as Buffer);
        }
      } catch (error) {
        problems.push(`${prefix}${path}: cannot be read (${(error as Error).message})`);
        continue;
      }
      for (const [algorithm, hash] of hashes) {
        const expected = manifests.get(algorithm)!.get(path.normalize('NFC'));
        const found = hash.digest('hex');
        if (expected !== found) problems.push(`${prefix}${path}: ${algorithm} ${found}, the manifest says ${expected}`);
      }
      if (size !== entry.size) problems.push(`${prefix}${path}: ${size} bytes, the ZIP says ${entry.size}`);
    }
    for (const [algorithm, lines] of payloadManifests) {
      for (const path of lines.keys()) if (!inBag.has(path)) problems.push(`${prefix}${path}: in manifest-${algorithm}.txt, missing from the ZIP`);
    }
    const oxum = /^Payload-Oxum:\s*(\d+)\.(\d+)\s*$/m.exec(bagInfo);
    if (oxum && (Number(oxum[1]) !== payloadBytes || Number(oxum[2]) !== payloadFiles)) {
      problems.push(`${prefix}bag-info.txt: Payload-Oxum ${oxum[1]}.${oxum[2]}, the payload is ${payloadBytes}.${payloadFiles}`);
    }
    return { file, folder, entries: entries.length, payloadFiles, payloadBytes, problems, ok: problems.length === 0 };
  } finally {
    zip.close();
  }
}

function openZip(file: string): Promise<yauzl.ZipFile> {
  return new Promise((resolve, reject) =>
    yauzl.open(file, { lazyEntries: true, autoClose: false, strictFileNames: true, validateEntrySizes: true }, (error, zip) => {
      if (error) reject(new ArchiverError('ERR_ARCHIVE_DAMAGED', `${file}: not a ZIP file oaibag reads (${error.message})`, { path: file }));
      else resolve(zip);
    }),
  );
}
