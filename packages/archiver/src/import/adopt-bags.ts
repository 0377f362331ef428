// `oaibag import` of serialized bags (written by `oaibag export --bags`): each bag ZIP read once,
// screened (delivery.ts) while it is unpacked into tmp/ and hashed (bag-zip-unpacking.ts), then
// verified in full against those digests (the checks of `oaibag verify --bag`, no payload read
// again), all of them before any is placed; then each placed as it is, at the path its name
// gives (`harvest-000001-batch-00001.zip` → aips/harvest-000001/batch-00001), noted as pending
// first so that a crash leaves it recorded at the next start, and recorded from its own files as
// reindex records a bag. A bag whose place holds the same bag already (a rerun) is kept; a
// place or a harvest number taken by another archive's bag is refused before anything is placed.
// On object storage a bag is committed instead of renamed (S3Storage.commitFolderBag), as a
// writer named after the bag's contents: a run killed after the claim is taken up by the next.
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, mkdir, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { type DeliveryFacts, describeDelivery } from '../aip/aip-metadata.js';
import { type ReadBagInfo, readBatchBagInfo } from '../aip/bag-info.js';
import { AIPS_DIRECTORY, isSerializedBagZipName, parseSerializedBagFolder, parseSerializedBagZipName } from '../aip/layout-names.js';
import type { CommittedFile } from '../aip/s3-commit.js';
import { S3Storage } from '../aip/s3-storage.js';
import { fsyncFolder } from '../archive/flush-to-disk.js';
import { TEMP_DIRECTORY } from '../archive/storage-path.js';
import { folderBagSource } from '../bag/bag-source.js';
import { type BagProblem, type BagProblemDetail, verifyBag, verifyBagSource } from '../bag/bag-verifier.js';
import type { ZipContainerProblem } from '../bag/zip-bag-source.js';
import type { Catalog } from '../catalog/catalog.js';
import { zeroCounts } from '../catalog/catalog-types.js';
import { harvestOfBag, indexBags } from '../catalog/index-bags.js';
import { ArchiverError, archiveIoError } from '../core/errors.js';
import type { IngestSession } from '../ingest/ingest-session.js';
import { zipBagLines } from '../verify/zip-bag-lines.js';
import { BagZipUnpacking, type UnpackedBagZip } from './bag-zip-unpacking.js';
import { type Delivery, type DeliveryListing, openDelivery } from './delivery.js';
import { quoteName } from './delivery-model.js';
import type { ImportOptions, ImportSummary } from './import-options.js';

/** A bag of the delivery, unpacked in tmp/ and where it goes. */
interface UnpackedBag {
  /** The ZIP's name in the delivery. */
  zip: string;
  /** aips/harvest-…/batch-… */
  destination: string;
  /** Its folder in tmp/. */
  staged: string;
  /** The same bag is in place already (an import run again). */
  present: boolean;
  /** Its bag-info.txt. */
  info: ReadBagInfo;
  /** Its files with their sizes and SHA-256, as unpacked and verified (code-unit order). */
  files: CommittedFile[];
}

/**
 * Adopts the bags of `delivery`. `unpacked`: the delivery (one bag ZIP) unpacked as it was
 * screened; without it, a bag ZIP is read (once) here.
 */
