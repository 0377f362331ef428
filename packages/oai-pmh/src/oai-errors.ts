/** The error codes of OAI-PMH 2.0 (section 3.6); the `code` attribute of an `error` element. */
export type OaiErrorCode =
  | 'badArgument'
  | 'badResumptionToken'
  | 'badVerb'
  | 'cannotDisseminateFormat'
  | 'idDoesNotExist'
  | 'noRecordsMatch'
  | 'noMetadataFormats'
  | 'noSetHierarchy';

/** One `error` element of a response: its code and its one-line human-readable text. */
export interface OaiProtocolError {
  code: OaiErrorCode;
  message: string;
}

/**
 * Each condition as the specification's table in section 3.6 describes it. Harvester
 * operators search for these sentences, so every message starts with one word for word.
 */
export const OAI_ERROR_DESCRIPTIONS: Readonly<Record<OaiErrorCode, string>> = Object.freeze({
  badArgument:
    'The request includes illegal arguments, is missing required arguments, includes a repeated argument, or values for arguments have an illegal syntax.',
  badResumptionToken: 'The value of the resumptionToken argument is invalid or expired.',
  badVerb: 'Value of the verb argument is not a legal OAI-PMH verb, the verb argument is missing, or the verb argument is repeated.',
  cannotDisseminateFormat:
    'The metadata format identified by the value given for the metadataPrefix argument is not supported by the item or by the repository.',
  idDoesNotExist: 'The value of the identifier argument is unknown or illegal in this repository.',
  noRecordsMatch: 'The combination of the values of the from, until, set and metadataPrefix arguments results in an empty list.',
  noMetadataFormats: 'There are no metadata formats available for the specified item.',
  noSetHierarchy: 'The repository does not support sets.',
});

/**
 * An `error` element for `code`: the specification's description, then `': '` and what
 * exactly was wrong when `detail` is given. The detail is forced onto one line; anything
 * taken from the request must already have gone through {@link quoteInput}.
 */
export function oaiError(code: OaiErrorCode, detail?: string): OaiProtocolError {
  const description = OAI_ERROR_DESCRIPTIONS[code];
  if (detail === undefined || detail === '') return { code, message: description };
  const oneLine = detail.replace(/[\r\n\u2028\u2029]+/g, ' ');
  return { code, message: `${description.replace(/\.$/, '')}: ${oneLine}` };
}

/** How many characters of a harvester's value a message quotes before cutting it short. */
export const MAX_QUOTED_CHARACTERS = 100;

/**
 * A value from the request, made safe to put into a message: in single quotes, cut after
 * {@link MAX_QUOTED_CHARACTERS} characters (the full length is then said), and every
 * character that could break a line, reorder a log line or not be written in XML replaced
 * by a `\uXXXX` escape; backslash and quote are escaped too, so the quoting stays
 * unambiguous. Harvesters control these values: they must not forge log lines or bloat
 * responses.
 */
export function quoteInput(value: string): string {
  let out = '';
  let count = 0;
  let index = 0;
  while (index < value.length && count < MAX_QUOTED_CHARACTERS) {
    const code = value.codePointAt(index)!;
    const width = code > 0xffff ? 2 : 1;
    out += escapeCodePoint(code);
    index += width;
    count++;
  }
  if (index >= value.length) return `'${out}'`;
  return `'${out}…' (${characterCount(value)} characters)`;
}

/**
 * The number of Unicode characters (code points) in `value`, which is what a person counts;
 * `value.length` counts UTF-16 units, two for an emoji. An unpaired surrogate counts as one.
 */
export function characterCount(value: string): number {
  let count = value.length;
  for (let index = 0; index < value.length - 1; index++) {
    const unit = value.charCodeAt(index);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = value.charCodeAt(index + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        count--;
        index++;
      }
    }
  }
  return count;
}

function escapeCodePoint(code: number): string {
  if (code === 0x5c) return '\\\\';
  if (code === 0x27) return "\\'";
  const unsafe =
    code < 0x20 ||
    (code >= 0x7f && code <= 0x9f) ||
    code === 0x2028 ||
    code === 0x2029 ||
    // Bidirectional controls would let a value visually reorder the rest of a log line.
    code === 0x200e ||
    code === 0x200f ||
    (code >= 0x202a && code <= 0x202e) ||
    (code >= 0x2066 && code <= 0x2069) ||
    (code >= 0xd800 && code <= 0xdfff) ||
    code === 0xfffe ||
    code === 0xffff;
  if (unsafe) return `\\u${code.toString(16).toUpperCase().padStart(4, '0')}`;
  return String.fromCodePoint(code);
}
