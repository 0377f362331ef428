// A strict BagIt 1.0 (RFC 8493) verifier: the test oracle for the bag writer, `oaibag verify`
// of an archive's bags (folders) and of a serialized bag (a ZIP, `verify --bag`), and the check
// of the bags `oaibag import` adopts. One verification, whatever the bytes come from: a bag
// source (bag-source.ts) lists the entries and opens a file. It collects every problem instead
// of stopping at the first, and each problem names its file (bagit-python's users' most common
// complaint is a failure that does not say which file) and prints as one stable line.
//
// Stricter than the RFC where our AIP profile is: BagIt-Version must be 1.0 and the encoding
// UTF-8; blank manifest lines, duplicate entries, symbolic links and a tag file that a tag
// manifest does not list are reported. Paths from manifests are never opened unless the same
// path was listed by the source as a file (a folder's walk follows no link), so a hostile
// manifest cannot make the verifier read outside the bag. Tag files are read whole to be
// parsed, so none may be larger than MAX_TAG_FILE_BYTES.

import { createHash, getHashes } from 'node:crypto';
import { encodeManifestPath } from './bag-paths.js';
import { type BagEntry, type BagSource, folderBagSource } from './bag-source.js';
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

/** Which rule a problem breaks, one name per check the verifier makes. */
export type BagCheck =
  | 'bagit' // bagit.txt missing, or not the BagIt 1.0 / UTF-8 declaration
  | 'payload-folder' // data/ missing
  | 'link' // a symbolic link
  | 'special-file' // neither a regular file nor a folder
  | 'normalisation' // two names equal after Unicode NFC
  | 'tag-file-size' // a tag file larger than MAX_TAG_FILE_BYTES
  | 'algorithm' // a manifest of an algorithm not supported
  | 'encoding' // a manifest not UTF-8, or with a byte-order mark
  | 'manifest-line' // a manifest line that is not `<digest> <path>`, or has a bad `%`
  | 'unsafe-path' // a manifest line naming a path that leaves the bag
  | 'misplaced' // a tag manifest listing a payload file, or a payload manifest a tag file
  | 'listed-twice' // a manifest listing a path a second time
  | 'no-payload-manifest'
  | 'no-tag-manifest'
  | 'not-present' // listed in a manifest, not in the bag
  | 'not-listed' // in the bag (or a payload manifest), not listed in a manifest
  | 'bag-info-line' // a bag-info.txt line that is not `Label: value`
  | 'oxum' // Payload-Oxum missing (fast), given twice, malformed or not the payload's
  | 'unreadable'
  | 'digest';

/** What a problem is beyond its fields, for a caller that words problems its own way (`verify --bag`). */
export interface BagProblemDetail {
  check: BagCheck;
  /** The manifest a `not-present`, `not-listed` or line problem is about. */
  manifest?: string;
  /** The manifest line (1-based) of a line problem. */
  line?: number;
  /** Why a file could not be read (`unreadable`). */
  reason?: string;
  /** The size of a tag file too large to read (`tag-file-size`). */
  bytes?: number;
}

export interface BagSourceVerifyOptions extends VerifyOptions {
  /** Filled in with each problem's detail; an out-parameter like `tally`. */
  details?: Map<BagProblem, BagProblemDetail>;
}

/** Hex digest lengths of the algorithms a manifest may name. */
export const DIGEST_LENGTHS: Readonly<Record<string, number>> = { md5: 32, sha1: 40, sha224: 56, sha256: 64, sha384: 96, sha512: 128 };

/** The algorithm a manifest of that name may use: one of DIGEST_LENGTHS this Node can compute. */
export function isBagAlgorithm(algorithm: string): boolean {
  return DIGEST_LENGTHS[algorithm] !== undefined && getHashes().includes(algorithm);
}

/** `manifest-<algorithm>.txt` and `tagmanifest-<algorithm>.txt`, at the top of a bag. */
export const MANIFEST_NAME = /^(tag)?manifest-([a-z0-9]+)\.txt$/;

