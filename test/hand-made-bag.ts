// A BagIt bag (RFC 8493) written by hand as plain files, for tests that need an archive oaibag
// would never write (hostile identifiers, a catalog pointing elsewhere): the payload files under
// data/, bagit.txt, bag-info.txt with Payload-Oxum, sha256 and sha512 manifests and tag manifests.
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** A payload file of a hand-made bag: its path (`data/…`), size and SHA-256. */
export interface HandMadePayload {
  path: string;
  size: number;
  sha256: string;
}

const ALGORITHMS = ['sha256', 'sha512'] as const;

/** A manifest path as RFC 8493 §2.1.3 writes it: `%`, CR and LF percent-encoded. */
const manifestPath = (path: string): string => path.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');

const digest = (algorithm: string, bytes: Buffer): string => createHash(algorithm).update(bytes).digest('hex');

/**
 * Writes a bag at `<archiveDir>/<bagPath>` holding `payload` (each `[name under data/, bytes]`,
 * in that order) with the `bagInfo` labels after Payload-Oxum; returns the payload files.
 */
export function writeHandMadeBag(
  archiveDir: string,
  bagPath: string,
  payload: ReadonlyArray<readonly [name: string, bytes: Buffer]>,
  bagInfo: ReadonlyArray<readonly [label: string, value: string]> = [],
): HandMadePayload[] {
  const bagDir = join(archiveDir, ...bagPath.split('/'));
  const write = (path: string, bytes: Buffer): void => {
    const file = join(bagDir, ...path.split('/'));
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, bytes);
  };
  const manifest = (files: ReadonlyArray<readonly [path: string, bytes: Buffer]>, algorithm: string): Buffer =>
    Buffer.from(files.map(([path, bytes]) => `${digest(algorithm, bytes)}  ${manifestPath(path)}\n`).join(''));

  const payloadFiles = payload.map(([name, bytes]) => [`data/${name}`, bytes] as const);
  for (const [path, bytes] of payloadFiles) write(path, bytes);
  const octets = payloadFiles.reduce((sum, [, bytes]) => sum + bytes.length, 0);
  const tagFiles: Array<readonly [string, Buffer]> = [
    ['bagit.txt', Buffer.from('BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n')],
    ['bag-info.txt', Buffer.from([['Payload-Oxum', `${octets}.${payloadFiles.length}`], ...bagInfo].map(([label, value]) => `${label}: ${value}\n`).join(''))],
    ...ALGORITHMS.map((algorithm) => [`manifest-${algorithm}.txt`, manifest(payloadFiles, algorithm)] as const),
  ];
  for (const [path, bytes] of tagFiles) write(path, bytes);
  for (const algorithm of ALGORITHMS) write(`tagmanifest-${algorithm}.txt`, manifest(tagFiles, algorithm));
  return payloadFiles.map(([path, bytes]) => ({ path, size: bytes.length, sha256: digest('sha256', bytes) }));
}