export async function adoptBags(
  session: IngestSession,
  delivery: Delivery,
  facts: DeliveryFacts,
  options: ImportOptions & { log: (line: string) => void },
  unpacked?: BagZipUnpacking,
): Promise<ImportSummary> {
  const { archiveDir, log } = options;
  const store = session.storage instanceof S3Storage ? session.storage : undefined;
  // Checked against SHA256SUMS when the delivery has one: the partner's list of what was sent.
  const sums = await expectedSums(delivery);
  const { catalog } = session;
  const work = adoptionFolder(archiveDir);
  try {
    const bags: UnpackedBag[] = [];
    const zips =
      delivery.kind === 'zip'
        ? [{ name: delivery.name, path: delivery.path }]
        : delivery.entries
            .filter((entry) => isSerializedBagZipName(entry.name))
            .map((entry) => ({ name: entry.name, path: join(delivery.path, entry.name), sha256: entry.sha256 }));
    for (const zip of zips) {
      const expected = sums?.get(zip.name);
      if (sums && expected === undefined)
        throw new ArchiverError('ERR_IMPORT_DAMAGED', `${delivery.name}: ${zip.name} is not listed in SHA256SUMS`, { path: delivery.path });
      if (expected !== undefined && 'sha256' in zip && zip.sha256 !== expected) {
        throw new ArchiverError('ERR_IMPORT_DAMAGED', `${delivery.name}: ${zip.name} has sha-256 ${zip.sha256}, SHA256SUMS says ${expected}`, {
          path: delivery.path,
        });
      }
      bags.push(await stageBag(zip, work, { archiveDir, store }, zip.path === delivery.path ? delivery : undefined, options, unpacked));
      log(`verified ${zip.name}`);
    }
    for (const bag of bags) refuseConflicts(catalog, archiveDir, bag, delivery);
    const placed: string[] = [];
    for (const bag of bags) {
      if (!bag.present) await (store ? commitBag(catalog, store, bag) : placeBag(catalog, archiveDir, bag));
      if (catalog.bag(bag.destination) === undefined) placed.push(bag.destination);
    }
    placed.sort();
    const indexed = await indexBags(catalog, archiveDir, placed, { adopting: true, ...(store ? { storage: store } : {}) });
    log(`adopted ${placed.length} bag(s), ${bags.length - placed.length} held already`);
    const sources = [...new Set(bags.map((bag) => bag.info.baseUrl!))];
    // The bags are kept as they are, their own provenance unchanged: the delivery's accession
    // is recorded in the catalog, once per source it brought bags of.
    if (placed.length > 0) {
      for (const url of sources) {
        catalog.addEvent({
          sourceId: catalog.source(url)?.id ?? null,
          type: 'accession',
          outcome: 'success',
          detail: `${describeDelivery(facts)}: ${placed.length} serialized bag(s) verified and adopted as they are (${placed.join(', ')})`,
        });
      }
    }
    return {
      importId: null,
      kind: 'bags',
      delivery: facts,
      source: sources.join(' '),
      status: 'complete',
      watermark: null, // per source, from the bags' own lists (index-bags.ts)
      skipped: 0,
      bags: placed.length,
      ...zeroCounts(),
      added: indexed.versions,
      deleted: indexed.deletions,
    };
  } finally {
    await rm(work, { recursive: true, force: true });
    await unpacked?.discard();
  }
}

/** A new folder in tmp/ to unpack bag ZIPs into. */
export function adoptionFolder(archiveDir: string): string {
  return join(archiveDir, TEMP_DIRECTORY, `adopt-${randomBytes(6).toString('hex')}`);
}

/** The bag ZIP unpacked (as it was screened, or now), verified in full against the digests of the unpacking. */
async function stageBag(
  zip: { name: string; path: string; sha256?: string },
  work: string,
  archive: { archiveDir: string; store: S3Storage | undefined },
  delivery: Delivery | undefined,
  options: ImportOptions,
  unpacking?: BagZipUnpacking,
): Promise<UnpackedBag> {
  const named = parseSerializedBagZipName(zip.name.endsWith('.zip') ? zip.name : `${zip.name}.zip`);
  let staging: Omit<UnpackedBag, 'present'>;
  try {
    const unpacked = (delivery && (await unpacking?.finish(delivery.entries))) || (await unpackBagZip(zip, work, options));
    const { folder, staged } = unpacked;
    const details = new Map<BagProblem, BagProblemDetail>();
    const report = await verifyBagSource(folderBagSource(staged, unpacked.digests), { details });
    if (!report.valid) {
      const lines = zipBagLines(report.problems, details, { file: zip.path, prefix: `${folder}/`, indexOf: (path) => unpacked.order.get(path) ?? -1 });
      const more = lines.length > 1 ? ` (and ${lines.length - 1} more problem(s))` : '';
      throw new ArchiverError('ERR_IMPORT_DAMAGED', `${zip.name}: ${lines[0]}${more}`, { path: zip.path });
    }
    const destination = parseSerializedBagFolder(folder);
    if (destination === undefined || (named !== undefined && named !== folder)) {
      throw new ArchiverError('ERR_IMPORT_KIND', `${zip.name} unpacks to ${folder}, not to a bag written by oaibag export (harvest-…-batch-…)`, {
        path: zip.path,
      });
    }
    const files = await stagedFiles(staged, unpacked.digests);
    staging = { zip: zip.name, destination, staged, info: await readBatchBagInfo(staged), files };
  } catch (error) {
    throw archiveIoError(error, `cannot unpack ${zip.name} into ${work}`);
  }
  const { archiveDir, store } = archive;
  const present = store ? await sameCommittedBag(store, staging) : await samePlacedBag(archiveDir, staging.destination, staging.staged);
  return { ...staging, present };
}