/** Tag files (bagit.txt, bag-info.txt, the manifests) are read whole to be parsed: none may be larger. */
export const MAX_TAG_FILE_BYTES = 64 * 1024 * 1024;

interface Manifest {
  name: string;
  algorithm: string;
  /** NFC path → expected lowercase digest, and the path as written. */
  entries: Map<string, { digest: string; path: string }>;
}

/** The files of one part of the bag (payload or tag files): NFC path → the path as listed, its size. */
type Files = Map<string, { path: string; size: number }>;

type Add = (problem: BagProblem, detail: BagProblemDetail) => void;

/**
 * Verifies the bag at `bagDir`: bagit.txt, the payload directory, every manifest line (format,
 * safe path, file present), every payload file listed in every payload manifest, Payload-Oxum,
 * the tag manifests (checked in full even in fast mode: tag files are small) and, unless
 * `fast`, every payload checksum, streamed with all algorithms in one read per file.
 */
export function verifyBag(bagDir: string, options: VerifyOptions = {}): Promise<BagReport> {
  return verifyBagSource(folderBagSource(bagDir), options);
}

/** {@link verifyBag} of the bag `source` holds. */
export async function verifyBagSource(source: BagSource, options: BagSourceVerifyOptions = {}): Promise<BagReport> {
  const problems: BagProblem[] = [];
  const add: Add = (problem, detail) => {
    problems.push(problem);
    options.details?.set(problem, detail);
  };

  const listing = await source.list();
  await checkBagitTxt(source, listing, add);
  const disk: Files = new Map();
  const tagDisk: Files = new Map();
  const isPayload = (entry: BagEntry) => entry.path.startsWith('data/');
  if (listing.find((entry) => entry.path === 'data')?.type !== 'folder') {
    add({ kind: 'missing', path: 'data/', message: 'data/ payload directory is missing' }, { check: 'payload-folder' });
  } else {
    for (const entry of listing) if (isPayload(entry)) classify(entry, disk, add);
  }
  for (const entry of listing) if (entry.path.split('/')[0] !== 'data') classify(entry, tagDisk, add);

  const payloadManifests: Manifest[] = [];
  const tagManifests: Manifest[] = [];
  for (const { path, size } of [...tagDisk.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
    const match = MANIFEST_NAME.exec(path);
    if (match === null) continue;
    const manifest = await readManifest(source, path, size, match[2]!, match[1] === 'tag', add);
    if (manifest !== undefined) (match[1] === 'tag' ? tagManifests : payloadManifests).push(manifest);
  }
  if (payloadManifests.length === 0) {
    add({ kind: 'missing', path: 'manifest-sha512.txt', message: 'no payload manifest (manifest-<algorithm>.txt)' }, { check: 'no-payload-manifest' });
  }
  // BagIt makes tag manifests optional; our profile always writes one, and without it the tag
  // files (bag-info.txt, the manifests, metadata/) could change unseen.
  if (tagManifests.length === 0) {
    add(
      { kind: 'missing', path: 'tagmanifest-sha256.txt', message: 'no tag manifest (tagmanifest-sha256.txt): the tag files are unprotected' },
      { check: 'no-tag-manifest' },
    );
  }

  // Completeness: every listed file exists, every payload file is in every payload manifest.
  for (const manifest of payloadManifests) {
    const { name, algorithm } = manifest;
    for (const [key, { path }] of manifest.entries) {
      if (!disk.has(key))
        add({ kind: 'missing', path, algorithm, message: `${show(path)} is in ${name} but not on disk` }, { check: 'not-present', manifest: name });
    }
    for (const [key, { path }] of disk) {
      if (!manifest.entries.has(key))
        add({ kind: 'unexpected', path, algorithm, message: `${show(path)} is on disk but not in ${name}` }, { check: 'not-listed', manifest: name });
    }
  }

  await checkOxum(source, listing, disk, options.fast === true, add);

  // Tag manifests: every payload manifest listed, every listed tag file present and intact,
  // and (our profile) every tag file listed.
  for (const manifest of tagManifests) {
    const { name, algorithm } = manifest;
    for (const payloadManifest of payloadManifests) {
      if (!manifest.entries.has(payloadManifest.name)) {
        const path = payloadManifest.name;
        add({ kind: 'tag', path, algorithm, message: `${show(path)} is not listed in ${name}` }, { check: 'not-listed', manifest: name });
      }
    }
    for (const [key, { path }] of manifest.entries) {
      if (!tagDisk.has(key))
        add({ kind: 'missing', path, algorithm, message: `${show(path)} is in ${name} but not on disk` }, { check: 'not-present', manifest: name });
    }
    for (const [key, { path }] of tagDisk) {
      if (/^tagmanifest-[a-z0-9]+\.txt$/.test(path) || manifest.entries.has(key)) continue;
      add({ kind: 'unexpected', path, algorithm, message: `${show(path)} is a tag file not listed in ${name}` }, { check: 'not-listed', manifest: name });
    }
    await checkDigests(source, [manifest], tagDisk, 'tag', add);
  }
  if (options.fast !== true) await checkDigests(source, payloadManifests, disk, 'checksum', add);
  if (options.tally !== undefined) {
    const tally = options.tally;
    tally.payloadFiles = disk.size;
    tally.payloadBytes = [...disk.values()].reduce((sum, file) => sum + file.size, 0);
    const hashed = (files: Files, manifests: Manifest[]): number =>
      [...files].reduce((sum, [key, file]) => sum + (manifests.some((m) => m.entries.has(key)) ? file.size : 0), 0);
    tally.hashedBytes = hashed(tagDisk, tagManifests) + (options.fast === true ? 0 : hashed(disk, payloadManifests));
  }
  return { valid: problems.length === 0, problems };
}

/** A listed entry: a file goes into `into`, keyed by NFC path; a link or a special file is a problem. */
function classify({ path, type, size }: BagEntry, into: Files, add: Add): void {
  if (type === 'link') add({ kind: 'format', path, message: `${show(path)} is a symbolic link` }, { check: 'link' });
  else if (type === 'other') add({ kind: 'format', path, message: `${show(path)} is not a regular file or directory` }, { check: 'special-file' });
  if (type !== 'file') return;
  const key = path.normalize('NFC');
  const other = into.get(key);
  if (other !== undefined)
    add({ kind: 'format', path, message: `${show(path)} and ${show(other.path)} differ only in Unicode normalisation` }, { check: 'normalisation' });
  into.set(key, { path, size });
}

/**
 * A tag file's bytes, read whole: undefined when it cannot be read (`required`: thrown) or is
 * larger than MAX_TAG_FILE_BYTES (a problem, whatever its listing said and however much it holds).
 */
async function readTagFile(source: BagSource, path: string, listedSize: number | undefined, add: Add, required = false): Promise<Buffer | undefined> {
  const tooLarge = (bytes: number) => {
    add(
      { kind: 'format', path, found: String(bytes), message: `${show(path)} is ${bytes} bytes, more than the ${MAX_TAG_FILE_BYTES} a tag file may have` },
      { check: 'tag-file-size', bytes },
    );
    return undefined;
  };
  if (listedSize !== undefined && listedSize > MAX_TAG_FILE_BYTES) return tooLarge(listedSize);
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  try {
    for await (const chunk of source.open(path)) {
      bytes += chunk.byteLength;
      if (bytes > MAX_TAG_FILE_BYTES) return tooLarge(bytes);
      chunks.push(chunk);
    }
  } catch (error) {
    if (required) throw error;
    return undefined;
  }
  return Buffer.concat(chunks);
}

/** The size the source lists for the file at `path`, when it lists it as a file. */
function listedSize(listing: BagEntry[], path: string): number | undefined {
  const entry = listing.find((candidate) => candidate.path === path);
  return entry?.type === 'file' ? entry.size : undefined;
}

/** bagit.txt: exactly `BagIt-Version: 1.0` and `Tag-File-Character-Encoding: UTF-8`, no BOM. */
async function checkBagitTxt(source: BagSource, listing: BagEntry[], add: Add): Promise<void> {
  const problems: BagProblem[] = [];
  const bytes = await readTagFile(source, 'bagit.txt', listedSize(listing, 'bagit.txt'), (problem, detail) => {
    problems.push(problem);
    add(problem, detail);
  });
  if (problems.length > 0) return;
  if (bytes === undefined) return add({ kind: 'missing', path: 'bagit.txt', message: 'bagit.txt is missing' }, { check: 'bagit' });
  const lines = bytes.toString('utf8').split(/\r\n|\r|\n/);
  if (lines.at(-1) === '') lines.pop();
  const expected = ['BagIt-Version: 1.0', 'Tag-File-Character-Encoding: UTF-8'];
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
    add({ kind: 'format', path: 'bagit.txt', message: 'bagit.txt starts with a byte-order mark' }, { check: 'bagit' });
  } else if (lines.length !== 2 || lines[0] !== expected[0] || lines[1] !== expected[1]) {
    add(
      {
        kind: 'format',
        path: 'bagit.txt',
        expected: expected.join('\\n'),
        found: lines.join('\\n').slice(0, 200),
        message: 'bagit.txt is not the BagIt 1.0 / UTF-8 declaration',
      },
      { check: 'bagit' },
    );
  }
}

