/**
 * The in-memory shape of a DIDL record as the reader reports it. Datastream bytes are never
 * part of it: By-Value content flows through `onDatastream` and only its size and digest
 * are kept here.
 */

/** One HTTP response header, in the order the record gave it (repeats kept). */
export interface HttpHeader {
  name: string;
  value: string;
}

/** A fixity value carried by the record (PREMIS `fixity`). `value` is lowercase hex. */
export interface Digest {
  algorithm: string;
  value: string;
}

/** What the reader measured on a By-Value datastream while decoding it. */
export interface ByValueContent {
  encoding: 'base64';
  /** Decoded size in bytes. */
  size: number;
  /** SHA-256 of the decoded bytes, lowercase hex. */
  sha256: string;
}

export interface DidlResource {
  mimeType?: string;
  /** By-Reference URL (http or https). */
  ref?: string;
  /** Present when the Resource carries its bytes By-Value. */
  byValue?: ByValueContent;
  /** Inline content that is neither a reference nor base64 (XML or text), kept as XML. */
  inline?: string;
  /** The `encoding` attribute as written, when it was not base64. */
  encoding?: string;
}

export interface DidlComponent {
  /** Headers given inside this Component's own Descriptors. */
  headers?: HttpHeader[];
  /** Digest given inside this Component's own Descriptors. */
  digest?: Digest;
  resources: DidlResource[];
  /** Descriptors we do not interpret, as self-contained XML (namespaces declared). */
  descriptors: string[];
}

export interface DidlItem {
  /** The `dii:Identifier` of this Item (for the top Item: the resource URL). */
  identifier?: string;
  /** Further `dii:Identifier`s of the top Item (read with `lenientIdentifier` only). */
  otherIdentifiers?: string[];
  /** HTTP headers of this Item, from its Descriptors or from a nested metadata Item. */
  headers?: HttpHeader[];
  digest?: Digest;
  components: DidlComponent[];
  /** Nested Items that are content (metadata Items are folded into their parent). */
  items: DidlItem[];
  descriptors: string[];
}

/** One DIDL document (one web resource in the mod_oai profile). */
export interface DidlDocument {
  /** The top Item's identifier: the resource URL. */
  identifier: string;
  /** The `DIDLDocumentId` attribute, when present. */
  documentId?: string;
  /**
   * Where `identifier` came from when the top Item has no `dii:Identifier` (read with
   * `lenientIdentifier` only): the DIDL's `DIDLDocumentId`, or the OAI-PMH header.
   */
  identifierFrom?: 'DIDLDocumentId' | 'oai-header';
  item: DidlItem;
}

/** The OAI-PMH `header` of a record, when the DIDL came inside an OAI-PMH response. */
export interface OaiHeader {
  identifier: string;
  datestamp: string;
  setSpecs: string[];
  deleted: boolean;
}

/** An OAI-PMH `resumptionToken` element. An empty `value` means the list is complete. */
export interface ResumptionToken {
  value: string;
  completeListSize?: number;
  cursor?: number;
  expirationDate?: string;
}

/** Envelope facts of an OAI-PMH response page. */
export interface OaiPage {
  responseDate?: string;
  /** The `request` element: the base URL and the request's attributes. */
  request?: { url: string; attributes: Record<string, string> };
  /** The verb element found (ListRecords, GetRecord, ListIdentifiers, ...). */
  verb?: string;
  errors: Array<{ code: string; message: string }>;
  resumptionToken?: ResumptionToken;
}