/** Every file of the bag unpacked at `staged`, its SHA-256 the unpacking's (measured again only if it has none). */
async function stagedFiles(staged: string, digests: ReadonlyMap<string, ReadonlyMap<string, string>>): Promise<CommittedFile[]> {
  const found: CommittedFile[] = [];
  const walk = async (dir: string, prefix: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const path = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
      const full = join(dir, entry.name);
      if (entry.isDirectory()) await walk(full, path);
      else found.push({ path, size: (await lstat(full)).size, sha256: digests.get(path)?.get('sha256') ?? (await sha256Of(full)) });
    }
  };
  await walk(staged, '');
  return found.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

async function sha256Of(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/**
 * The writer an imported bag is committed as: named after its files, so that a run killed after
 * claiming the bag's name is taken up by the next import of the same bag, and by nothing else.
 */
function importWriter(files: readonly CommittedFile[]): string {
  const hash = createHash('sha256');
  for (const file of files) hash.update(`${file.sha256} ${file.size} ${file.path}\n`);
  return `oaibag import ${hash.digest('hex')}`;
}

/**
 * Whether the store has this very bag committed at its destination already (the same files with
 * the same SHA-256). Another bag committed there, or the name claimed by another writer (a
 * harvest's bag under way, or one that died before committing), is ERR_IMPORT_CONFLICT.
 */
async function sameCommittedBag(store: S3Storage, bag: Omit<UnpackedBag, 'present'>): Promise<boolean> {
  const where = store.where(bag.destination);
  const record = await store.commitOf(bag.destination);
  if (record !== undefined) {
    const same =
      record.files.length === bag.files.length &&
      record.files.every((file, index) => file.path === bag.files[index]!.path && file.sha256 === bag.files[index]!.sha256);
    if (same) return true;
    throw new ArchiverError('ERR_IMPORT_CONFLICT', `the archive holds another bag at ${where}; bags of another archive go into an archive of their own`, {
      path: where,
    });
  }
  const claimant = await store.claimant(bag.destination);
  if (claimant !== undefined && claimant !== importWriter(bag.files)) {
    throw new ArchiverError(
      'ERR_IMPORT_CONFLICT',
      `${where} is claimed by another writer (not committed); bags of another archive go into an archive of their own`,
      {
        path: where,
      },
    );
  }
  return false;
}

/**
 * A bag ZIP read once: screened as any delivery (names, links, encryption, caps, CRC-32) while
 * every file is unpacked into `work` and hashed. Refused (ERR_IMPORT_DAMAGED) when it does not
 * unpack to one folder, or holds a file nobody may read.
 */
async function unpackBagZip(zip: { name: string; path: string; sha256?: string }, work: string, options: ImportOptions): Promise<UnpackedBagZip> {
  const unpacking = new BagZipUnpacking(work, { anyFolder: true });
  const listed = (listing: DeliveryListing) => {
    const tops = [...new Set(listing.files.map((file) => file.name.split('/')[0]!))];
    const container: ZipContainerProblem[] =
      tops.length !== 1 ? [{ kind: 'folders', names: tops }] : listing.files.some((file) => !file.name.includes('/')) ? [{ kind: 'outside' }] : [];
    if (container.length > 0) {
      const [line] = zipBagLines([], new Map(), { file: zip.path, prefix: '', container });
      throw new ArchiverError('ERR_IMPORT_DAMAGED', `${zip.name}: ${line}`, { path: zip.path });
    }
    unpacking.listed(listing);
  };
  const bagZip = await openDelivery(zip.path, {
    ...(options.limits ? { limits: options.limits } : {}),
    ...(zip.sha256 !== undefined ? { sha256: zip.sha256 } : {}),
    listed,
    keep: unpacking.keep,
  });
  try {
    const withheld = bagZip.withheld[0];
    if (withheld) {
      throw new ArchiverError(
        'ERR_IMPORT_DAMAGED',
        `${zip.name}: entry ${quoteName(withheld.name)} gives nobody read permission (mode 000): serialized bags are taken whole`,
        { path: zip.path },
      );
    }
    return (await unpacking.finish(bagZip.entries))!;
  } finally {
    await bagZip.close();
  }
}

/** Whether `destination` holds this very bag already (its tag manifest is byte for byte the same). */
async function samePlacedBag(archiveDir: string, destination: string, staged: string): Promise<boolean> {
  const placed = join(archiveDir, ...destination.split('/'));
  if (!(await exists(placed))) return false;
  const [ours, theirs] = await Promise.all([
    readFile(join(staged, 'tagmanifest-sha256.txt')).catch(() => undefined),
    readFile(join(placed, 'tagmanifest-sha256.txt')).catch(() => undefined),
  ]);
  if (ours !== undefined && theirs !== undefined && ours.equals(theirs)) return true;
  throw new ArchiverError('ERR_IMPORT_CONFLICT', `the archive holds another bag at ${destination}; bags of another archive go into an archive of their own`, {
    path: placed,
  });
}

/**
 * Refuses a bag whose harvest number the archive uses for another harvest (another source, or
 * another start): its versions would be counted as that harvest's.
 */
function refuseConflicts(catalog: Catalog, archiveDir: string, bag: UnpackedBag, delivery: Delivery): void {
  if (bag.present) return;
  const { info } = bag;
  const { harvestId, startedAt } = harvestOfBag({ bagPath: bag.destination, info });
  const harvest = catalog.harvest(harvestId);
  if (harvest === undefined) return;
  const source = catalog.sourceById(harvest.sourceId);
  if (source?.baseUrl !== (info.baseUrl ?? undefined) || harvest.startedAt !== startedAt) {
    throw new ArchiverError(
      'ERR_IMPORT_CONFLICT',
      `${delivery.name}: ${bag.zip} was written by harvest ${harvestId} of another archive; this archive's harvest ${harvestId} is another one (bags of another archive go into an archive of their own)`,
      { path: archiveDir },
    );
  }
}

/** Checks a staged bag is still whole, and records its source and run; returns its harvest number. */
async function prepareToPlace(catalog: Catalog, bag: UnpackedBag): Promise<number> {
  if (!(await verifyBag(bag.staged, { fast: true })).valid) {
    throw new ArchiverError('ERR_IMPORT_DAMAGED', `${bag.zip}: unpacked, it is not a complete bag`, { path: bag.staged });
  }
  const { info } = bag;
  const source = catalog.ensureSource(info.baseUrl!, info.repositoryName);
  const { harvestId, kind, args, startedAt } = harvestOfBag({ bagPath: bag.destination, info });
  catalog.ensureRun(harvestId, source.id, kind, args, startedAt);
  return harvestId;
}

/**
 * Commits a staged bag on the object store: noted as pending, then claimed, its objects written
 * and read back, locked when the store retains, and its commit record made (the bag exists from
 * then on; a crash before leaves the note, dropped at the next start, and a claim the next
 * import of the same bag takes up).
 */
async function commitBag(catalog: Catalog, store: S3Storage, bag: UnpackedBag): Promise<void> {
  const harvestId = await prepareToPlace(catalog, bag);
  catalog.addPendingBag(bag.destination, harvestId);
  await store.commitFolderBag(bag.staged, bag.destination, importWriter(bag.files), store.retentionFromNow(), bag.files);
}

/** Places a staged bag: noted as pending, renamed into aips/, the folders made durable. */
async function placeBag(catalog: Catalog, archiveDir: string, bag: UnpackedBag): Promise<void> {
  const harvestId = await prepareToPlace(catalog, bag);
  const target = join(archiveDir, ...bag.destination.split('/'));
  const aips = join(archiveDir, AIPS_DIRECTORY);
  const harvestFolder = dirname(target);
  const newAips = !(await exists(aips));
  const newFolder = !(await exists(harvestFolder));
  await mkdir(harvestFolder, { recursive: true });
  if (newAips) await fsyncFolder(archiveDir);
  if (newFolder) await fsyncFolder(aips);
  catalog.addPendingBag(bag.destination, harvestId);
  await rename(bag.staged, target);
  await fsyncFolder(harvestFolder);
}

/** SHA256SUMS of a folder of bag ZIPs, when it has one: name → sha-256. */
async function expectedSums(delivery: Delivery): Promise<Map<string, string> | undefined> {
  const entry = delivery.entries.find((candidate) => candidate.name === 'SHA256SUMS');
  if (delivery.kind !== 'folder' || !entry) return undefined;
  const text = (await readFile(join(delivery.path, 'SHA256SUMS'))).toString('utf8');
  const sums = new Map<string, string>();
  for (const [index, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue;
    const match = /^([0-9a-f]{64}) [ *](.+)$/.exec(line);
    if (!match)
      throw new ArchiverError('ERR_IMPORT_DAMAGED', `${delivery.name}: SHA256SUMS line ${index + 1} is not "<sha-256>  <name>"`, { path: delivery.path });
    sums.set(match[2]!, match[1]!);
  }
  return sums;
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
