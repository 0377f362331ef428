// Reading one bag for `oaibag restore`: tag files checked against tagmanifest-sha256.txt, the
// payload manifest parsed with every path checked, the payload files put in the record's order,
// and the Last-Modified of the HTTP headers. Anything that does not add up is `BagDamage`.

import { createHash } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { join } from 'node:path';
import { normalizePayloadPath, payloadBaseName, uniqueFileName } from '../bag/bag-paths.js';
import { readManifestLines } from '../bag/manifest-lines.js';
import type { PlanVersion } from './restore-plan.js';

/** Opens a file of a bag for reading, never through a symbolic link. */
export const OPEN_PAYLOAD = fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW;

/** A bag that fails a check: the restore reports it by name and writes nothing of it. */
export class Damage extends Error {
  constructor(
    message: string,
    readonly expected?: string,
    readonly found?: string,
  ) {
    super(message);
  }
}

/** One line of a manifest: the digest (lowercase hex) and the decoded bag-relative path. */
export interface ManifestEntry {
  digest: string;
  path: string;
}

/** A tag file's bytes; a missing one or a symbolic link is damage. */
export async function readTag(bagDir: string, name: string): Promise<Buffer> {
  let handle: FileHandle;
  try {
    handle = await open(join(bagDir, ...name.split('/')), OPEN_PAYLOAD);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new Damage(`${name} is missing`);
    if (code === 'ELOOP') throw new Damage(`${name} is a symbolic link`);
    throw error;
  }
  try {
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

/** `<sha-256>  <path>` lines, in file order; a malformed line or unsafe path is damage. */
export function parseManifest(bytes: Buffer, name: string): ManifestEntry[] {
  return readManifestLines(bytes.toString('utf8'), 64).map((entry) => {
    if (entry.problem !== undefined) {
      throw new Damage(
        entry.problem === 'unsafe' ? `${name} line ${entry.line} names an unsafe path` : `${name} line ${entry.line} is not "<sha-256>  <path>"`,
      );
    }
    try {
      normalizePayloadPath(entry.path); // the writer's rules too: a bag we wrote never breaks them
    } catch {
      throw new Damage(`${name} line ${entry.line} names an unsafe path`);
    }
    return { digest: entry.digest, path: entry.path };
  });
}

/**
 * The payload files in the order of the record's parts (the bag writer names them after the
 * URL's last segment: `a.pdf`, `a-2.pdf`, …), checked against the catalog's digest of the
 * version, which for a compound object is the sha-256 of the parts' digests in that order.
 * Falls back to manifest order when the names do not follow the pattern.
 */
export function recordOrder(payload: ManifestEntry[], version: PlanVersion): ManifestEntry[] {
  if (payload.length === 1) return payload;
  const candidates: ManifestEntry[][] = [];
  const base = payloadBaseName(version.identifier);
  const taken = new Set<string>();
  const ordered: ManifestEntry[] = [];
  for (let i = 0; i < payload.length; i++) {
    const name = uniqueFileName(base, taken);
    taken.add(name);
    const entry = payload.find((candidate) => candidate.path === `data/${name}`);
    if (entry) ordered.push(entry);
  }
  if (ordered.length === payload.length) candidates.push(ordered);
  candidates.push(payload);
  for (const order of candidates) {
    if (sha256(order.map((entry) => `${entry.digest}\n`).join('')) === version.sha256) return order;
  }
  throw new Damage(`manifest-sha256.txt does not match the catalog's sha-256 of the version (${version.sha256})`);
}

/** The first `Last-Modified` of metadata/http-headers.txt, in seconds since the epoch. */
export function lastModified(headers: Buffer | undefined): number | undefined {
  if (headers === undefined) return undefined;
  for (const line of headers.toString('utf8').split(/\r?\n/)) {
    const match = /^last-modified:\s*(.+)$/i.exec(line);
    if (!match) continue;
    const ms = Date.parse(match[1]!.trim());
    if (Number.isFinite(ms)) return Math.floor(ms / 1000);
  }
  return undefined;
}

/** Lowercase hex sha-256 of a tag file or a list of digests. */
export function sha256(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}
