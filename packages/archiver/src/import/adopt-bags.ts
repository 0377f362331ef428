// `oaibag import` of serialized bags (written by `oaibag export --bags`): each bag ZIP screened
// (delivery.ts), verified in full in place (verify-zip-bag.ts) and unpacked into tmp/, all of
// them before any is placed; then each placed as it is, at the path its name gives
// (`harvest-000001-batch-00001.zip` → aips/harvest-000001/batch-00001), noted as pending first
// so that a crash leaves it recorded at the next start, and recorded from its own files as
// reindex records a bag. A bag whose place holds the same bag already (a rerun) is kept; a
// place or a harvest number taken by another archive's bag is refused before anything is placed.
import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fsyncFolder } from '../archive/flush-to-disk.js';
import { AIPS_DIRECTORY, TEMP_DIRECTORY } from '../archive/storage-path.js';
import { type DeliveryFacts, describeDelivery } from '../bag/aip-metadata.js';
import { verifyBag } from '../bag/bag-verifier.js';
import { readBagInfo } from '../bag/batch-bag-reader.js';
import type { Catalog } from '../catalog/catalog.js';
import { harvestOfBag, indexBags } from '../catalog/index-bags.js';
import { ArchiverError, archiveIoError } from '../core/errors.js';
import { writeFully } from '../core/write-fully.js';
import type { IngestSession } from '../ingest/ingest-session.js';
import { verifyZipBag } from '../verify/verify-zip-bag.js';
import { type Delivery, openDelivery } from './delivery.js';
import { SERIALIZED_BAG_NAME } from './delivery-kind.js';
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
  info: Map<string, string>;
}

const COUNTS_ZERO = { records: 0, added: 0, modified: 0, touched: 0, deleted: 0, failed: 0, bytes: 0, requests: 0 };

export async function adoptBags(
  session: IngestSession,
  delivery: Delivery,
  facts: DeliveryFacts,
  options: ImportOptions & { log: (line: string) => void },
): Promise<ImportSummary> {
  const { archiveDir, log } = options;
  // Checked against SHA256SUMS when the delivery has one: the partner's list of what was sent.
  const sums = await expectedSums(delivery);
  const { catalog } = session;
  const work = join(archiveDir, TEMP_DIRECTORY, `adopt-${randomBytes(6).toString('hex')}`);
  try {
    const bags: UnpackedBag[] = [];
    const zips =
      delivery.kind === 'zip'
        ? [{ name: delivery.name, path: delivery.path }]
        : delivery.entries
            .filter((entry) => SERIALIZED_BAG_NAME.test(entry.name))
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
      bags.push(await stageBag(zip, work, archiveDir, delivery, options));
      log(`verified ${zip.name}`);
    }
    for (const bag of bags) refuseConflicts(catalog, archiveDir, bag, delivery);
    const placed: string[] = [];
    for (const bag of bags) {
      if (!bag.present) await placeBag(catalog, archiveDir, bag);
      if (catalog.bag(bag.destination) === undefined) placed.push(bag.destination);
    }
    placed.sort();
    const indexed = await indexBags(catalog, archiveDir, placed, { adopting: true });
    log(`adopted ${placed.length} bag(s), ${bags.length - placed.length} held already`);
    const sources = [...new Set(bags.map((bag) => bag.info.get('OAI-Base-URL')!))];
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
      ...COUNTS_ZERO,
      added: indexed.versions,
      deleted: indexed.deletions,
    };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** The bag ZIP screened, verified in full without unpacking, then unpacked into `work`. */
async function stageBag(
  zip: { name: string; path: string },
  work: string,
  archiveDir: string,
  delivery: Delivery,
  options: ImportOptions,
): Promise<UnpackedBag> {
  const match = SERIALIZED_BAG_NAME.exec(zip.name.endsWith('.zip') ? zip.name : `${zip.name}.zip`);
  const bagZip = zip.path === delivery.path ? delivery : await openDelivery(zip.path, options.limits ? { limits: options.limits } : {});
  try {
    const report = await verifyZipBag(zip.path);
    if (!report.ok) {
      const more = report.problems.length > 1 ? ` (and ${report.problems.length - 1} more problem(s))` : '';
      throw new ArchiverError('ERR_IMPORT_DAMAGED', `${zip.name}: ${report.problems[0]}${more}`, { path: zip.path });
    }
    const folder = report.folder!;
    const parts = /^(harvest-\d{6,})-(batch-\d{5,})$/.exec(folder);
    if (!parts || (match && `${match[1]}-${match[2]}` !== folder)) {
      throw new ArchiverError('ERR_IMPORT_KIND', `${zip.name} unpacks to ${folder}, not to a bag written by oaibag export (harvest-…-batch-…)`, {
        path: zip.path,
      });
    }
    const destination = `${AIPS_DIRECTORY}/${parts[1]}/${parts[2]}`;
    const staged = join(work, folder);
    const folders = new Set<string>([staged]);
    for (const entry of bagZip.entries) {
      const target = join(work, ...entry.name.split('/'));
      await mkdir(dirname(target), { recursive: true });
      for (let parent = dirname(target); parent.startsWith(staged) && !folders.has(parent); parent = dirname(parent)) folders.add(parent);
      const handle = await open(target, 'wx');
      try {
        for await (const chunk of bagZip.open(entry)) await writeFully(handle, chunk);
        await handle.sync();
      } finally {
        await handle.close();
      }
    }
    for (const path of folders) await fsyncFolder(path);
    const present = await samePlacedBag(archiveDir, destination, staged);
    return { zip: zip.name, destination, staged, present, info: await readBagInfo(staged) };
  } catch (error) {
    throw archiveIoError(error, `cannot unpack ${zip.name} into ${work}`);
  } finally {
    if (bagZip !== delivery) await bagZip.close();
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
  if (source?.baseUrl !== info.get('OAI-Base-URL') || harvest.startedAt !== startedAt) {
    throw new ArchiverError(
      'ERR_IMPORT_CONFLICT',
      `${delivery.name}: ${bag.zip} was written by harvest ${harvestId} of another archive; this archive's harvest ${harvestId} is another one (bags of another archive go into an archive of their own)`,
      { path: archiveDir },
    );
  }
}

/** Places a staged bag: noted as pending, renamed into aips/, the folders made durable. */
async function placeBag(catalog: Catalog, archiveDir: string, bag: UnpackedBag): Promise<void> {
  if (!(await verifyBag(bag.staged, { fast: true })).valid) {
    throw new ArchiverError('ERR_IMPORT_DAMAGED', `${bag.zip}: unpacked, it is not a complete bag`, { path: bag.staged });
  }
  const { info } = bag;
  const source = catalog.ensureSource(info.get('OAI-Base-URL')!, info.get('Source-Repository-Name') ?? null);
  const { harvestId, kind, args, startedAt } = harvestOfBag({ bagPath: bag.destination, info });
  catalog.ensureRun(harvestId, source.id, kind, args, startedAt);
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
