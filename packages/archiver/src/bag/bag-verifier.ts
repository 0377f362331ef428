// A strict BagIt 1.0 (RFC 8493) verifier: the test oracle for the bag writer and, later,
// `oaibag verify`. It collects every problem instead of stopping at the first, and each
// problem names its file (bagit-python's users' most common complaint is a failure that does
// not say which file) and prints as one stable line.
//
// Stricter than the RFC where our AIP profile is: BagIt-Version must be 1.0 and the encoding
// UTF-8; blank manifest lines, duplicate entries, symbolic links and a tag file that a tag
// manifest does not list are reported. Paths from manifests are never opened unless the same
// path was found by walking the bag without following links, so a hostile manifest cannot make
// the verifier read outside the bag.

import { createHash, getHashes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { encodeManifestPath } from './bag-paths.js';
import { readManifestLines } from './manifest-lines.js';

/** A path as shown in a message: manifest-encoded, so a name with a line break stays on one line. */
const show = (path: string): string => encodeManifestPath(path);

export type BagProblemKind = 'missing' | 'unexpected' | 'checksum' | 'oxum' | 'tag' | 'format';

/** One thing wrong with a bag. `message` is a single stable line naming the file. */
export interface BagProblem {
  kind: BagProblemKind;
  /** Bag-relative path (`data/…`, `bag-info.txt`), decoded from the manifest encoding. */
  path?: string;
  algorithm?: string;
  expected?: string;
  found?: string;
  message: string;
}

export interface BagReport {
  valid: boolean;
  problems: BagProblem[];
}

export interface VerifyOptions {
  /** Skip checksums of payload files: completeness, sizes and Payload-Oxum only. */
  fast?: boolean;
  /**
   * Filled in with what the bag holds and what was read, for the totals of a fixity check (`oaibag
   * verify`). An out-parameter rather than more fields on {@link BagReport}, whose shape
   * callers compare whole.
   */
  tally?: BagTally;
}

/** What {@link verifyBag} found on disk and read; see {@link VerifyOptions.tally}. */
export interface BagTally {
  /** Bytes and files of the payload on disk (what Payload-Oxum describes). */
  payloadBytes: number;
  payloadFiles: number;
  /** Bytes read to compute checksums (tag files always; payload files unless fast). */
  hashedBytes: number;
}

/** Hex digest lengths of the algorithms a manifest may name. */
const DIGEST_LENGTH: Record<string, number> = { md5: 32, sha1: 40, sha224: 56, sha256: 64, sha384: 96, sha512: 128 };

interface Manifest {
  name: string;
  algorithm: string;
  /** NFC path → expected lowercase digest, and the path as written. */
  entries: Map<string, { digest: string; path: string }>;
}

/**
 * Verifies the bag at `bagDir`: bagit.txt, the payload directory, every manifest line (format,
 * safe path, file present), every payload file listed in every payload manifest, Payload-Oxum,
 * the tag manifests (checked in full even in fast mode: tag files are small) and, unless
 * `fast`, every payload checksum, streamed with all algorithms in one read per file.
 */
export async function verifyBag(bagDir: string, options: VerifyOptions = {}): Promise<BagReport> {
  const problems: BagProblem[] = [];
  const add = (problem: BagProblem): void => void problems.push(problem);

  await checkBagitTxt(bagDir, add);
  const disk = new Map<string, { path: string; size: number }>(); // NFC → actual path, size
  const tagDisk = new Map<string, { path: string; size: number }>();
  const dataStat = await lstat(join(bagDir, 'data')).catch(() => undefined);
  if (dataStat?.isDirectory() !== true) add({ kind: 'missing', path: 'data/', message: 'data/ payload directory is missing' });
  else await walk(bagDir, 'data', disk, add);
  for (const name of sortedNames(await readdir(bagDir).catch(() => []))) {
    if (name === 'data') continue;
    await walk(bagDir, name, tagDisk, add);
  }

  const payloadManifests: Manifest[] = [];
  const tagManifests: Manifest[] = [];
  for (const entry of [...tagDisk.values()].map((e) => e.path).sort()) {
    const match = /^(tag)?manifest-([a-z0-9]+)\.txt$/.exec(entry);
    if (match === null) continue;
    const manifest = await readManifest(bagDir, entry, match[2]!, match[1] === 'tag', add);
    if (manifest !== undefined) (match[1] === 'tag' ? tagManifests : payloadManifests).push(manifest);
  }
  if (payloadManifests.length === 0) add({ kind: 'missing', path: 'manifest-sha512.txt', message: 'no payload manifest (manifest-<algorithm>.txt)' });
  // BagIt makes tag manifests optional; our profile always writes one, and without it the tag
  // files (bag-info.txt, the manifests, metadata/) could change unseen.
  if (tagManifests.length === 0)
    add({ kind: 'missing', path: 'tagmanifest-sha256.txt', message: 'no tag manifest (tagmanifest-sha256.txt): the tag files are unprotected' });

  // Completeness: every listed file exists, every payload file is in every payload manifest.
  for (const manifest of payloadManifests) {
    for (const [key, { path }] of manifest.entries) {
      if (!disk.has(key)) add({ kind: 'missing', path, algorithm: manifest.algorithm, message: `${show(path)} is in ${manifest.name} but not on disk` });
    }
    for (const [key, { path }] of disk) {
      if (!manifest.entries.has(key))
        add({ kind: 'unexpected', path, algorithm: manifest.algorithm, message: `${show(path)} is on disk but not in ${manifest.name}` });
    }
  }

  await checkOxum(bagDir, disk, options.fast === true, add);

  // Tag manifests: every payload manifest listed, every listed tag file present and intact,
  // and (our profile) every tag file listed.
  for (const manifest of tagManifests) {
    for (const payloadManifest of payloadManifests) {
      if (!manifest.entries.has(payloadManifest.name)) {
        add({
          kind: 'tag',
          path: payloadManifest.name,
          algorithm: manifest.algorithm,
          message: `${show(payloadManifest.name)} is not listed in ${manifest.name}`,
        });
      }
    }
    for (const [key, { path }] of manifest.entries) {
      if (!tagDisk.has(key)) add({ kind: 'missing', path, algorithm: manifest.algorithm, message: `${show(path)} is in ${manifest.name} but not on disk` });
    }
    for (const [key, { path }] of tagDisk) {
      if (/^tagmanifest-[a-z0-9]+\.txt$/.test(path) || manifest.entries.has(key)) continue;
      add({ kind: 'unexpected', path, algorithm: manifest.algorithm, message: `${show(path)} is a tag file not listed in ${manifest.name}` });
    }
    await checkDigests(bagDir, [manifest], tagDisk, 'tag', add);
  }
  if (options.fast !== true) await checkDigests(bagDir, payloadManifests, disk, 'checksum', add);
  if (options.tally !== undefined) {
    const tally = options.tally;
    tally.payloadFiles = disk.size;
    tally.payloadBytes = [...disk.values()].reduce((sum, file) => sum + file.size, 0);
    const hashed = (files: Map<string, { size: number }>, manifests: Manifest[]): number =>
      [...files].reduce((sum, [key, file]) => sum + (manifests.some((m) => m.entries.has(key)) ? file.size : 0), 0);
    tally.hashedBytes = hashed(tagDisk, tagManifests) + (options.fast === true ? 0 : hashed(disk, payloadManifests));
  }
  return { valid: problems.length === 0, problems };
}

/** bagit.txt: exactly `BagIt-Version: 1.0` and `Tag-File-Character-Encoding: UTF-8`, no BOM. */
async function checkBagitTxt(bagDir: string, add: (p: BagProblem) => void): Promise<void> {
  const bytes = await readFile(join(bagDir, 'bagit.txt')).catch(() => undefined);
  if (bytes === undefined) return add({ kind: 'missing', path: 'bagit.txt', message: 'bagit.txt is missing' });
  const lines = bytes.toString('utf8').split(/\r\n|\r|\n/);
  if (lines.at(-1) === '') lines.pop();
  const expected = ['BagIt-Version: 1.0', 'Tag-File-Character-Encoding: UTF-8'];
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
    add({ kind: 'format', path: 'bagit.txt', message: 'bagit.txt starts with a byte-order mark' });
  } else if (lines.length !== 2 || lines[0] !== expected[0] || lines[1] !== expected[1]) {
    add({
      kind: 'format',
      path: 'bagit.txt',
      expected: expected.join('\\n'),
      found: lines.join('\\n').slice(0, 200),
      message: 'bagit.txt is not the BagIt 1.0 / UTF-8 declaration',
    });
  }
}

