import { SiteMappingError } from './site-mapping-error.js';

/** Longest segment (file or directory name) we map, in UTF-8 bytes: NAME_MAX on common file systems. */
export const MAX_SEGMENT_BYTES = 255;

/** Longest relative path we map, in UTF-8 bytes: PATH_MAX on Linux. */
export const MAX_PATH_BYTES = 4096;

/**
 * The canonical URL path of a file: each segment through encodeURIComponent, so only
 * alphanumerics and `-_.!~*'()` stay literal and every other character becomes upper-case
 * %XX of its UTF-8 bytes. One encoding, fixed, so that a file has exactly one identifier
 * (the identifier is the URL, and OAI-PMH identifiers are compared as strings).
 *
 * Throws SiteMappingError for a string that has no UTF-8 form (a lone surrogate).
 */
export function encodeUrlPath(relPath: string): string {
  try {
    return relPath.split('/').map(encodeURIComponent).join('/');
  } catch (error) {
    throw new SiteMappingError(`path has no UTF-8 form (lone surrogate): ${JSON.stringify(relPath)}`, { cause: error });
  }
}

/** The OAI-PMH identifier (and URL) of a file: the base URL, '/', the canonical URL path. */
export function identifierForPath(baseUrl: string, relPath: string): string {
  return `${withoutTrailingSlash(baseUrl)}/${encodeUrlPath(relPath)}`;
}

/**
 * The relative path a request path names, or null when the request must not reach the file
 * system. `encodedPath` is relative to the base path (no leading slash), still
 * percent-encoded, query removed: the path as it came off the wire.
 *
 * Null (never an exception: this runs on every request) for: a raw character outside
 * printable ASCII (a URL on the wire has none), a raw `?` or `#` (a query or fragment the
 * caller failed to remove), a malformed % escape, decoded bytes that are not valid UTF-8,
 * a C0 control character or DEL, a backslash (raw or encoded: a separator on Windows and to
 * some proxies), an encoded '/' inside a segment (it would name a different file than the
 * segment boundary the server routed on), an empty segment, a `.` or `..` segment (raw or
 * encoded), a segment over 255 UTF-8 bytes, a path over 4096 UTF-8 bytes.
 *
 * Harmless non-canonical spellings (`%41` for `A`, lower-case hex, raw `+`, `~`, `&`)
 * decode as any web server decodes them; a UTF-8 BOM is kept, never stripped, so the result
 * is byte for byte the name the request spelled.
 */
export function pathForUrlPath(encodedPath: string): string | null {
  // Every decoded byte costs at most three input characters, so a longer input can only
  // decode to an over-long path; refusing it first bounds the work a hostile request buys.
  if (encodedPath.length === 0 || encodedPath.length > 3 * MAX_PATH_BYTES) return null;
  const segments: string[] = [];
  let totalBytes = 0;
  for (const rawSegment of encodedPath.split('/')) {
    const bytes = decodeSegmentBytes(rawSegment);
    if (bytes === null || bytes.length === 0 || bytes.length > MAX_SEGMENT_BYTES) return null;
    if (bytes.some(isForbiddenByte)) return null;
    const segment = decodeUtf8(bytes);
    if (segment === null || segment === '.' || segment === '..') return null;
    totalBytes += bytes.length + (segments.length > 0 ? 1 : 0);
    if (totalBytes > MAX_PATH_BYTES) return null;
    segments.push(segment);
  }
  return segments.join('/');
}

/**
 * The relative path an OAI-PMH identifier names, or null when it names no file: it must be
 * exactly `baseUrl/` followed by a canonical URL path (the form identifierForPath produces),
 * without query or fragment. Requiring the canonical form makes the mapping one to one:
 * `…/%41.txt` is not a second identifier of `A.txt` but no identifier at all
 * (idDoesNotExist), even though the static server would serve that URL.
 */
export function pathForIdentifier(baseUrl: string, identifier: string): string | null {
  const prefix = `${withoutTrailingSlash(baseUrl)}/`;
  if (!identifier.startsWith(prefix)) return null;
  const rest = identifier.slice(prefix.length);
  if (rest.includes('?') || rest.includes('#')) return null;
  const relPath = pathForUrlPath(rest);
  if (relPath === null || encodeUrlPath(relPath) !== rest) return null;
  return relPath;
}

/**
 * Whether a file's relative path can be reached by URL at all: its canonical URL path maps
 * back to it. False for names holding a control character or a backslash, or too long; the
 * scanner can use it to leave such files out of the index rather than export an identifier
 * that answers 404.
 */
export function isAddressablePath(relPath: string): boolean {
  try {
    return pathForUrlPath(encodeUrlPath(relPath)) === relPath;
  } catch {
    return false;
  }
}

function withoutTrailingSlash(baseUrl: string): string {
  return baseUrl.endsWith('/') ? baseUrl.slice(0, -1) : baseUrl;
}

const HEX_DIGIT = /^[0-9A-Fa-f]{2}$/;

/** The bytes of one still-encoded segment, or null for a character or escape no valid URL path holds. */
function decodeSegmentBytes(rawSegment: string): number[] | null {
  const bytes: number[] = [];
  for (let i = 0; i < rawSegment.length; i++) {
    const code = rawSegment.charCodeAt(i);
    if (code === 0x25 /* % */) {
      const hex = rawSegment.slice(i + 1, i + 3);
      if (!HEX_DIGIT.test(hex)) return null;
      bytes.push(Number.parseInt(hex, 16));
      i += 2;
    } else if (code <= 0x20 || code >= 0x7f || code === 0x3f /* ? */ || code === 0x23 /* # */) {
      return null;
    } else {
      bytes.push(code);
    }
  }
  return bytes;
}

function isForbiddenByte(byte: number): boolean {
  return byte < 0x20 || byte === 0x7f || byte === 0x2f /* / */ || byte === 0x5c /* \ */;
}

// fatal: invalid UTF-8 (overlong forms, surrogates, truncated sequences) is refused rather
// than replaced by U+FFFD, which would let many byte strings name one file.
// ignoreBOM: keep a leading U+FEFF; stripping it would make `%EF%BB%BFa` another name of `a`.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function decodeUtf8(bytes: number[]): string | null {
  try {
    return utf8.decode(Uint8Array.from(bytes));
  } catch {
    return null;
  }
}
