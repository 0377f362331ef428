// bag-info.txt of a batch bag (docs/aip-profile.md, "bag-info.txt"): the labels of oaibag's
// profile, written by one function in their order and read back typed by one other. BagIt's own
// labels (Bagging-Date, Bag-Size, Payload-Oxum) are added by the bag writer (bag/bag-writer.ts);
// of them only Bagging-Date is read here, for bags older than Bagged-At.
//
// The file is read as RFC 8493 §2.2.2 describes it: `Label: value` lines, a line that starts
// with whitespace continuing the value before it, the first value of a repeated label kept. A
// line that is none of these, or a label of the profile whose value is not of its type (a
// Harvest-Id that is no whole number, a List-End other than complete or partial), makes the file
// malformed: ERR_ARCHIVE_DAMAGED naming the bag and the line. A label that is absent reads as null.
import { cleanBagInfoValue } from '../bag/bag-writer.js';
import { ArchiverError } from '../core/errors.js';
import type { DeliveryFacts } from './aip-metadata.js';
import type { StoredBag } from './aip-storage.js';
import { bagInFolder } from './folder-storage.js';
import { ARCHIVE_FORMAT } from './layout-names.js';

/** The file's name in a bag. */
export const BAG_INFO_FILE = 'bag-info.txt';

/** A bag-info.txt larger than this is not read: ours are a few hundred bytes (a long resumption token makes a few KB). */
export const MAX_BAG_INFO_BYTES = 1024 * 1024;

/** What a batch bag's bag-info.txt says (besides BagIt's own labels and Oaibag-Format, which the writer adds). */
export interface BatchBagInfo {
  /** External-Description: what the bag holds, for people (line breaks become spaces). */
  description: string;
  /** OAI-Base-URL: the source. */
  baseUrl: string;
  /** Source-Repository-Name: its repositoryName (line breaks become spaces). */
  repositoryName: string;
  /** Harvest-Id: the harvest (or import) that wrote the bag. */
  harvestId: number;
  /** Harvest-Started: when that harvest started. */
  harvestStarted: string | null;
  /** Metadata-Prefix. */
  metadataPrefix: string;
  /** Delivery-Name, Delivery-Kind, Delivery-Size, Delivery-SHA-256: the delivery an import's records came in. */
  delivery: DeliveryFacts | null;
  /** Harvest-From, Harvest-Until, Harvest-Set: the harvest's arguments. */
  harvestFrom: string | null;
  harvestUntil: string | null;
  harvestSet: string | null;
  /** List-Response-Date: the responseDate of the list's first page. */
  listResponseDate: string | null;
  /**
   * Batch-Pages: the first and last page (or file, for an import) of the batch, `first-last`;
   * null for a batch that kept no record (its bag holds payload files only), written without it.
   */
  pages: readonly [first: number, last: number] | null;
  /** Resumption-Token: the token that follows the batch's last page (absent at the list's end). */
  resumptionToken: string | null;
  /** List-End: set on the batch that ends the list. */
  listEnd: 'complete' | 'partial' | null;
  /** Bagged-At: the instant the batch's versions are stored at. */
  baggedAt: string;
  /** Records, New-Payloads, Revisits, Deletions: the batch's counts. */
  records: number;
  newPayloads: number;
  revisits: number;
  deletions: number;
}

/** A bag-info.txt read back: each label of the profile typed, null when the bag does not have it. */
export type ReadBagInfo = { [K in Exclude<keyof BatchBagInfo, 'pages'>]: BatchBagInfo[K] | null } & {
  /** Oaibag-Format as written (a bag of another format is reported with it: see checkBatchBagFormat). */
  format: string | null;
  /** Batch-Pages as written; null too for `undefined-undefined`, what a batch that kept no record said before. */
  pages: string | null;
  /** BagIt's Bagging-Date (the day the bag was made), the time of a bag without Bagged-At. */
  baggingDate: string | null;
};