/** Lists regular files under `rel` (lstat, links not followed) into `into`, keyed by NFC path. */
async function walk(bagDir: string, rel: string, into: Map<string, { path: string; size: number }>, add: (p: BagProblem) => void): Promise<void> {
  const info = await lstat(join(bagDir, rel));
  if (info.isSymbolicLink()) return add({ kind: 'format', path: rel, message: `${show(rel)} is a symbolic link` });
  if (info.isFile()) {
    const key = rel.normalize('NFC');
    if (into.has(key)) add({ kind: 'format', path: rel, message: `${show(rel)} and ${show(into.get(key)!.path)} differ only in Unicode normalisation` });
    into.set(key, { path: rel, size: info.size });
    return;
  }
  if (!info.isDirectory()) return add({ kind: 'format', path: rel, message: `${show(rel)} is not a regular file or directory` });
  for (const name of sortedNames(await readdir(join(bagDir, rel)))) await walk(bagDir, `${rel}/${name}`, into, add);
}

/** Directory entries in code-unit order, so the problems of a bag come in the same order on every file system. */
function sortedNames(names: string[]): string[] {
  return names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

async function readManifest(bagDir: string, name: string, algorithm: string, isTag: boolean, add: (p: BagProblem) => void): Promise<Manifest | undefined> {
  const length = DIGEST_LENGTH[algorithm];
  if (length === undefined || !getHashes().includes(algorithm)) {
    add({ kind: 'format', path: name, algorithm, message: `${name} uses an unsupported algorithm ${algorithm}` });
    return undefined;
  }
  const bytes = await readFile(join(bagDir, name));
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    add({ kind: 'format', path: name, message: `${name} is not UTF-8` });
    return undefined;
  }
  if (text.startsWith('\ufeff')) add({ kind: 'format', path: name, message: `${name} starts with a byte-order mark` });
  const manifest: Manifest = { name, algorithm, entries: new Map() };
  for (const entry of readManifestLines(text.replace(/^\ufeff/, ''), length)) {
    const where = `${name} line ${entry.line}`;
    if (entry.problem !== undefined) {
      if (entry.problem === 'format')
        add({ kind: 'format', path: name, algorithm, found: entry.text.slice(0, 200), message: `${where} is not "<${algorithm} digest> <path>"` });
      else if (entry.problem === 'percent') add({ kind: 'format', path: name, found: entry.text, message: `${where} has a "%" that is not %25, %0D or %0A` });
      else add({ kind: 'format', path: entry.text, message: `${where} names an unsafe path` });
      continue;
    }
    const { path, digest } = entry;
    if (isTag === (path.split('/')[0] === 'data')) {
      add({
        kind: 'format',
        path,
        message: `${where}: ${isTag ? 'a tag manifest lists a payload file' : 'a payload manifest lists a file outside data/'}`,
      });
      continue;
    }
    const key = path.normalize('NFC');
    if (manifest.entries.has(key)) {
      add({ kind: 'format', path, algorithm, message: `${where} lists ${show(path)} a second time` });
      continue;
    }
    manifest.entries.set(key, { digest, path });
  }
  return manifest;
}

