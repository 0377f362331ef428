// The names of the archive's layout (docs/aip-profile.md, format 2): every AIP is one batch bag
// at `aips/harvest-NNNNNN/batch-NNNNN`, named by the harvest (or import) that wrote it and its
// batch within it, and `oaibag export --bags` writes each as `harvest-NNNNNN-batch-NNNNN.zip`,
// which unpacks to the folder of that name. The one module that formats and parses them: every
// other module asks it, so that a second layout (or an object store's keys) changes one file.
//
// Parsing accepts what this oaibag has always read: at least 6 digits for a harvest and 5 for a
// batch, so `harvest-1234567` (a harvest past 999,999) reads, and `harvest-0000001` reads as 1.
// Formatting pads to those widths; parse(format(n)) is n for every n the formatter takes.
import { ArchiverError } from '../core/errors.js';

/** The archive format this oaibag writes and reads: Oaibag-Format in bag-info.txt, the catalog's `archive` row. */
export const ARCHIVE_FORMAT = 2;

/** The top folder of the archive that holds every AIP. */
export const AIPS_DIRECTORY = 'aips';

/** Bag folders under aips/ are two levels deep: `harvest-NNNNNN/batch-NNNNN`. */
export const BAG_DEPTH = 2;

const HARVEST_DIGITS = 6;
const BATCH_DIGITS = 5;
const HARVEST_FOLDER = /^harvest-(\d{6,})$/;
const BATCH_FOLDER = /^batch-(\d{5,})$/;
const SERIALIZED_FOLDER = /^(harvest-\d{6,})-(batch-\d{5,})$/;
const SERIALIZED_ZIP = /^(harvest-\d{6,}-batch-\d{5,})\.zip$/;
/** A bag path inside a text (a catalog event's detail): any number of digits, as events name them. */
const BAG_PATH_IN_TEXT = /\baips\/harvest-\d+\/batch-\d+/;

/** Where one batch bag is: the harvest (or import) that wrote it and its batch within it. */
export interface BagName {
  harvestId: number;
  batch: number;
}

/** `harvest-000001`: the folder of aips/ holding a harvest's bags. Refuses a number that is not a whole number ≥ 0 (ERR_ARCHIVE_PATH). */
export function harvestFolderName(harvestId: number): string {
  return `harvest-${padded(harvestId, HARVEST_DIGITS, 'harvest')}`;
}

/** `batch-00001`: the folder of a batch bag in its harvest's folder. Refuses a number that is not a whole number ≥ 0 (ERR_ARCHIVE_PATH). */
export function batchFolderName(batch: number): string {
  return `batch-${padded(batch, BATCH_DIGITS, 'batch')}`;
}

/** The harvest number of a harvest folder's name; undefined for any other name. */
export function parseHarvestFolder(name: string): number | undefined {
  const match = HARVEST_FOLDER.exec(name);
  return match ? Number(match[1]) : undefined;
}

/** The batch number of a batch folder's name; undefined for any other name. */
export function parseBatchFolder(name: string): number | undefined {
  const match = BATCH_FOLDER.exec(name);
  return match ? Number(match[1]) : undefined;
}

/** `aips/harvest-000001/batch-00001`: the bag's path in the archive, `/`-separated. */
export function bagPathFor(name: BagName): string {
  return bagPathOfFolders(harvestFolderName(name.harvestId), batchFolderName(name.batch));
}

/** The bag a path of the archive names (`aips/harvest-…/batch-…`); undefined for any other path. */
export function parseBagPath(bagPath: string): BagName | undefined {
  const [top, harvest, batch, ...rest] = bagPath.split('/');
  if (top !== AIPS_DIRECTORY || rest.length > 0) return undefined;
  const harvestId = parseHarvestFolder(harvest ?? '');
  const batchNumber = parseBatchFolder(batch ?? '');
  return harvestId === undefined || batchNumber === undefined ? undefined : { harvestId, batch: batchNumber };
}

/**
 * The folders of a bag path below aips/ (`['harvest-000001', 'batch-00001']`): how the archive's
 * URLs name a bag (`/files/…`, `/ore/…`, `/memento/…`, the RDF resources).
 */
export function bagFolders(bagPath: string): string[] {
  return bagPath.split('/').slice(1);
}

/**
 * The bag path of the two folders a URL names below aips/ (the inverse of {@link bagFolders}).
 * Not checked against the layout: the caller looks the path up in the catalog, which knows
 * only bags that were placed.
 */
export function bagPathOfFolders(harvestFolder: string, batchFolder: string): string {
  return `${AIPS_DIRECTORY}/${harvestFolder}/${batchFolder}`;
}

/** `harvest-000001-batch-00001`: the folder a serialized bag unpacks to (and its ZIP's name without `.zip`). */
export function serializedBagFolder(bagPath: string): string {
  return bagFolders(bagPath).join('-');
}

/** The bag path a serialized bag's folder stands for (`harvest-…-batch-…` → `aips/harvest-…/batch-…`); undefined for any other name. */
export function parseSerializedBagFolder(folder: string): string | undefined {
  const match = SERIALIZED_FOLDER.exec(folder);
  return match ? bagPathOfFolders(match[1]!, match[2]!) : undefined;
}

/** The folder a serialized bag's ZIP name (`harvest-…-batch-….zip`) promises; undefined for any other name. */
export function parseSerializedBagZipName(name: string): string | undefined {
  return SERIALIZED_ZIP.exec(name)?.[1];
}

/** Whether `name` is the name `oaibag export --bags` gives a bag ZIP. */
export function isSerializedBagZipName(name: string): boolean {
  return SERIALIZED_ZIP.test(name);
}

/** The first bag path a text names (`… aips/harvest-000001/batch-00001 …`), or undefined. */
export function findBagPathIn(text: string): string | undefined {
  return BAG_PATH_IN_TEXT.exec(text)?.[0];
}

function padded(n: number, digits: number, what: string): string {
  if (!Number.isSafeInteger(n) || n < 0) throw new ArchiverError('ERR_ARCHIVE_PATH', `${what} number ${n} is not a whole number`);
  return String(n).padStart(digits, '0');
}
