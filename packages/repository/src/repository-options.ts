import { createHash } from 'node:crypto';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_COUNT_LIMIT, type RightsStatement } from '@oaibag/oai-pmh';
import type { AuthConfig } from './access/auth-file.js';

/** Everything `createRepository` accepts; the command's options map onto these one to one. */
export interface RepositoryOptions {
  /** The folder of web files to export. */
  root: string;
  /**
   * The public URL of the site root, e.g. `https://www.example.org` or, behind a reverse
   * proxy that keeps the path, `https://www.example.org/site`. Identifiers are built from
   * it; the OAI-PMH endpoint is `<baseUrl>/oai`. Default: `http://<host>:<port>` once listening.
   */
  baseUrl?: string;
  /** The SQLite index; default: one per root under $XDG_STATE_HOME (see `defaultIndexPath`). */
  index?: string;
  /** Files up to this many bytes go By-Value in oai_didl records; 0: By-Reference only. */
  byValueMax?: number;
  /** Records per ListRecords page. */
  pageRecords?: number;
  /** Headers per ListIdentifiers page. */
  pageIdentifiers?: number;
  /** By-Value bytes a ListRecords page carries at most; a larger record goes out alone. */
  pageBytes?: number;
  /** Items a list's first page counts at most for completeListSize (default 100,000; docs/repository.md). */
  countLimit?: number;
  /** Globs never exported, added to the default editor-backup globs. */
  excludes?: string[];
  /** Extensions of files a web server would run rather than serve (replaces the default list). */
  runExtensions?: string[];
  /** Protected prefixes and their users (`--auth`). */
  auth?: AuthConfig;
  repositoryName?: string;
  adminEmails?: string[];
  /**
   * The rights of the metadata (`--rights`, OAI-rights): a rightsManifest in Identify and a
   * rightsReference in each record's `about`. See `loadRights` for the command's URI|FILE.
   */
  rights?: RightsStatement;
  /** Seconds between full rescans of the tree; 0: never (watching only). */
  rescanSeconds?: number;
  /** Watch the tree for changes between rescans. */
  watch?: boolean;
  /** Receives one line per request and the repository's own notices. */
  log?: (line: string) => void;
  /** Progress of the first scan (files and folders seen so far). */
  onScanProgress?: (progress: { files: number; directories: number }) => void;
}

export const DEFAULTS = {
  byValueMax: 16 * 1024 * 1024,
  pageRecords: 50,
  pageIdentifiers: 1000,
  pageBytes: 64 * 1024 * 1024,
  countLimit: DEFAULT_COUNT_LIMIT,
  rescanSeconds: 600,
} as const;

/**
 * Where the index of a root lives when --index is not given: outside the site (the site
 * may be read-only, and the index is not a web file), one file per root so that restarting
 * the server over the same folder finds the deletions it must keep reporting.
 */
export function defaultIndexPath(realRoot: string): string {
  const stateHome = process.env.XDG_STATE_HOME || join(homedir(), '.local', 'state');
  const name = createHash('sha256').update(realRoot).digest('hex').slice(0, 16);
  return join(stateHome, 'oaibag-repository', `${name}.sqlite`);
}
