// Where `oaibag restore` writes a resource: its URL's path, percent-decoded segment by
// segment, below the restore folder. The URL comes from a remote repository and is never
// trusted, so this is a pure function that either returns plain, checked segments or refuses
// with a reason; nothing else decides a path below the restore folder.
//
// The URL is parsed by hand, not with WHATWG `new URL()`: that parser removes `..` and `%2e%2e`
// segments and turns `\` into `/` in http(s) URLs, so `http://h/a/../../x` would quietly come
// out as `/x`. A restore must refuse such a URL and say so, not rewrite it into some other
// resource's place. `new URL()` is used only on the authority, to normalise the host.

/** The file name written for a URL that ends in `/` (a directory index). */
export const INDEX_FILE_NAME = 'index.html';

/** Longest file name (one segment) most file systems accept, in UTF-8 bytes. */
export const MAX_SEGMENT_BYTES = 255;

/** A URL mapped to a relative path below the restore folder, or refused. */
export type RestorePath =
  | {
      ok: true;
      /** The path's segments, each a plain file or folder name (never empty, `.`, `..`, nor containing `/`). */
      segments: string[];
      /** The segments joined with `/`, for messages, sorting and `--dry-run`. */
      path: string;
    }
  | { ok: false; reason: string };

export interface RestorePathOptions {
  /**
   * Put the path under a first folder named after the URL's host (`<host>` or `<host>_<port>`
   * for a port that is not the scheme's default): a restore of several sources.
   */
  withHost?: boolean;
}

const URL_SHAPE = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)([^?#]*)(\?[^#]*)?(#.*)?$/s;

/**
 * The relative path that `url` (an OAI identifier, which for our repositories is the
 * resource's URL) is restored at. Refused, with a one-line reason: a scheme other than http or
 * https; a backslash or control character anywhere; a query or fragment (no file path stands
 * for it); a malformed `%` escape or one that decodes to bytes that are not UTF-8; a decoded
 * segment that is `.` or `..`, contains `/` or `\` (`%2F`, `%5C`), NUL or another C0 control
 * character or DEL, or is longer than 255 bytes; an empty segment other than the last. A path
 * that is empty or ends in `/` gets {@link INDEX_FILE_NAME}.
 */
export function restorePathFor(url: string, options: RestorePathOptions = {}): RestorePath {
  const refuse = (reason: string): RestorePath => ({ ok: false, reason });
  if (/[\u0000-\u001f\u007f]/.test(url)) return refuse('contains a control character');
  if (url.includes('\\')) return refuse('contains a backslash');
  const match = URL_SHAPE.exec(url);
  if (match === null) return refuse('is not an absolute URL');
  const [, scheme, authority, rawPath, query, fragment] = match as unknown as [string, string, string, string, string?, string?];
  if (!/^https?$/i.test(scheme)) return refuse(`is not http or https (scheme ${JSON.stringify(scheme)})`);
  if (query !== undefined) return refuse('has a query: no file path stands for it');
  if (fragment !== undefined) return refuse('has a fragment: no file path stands for it');
  const host = hostFolder(scheme, authority);
  if (host === undefined) return refuse('has no usable host');

  const raw = rawPath === '' ? ['', ''] : rawPath.split('/');
  // raw[0] is the empty string before the leading `/`.
  const segments: string[] = options.withHost ? [host] : [];
  for (let i = 1; i < raw.length; i++) {
    const last = i === raw.length - 1;
    const encoded = raw[i]!;
    if (encoded === '') {
      if (last) {
        segments.push(INDEX_FILE_NAME);
        continue;
      }
      return refuse('has an empty path segment');
    }
    const decoded = decodeSegment(encoded);
    if (decoded === undefined) return refuse(`has a malformed or non-UTF-8 escape in segment ${JSON.stringify(encoded)}`);
    if (decoded === '.' || decoded === '..') return refuse(`has a ${JSON.stringify(decoded)} segment`);
    if (decoded.includes('/')) return refuse('has an encoded "/" inside a segment');
    if (decoded.includes('\\')) return refuse('has an encoded "\\" inside a segment');
    if (/[\u0000-\u001f\u007f]/.test(decoded)) return refuse('has an encoded NUL or control character');
    if (/\p{Cs}/u.test(decoded)) return refuse('has a segment that is not well-formed Unicode');
    if (Buffer.byteLength(decoded, 'utf8') > MAX_SEGMENT_BYTES) return refuse(`has a segment longer than ${MAX_SEGMENT_BYTES} bytes`);
    segments.push(decoded);
  }
  return { ok: true, segments, path: segments.join('/') };
}

/**
 * The folder a URL's host gets in a restore of several sources: the host as WHATWG URL
 * normalises it (lower case, IDN in punycode), `_<port>` appended for a port that is not the
 * scheme's default, and `:` (IPv6) replaced by `_`. Undefined when there is no usable host.
 */
export function hostFolder(scheme: string, authority: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(`${scheme.toLowerCase()}://${authority}/`);
  } catch {
    return undefined;
  }
  const name = parsed.hostname.replace(/^\[|\]$/g, '').replace(/:/g, '_');
  if (name === '' || name === '.' || name === '..' || /[/\\\u0000-\u001f\u007f]/.test(name)) return undefined;
  return parsed.port === '' ? name : `${name}_${parsed.port}`;
}

/**
 * Decodes the `%XX` escapes of one segment as UTF-8 bytes (raw characters are taken as their
 * UTF-8 bytes). Undefined for a `%` not followed by two hex digits, or bytes that are not UTF-8:
 * guessing would write a name the site never had.
 */
export function decodeSegment(segment: string): string | undefined {
  if (!segment.includes('%')) return segment;
  const bytes: number[] = [];
  const encoder = new TextEncoder();
  for (let i = 0; i < segment.length; ) {
    if (segment[i] === '%') {
      const hex = segment.slice(i + 1, i + 3);
      if (!/^[0-9a-fA-F]{2}$/.test(hex)) return undefined;
      bytes.push(Number.parseInt(hex, 16));
      i += 3;
      continue;
    }
    const char = String.fromCodePoint(segment.codePointAt(i)!);
    bytes.push(...encoder.encode(char));
    i += char.length;
  }
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(Uint8Array.from(bytes));
  } catch {
    return undefined;
  }
}

