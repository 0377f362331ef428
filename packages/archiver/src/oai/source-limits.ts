// The bounds on everything an OAI-PMH source controls (issue 24): how many bytes it may send,
// how long it may take, how many pages and records it may hold us to. Each has a default here,
// an option of `oaibag harvest` and `oaibag mirror`, and, when it is hit, one ERR_HARVEST_LIMIT
// line naming the limit and its option (docs/archiver.md, "Limits").
import { ArchiverError } from '../core/errors.js';

export interface SourceLimits {
  /** Bytes of one datastream whose record promises no size (a promised size is itself the bound, plus one byte). */
  datastreamBytes: number;
  /** Decoded bytes of one OAI-PMH response (a ListRecords page, By-Value base64 included). */
  pageBytes: number;
  /** Decoded bytes per byte received of a compressed response, once it has decoded 1 MiB. */
  compressionRatio: number;
  /** Records of one page held before they are stored (the page is stored when it ends). */
  pageRecords: number;
  /** Received XML (headers, DIDL, about) of one page held before it is stored. */
  pageXmlBytes: number;
  /** Datastreams (payload parts) of one page: each costs the harvester until the page ends. */
  pageParts: number;
  /** Milliseconds without a byte, while waiting for headers or reading a body. */
  idleMs: number;
  /** Milliseconds one OAI-PMH request may take in all, its body included. */
  pageDeadlineMs: number;
  /** Milliseconds one By-Reference datastream request may take in all, its body included. */
  datastreamDeadlineMs: number;
  /** Pages in a row that carry no record but a new resumption token. */
  emptyPages: number;
  /** Pages of one list (one harvest's run of it). */
  listPages: number;
  /** Characters of one resumption token. */
  tokenChars: number;
}

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/**
 * Generous for real repositories, tight for a hostile one. A page's own size is bounded loosely
 * (By-Value pages of large files are legitimately large) and its compression ratio tightly:
 * base64 compresses about 1.3 times, DIDL metadata 5 to 20 times, a bomb a thousand times.
 * Records, parts and XML held bound the memory of a page that never ends. A batch is committed
 * only when a page ends, so until then each record costs the harvester some 14 KB and each
 * datastream some 10 KB (catalog rows staged, manifest lines, PREMIS events): 5,000 records or
 * 10,000 datastreams keep it near 200 MB, under the 300 MB the hostile-source suite allows
 * (10,000 records and 20,000 datastreams came within 10 MB of it on a loaded machine, 50,000
 * records took it to 800 MB). Repositories serve 100 to 1,000 records a page, mod_oai one
 * datastream a record; DSpace's 100 items a page of up to 100 bitstreams each fit too.
 */
export const DEFAULT_SOURCE_LIMITS: Readonly<SourceLimits> = Object.freeze({
  datastreamBytes: 64 * GiB,
  pageBytes: 16 * GiB,
  compressionRatio: 100,
  pageRecords: 5_000,
  pageXmlBytes: 128 * MiB,
  pageParts: 10_000,
  idleMs: 120_000,
  pageDeadlineMs: 30 * 60_000,
  datastreamDeadlineMs: 6 * 3600_000,
  emptyPages: 100,
  listPages: 1_000_000,
  tokenChars: 64 * 1024,
});

/** The command-line option that changes each limit (named in the error, so the fix is one step away). */
export const SOURCE_LIMIT_OPTIONS: Readonly<Record<keyof SourceLimits, string>> = Object.freeze({
  datastreamBytes: '--max-datastream-size',
  pageBytes: '--max-page-size',
  compressionRatio: '--max-compression-ratio',
  pageRecords: '--max-page-records',
  pageXmlBytes: '--max-page-xml',
  pageParts: '--max-page-parts',
  idleMs: '--idle-timeout',
  pageDeadlineMs: '--page-deadline',
  datastreamDeadlineMs: '--datastream-deadline',
  emptyPages: '--max-empty-pages',
  listPages: '--max-list-pages',
  tokenChars: '--max-token-length',
});

/** The defaults with the caller's choices over them. */
export function sourceLimits(given: Partial<SourceLimits> | undefined): SourceLimits {
  const limits = { ...DEFAULT_SOURCE_LIMITS };
  for (const [name, value] of Object.entries(given ?? {}) as Array<[keyof SourceLimits, number | undefined]>) {
    if (value === undefined) continue;
    if (!Number.isFinite(value) || value <= 0) {
      throw new ArchiverError('ERR_ARCHIVE_USAGE', `${SOURCE_LIMIT_OPTIONS[name]} must be a positive number, not ${value}`);
    }
    limits[name] = value;
  }
  return limits;
}

/** The error of a limit the source went past: `what` says where, `detail` what was seen. */
export function limitError<K extends keyof SourceLimits>(name: K, limits: Pick<SourceLimits, K>, what: string, detail: string): ArchiverError {
  return new ArchiverError('ERR_HARVEST_LIMIT', `${what}: ${detail} (limit ${describeLimit(name, limits[name])}, ${SOURCE_LIMIT_OPTIONS[name]})`);
}

function describeLimit(name: keyof SourceLimits, value: number): string {
  if (name.endsWith('Ms')) return value % 1000 === 0 ? `${value / 1000} s` : `${value} ms`;
  if (name.endsWith('Bytes')) return `${value} bytes`;
  if (name === 'compressionRatio') return `${value}:1`;
  return String(value);
}
