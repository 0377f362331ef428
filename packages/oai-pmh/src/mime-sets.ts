// The MIME-type sets of mod_oai (`mime:image:jpeg`), as oaibag-repository names its sets and
// `oaibag serve` names the sets of the records it archived.

/** The root of the set hierarchy: every item is in it. */
export const MIME_SET_ROOT = 'mime';

/** Longest setSpec we produce or accept; the OAI-PMH schema sets no limit, our index and harvesters' do. */
export const MAX_SET_SPEC_LENGTH = 255;

/** The setSpec pattern of the OAI-PMH 2.0 schema (setSpecType), anchored. */
const SET_SPEC_PATTERN = /^[A-Za-z0-9\-_.!~*'()]+(?::[A-Za-z0-9\-_.!~*'()]+)*$/;

/** Characters that stand for themselves in a set spec part; `~` is left out, it is our escape. */
const LITERAL = /^[A-Za-z0-9\-_.!*'()]$/;

/**
 * The set of a MIME type, `mime:type:subtype` (`Text/HTML; charset=utf-8` → `mime:text:html`):
 * parameters dropped, lower-cased, and inside each part every character the schema pattern
 * does not allow (and `~` itself) written as `~` plus two upper-case hex digits per UTF-8
 * byte (`image/svg+xml` → `mime:image:svg~2Bxml`). Reversible, and the result always
 * matches the schema pattern; registered types (parts of at most 127 characters, RFC 6838)
 * stay below the 255-character cap.
 *
 * Null for a string that is not `type/subtype`.
 */
export function mimeSetSpec(mimeType: string): string | null {
  const parts = splitMimeType(mimeType);
  if (parts === null) return null;
  return `${MIME_SET_ROOT}:${encodePart(parts.type)}:${encodePart(parts.subtype)}`;
}

/**
 * What a set in the MIME hierarchy selects: every item with a MIME type (the root), a major
 * type (`mime:image`), or one type (`mime:image:jpeg`); null for a spec outside the hierarchy
 * or not spelled as mimeSetSpec spells it.
 */
export function mimeSetSelection(setSpec: string): { type?: string; subtype?: string } | null {
  if (setSpec === MIME_SET_ROOT) return {};
  const parts = setSpec.split(':');
  if (parts[0] !== MIME_SET_ROOT) return null;
  if (parts.length === 2) {
    const type = decodePart(parts[1] ?? '');
    return type !== null && splitMimeType(`${type}/x`)?.type === type ? { type } : null;
  }
  const mimeType = mimeTypeForSetSpec(setSpec);
  if (mimeType === null) return null;
  const slash = mimeType.indexOf('/');
  return { type: mimeType.slice(0, slash), subtype: mimeType.slice(slash + 1) };
}

/** The type and subtype of a MIME type as the sets see it: lower case, parameters dropped. */
export function mimeEssence(mimeType: string): { type: string; subtype: string } | null {
  return splitMimeType(mimeType);
}

/**
 * The MIME type of a leaf set, `mime:type:subtype`, or null when the spec is not of that
 * form or not exactly as setSpecForMimeType writes it (bad or lower-case escapes, an escape
 * of a character that needs none, upper-case letters): one set, one spelling.
 */
export function mimeTypeForSetSpec(setSpec: string): string | null {
  const parts = setSpec.split(':');
  if (parts.length !== 3 || parts[0] !== MIME_SET_ROOT) return null;
  const type = decodePart(parts[1] ?? '');
  const subtype = decodePart(parts[2] ?? '');
  if (type === null || subtype === null) return null;
  const mimeType = `${type}/${subtype}`;
  const canonical = splitMimeType(mimeType);
  if (canonical === null || canonical.type !== type || canonical.subtype !== subtype) return null;
  return mimeType;
}

/**
 * The set and every set above it, root first (`mime:image:gif` → mime, mime:image,
 * mime:image:gif): ListSets names them all; an item's header names only its leaf set,
 * membership of the ones above following from it. Empty for a string that is not a valid setSpec.
 */
export function setSpecAncestors(setSpec: string): string[] {
  if (!isValidSetSpec(setSpec)) return [];
  const parts = setSpec.split(':');
  return parts.map((_, i) => parts.slice(0, i + 1).join(':'));
}

/**
 * A readable setName for ListSets: 'Files by MIME type' for the root, 'MIME type image/*'
 * for a type, 'MIME type image/svg+xml' for a leaf. A spec outside our hierarchy is its own name.
 */
export function setNameFor(setSpec: string): string {
  if (setSpec === MIME_SET_ROOT) return 'Files by MIME type';
  const parts = setSpec.split(':');
  if (parts[0] === MIME_SET_ROOT && parts.length === 2) {
    const type = decodePart(parts[1] ?? '');
    if (type !== null && splitMimeType(`${type}/*`)?.type === type) return `MIME type ${type}/*`;
  }
  const mimeType = mimeTypeForSetSpec(setSpec);
  return mimeType === null ? setSpec : `MIME type ${mimeType}`;
}

/** Whether `value` matches the schema's setSpec pattern and is at most 255 characters long. */
export function isValidSetSpec(value: string): boolean {
  return value.length <= MAX_SET_SPEC_LENGTH && SET_SPEC_PATTERN.test(value);
}

/** Type and subtype, lower case, parameters dropped; null when either is missing. */
function splitMimeType(mimeType: string): { type: string; subtype: string } | null {
  const essence = (mimeType.split(';')[0] ?? '').trim().toLowerCase();
  const slash = essence.indexOf('/');
  if (slash < 0) return null;
  const type = essence.slice(0, slash).trim();
  const subtype = essence.slice(slash + 1).trim();
  return type === '' || subtype === '' ? null : { type, subtype };
}

function encodePart(part: string): string {
  let encoded = '';
  for (const char of part) {
    if (LITERAL.test(char)) {
      encoded += char;
    } else {
      for (const byte of Buffer.from(char, 'utf8')) encoded += `~${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    }
  }
  return encoded;
}

// fatal: a byte sequence that is not UTF-8 is a bad spec, not a name with U+FFFD in it.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The inverse of encodePart, or null unless `part` is exactly what encodePart would write. */
function decodePart(part: string): string | null {
  if (part === '') return null;
  const bytes: number[] = [];
  for (let i = 0; i < part.length; i++) {
    const char = part[i] as string;
    if (char === '~') {
      const hex = part.slice(i + 1, i + 3);
      if (!/^[0-9A-F]{2}$/.test(hex)) return null;
      bytes.push(Number.parseInt(hex, 16));
      i += 2;
    } else if (LITERAL.test(char)) {
      bytes.push(char.charCodeAt(0));
    } else {
      return null;
    }
  }
  let decoded: string;
  try {
    decoded = utf8.decode(Uint8Array.from(bytes));
  } catch {
    return null;
  }
  return encodePart(decoded) === part ? decoded : null;
}