/**
 * Finds the paths of a restore that cannot all be written: the same path twice (`/a/` and
 * `/a/index.html`), or a path that is a file for one resource and a folder for another (`a`
 * and `a/b`). `paths` are taken in the order given (the caller sorts, so the outcome does not
 * depend on the catalog's row order); the first to claim a place keeps it. Returns, for each
 * path that loses, the index of the path it collides with.
 */
export function findCollisions(paths: readonly string[]): Map<number, number> {
  const files = new Map<string, number>(); // path → index of the resource written there
  const folders = new Map<string, number>(); // folder path → index of the first resource below it
  const lost = new Map<number, number>();
  paths.forEach((path, index) => {
    const segments = path.split('/');
    const file = files.get(path) ?? folders.get(path);
    if (file !== undefined) return void lost.set(index, file);
    for (let n = 1; n < segments.length; n++) {
      const prefix = segments.slice(0, n).join('/');
      const other = files.get(prefix);
      if (other !== undefined) return void lost.set(index, other);
    }
    files.set(path, index);
    for (let n = 1; n < segments.length; n++) {
      const prefix = segments.slice(0, n).join('/');
      if (!folders.has(prefix)) folders.set(prefix, index);
    }
  });
  return lost;
}

/** A path claimed by a resource: what a collision names. */
export interface PathClaim {
  path: string;
  identifier: string;
}

/**
 * {@link findCollisions} for paths given one at a time in code-unit order (`a < b`), in memory
 * bounded by a path's depth rather than by their number: a restore of millions of resources
 * streams its plan through it. In that order a path comes after every path that is a prefix of
 * it, so it can only lose to the same path claimed before, or to a file at one of its folders;
 * the files kept so far that are prefixes of the path in hand are exactly the stack of claims
 * kept below (each a prefix of the next), which is all that has to be remembered.
 */
export class PathClaims {
  private readonly stack: PathClaim[] = [];
  private last: string | undefined;

  /**
   * Claims `path` for `identifier`: undefined when it keeps the place, else the claim it loses
   * to. Throws when paths do not come in code-unit order (a bug of the caller).
   */
  claim(path: string, identifier: string): PathClaim | undefined {
    if (this.last !== undefined && path < this.last) throw new Error(`paths out of order: ${path} after ${this.last}`);
    this.last = path;
    while (this.stack.length > 0 && !path.startsWith(this.stack[this.stack.length - 1]!.path)) this.stack.pop();
    for (const claim of this.stack) {
      if (path === claim.path || path.startsWith(`${claim.path}/`)) return claim;
    }
    this.stack.push({ path, identifier });
    return undefined;
  }
}

/** A resource with its place below the restore folder. */
export interface PlacedResource<T> {
  item: T;
  /** The segments joined with `/`. */
  path: string;
  segments: string[];
}

/** A resource without a place: its URL is refused, or another resource took its path. */
export interface UnplacedResource {
  kind: 'path' | 'collision';
  identifier: string;
  reason: string;
}

/**
 * Where each resource of a restore goes, decided for the whole plan before anything is written:
 * its URL's path ({@link restorePathFor}; refused ones first, in the order given), then, in path
 * order, the collisions ({@link findCollisions}: the first to claim a place keeps it). Returns the
 * placed resources in path order.
 */
export function placeResources<T extends { identifier: string }>(
  items: readonly T[],
  options: RestorePathOptions = {},
): { placed: Array<PlacedResource<T>>; unplaced: UnplacedResource[] } {
  const unplaced: UnplacedResource[] = [];
  const mapped: Array<PlacedResource<T>> = [];
  for (const item of items) {
    const target = restorePathFor(item.identifier, options);
    if (target.ok) mapped.push({ item, path: target.path, segments: target.segments });
    else unplaced.push({ kind: 'path', identifier: item.identifier, reason: `the URL ${target.reason}` });
  }
  mapped.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const lost = findCollisions(mapped.map((entry) => entry.path));
  for (const [index, winner] of lost) {
    const { item, path } = mapped[index]!;
    unplaced.push({
      kind: 'collision',
      identifier: item.identifier,
      reason: `its path ${path} is taken by ${mapped[winner]!.item.identifier} (${mapped[winner]!.path})`,
    });
  }
  return { placed: mapped.filter((_, index) => !lost.has(index)), unplaced };
}
