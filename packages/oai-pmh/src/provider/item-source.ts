// What a data provider supplies to the shared OAI-PMH core (oai-provider.ts): its items, their
// records in its formats, its sets and the facts of Identify. The core owns everything else: the
// verbs and their argument errors, the lists, their keyset paging and resumption tokens, and
// where a page is cut. A source answers for one request (one client, one base URL), so it may
// carry whatever decides what that client sees.

/**
 * The place of an item in every list: lists go in (datestamp, id) order and a page resumes
 * strictly after the key of the last item it sent. `id` is a whole number of at least 0 that no
 * other item of the source has, so the order is total and a page never repeats or skips an item.
 */
export interface ItemKey {
  /** Seconds since the epoch, the item's datestamp. */
  datestamp: number;
  id: number;
}

/** What a list selects: datestamps in [from, until] (seconds, inclusive), and a set (with its subsets). */
export interface ListWindow {
  from?: number;
  until: number;
  set?: string;
}

/** An item's OAI-PMH header. */
export interface ItemHeader {
  identifier: string;
  /** Seconds since the epoch. */
  datestamp: number;
  deleted: boolean;
  setSpecs: readonly string[];
}

/** A metadata format as ListMetadataFormats describes it. */
export interface MetadataFormatDescription {
  prefix: string;
  schema: string;
  namespace: string;
}

export interface SetDescription {
  spec: string;
  name: string;
}

/** Identify's facts (baseURL is the source's endpoint; granularity is always seconds). */
export interface IdentifyFacts {
  repositoryName: string;
  adminEmails: readonly string[];
  /** Seconds; undefined when there is no item yet (Identify then gives the response date). */
  earliestDatestamp: number | undefined;
  deletedRecord: 'no' | 'transient' | 'persistent';
  /** Content codings the server answers with (`gzip`, `deflate`), in order. */
  compression?: readonly string[];
  /** The content of each `<description>` element, as XML. */
  descriptions?: readonly string[];
}

/**
 * One record, as the source found the item when asked for it (which may be later than the list
 * was read: the header is the item as it is now). A deleted item, or one without `metadata`, is
 * written as its header alone.
 */
export interface ItemRecord {
  header: ItemHeader;
  /** The metadata element's content, streamed. */
  metadata?: Iterable<string> | AsyncIterable<string>;
  /** The record's `about` containers, as XML ('' or undefined for none). */
  about?: string;
  /** Releases what the record holds (an open file); called once, when it is written or abandoned. */
  close?(): void | Promise<void>;
}

/**
 * The items of a data provider, for one request. Every live item is disseminated in every one of
 * `formats` and a deleted item in none (its header only): neither server has a format that only
 * some items have, and a list could not count such items without asking the source per format.
 */
export interface ItemSource<Item> {
  /** The OAI-PMH endpoint's URL: Identify's baseURL and the `request` element of every response. */
  readonly endpoint: string;
  /** The formats disseminated, in the order ListMetadataFormats gives them. */
  readonly formats: readonly MetadataFormatDescription[];
  identify(): IdentifyFacts | Promise<IdentifyFacts>;
  /** The sets that have members, ancestors included, in the order ListSets gives them. */
  sets(): readonly SetDescription[] | Promise<readonly SetDescription[]>;
  /**
   * How many items the window holds (a set the source does not have holds none), counting no
   * further than `limit`: a window holding more answers `limit`, so a list's first page costs
   * at most `limit` index entries whatever the list's size (ListSettings.countLimit).
   */
  count(window: ListWindow, limit: number): number | Promise<number>;
  /**
   * About how many items the window holds, when the source can tell without counting (a whole
   * list: the highest row id); asked before count(). Above the count limit it is the list's
   * completeListSize and nothing is counted; a count that stops at the limit takes it too.
   * Undefined (any window it cannot tell cheaply) leaves the size to the count, or out until
   * the list's last page. It may count items newer than the window: it is an estimate.
   */
  estimate?(window: ListWindow): number | undefined | Promise<number | undefined>;
  /**
   * At most `limit` items of the window in (datestamp, id) order, starting strictly after
   * `after` (from the window's start without it). The query behind it is expected to cost in
   * proportion to `limit`, not to the size of the list.
   */
  list(window: ListWindow, after: ItemKey | undefined, limit: number): readonly Item[] | Promise<readonly Item[]>;
  /** The item an identifier names for this client; undefined when there is none. */
  get(identifier: string): Item | undefined | Promise<Item | undefined>;
  key(item: Item): ItemKey;
  header(item: Item): ItemHeader;
  /**
   * The bytes the item's record in the format `prefix` carries By-Value (0 for a format that
   * carries none): what `pageBytes` bounds. Decided from the item as listed, before it is written.
   */
  byValueBytes(item: Item, prefix: string): number;
  /**
   * Optional: called with the items of a page (or GetRecord's one item) before the response's
   * first byte, to read what their records need, so that a failure to read it is an error of
   * the whole request (answered 500) rather than an answer cut off halfway.
   */
  prepare?(items: readonly Item[]): void | Promise<void>;
  /** The item's record in the format `prefix`, as written now. */
  record(item: Item, prefix: string): ItemRecord | Promise<ItemRecord>;
}