/** The label/value lines of a batch bag's bag-info.txt, in their order; the bag writer adds BagIt's own. */
export function batchBagInfoLabels(info: BatchBagInfo): Array<[string, string]> {
  const labels: Array<[string, string]> = [
    ['Oaibag-Format', String(ARCHIVE_FORMAT)],
    ['External-Description', cleanBagInfoValue(info.description)],
    ['OAI-Base-URL', info.baseUrl],
    ['Source-Repository-Name', cleanBagInfoValue(info.repositoryName)],
    ['Harvest-Id', String(info.harvestId)],
  ];
  if (info.harvestStarted !== null) labels.push(['Harvest-Started', info.harvestStarted]);
  labels.push(['Metadata-Prefix', info.metadataPrefix]);
  if (info.delivery !== null) {
    labels.push(
      ['Delivery-Name', cleanBagInfoValue(info.delivery.name)],
      ['Delivery-Kind', info.delivery.kind],
      ['Delivery-Size', String(info.delivery.size)],
      ['Delivery-SHA-256', info.delivery.sha256],
    );
  }
  if (info.harvestFrom !== null) labels.push(['Harvest-From', info.harvestFrom]);
  if (info.harvestUntil !== null) labels.push(['Harvest-Until', info.harvestUntil]);
  if (info.harvestSet !== null) labels.push(['Harvest-Set', cleanBagInfoValue(info.harvestSet)]);
  if (info.listResponseDate !== null) labels.push(['List-Response-Date', info.listResponseDate]);
  if (info.pages !== null) labels.push(['Batch-Pages', `${info.pages[0]}-${info.pages[1]}`]);
  if (info.resumptionToken !== null) labels.push(['Resumption-Token', cleanBagInfoValue(info.resumptionToken)]);
  if (info.listEnd !== null) labels.push(['List-End', info.listEnd]);
  labels.push(
    ['Bagged-At', info.baggedAt],
    ['Records', String(info.records)],
    ['New-Payloads', String(info.newPayloads)],
    ['Revisits', String(info.revisits)],
    ['Deletions', String(info.deletions)],
  );
  return labels;
}

/** Batch-Pages of a batch that kept no record, as oaibag wrote it until it left the label out. */
const NO_PAGES_OF_OLD = 'undefined-undefined';

/** A label's value and the line (from 1) it was read from. */
interface ReadLabel {
  value: string;
  line: number;
}

/**
 * The bag-info.txt of a batch bag (a folder on disk, or a bag of a store), typed; see the file
 * comment for what is malformed. The file missing or unreadable is ERR_ARCHIVE_DAMAGED too.
 */
export async function readBatchBagInfo(bag: string | StoredBag): Promise<ReadBagInfo> {
  const stored = typeof bag === 'string' ? bagInFolder(bag) : bag;
  const labels = await readLabels(stored);
  const file = stored.storage.where(`${stored.bagPath}/${BAG_INFO_FILE}`);
  const malformed = (label: string, why: string): never => {
    const { value, line } = labels.get(label)!;
    throw new ArchiverError('ERR_ARCHIVE_DAMAGED', `${file} line ${line}: ${label} ${JSON.stringify(value.slice(0, 80))} ${why}`, {
      path: stored.storage.where(stored.bagPath),
    });
  };
  const text = (label: string): string | null => labels.get(label)?.value ?? null;
  const whole = (label: string, least: number): number | null => {
    const value = text(label);
    if (value === null) return null;
    const n = Number(value);
    return /^\d+$/.test(value) && Number.isSafeInteger(n) && n >= least ? n : malformed(label, `is not a whole number of at least ${least}`);
  };
  const oneOf = <T extends string>(label: string, values: readonly T[]): T | null => {
    const value = text(label);
    return value === null || (values as readonly string[]).includes(value) ? (value as T | null) : malformed(label, `is not one of ${values.join(', ')}`);
  };
  const deliveryName = text('Delivery-Name');
  const deliveryKind = oneOf('Delivery-Kind', ['site', 'didl', 'bags'] as const);
  const deliverySha256 = text('Delivery-SHA-256');
  const pages = text('Batch-Pages');
  return {
    format: text('Oaibag-Format'),
    description: text('External-Description'),
    baseUrl: text('OAI-Base-URL'),
    repositoryName: text('Source-Repository-Name'),
    harvestId: whole('Harvest-Id', 1),
    harvestStarted: text('Harvest-Started'),
    metadataPrefix: text('Metadata-Prefix'),
    delivery:
      deliveryName !== null && deliveryKind !== null && deliverySha256 !== null
        ? { name: deliveryName, kind: deliveryKind, size: whole('Delivery-Size', 0) ?? 0, sha256: deliverySha256 }
        : null,
    harvestFrom: text('Harvest-From'),
    harvestUntil: text('Harvest-Until'),
    harvestSet: text('Harvest-Set'),
    listResponseDate: text('List-Response-Date'),
    pages: pages === NO_PAGES_OF_OLD ? null : pages,
    resumptionToken: text('Resumption-Token'),
    listEnd: oneOf('List-End', ['complete', 'partial'] as const),
    baggedAt: text('Bagged-At'),
    records: whole('Records', 0),
    newPayloads: whole('New-Payloads', 0),
    revisits: whole('Revisits', 0),
    deletions: whole('Deletions', 0),
    baggingDate: text('Bagging-Date'),
  };
}

