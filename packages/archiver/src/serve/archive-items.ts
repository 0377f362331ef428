// The archive's items as the shared OAI-PMH provider of @oaibag/oai-pmh reads them for `oaibag
// serve` (docs/serve.md): one item per archived resource from the catalog, its record the
// latest version (or its deletion) written in the formats of served-formats.ts from the record
// the bag keeps, payloads' base64 read from the bags as the client reads.

import { NS } from '@oaibag/didl';
import {
  formatDatestamp,
  type IdentifyFacts,
  type ItemHeader,
  type ItemKey,
  type ItemRecord,
  type ItemSource,
  type ListWindow,
  type MetadataFormatDescription,
  mimeSetSelection,
  mimeSetSpec,
  type SetDescription,
  setNameFor,
  setSpecAncestors,
} from '@oaibag/oai-pmh';
import type { AipStorage } from '../aip/aip-storage.js';
import { bagFolders } from '../aip/layout-names.js';
import type { Catalog } from '../catalog/catalog.js';
import type { PayloadLocation } from '../catalog/catalog-types.js';
import {
  type ArchiveItem,
  countItems,
  earliestDatestamp,
  estimateItems,
  findItem,
  type ItemQuery,
  itemMimeTypes,
  itemOfRecord,
  listItems,
  type ServedVersion,
  sourcesWithItems,
} from '../catalog/served-items.js';
import { ORE_PREFIX } from './ore-map.js';
import { payloadBase64 } from './payload-base64.js';
import { payloadUrlPath } from './payload-files.js';
import { servedAbout } from './provenance-about.js';
import type { DidlPart } from './served-didl.js';
import { SERVED_FORMATS, type ServedFormat } from './served-formats.js';
import type { StoredRecords, StoredRecordXml } from './stored-records.js';

/** The archive served: its folder, its catalog, and the records its bags keep. */
export interface ServedArchive {
  archiveDir: string;
  catalog: Catalog;
  records: StoredRecords;
  /** The archive's object store, when its bags are there; payload bytes are then read through it. */
  store?: AipStorage | undefined;
}

/** What the archive says of itself at one base URL, and how large the payloads it sends By-Value may be. */
export interface ArchiveItemsSettings {
  /** Identify's repositoryName, the ORE maps' creator. */
  repositoryName: string;
  adminEmails: readonly string[];
  /** Payloads up to this many bytes go By-Value (base64) in oai_didl too. */
  byValueMax: number;
}

/** The access decision for a payload's bytes, for the client of one request. */
export type PayloadGate = (payload: PayloadLocation) => boolean;

const SOURCE_SET = /^source:(\d+)$/;

/** The archive's items for one request: at one base URL, for a client who may read the payloads `mayRead` allows. */
export class ArchiveItems implements ItemSource<ArchiveItem> {
  readonly endpoint: string;
  readonly formats: readonly MetadataFormatDescription[];

  constructor(
    private readonly archive: ServedArchive,
    private readonly settings: ArchiveItemsSettings,
    private readonly baseUrl: string,
    /** A payload it refuses is given By-Reference only, whatever its size. */
    private readonly mayRead: PayloadGate,
  ) {
    this.endpoint = `${baseUrl}/oai`;
    this.formats = SERVED_FORMATS.map((format) => ({ prefix: format.prefix, schema: format.schema(baseUrl), namespace: format.namespace }));
  }

  identify(): IdentifyFacts {
    return {
      repositoryName: this.settings.repositoryName,
      adminEmails: this.settings.adminEmails,
      earliestDatestamp: earliestDatestamp(this.archive.catalog),
      deletedRecord: 'persistent',
    };
  }

  /** One set per source, then the MIME-type sets of the items with their ancestors. */
  sets(): SetDescription[] {
    const sources = sourcesWithItems(this.archive.catalog).map((source) => ({
      spec: `source:${source.id}`,
      name: `${source.name ?? 'repository'} (${source.baseUrl})`,
    }));
    const mime = new Set<string>();
    for (const type of itemMimeTypes(this.archive.catalog)) {
      const leaf = mimeSetSpec(type);
      if (leaf !== null) for (const spec of setSpecAncestors(leaf)) mime.add(spec);
    }
    return [...sources, ...[...mime].sort().map((spec) => ({ spec, name: setNameFor(spec) }))];
  }

  count(window: ListWindow, limit: number): number {
    const selection = query(window);
    return selection === null ? 0 : countItems(this.archive.catalog, { ...selection, limit });
  }

  estimate(window: ListWindow): number | undefined {
    const selection = query(window);
    return selection === null ? undefined : estimateItems(this.archive.catalog, selection);
  }

  list(window: ListWindow, after: ItemKey | undefined, limit: number): ArchiveItem[] {
    const selection = query(window);
    return selection === null ? [] : listItems(this.archive.catalog, { ...selection, ...(after ? { after } : {}), limit });
  }