async function readManifest(source: BagSource, name: string, size: number, algorithm: string, isTag: boolean, add: Add): Promise<Manifest | undefined> {
  if (!isBagAlgorithm(algorithm)) {
    add({ kind: 'format', path: name, algorithm, message: `${name} uses an unsupported algorithm ${algorithm}` }, { check: 'algorithm', manifest: name });
    return undefined;
  }
  const bytes = await readTagFile(source, name, size, add, true);
  if (bytes === undefined) return undefined;
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    add({ kind: 'format', path: name, message: `${name} is not UTF-8` }, { check: 'encoding', manifest: name });
    return undefined;
  }
  if (text.startsWith('\ufeff')) add({ kind: 'format', path: name, message: `${name} starts with a byte-order mark` }, { check: 'encoding', manifest: name });
  const manifest: Manifest = { name, algorithm, entries: new Map() };
  for (const entry of readManifestLines(text.replace(/^\ufeff/, ''), DIGEST_LENGTHS[algorithm]!)) {
    const where = `${name} line ${entry.line}`;
    const at = { manifest: name, line: entry.line };
    if (entry.problem !== undefined) {
      if (entry.problem === 'format')
        add(
          { kind: 'format', path: name, algorithm, found: entry.text.slice(0, 200), message: `${where} is not "<${algorithm} digest> <path>"` },
          { check: 'manifest-line', ...at },
        );
      else if (entry.problem === 'percent')
        add({ kind: 'format', path: name, found: entry.text, message: `${where} has a "%" that is not %25, %0D or %0A` }, { check: 'manifest-line', ...at });
      else add({ kind: 'format', path: entry.text, message: `${where} names an unsafe path` }, { check: 'unsafe-path', ...at });
      continue;
    }
    const { path, digest } = entry;
    if (isTag === (path.split('/')[0] === 'data')) {
      add(
        { kind: 'format', path, message: `${where}: ${isTag ? 'a tag manifest lists a payload file' : 'a payload manifest lists a file outside data/'}` },
        { check: 'misplaced', ...at },
      );
      continue;
    }
    const key = path.normalize('NFC');
    if (manifest.entries.has(key)) {
      add({ kind: 'format', path, algorithm, message: `${where} lists ${show(path)} a second time` }, { check: 'listed-twice', ...at });
      continue;
    }
    manifest.entries.set(key, { digest, path });
  }
  return manifest;
}

