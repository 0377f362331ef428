// Which damaged payload files a repair may put back, and what their bytes must be: decided from
// the fixity check's report, the catalog and the damaged bag's own manifests, before any byte
// is looked for. A file is a target only when its bag's manifests are themselves intact (no
// problem names a manifest) and the manifest's sha-256 of it is the catalog's: the bytes a
// repair writes are then the bytes the bag already promised, and the bag's meaning is unchanged.
import { lstat, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { resolveArchivePath } from '../archive/storage-path.js';
import { DIGEST_LENGTHS, MANIFEST_NAME } from '../bag/bag-verifier.js';
import { readManifestLines } from '../bag/manifest-lines.js';
import type { Catalog } from '../catalog/catalog.js';
import { recordedPayload } from '../catalog/repair-queries.js';
import type { ArchiveProblem, VerifyReport } from '../verify/verify-archive.js';
import type { PayloadTarget } from './place-payload.js';
import { MAX_REPLICA_MANIFEST_BYTES } from './replica-copies.js';

/** A payload file to put back: where, what its bytes must be, and its source (for the event). */
export interface RepairTarget extends PayloadTarget {
  sha256: string;
  sourceId: number;
}

/** A damaged payload file (or a missing bag, `path` null) that no repair will be tried for, and why. */
export interface Unrepairable {
  bagPath: string;
  path: string | null;
  sha256: string | null;
  reason: string;
}

/**
 * The targets among the report's damaged payload files, and the damaged files that cannot be
 * targets (with why); missing bags are left to the caller (`missingBags`).
 */
export async function repairTargets(
  report: VerifyReport,
  catalog: Catalog,
  archiveDir: string,
): Promise<{ targets: RepairTarget[]; unrepairable: Unrepairable[]; missingBags: string[] }> {
  const targets: RepairTarget[] = [];
  const unrepairable: Unrepairable[] = [];
  const missingBags: string[] = [];
  const manifests = new Map<string, Map<string, Record<string, string>> | string>();
  for (const damage of report.damagedPayloads) {
    if (damage.path === null) {
      missingBags.push(damage.bagPath);
      continue;
    }
    const { bagPath, path } = damage;
    const refuse = (sha256: string | null, reason: string): void => void unrepairable.push({ bagPath, path, sha256, reason });
    const recorded = recordedPayload(catalog, bagPath, path);
    if (recorded === undefined) {
      refuse(null, 'the catalog places no payload file there (an uncatalogued bag: oaibag reindex first), so no recorded digest vouches for any bytes');
      continue;
    }
    const distrust = manifestProblem(report.problems.filter((problem) => problem.bagPath === bagPath));
    if (distrust !== undefined) {
      refuse(recorded.sha256, `the bag's manifests are damaged too (${distrust}), so they cannot vouch for any bytes`);
      continue;
    }
    let listing = manifests.get(bagPath);
    if (listing === undefined) {
      listing = await readPayloadManifests(resolveArchivePath(archiveDir, bagPath));
      manifests.set(bagPath, listing);
    }
    if (typeof listing === 'string') {
      refuse(recorded.sha256, listing);
      continue;
    }
    const digests = listing.get(path.normalize('NFC'));
    if (digests?.sha256 === undefined) {
      refuse(recorded.sha256, 'manifest-sha256.txt does not list it');
      continue;
    }
    if (digests.sha256 !== recorded.sha256) {
      refuse(recorded.sha256, `manifest-sha256.txt says ${digests.sha256}, the catalog ${recorded.sha256}: which bytes belong there is not known`);
      continue;
    }
    targets.push({
      bagPath,
      bagDir: resolveArchivePath(archiveDir, bagPath),
      path,
      size: recorded.size,
      sha256: recorded.sha256,
      sourceId: recorded.sourceId,
      digests,
    });
  }
  return { targets, unrepairable, missingBags };
}

/** The first problem of a bag that makes its payload manifests untrustworthy, as a line; undefined when none. */
function manifestProblem(problems: readonly ArchiveProblem[]): string | undefined {
  const bad = problems.find((problem) => {
    const path = problem.path ?? '';
    if (MANIFEST_NAME.test(path)) return true;
    return problem.kind === 'format' && !path.startsWith('data/') && path !== 'bag-info.txt' && path !== 'bagit.txt';
  });
  return bad?.message.slice(bad.bagPath.length + 2);
}

/**
 * The payload manifests of a bag: NFC path → digest by algorithm. A reason instead when one
 * cannot be read (not a regular file, larger than a repair reads, an unknown algorithm).
 */
async function readPayloadManifests(bagDir: string): Promise<Map<string, Record<string, string>> | string> {
  const listing = new Map<string, Record<string, string>>();
  for (const algorithm of Object.keys(DIGEST_LENGTHS)) {
    const file = join(bagDir, `manifest-${algorithm}.txt`);
    const info = await lstat(file).catch(() => undefined);
    if (info === undefined) continue;
    if (!info.isFile() || info.size > MAX_REPLICA_MANIFEST_BYTES) return `manifest-${algorithm}.txt is not a regular file a repair reads`;
    const text = await readFile(file, 'utf8');
    for (const line of readManifestLines(text, DIGEST_LENGTHS[algorithm]!)) {
      if (line.problem !== undefined) continue;
      const key = line.path.normalize('NFC');
      listing.set(key, { ...listing.get(key), [algorithm]: line.digest });
    }
  }
  return listing;
}