  get(identifier: string): ArchiveItem | undefined {
    return findItem(this.archive.catalog, identifier);
  }

  key(item: ArchiveItem): ItemKey {
    return { datestamp: item.datestamp, id: item.id };
  }

  header(item: ArchiveItem): ItemHeader {
    const mimeSet = item.mimeType === null ? null : mimeSetSpec(item.mimeType);
    return {
      identifier: item.identifier,
      datestamp: item.datestamp,
      deleted: item.deleted,
      setSpecs: mimeSet === null ? [`source:${item.sourceId}`] : [`source:${item.sourceId}`, mimeSet],
    };
  }

  byValueBytes(item: ArchiveItem, prefix: string): number {
    const size = item.version?.size ?? 0;
    return servedFormat(prefix).carriesContent && size <= this.settings.byValueMax ? size : 0;
  }

  /**
   * Reads the page's records from their bags before the first byte: a damaged bag is an error
   * of the request, not a cut-off answer. A page that ends within a page's length of its bag's
   * last record has the next bag read meanwhile (inflated on libuv's pool while this page is
   * written and its harvester takes it in): a list in ingest order goes on there, and the page
   * that opens it then costs about what the others do (two seeks of the bags table a page).
   */
  async prepare(items: readonly ArchiveItem[]): Promise<void> {
    const last = items.at(-1)?.version;
    const bag = last && this.archive.catalog.bag(last.bagPath);
    if (bag && last.record > bag.records - items.length) {
      const next = this.archive.catalog.bagAfter(bag.id);
      if (next) this.archive.records.readAhead(next.bagPath);
    }
    for (const { version } of items) if (version) await this.archive.records.record(version.bagPath, version.record);
  }

  async record(item: ArchiveItem, prefix: string): Promise<ItemRecord> {
    const header = this.header(item);
    const version = item.version;
    if (item.deleted || !version) return { header };
    const stored = await this.archive.records.record(version.bagPath, version.record);
    const metadata = this.metadataParts({ ...item, version }, servedFormat(prefix), this.mayRead, stored);
    const storedAt = formatDatestamp(Math.floor(Date.parse(version.storedAt) / 1000));
    const about = servedAbout(
      { baseUrl: item.sourceBaseUrl, identifier: item.original, datestamp: version.datestamp, harvestDate: storedAt, metadataNamespace: NS.didl },
      stored.about,
    );
    return { header, metadata: this.stream(metadata), about };
  }

  /** The ORE resource map of the version a bag's record holds (`/ore/<bag>/<record>`); undefined when there is none. */
  async oreMap(bagPath: string, record: number): Promise<string | undefined> {
    const item = itemOfRecord(this.archive.catalog, bagPath, record);
    if (!item) return undefined;
    const stored = await this.archive.records.record(item.version.bagPath, item.version.record);
    const parts = this.metadataParts(item, servedFormat('ore'), () => false, stored); // a map carries no bytes
    return `<?xml version="1.0" encoding="UTF-8"?>\n${parts.join('')}`;
  }

  private metadataParts(item: ArchiveItem & { version: ServedVersion }, format: ServedFormat, mayRead: PayloadGate, stored: StoredRecordXml): DidlPart[] {
    const version = item.version;
    const catalog = this.archive.catalog;
    const baseUrl = this.baseUrl;
    return format.write({
      item,
      stored,
      parts: catalog.versionParts(version.id),
      fetchedRefs: catalog.versionFetches(version.id).map(({ part, ref }) => ({ part, ref })),
      baseUrl,
      urlOf: (location: PayloadLocation) => baseUrl + payloadUrlPath(location.bagPath, location.path),
      oreUrl: `${baseUrl}${ORE_PREFIX}${bagFolders(version.bagPath).map(encodeURIComponent).join('/')}/${version.record}`,
      repositoryName: this.settings.repositoryName,
      byValueMax: this.settings.byValueMax,
      mayRead,
      storedAt: formatDatestamp(Math.floor(Date.parse(version.storedAt) / 1000)),
    });
  }

  /** The parts as text: strings as they are, each payload's base64 read as the client reads. */
  private async *stream(parts: readonly DidlPart[]): AsyncGenerator<string> {
    for (const part of parts) {
      if (typeof part === 'string') yield part;
      else yield* payloadBase64(this.archive.archiveDir, part.base64, this.archive.store);
    }
  }
}

function servedFormat(prefix: string): ServedFormat {
  return SERVED_FORMATS.find((format) => format.prefix === prefix)!;
}

/** What a list's set selects; null for a set that is not one of the archive's. */
function query(window: ListWindow): ItemQuery | null {
  const selection: ItemQuery = { ...(window.from !== undefined ? { from: window.from } : {}), until: window.until };
  if (window.set === undefined) return selection;
  const source = SOURCE_SET.exec(window.set);
  if (source) return { ...selection, sourceId: Number(source[1]) };
  const mime = mimeSetSelection(window.set);
  return mime === null ? null : { ...selection, mime };
}
