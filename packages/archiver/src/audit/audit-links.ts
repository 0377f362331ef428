// Links from an audit to the pages of `oaibag serve` (docs/audit.md, "Links to the archive"):
// a row's history (`/history/<URL>`) and, for a modified row, the diff of its two versions
// (`/diff?url=…&from=<sha256>&to=<sha256>`). The audit is a file that cannot know where the
// archive is served, so the base URL is given (`--serve-url`). Identifiers are the harvested
// repository's, hostile: a link is only ever the base URL followed by a path or query made
// from them, never the identifier as a URL of its own.
import { checkHttpUrl } from '../core/http-url.js';
import type { AuditRow } from './audit-query.js';

/** The links of one audit, for a base URL checked once. */
export interface AuditLinks {
  /** The base URL as given, without trailing slashes. */
  readonly serveUrl: string;
  /** The history page of an identifier, or null when it is not an http(s) URL. */
  history(identifier: string): string | null;
  /** The diff page of a modified row whose two versions have (different) SHA-256s, else null. */
  diff(row: AuditRow): string | null;
}

const SHA256 = /^[0-9a-f]{64}$/;

/**
 * `value` when it is an http(s) URL with a host, no credentials, no query and no fragment (the
 * one check of every URL a user gives, core/http-url.ts), less its trailing slashes, as `serve
 * --base-url` is taken; otherwise ERR_ARCHIVE_USAGE naming `name`.
 */
export function auditServeUrl(value: string, name = 'serveUrl'): string {
  return checkHttpUrl(value, name, { pathOnly: true }).replace(/\/+$/, '');
}

/**
 * The links to the archive served at `serveUrl` (checked by {@link auditServeUrl}).
 *
 * History: `<serve>/history/<identifier>`, the identifier as it is, as the archive's own pages
 * link it — when it is an http(s) URL that a browser sends unchanged in a path. One it would
 * alter (a space, `"`, `<`, a `#`, a `..` segment…) goes as `<serve>/history?url=<encoded>`,
 * which the archive reads the same. Any other identifier (`javascript:…`, `oai:…`) gets none.
 *
 * Diff: `<serve>/diff?url=<encoded identifier>&from=<before sha256>&to=<after sha256>`.
 */
export function auditLinks(serveUrl: string): AuditLinks {
  const base = auditServeUrl(serveUrl);
  // The base as a browser writes it (a host's case, a default port…), to compare paths against.
  const written = new URL(`${base}/history/x`).href.slice(0, -1);
  return {
    serveUrl: base,
    history(identifier) {
      if (!/^https?:\/\//i.test(identifier) || !URL.canParse(identifier)) return null;
      const path = `${base}/history/${identifier}`;
      if (!identifier.includes('#') && URL.canParse(path) && new URL(path).href === `${written}${identifier}`) return path;
      const encoded = uriComponent(identifier);
      return encoded === null ? null : `${base}/history?url=${encoded}`;
    },
    diff(row) {
      const { before, after } = row;
      if (row.change !== 'modified' || before === null || before.deleted || after.deleted) return null;
      if (before.sha256 === null || after.sha256 === null || before.sha256 === after.sha256) return null;
      if (!SHA256.test(before.sha256) || !SHA256.test(after.sha256)) return null;
      const encoded = uriComponent(row.identifier);
      return encoded === null ? null : `${base}/diff?url=${encoded}&from=${before.sha256}&to=${after.sha256}`;
    },
  };
}

/** encodeURIComponent, or null for a string it refuses (a lone surrogate). */
function uriComponent(value: string): string | null {
  try {
    return encodeURIComponent(value);
  } catch {
    return null;
  }
}
