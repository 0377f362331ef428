export { readDidl, readDidlFile, type ReadDidlOptions, type DidlReadSummary } from './read-didl.js';
export { writeDidl, didlReadable, type DidlWriteInput, type DidlWriteComponent, type DidlWriteOptions } from './write-didl.js';
export type { ReadRecord, RecordHandler } from './record-builder.js';
export type { ReceivedDidl } from './received-xml.js';
export type { IncomingDatastream, DatastreamHandler } from './datastream.js';
export type {
  ByValueContent,
  Digest,
  DidlComponent,
  DidlDocument,
  DidlItem,
  DidlResource,
  HttpHeader,
  OaiHeader,
  OaiPage,
  ResumptionToken,
} from './model.js';
export { DidlError, isDidlError, type DidlErrorCode, type DidlPosition } from './errors.js';
export { getHeader, componentHeaders, componentDigest, isSha256 } from './record-checks.js';
export { Base64Decoder } from './base64-decoder.js';
export { encodeBase64Lines } from './base64-encoder.js';
export { NS, METADATA_ENTITY_TYPE } from './namespaces.js';
export { assertXmlChars, escapeAttribute, escapeText } from './xml-text.js';
