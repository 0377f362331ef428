import { compileGlob } from './glob.js';
import { SiteMappingError } from './site-mapping-error.js';

/**
 * Editor backups and swap files: copies of a page a web server would hand out verbatim,
 * often with the very source the live page hides (mod_oai paper, section 5).
 */
export const DEFAULT_EXCLUDES: readonly string[] = ['*~', '#*#', '*.swp', '*.bak'];

/**
 * Extensions a web server runs rather than serves. Exporting such a file by reference would
 * mislead (a GET returns the program's output, not the bytes we describe) and exporting it
 * by value would publish its source, credentials included.
 */
export const DEFAULT_RUN_EXTENSIONS: readonly string[] = [
  'php',
  'php3',
  'php4',
  'php5',
  'php7',
  'phtml',
  'phar',
  'cgi',
  'fcgi',
  'pl',
  'shtml',
  'jsp',
  'jspx',
  'asp',
  'aspx',
  'ashx',
  'asmx',
  'cfm',
];

/** Why a path is never exported nor served, as logs and tests name it. */
export type ExclusionReason = 'hidden' | 'excluded' | 'runs-on-server' | 'reserved';

/**
 * What is never exported: one decision shared by the repository's scanner and static file
 * server, and by `oaibag import`, which must leave out what the repository would.
 */
export interface ExportPolicy {
  /** Why the file at `relPath` (relative, '/'-separated) is excluded, or null when it is exported. */
  excludedReason(relPath: string): ExclusionReason | null;
  /**
   * Why everything below the directory `relDirPath` is excluded, or null: the rules that
   * look at names and paths, not the extension rule (a directory named `x.php` is just a
   * directory). The scanner prunes such a directory without reading it.
   */
  excludedDirectoryReason(relDirPath: string): ExclusionReason | null;
  /** One line per rule, in the order they are applied, for --help and the start-up log. */
  describe(): string[];
}

export interface ExportPolicyOptions {
  /** Globs added to DEFAULT_EXCLUDES. */
  excludes?: string[];
  /** Extensions (with or without the dot, any case) that replace DEFAULT_RUN_EXTENSIONS. */
  runExtensions?: string[];
  /** Names at the root the server itself answers for, e.g. `['oai']`. */
  reservedRootNames?: string[];
}

interface GlobRule {
  pattern: string;
  /** True: matched against every segment; false: against the path and each of its ancestors. */
  perSegment: boolean;
  matches: (subject: string) => boolean;
}

/**
 * The export policy. Rules, the first that applies giving the reason:
 * 1. hidden: a segment starting with '.' (always: this hides .htaccess, .git and our own index);
 * 2. reserved: the first segment is a reserved root name;
 * 3. excluded: a glob matches. A glob without '/' is matched against every segment, so a
 *    directory's name excludes everything below it; a glob with '/' against the whole path
 *    and each of its ancestor directories, so `papers/private` excludes that directory and
 *    its contents. A leading '/' only anchors (it is removed); a trailing '/' is ignored;
 * 4. runs-on-server: the last segment's final extension, compared case-insensitively
 *    (`x.PHP` and `x.txt.php` excluded, `x.php.txt` not).
 *
 * Throws SiteMappingError, naming the value, for an invalid glob, extension or reserved name.
 */
export function createExportPolicy(options: ExportPolicyOptions = {}): ExportPolicy {
  const globRules = [...DEFAULT_EXCLUDES, ...(options.excludes ?? [])].map(globRule);
  const runExtensions = new Set((options.runExtensions ?? DEFAULT_RUN_EXTENSIONS).map(normalizeExtension));
  const reserved = new Set((options.reservedRootNames ?? []).map(checkReservedName));

  const directoryReason = (segments: string[]): ExclusionReason | null => {
    if (segments.some((segment) => segment.startsWith('.'))) return 'hidden';
    if (segments[0] !== undefined && reserved.has(segments[0])) return 'reserved';
    for (const rule of globRules) {
      if (rule.perSegment ? segments.some(rule.matches) : ancestorsAndSelf(segments).some(rule.matches)) {
        return 'excluded';
      }
    }
    return null;
  };

  return {
    excludedReason(relPath) {
      const segments = relPath.split('/');
      const reason = directoryReason(segments);
      if (reason !== null) return reason;
      const extension = finalExtension(segments[segments.length - 1] ?? '');
      return extension !== null && runExtensions.has(extension) ? 'runs-on-server' : null;
    },
    excludedDirectoryReason(relDirPath) {
      if (relDirPath === '') return null;
      return directoryReason(relDirPath.split('/'));
    },
    describe() {
      const lines = ["hidden: any path segment starting with '.' (always)"];
      if (reserved.size > 0) lines.push(`reserved: root names ${[...reserved].join(', ')}`);
      for (const rule of globRules) {
        lines.push(`excluded: ${rule.pattern} (${rule.perSegment ? 'any path segment' : 'path from the root'})`);
      }
      if (runExtensions.size > 0) {
        lines.push(`runs-on-server: extensions ${[...runExtensions].map((e) => `.${e}`).join(' ')}`);
      }
      return lines;
    },
  };
}

function globRule(pattern: string): GlobRule {
  let body = pattern;
  if (body.length > 1 && body.endsWith('/') && !body.endsWith('\\/')) body = body.slice(0, -1);
  const anchored = body.startsWith('/');
  if (anchored) body = body.slice(1);
  if (body === '') throw new SiteMappingError(`invalid exclude pattern ${JSON.stringify(pattern)}: it names no file`);
  return { pattern, perSegment: !anchored && !body.includes('/'), matches: compileGlob(body) };
}

function normalizeExtension(extension: string): string {
  const normalized = (extension.startsWith('.') ? extension.slice(1) : extension).toLowerCase();
  if (normalized === '' || /[/.\\]/.test(normalized)) {
    throw new SiteMappingError(`invalid run extension ${JSON.stringify(extension)}: expected a name like "php"`);
  }
  return normalized;
}

function checkReservedName(name: string): string {
  if (name === '' || name.includes('/')) {
    throw new SiteMappingError(`invalid reserved root name ${JSON.stringify(name)}: expected one path segment`);
  }
  return name;
}

/** `a`, `a/b`, `a/b/c` for the segments of `a/b/c`. */
function ancestorsAndSelf(segments: string[]): string[] {
  return segments.map((_, i) => segments.slice(0, i + 1).join('/'));
}

/** The text after the last dot, lower case; null when the name has none (a leading dot is no extension). */
function finalExtension(name: string): string | null {
  const dot = name.lastIndexOf('.');
  return dot <= 0 ? null : name.slice(dot + 1).toLowerCase();
}
