export { Base64Decoder } from './base64-decoder.js';
export { encodeBase64Lines } from './base64-encoder.js';
export type { DatastreamHandler, DeclineHeld, IncomingDatastream } from './datastream.js';
export { DidlError, type DidlErrorCode, type DidlPosition, isDidlError } from './errors.js';
export type {
  ByValueContent,
  DidlComponent,
  DidlDocument,
  DidlItem,
  DidlResource,
  Digest,
  HttpHeader,
  OaiHeader,
  OaiPage,
  ResumptionToken,
} from './model.js';
export { METADATA_ENTITY_TYPE, NS } from './namespaces.js';
export { type DidlReadSummary, type ReadDidlOptions, readDidl, readDidlFile } from './read-didl.js';
export { ownedCopy, type ReceivedDidl } from './received-xml.js';
export type { ReadRecord, RecordHandler } from './record-builder.js';
export { componentDigest, componentHeaders, getHeader, isSha256 } from './record-checks.js';
export { type DidlWriteComponent, type DidlWriteInput, type DidlWriteOptions, didlReadable, writeDidl } from './write-didl.js';
export { inheritedNamespaceDeclarations } from './xml-capture.js';
export { assertXmlChars, escapeAttribute, escapeText } from './xml-text.js';
export { type XmlAttribute, type XmlHandlers, type XmlTag, XmlTokenizer, type XmlTokenizerOptions } from './xml-tokenizer.js';