/** Payload-Oxum present at most once, well formed, and equal to the payload on disk. */
async function checkOxum(bagDir: string, disk: Map<string, { size: number }>, fast: boolean, add: (p: BagProblem) => void): Promise<void> {
  const text = await readFile(join(bagDir, 'bag-info.txt'), 'utf8').catch(() => undefined);
  const values: string[] = [];
  if (text !== undefined) {
    text.split(/\r\n|\r|\n/).forEach((line, index) => {
      if (line === '' || /^[ \t]/.test(line)) return; // blank, or the continuation of a folded value
      const colon = line.indexOf(':');
      const label = colon < 0 ? '' : line.slice(0, colon);
      if (label === '' || label.trim() !== label || !/^[ \t]/.test(line.slice(colon + 1) || ' ')) {
        return add({ kind: 'format', path: 'bag-info.txt', found: line.slice(0, 200), message: `bag-info.txt line ${index + 1} is not "Label: value"` });
      }
      if (label.toLowerCase() === 'payload-oxum') values.push(line.slice(colon + 1).trim());
    });
  }
  if (values.length === 0) {
    if (fast) add({ kind: 'oxum', path: 'bag-info.txt', message: 'fast verification needs Payload-Oxum in bag-info.txt' });
    return;
  }
  if (values.length > 1) add({ kind: 'format', path: 'bag-info.txt', message: 'bag-info.txt has more than one Payload-Oxum' });
  const expected = values[0]!;
  let bytes = 0;
  for (const file of disk.values()) bytes += file.size;
  const found = `${bytes}.${disk.size}`;
  if (!/^\d+\.\d+$/.test(expected))
    add({ kind: 'format', path: 'bag-info.txt', found: expected, message: `Payload-Oxum "${expected}" is not <bytes>.<files>` });
  else if (expected !== found)
    add({ kind: 'oxum', path: 'bag-info.txt', expected, found, message: `Payload-Oxum expected ${expected} (bytes.files) but found ${found}` });
}

/** Hashes each listed file present on disk once, with every algorithm that lists it. */
async function checkDigests(
  bagDir: string,
  manifests: Manifest[],
  disk: Map<string, { path: string }>,
  kind: 'checksum' | 'tag',
  add: (p: BagProblem) => void,
): Promise<void> {
  const wanted = new Map<string, Manifest[]>();
  for (const manifest of manifests) {
    for (const key of manifest.entries.keys()) if (disk.has(key)) wanted.set(key, [...(wanted.get(key) ?? []), manifest]);
  }
  for (const [key, listing] of wanted) {
    const actual = disk.get(key)!.path;
    const hashes = listing.map((m) => createHash(m.algorithm));
    try {
      for await (const chunk of createReadStream(join(bagDir, ...actual.split('/')), { highWaterMark: 1 << 20 })) {
        for (const hash of hashes) hash.update(chunk as Buffer);
      }
    } catch (error) {
      add({
        kind: kind === 'tag' ? 'tag' : 'checksum',
        path: actual,
        message: `${show(actual)} cannot be read: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
      });
      continue;
    }
    listing.forEach((manifest, i) => {
      const expected = manifest.entries.get(key)!.digest;
      const found = hashes[i]!.digest('hex');
      if (expected !== found) {
        add({
          kind,
          path: actual,
          algorithm: manifest.algorithm,
          expected,
          found,
          message: `${show(actual)} ${manifest.algorithm} validation failed: expected="${expected}" found="${found}"`,
        });
      }
    });
  }
}
