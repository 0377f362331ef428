// The names oaibag gives payload files (docs/aip-profile.md, "Paths"): a URL's last path
// segment made into a file name that every BagIt tool we care about reads back identically, a
// record's base name, and the limits that send a path to the by-digest fallback. The manifest
// encoding and the check of any payload path are BagIt's own (bag/bag-paths.ts).
//
// bagit-python decodes only %0D and %0A in manifest paths, never %25, and strips whitespace at
// both ends of a manifest line: the names chosen here contain no `%`, no control characters
// and no leading or trailing whitespace, so both readings of a manifest line give the same path.

import { MAX_NAME_BYTES, utf8Length } from '../bag/bag-paths.js';

/**
 * The longest payload path (under data/, in UTF-8 bytes) a URL is mapped to; a longer one goes
 * to the by-digest fallback. Linux refuses a path of more than 4,096 bytes (ENAMETOOLONG), and
 * the archive's own folder and the bag's come before it: a URL of forty 200-byte segments once
 * failed its whole page.
 */
export const MAX_PAYLOAD_PATH_BYTES = 1024;

/** The name used when a URL path gives nothing usable (`/`, `/..`, an empty segment). */
export const FALLBACK_FILE_NAME = 'index';

/** Unicode whitespace at either end of a name: bagit-python strips it from manifest lines. */
const EDGE_SPACE = /^[\s\u0085\u180e\u200b\ufeff]+|[\s\u0085\u180e\u200b\ufeff]+$/gu;

/**
 * Turns the last segment of a URL path (still percent-encoded, as in the URL) into a payload
 * file name: percent-escapes decoded as UTF-8 (invalid bytes become U+FFFD), NFC, then made
 * safe while staying recognisable: `/`, `\`, `%`, NUL and other control characters become `_`,
 * whitespace at the ends is trimmed, `.`, `..` and empty give `fallback`, and a name over 255
 * UTF-8 bytes is shortened in its stem so the extension (what tells a user and a tool what the
 * file is) survives. `%` is replaced because bagit-python does not decode `%25` (see the top of
 * this file).
 */
export function safeFileName(urlSegment: string, fallback: string = FALLBACK_FILE_NAME): string {
  let name = percentDecode(urlSegment).normalize('NFC');
  // C0, DEL, C1, the Unicode line and paragraph separators, and the path separators.
  name = name.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029/\\%]/gu, '_');
  name = name.replace(EDGE_SPACE, '');
  if (name === '' || name === '.' || name === '..') return fallback;
  return truncateName(name, MAX_NAME_BYTES);
}

/**
 * The name a record's payload files are given in data/ (`a.pdf`, then `a-2.pdf`, … for the
 * other parts): the last path segment of the record's identifier, made safe. The identifier
 * is usually the resource's URL; a DSpace (`urn:hdl:1234/56`) or aDORe (`info:lanl-repo/…`)
 * identifier gives its last `/` segment too, and one that is no URL at all is taken whole as
 * a path. The restore reader relies on this to put the parts back in the record's order.
 */
export function payloadBaseName(identifier: string): string {
  let path: string;
  try {
    path = new URL(identifier).pathname;
  } catch {
    path = identifier;
  }
  return safeFileName(path.split('/').pop() ?? '');
}

/**
 * Shortens `name` to at most `maxBytes` UTF-8 bytes, cutting the stem and keeping a short
 * extension (`.pdf`, `.tar.gz` keeps `.gz`), never splitting a code point, and re-trimming
 * whitespace the cut may expose.
 */
export function truncateName(name: string, maxBytes: number = MAX_NAME_BYTES): string {
  if (utf8Length(name) <= maxBytes) return name;
  const dot = name.lastIndexOf('.');
  const ext = dot > 0 && name.length - dot <= 17 && !/\s/u.test(name.slice(dot)) ? name.slice(dot) : '';
  const stem = ext === '' ? name : name.slice(0, dot);
  const budget = maxBytes - utf8Length(ext);
  let kept = '';
  let used = 0;
  for (const codePoint of stem) {
    const size = utf8Length(codePoint);
    if (used + size > budget) break;
    kept += codePoint;
    used += size;
  }
  // A cut between a base letter and its combining mark can leave a non-NFC tail; re-normalising
  // only ever shortens or keeps the length.
  kept = kept.normalize('NFC').replace(EDGE_SPACE, '');
  return (kept === '' ? FALLBACK_FILE_NAME : kept) + ext;
}

/**
 * A name not yet in `taken` (compared in NFC): `name`, then `name-2.ext`, `name-3.ext`…
 * Compound objects may give two components the same URL file name; each needs its own file.
 * The caller adds the result to `taken`.
 */
export function uniqueFileName(name: string, taken: ReadonlySet<string>): string {
  if (!taken.has(name)) return name;
  const dot = name.lastIndexOf('.');
  const stem = dot > 0 ? name.slice(0, dot) : name;
  const ext = dot > 0 ? name.slice(dot) : '';
  for (let n = 2; ; n += 1) {
    const suffix = `-${n}${ext}`;
    const candidate = truncateName(stem, MAX_NAME_BYTES - utf8Length(suffix)) + suffix;
    if (!taken.has(candidate)) return candidate;
  }
}

/** Decodes `%XX` escapes as UTF-8 bytes; a `%` not followed by two hex digits stays literal. */
function percentDecode(text: string): string {
  if (!text.includes('%')) return text;
  const bytes: number[] = [];
  const encoder = new TextEncoder();
  for (let i = 0; i < text.length; ) {
    const hex = text.slice(i + 1, i + 3);
    if (text[i] === '%' && /^[0-9a-fA-F]{2}$/.test(hex)) {
      bytes.push(Number.parseInt(hex, 16));
      i += 3;
      continue;
    }
    const codePoint = text.codePointAt(i)!;
    const char = String.fromCodePoint(codePoint);
    bytes.push(...encoder.encode(char));
    i += char.length;
  }
  return new TextDecoder('utf-8', { fatal: false }).decode(Uint8Array.from(bytes));
}