/** Payload-Oxum present at most once, well formed, and equal to the payload in the bag. */
async function checkOxum(source: BagSource, listing: BagEntry[], disk: Files, fast: boolean, add: Add): Promise<void> {
  const text = (await readTagFile(source, 'bag-info.txt', listedSize(listing, 'bag-info.txt'), add))?.toString('utf8');
  const values: string[] = [];
  if (text !== undefined) {
    text.split(/\r\n|\r|\n/).forEach((line, index) => {
      if (line === '' || /^[ \t]/.test(line)) return; // blank, or the continuation of a folded value
      const colon = line.indexOf(':');
      const label = colon < 0 ? '' : line.slice(0, colon);
      if (label === '' || label.trim() !== label || !/^[ \t]/.test(line.slice(colon + 1) || ' ')) {
        return add(
          { kind: 'format', path: 'bag-info.txt', found: line.slice(0, 200), message: `bag-info.txt line ${index + 1} is not "Label: value"` },
          { check: 'bag-info-line', line: index + 1 },
        );
      }
      if (label.toLowerCase() === 'payload-oxum') values.push(line.slice(colon + 1).trim());
    });
  }
  if (values.length === 0) {
    if (fast) add({ kind: 'oxum', path: 'bag-info.txt', message: 'fast verification needs Payload-Oxum in bag-info.txt' }, { check: 'oxum' });
    return;
  }
  if (values.length > 1) add({ kind: 'format', path: 'bag-info.txt', message: 'bag-info.txt has more than one Payload-Oxum' }, { check: 'oxum' });
  const expected = values[0]!;
  let bytes = 0;
  for (const file of disk.values()) bytes += file.size;
  const found = `${bytes}.${disk.size}`;
  if (!/^\d+\.\d+$/.test(expected))
    add({ kind: 'format', path: 'bag-info.txt', found: expected, message: `Payload-Oxum "${expected}" is not <bytes>.<files>` }, { check: 'oxum' });
  else if (expected !== found)
    add(
      { kind: 'oxum', path: 'bag-info.txt', expected, found, message: `Payload-Oxum expected ${expected} (bytes.files) but found ${found}` },
      { check: 'oxum' },
    );
}