/**
 * Refuses a bag that is not a batch bag of this archive format (ERR_ARCHIVE_FORMAT: format 1
 * had no Oaibag-Format) or that does not name its source (ERR_ARCHIVE_DAMAGED). `bagDir` names
 * the bag in the messages.
 */
export function checkBatchBagFormat(info: ReadBagInfo, bagDir: string): asserts info is ReadBagInfo & { baseUrl: string } {
  const { format } = info;
  if (format !== String(ARCHIVE_FORMAT)) {
    throw new ArchiverError(
      'ERR_ARCHIVE_FORMAT',
      `${bagDir} is ${format === null ? 'not a batch bag (no Oaibag-Format in bag-info.txt: format 1 or another tool)' : `in format ${format}`}; this oaibag reads format ${ARCHIVE_FORMAT}`,
      { path: bagDir },
    );
  }
  if (!info.baseUrl) throw new ArchiverError('ERR_ARCHIVE_DAMAGED', `${bagDir}: bag-info.txt has no OAI-Base-URL`, { path: bagDir });
}

/** bag-info.txt as label → value (the first value of a repeated label), untyped: what a test or a person looks at. */
export async function readBagInfo(bag: string | StoredBag): Promise<Map<string, string>> {
  const labels = await readLabels(typeof bag === 'string' ? bagInFolder(bag) : bag);
  return new Map([...labels].map(([label, { value }]) => [label, value]));
}

async function readLabels({ storage, bagPath }: StoredBag): Promise<Map<string, ReadLabel>> {
  const file = storage.where(`${bagPath}/${BAG_INFO_FILE}`);
  const damaged = (why: string): ArchiverError => new ArchiverError('ERR_ARCHIVE_DAMAGED', `${file} ${why}`, { path: storage.where(bagPath) });
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of storage.read(`${bagPath}/${BAG_INFO_FILE}`) as AsyncIterable<Buffer>) {
      size += chunk.byteLength;
      if (size > MAX_BAG_INFO_BYTES) throw damaged(`is larger than ${MAX_BAG_INFO_BYTES} bytes`);
      chunks.push(chunk);
    }
  } catch (error) {
    if (error instanceof ArchiverError) throw error;
    throw damaged(`cannot be read: ${(error as Error).message}`);
  }
  const labels = new Map<string, ReadLabel>();
  let last: ReadLabel | undefined;
  for (const [index, line] of Buffer.concat(chunks).toString('utf8').split(/\r?\n/).entries()) {
    if (line === '') continue;
    if (/^[ \t]/.test(line)) {
      if (last === undefined && labels.size === 0) throw damaged(`line ${index + 1} continues no label: ${JSON.stringify(line.slice(0, 80))}`);
      if (last !== undefined) last.value = `${last.value} ${line.trim()}`.trim();
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0) throw damaged(`line ${index + 1} is not "Label: value": ${JSON.stringify(line.slice(0, 80))}`);
    const label = line.slice(0, colon).trim();
    last = labels.has(label) ? undefined : { value: line.slice(colon + 1).trim(), line: index + 1 };
    if (last !== undefined) labels.set(label, last);
  }
  return labels;
}
