import { DidlError } from './errors.js';

/**
 * Characters XML 1.0 forbids anywhere in a document (C0 controls other than tab, LF and CR,
 * U+FFFE, U+FFFF, and lone surrogates). Such a value cannot be written without losing
 * information, so the writer refuses it rather than emit a document nobody can parse.
 */
const FORBIDDEN = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * What FORBIDDEN may match, without its lookarounds: cheaper to run over every run of markup,
 * and only a text that holds a surrogate (or a forbidden character) is looked at closer.
 */
const SUSPECT = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uD800-\uDFFF\uFFFE\uFFFF]/;

/** Index of the first character XML 1.0 forbids in `text`, or -1. */
export function findForbiddenXmlChar(text: string): number {
  if (!SUSPECT.test(text)) return -1;
  const match = FORBIDDEN.exec(text);
  return match ? match.index : -1;
}

/** Throws ERR_DIDL_XML_CHAR when `value` holds a character XML 1.0 cannot carry. */
export function assertXmlChars(value: string, what: string): void {
  const match = FORBIDDEN.exec(value);
  if (match) {
    const code = match[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
    throw new DidlError('ERR_DIDL_XML_CHAR', `${what} holds U+${code}, which XML 1.0 cannot carry`, {
      hint: 'percent-encode the value, or drop the character',
    });
  }
}

/** Escapes character data. `>` is escaped too, so `]]>` can never appear. */
export function escapeText(value: string): string {
  // Most values need nothing: a test is cheaper than a replace with a callback.
  return TEXT_SPECIAL.test(value) ? value.replace(/[&<>\r]/g, (c) => TEXT_ESCAPES[c]!) : value;
}

/** Escapes an attribute value in double quotes; tab, LF and CR as references so they survive normalisation. */
export function escapeAttribute(value: string): string {
  return ATTRIBUTE_SPECIAL.test(value) ? value.replace(/[&<>"\t\n\r]/g, (c) => ATTRIBUTE_ESCAPES[c]!) : value;
}

const TEXT_SPECIAL = /[&<>\r]/;
const ATTRIBUTE_SPECIAL = /[&<>"\t\n\r]/;

const TEXT_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '\r': '&#13;' };
const ATTRIBUTE_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  '\t': '&#9;',
  '\n': '&#10;',
  '\r': '&#13;',
};

/** An ASCII NCName: what we are willing to write as an element's local name. */
export function isAsciiNcName(name: string): boolean {
  return /^[A-Za-z_][A-Za-z0-9._-]*$/.test(name);
}