/**
 * Hashes each listed file present in the bag once, with every algorithm that lists it (not at
 * all when the source knows its digests already).
 */
async function checkDigests(source: BagSource, manifests: Manifest[], disk: Files, kind: 'checksum' | 'tag', add: Add): Promise<void> {
  const wanted = new Map<string, Manifest[]>();
  for (const manifest of manifests) {
    for (const key of manifest.entries.keys()) if (disk.has(key)) wanted.set(key, [...(wanted.get(key) ?? []), manifest]);
  }
  for (const [key, listing] of wanted) {
    const actual = disk.get(key)!.path;
    let digests = listing.map((manifest) => source.knownDigest?.(actual, manifest.algorithm));
    if (digests.some((digest) => digest === undefined)) {
      const hashes = listing.map((manifest) => createHash(manifest.algorithm));
      try {
        for await (const chunk of source.open(actual)) for (const hash of hashes) hash.update(chunk);
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        add(
          { kind, path: actual, message: `${show(actual)} cannot be read: ${(error as NodeJS.ErrnoException).code ?? String(error)}` },
          { check: 'unreadable', reason },
        );
        continue;
      }
      digests = hashes.map((hash) => hash.digest('hex'));
    }
    listing.forEach((manifest, i) => {
      const expected = manifest.entries.get(key)!.digest;
      const found = digests[i]!;
      if (expected !== found) {
        add(
          {
            kind,
            path: actual,
            algorithm: manifest.algorithm,
            expected,
            found,
            message: `${show(actual)} ${manifest.algorithm} validation failed: expected="${expected}" found="${found}"`,
          },
          { check: 'digest', manifest: manifest.name },
        );
      }
    });
  }
}
