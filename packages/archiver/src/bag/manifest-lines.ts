// The one reader of BagIt manifest lines (RFC 8493 section 2.1.3): `<hex digest> <path>`, the
// path decoded from the manifest encoding (%25, %0D, %0A) and checked to stay inside the bag.
// The verifier reports what it finds; the restore reader refuses the bag at the first problem.
import { decodeManifestPath } from './bag-paths.js';

/** One line of a manifest: an entry, or why it is not one. `line` is 1-based. */
export type ManifestLine =
  | { line: number; digest: string; path: string; problem?: undefined }
  /** `format`: not `<digest> <path>` with a digest of the right length; `percent`: a `%` other than %25, %0D, %0A; `unsafe`: a path that leaves the bag. */
  | { line: number; problem: 'format' | 'percent' | 'unsafe'; text: string };

/**
 * Splits `text` (the manifest, decoded) into lines (CR, LF or CRLF; a last empty line is not
 * one) and reads each: digests of `digestLength` hex digits, lowercased; paths decoded; a path
 * that is absolute, holds NUL or a backslash, has an empty, `.` or `..` segment or starts with
 * `~` is `unsafe`.
 */
export function readManifestLines(text: string, digestLength: number): ManifestLine[] {
  const lines = text.split(/\r\n|\r|\n/);
  if (lines.at(-1) === '') lines.pop();
  return lines.map((text, index): ManifestLine => {
    const line = index + 1;
    const match = /^([0-9a-fA-F]+)[ \t]+(.*)$/.exec(text);
    if (match === null || match[1]!.length !== digestLength || match[2] === '') return { line, problem: 'format', text };
    const path = decodeManifestPath(match[2]!);
    if (path === undefined) return { line, problem: 'percent', text: match[2]! };
    const segments = path.split('/');
    if (
      path.startsWith('/') ||
      path.includes('\0') ||
      path.includes('\\') ||
      path.startsWith('~') ||
      segments.some((s) => s === '' || s === '.' || s === '..')
    ) {
      return { line, problem: 'unsafe', text: path };
    }
    return { line, digest: match[1]!.toLowerCase(), path };
  });
}
