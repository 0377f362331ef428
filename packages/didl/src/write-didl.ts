import { Readable } from 'node:stream';
import { encodeBase64Lines } from './base64-encoder.js';
import { DidlError } from './errors.js';
import type { Digest, HttpHeader } from './model.js';
import { DIDL_SCHEMA_LOCATION, NS } from './namespaces.js';
import { assertXmlChars, escapeAttribute, escapeText, isAsciiNcName } from './xml-text.js';

/** One Component to write: a datastream By-Reference, By-Value, or both. */
export interface DidlWriteComponent {
  mimeType: string;
  /** By-Reference URL (http or https). */
  ref?: string;
  /** By-Value content, read and base64-encoded as the document is written. */
  byValue?: AsyncIterable<Uint8Array>;
  /** Fixity of the datastream, written as a PREMIS fixity Descriptor of the Component. */
  digest?: Digest;
  /** Headers of this Component (for compound objects; mod_oai puts them on the Item). */
  headers?: HttpHeader[];
  /** Descriptors to write as they are (self-contained XML, e.g. from the reader). */
  descriptors?: string[];
  /** Resource elements to write as they are, after ours (self-contained XML). */
  resources?: string[];
}

/** One web resource in the mod_oai DIDL profile. */
export interface DidlWriteInput {
  /** The resource URL, written as dii:Identifier. */
  identifier: string;
  /** HTTP response headers, in order; written as an http_header Descriptor of the Item. */
  headers?: HttpHeader[];
  /** Extra Item Descriptors, written as they are after ours. */
  descriptors?: string[];
  components: DidlWriteComponent[];
  documentId?: string;
}

export interface DidlWriteOptions {
  /** Write `<?xml ...?>` first (default true; false when embedding in an OAI-PMH response). */
  xmlDeclaration?: boolean;
  /** Write xsi:schemaLocation for the DIDL schema (default true). */
  schemaLocation?: boolean;
  /** Spaces per indentation level (default 2). */
  indent?: number;
}

/**
 * Writes a DIDL document as a sequence of strings. By-Value content is pulled from its
 * source only as the consumer reads, so memory stays flat whatever the file size.
 */
export async function* writeDidl(input: DidlWriteInput, options: DidlWriteOptions = {}): AsyncGenerator<string> {
  validateInput(input);
  const step = ' '.repeat(options.indent ?? 2);
  const pad = (level: number) => step.repeat(level);
  if (options.xmlDeclaration ?? true) yield '<?xml version="1.0" encoding="UTF-8"?>\n';

  let root = `<didl:DIDL xmlns:didl="${NS.didl}" xmlns:dii="${NS.dii}" xmlns:http="${NS.http}" xmlns:premis="${NS.premis}"`;
  if (options.schemaLocation ?? true) root += ` xmlns:xsi="${NS.xsi}" xsi:schemaLocation="${NS.didl} ${DIDL_SCHEMA_LOCATION}"`;
  if (input.documentId !== undefined) root += ` DIDLDocumentId="${escapeAttribute(input.documentId)}"`;
  yield `${root}>\n${pad(1)}<didl:Item>\n`;

  yield statement(2, pad, `<dii:Identifier>${escapeText(input.identifier)}</dii:Identifier>`);
  if (input.headers && input.headers.length > 0) yield statement(2, pad, headerXml(input.headers, 4, pad));
  for (const descriptor of input.descriptors ?? []) yield `${pad(2)}${descriptor}\n`;

  for (const component of input.components) {
    yield `${pad(2)}<didl:Component>\n`;
    if (component.headers && component.headers.length > 0) yield statement(3, pad, headerXml(component.headers, 5, pad));
    if (component.digest) yield statement(3, pad, fixityXml(component.digest, 5, pad));
    for (const descriptor of component.descriptors ?? []) yield `${pad(3)}${descriptor}\n`;
    const mimeType = escapeAttribute(component.mimeType);
    if (component.ref !== undefined) yield `${pad(3)}<didl:Resource mimeType="${mimeType}" ref="${escapeAttribute(component.ref)}"/>\n`;
    if (component.byValue) {
      yield `${pad(3)}<didl:Resource mimeType="${mimeType}" encoding="base64">\n`;
      yield* encodeBase64Lines(component.byValue);
      yield `${pad(3)}</didl:Resource>\n`;
    }
    for (const resource of component.resources ?? []) yield `${pad(3)}${resource}\n`;
    yield `${pad(2)}</didl:Component>\n`;
  }
  yield `${pad(1)}</didl:Item>\n</didl:DIDL>\n`;
}

/** writeDidl as a Readable of UTF-8 bytes, for piping to a file or an HTTP response. */
export function didlReadable(input: DidlWriteInput, options: DidlWriteOptions = {}): Readable {
  return Readable.from(writeDidl(input, options), { objectMode: false });
}

function statement(level: number, pad: (level: number) => string, content: string): string {
  return (
    `${pad(level)}<didl:Descriptor>\n` +
    `${pad(level + 1)}<didl:Statement mimeType="application/xml">${content}</didl:Statement>\n` +
    `${pad(level)}</didl:Descriptor>\n`
  );
}

function headerXml(headers: HttpHeader[], level: number, pad: (level: number) => string): string {
  let xml = '<http:header>\n';
  for (const { name, value } of headers) {
    // Header names that are not XML names (RFC 9110 allows `!#$%&'*+^`|~`) go in an attribute.
    xml += isAsciiNcName(name)
      ? `${pad(level)}<http:${name}>${escapeText(value)}</http:${name}>\n`
      : `${pad(level)}<http:field name="${escapeAttribute(name)}">${escapeText(value)}</http:field>\n`;
  }
  return `${xml}${pad(level - 1)}</http:header>`;
}

function fixityXml(digest: Digest, level: number, pad: (level: number) => string): string {
  return (
    '<premis:fixity>\n' +
    `${pad(level)}<premis:messageDigestAlgorithm>${escapeText(digest.algorithm)}</premis:messageDigestAlgorithm>\n` +
    `${pad(level)}<premis:messageDigest>${escapeText(digest.value)}</premis:messageDigest>\n` +
    `${pad(level - 1)}</premis:fixity>`
  );
}

function validateInput(input: DidlWriteInput): void {
  if (!input.identifier) throw new DidlError('ERR_DIDL_NO_IDENTIFIER', 'a DIDL document needs an identifier');
  assertXmlChars(input.identifier, 'identifier');
  if (input.documentId !== undefined) assertXmlChars(input.documentId, 'documentId');
  const checkHeaders = (headers: HttpHeader[] | undefined) => {
    for (const { name, value } of headers ?? []) {
      if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(name)) {
        throw new DidlError('ERR_DIDL_BAD_HEADER', `header name ${JSON.stringify(name)} is not an HTTP token`);
      }
      assertXmlChars(value, `header ${name}`);
    }
  };
  checkHeaders(input.headers);
  for (const component of input.components) {
    assertXmlChars(component.mimeType, 'mimeType');
    checkHeaders(component.headers);
    if (component.ref !== undefined) {
      assertXmlChars(component.ref, 'ref');
      if (!/^https?:\/\//i.test(component.ref)) {
        throw new DidlError('ERR_DIDL_BAD_REF', `ref "${component.ref}" is not an http or https URL`);
      }
    }
    if (component.digest) {
      if (!/^[0-9a-f]+$/i.test(component.digest.value)) throw new DidlError('ERR_DIDL_BAD_HEADER', `digest "${component.digest.value}" is not hexadecimal`);
      assertXmlChars(component.digest.algorithm, 'digest algorithm');
    }
  }
}
