// Names inside a bag: how a payload path is written in a manifest line (RFC 8493 §2.1.3), and
// how a hostile or awkward name is checked before the bag writer takes it. The names oaibag
// itself gives payload files are its profile's (aip/payload-names.ts).
//
// Two readers disagree on manifest paths, and the archive must satisfy both:
// - RFC 8493 says CR, LF and `%` (and only those) are percent-encoded in a manifest path;
// - bagit-python (the validator the issue names) encodes and decodes only CR and LF, never
//   `%25`, and strips whitespace at both ends of a manifest line.
// The writer follows the RFC to the letter and refuses the names bagit-python would read back
// otherwise (`normalizePayloadPath`).

import { ArchiverError } from '../core/errors.js';

/** Longest file name (one path segment) most file systems accept, in UTF-8 bytes. */
export const MAX_NAME_BYTES = 255;

/**
 * A path as it appears in a manifest line: `%` → `%25`, CR → `%0D`, LF → `%0A` (RFC 8493
 * §2.1.3; a CRLF becomes `%0D%0A`). Nothing else is touched: encoding a space or a non-ASCII
 * letter would name a different file.
 */
export function encodeManifestPath(path: string): string {
  return path.replace(/[%\r\n]/g, (c) => (c === '%' ? '%25' : c === '\r' ? '%0D' : '%0A'));
}

/**
 * The inverse of {@link encodeManifestPath}: `%25`, `%0D`, `%0A` (any case) are decoded; any
 * other `%` is malformed under RFC 8493 (a literal `%` must be written `%25`), so the result
 * is `undefined` and the verifier reports the line instead of guessing.
 */
export function decodeManifestPath(encoded: string): string | undefined {
  let malformed = false;
  const decoded = encoded.replace(/%(..)?/gs, (all, hex: string | undefined) => {
    const code = hex?.toUpperCase();
    if (code === '25') return '%';
    if (code === '0D') return '\r';
    if (code === '0A') return '\n';
    malformed = true;
    return all;
  });
  return malformed ? undefined : decoded;
}

/** The byte length of `text` in UTF-8. */
export function utf8Length(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/**
 * Checks a payload path relative to `data/` (`report.pdf`, `part-1/page 2.png`) and returns
 * it in Unicode NFC, the form written to the manifests. Refused with ERR_ARCHIVE_PATH: empty,
 * absolute, a backslash, NUL, an empty, `.` or `..` segment, a segment over 255 bytes, a lone
 * surrogate, or whitespace at the very end (bagit-python would read a different name).
 * CR, LF and `%` are allowed: the manifest encoding carries them (RFC 8493).
 */
export function normalizePayloadPath(relName: string): string {
  const refuse = (why: string): never => {
    throw new ArchiverError('ERR_ARCHIVE_PATH', `payload path ${JSON.stringify(relName)} ${why}`, {
      path: relName,
    });
  };
  if (relName.length === 0) refuse('is empty');
  if (/\p{Cs}/u.test(relName)) refuse('is not well-formed Unicode');
  if (relName.includes('\0')) refuse('contains NUL');
  if (relName.includes('\\')) refuse('contains a backslash');
  if (relName.startsWith('/')) refuse('is absolute');
  const nfc = relName.normalize('NFC');
  for (const segment of nfc.split('/')) {
    if (segment === '' || segment === '.' || segment === '..') refuse('has an empty, "." or ".." segment');
    if (utf8Length(segment) > MAX_NAME_BYTES) refuse(`has a segment longer than ${MAX_NAME_BYTES} bytes`);
  }
  // bagit-python decodes only %0D and %0A in manifest paths, so a name with "%" cannot be
  // written in a way both RFC 8493 (which wants %25) and it read back (aip/payload-names.ts maps it).
  if (nfc.includes('%')) refuse('contains "%"');
  // bagit-python strips each manifest line with Python's idea of whitespace, which also
  // covers U+001C-U+001F and U+0085: a name ending in one would not read back.
  if (/[\s\u001c-\u001f\u0085]$/u.test(nfc)) refuse('ends with whitespace');
  return nfc;
}
