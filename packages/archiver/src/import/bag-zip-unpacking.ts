// A bag ZIP unpacked into tmp/ as the delivery screening reads it (zip-delivery.ts's `keep`), so
// that its bytes are read once: screened (names, caps, CRC-32, sha-256), written and hashed with
// every other algorithm its manifests are named for, in one pass. The manifests are then checked
// against these digests, over the unpacked folder (adopt-bags.ts): no payload byte is read again.
import { createHash } from 'node:crypto';
import { mkdir, open, rm } from 'node:fs/promises';
import { dirname, join, sep } from 'node:path';
import { fsyncFolder } from '../archive/flush-to-disk.js';
import { isBagAlgorithm, MANIFEST_NAME } from '../bag/bag-verifier.js';
import { archiveIoError } from '../core/errors.js';
import { writeFully } from '../core/write-fully.js';
import type { DeliveryEntry, DeliveryListing } from './delivery-model.js';
import type { KeepBytes } from './entry-bytes.js';

/** A bag ZIP unpacked: where, and the digests of its files. */
export interface UnpackedBagZip {
  /** The one folder the ZIP unpacks to (`harvest-…-batch-…`). */
  folder: string;
  /** That folder, unpacked. */
  staged: string;
  /** Bag path → algorithm → digest (lowercase hex), of every file as it was unpacked. */
  digests: Map<string, Map<string, string>>;
  /** Bag path → where its entry is among the ZIP's files (their names in code-unit order). */
  order: Map<string, number>;
}

/**
 * The one folder a ZIP's file names all sit in, when it holds bagit.txt (one bag ZIP; with
 * `bagit: false`, whether it does or not); else undefined.
 */
export function oneBagFolder(names: readonly string[], bagit = true): string | undefined {
  if (names.length === 0) return undefined;
  const top = names[0]!.split('/')[0]!;
  return names.every((name) => name.startsWith(`${top}/`)) && (!bagit || names.includes(`${top}/bagit.txt`)) ? top : undefined;
}

export class BagZipUnpacking {
  private folder: string | undefined;
  /** The algorithms to hash with besides sha-256, which the screening measures itself. */
  private algorithms: string[] = [];
  private readonly digests = new Map<string, Map<string, string>>();
  private readonly folders = new Set<string>();

  /**
   * Unpacks into `work` (its folder `work/<folder>`), which {@link discard} removes. With
   * `anyFolder`, a ZIP of one folder is unpacked even without bagit.txt (a ZIP that must be a
   * bag: the verifier then says what it lacks).
   */
  constructor(
    private readonly work: string,
    private readonly options: { anyFolder?: boolean } = {},
  ) {}

  /**
   * The delivery's files, before a byte is read: a ZIP whose files all sit in one folder with
   * bagit.txt is unpacked as it is screened; anything else is left alone (screened only).
   */
  readonly listed = (listing: DeliveryListing): void => {
    const names = listing.files.map((file) => file.name);
    this.folder = listing.kind === 'zip' ? oneBagFolder(names, this.options.anyFolder !== true) : undefined;
    if (this.folder === undefined) return;
    const algorithms = new Set<string>();
    for (const name of names) {
      const match = MANIFEST_NAME.exec(name.slice(this.folder.length + 1));
      if (match !== null && match[2] !== 'sha256' && isBagAlgorithm(match[2]!)) algorithms.add(match[2]!);
    }
    this.algorithms = [...algorithms].sort();
  };

  /** How the screening keeps the file `name`: written into the folder, hashed on the way (undefined: not unpacked). */
  readonly keep = (name: string): KeepBytes | undefined => {
    const folder = this.folder;
    if (folder === undefined) return undefined;
    return async (bytes) => {
      const target = join(this.work, ...name.split('/'));
      const hashes = this.algorithms.map((algorithm) => createHash(algorithm));
      try {
        await this.makeFolder(dirname(target));
        const handle = await open(target, 'wx');
        try {
          for await (const chunk of bytes) {
            for (const hash of hashes) hash.update(chunk);
            await writeFully(handle, chunk);
          }
          await handle.sync();
        } finally {
          await handle.close();
        }
      } catch (error) {
        throw archiveIoError(error, `cannot unpack ${name} into ${this.work}`);
      }
      this.digests.set(name.slice(folder.length + 1), new Map(this.algorithms.map((algorithm, i) => [algorithm, hashes[i]!.digest('hex')])));
    };
  };

  /**
   * The bag unpacked, once the screening read every file (`entries`: the screened ones, whose
   * sha-256 it measured): its folders made durable, an empty payload folder made (a ZIP holds
   * no folder entries). Undefined when the ZIP was not one bag.
   */
  async finish(entries: readonly DeliveryEntry[]): Promise<UnpackedBagZip | undefined> {
    const folder = this.folder;
    if (folder === undefined) return undefined;
    const staged = join(this.work, folder);
    const order = new Map<string, number>();
    try {
      await this.makeFolder(join(staged, 'data'));
      entries.forEach((entry, index) => {
        const path = entry.name.slice(folder.length + 1);
        order.set(path, index);
        this.digests.get(path)?.set('sha256', entry.sha256);
      });
      for (const path of this.folders) await fsyncFolder(path);
    } catch (error) {
      throw archiveIoError(error, `cannot unpack ${folder} into ${this.work}`);
    }
    return { folder, staged, digests: this.digests, order };
  }

  /** Removes what was unpacked. */
  async discard(): Promise<void> {
    await rm(this.work, { recursive: true, force: true });
  }

  /** Makes `path` and the folders above it inside the bag's folder, each noted to be made durable. */
  private async makeFolder(path: string): Promise<void> {
    await mkdir(path, { recursive: true });
    const staged = join(this.work, this.folder!);
    const inside = (folder: string) => folder === staged || folder.startsWith(`${staged}${sep}`);
    for (let parent = path; inside(parent) && !this.folders.has(parent); parent = dirname(parent)) this.folders.add(parent);
  }
}
