// A web site's file, delivered out of band, as the record `oaibag-repository` would give for it
// (docs/repository.md): the identifier is the base URL and the file's path percent-encoded one
// way, the datestamp and Last-Modified its modification time in whole seconds, the MIME type by
// its name, the headers those of a GET, the content By-Value with its sha-256. Made with the
// functions the repository itself uses (@oaibag/oai-pmh's site mapping), so that a harvest of
// the same site later finds the same identifier, datestamp and bytes, and adds nothing.
import type { DidlDocument, OaiHeader } from '@oaibag/didl';
import {
  createExportPolicy,
  type ExclusionReason,
  fileHeaders,
  formatDatestamp,
  identifierForPath,
  mimeSetSpec,
  mimeTypeForPath,
  normalizeBaseUrl,
} from '@oaibag/oai-pmh';
import { ArchiverError } from '../core/errors.js';

/** What a site record is made of: a file of the delivery, measured. */
export interface SiteFile {
  /** Relative, `/`-separated. */
  name: string;
  size: number;
  mtimeNs: bigint;
  sha256: string;
}

/** Where oaibag-repository answers OAI-PMH, below its base URL (docs/repository.md). */
const REPOSITORY_OAI_PATH = 'oai';

/**
 * The repository's export rules (hidden names, backup and editor files, server-side scripts,
 * its own `oai` path): a file they exclude is not a resource of the site.
 */
const exportPolicy = createExportPolicy({ reservedRootNames: [REPOSITORY_OAI_PATH] });

/**
 * `--base-url` as the repository normalizes its own (lower-case scheme and host, no default
 * port, no trailing slash), so that the identifiers made from it are the repository's; a usage
 * error for anything but an http(s) URL without query, fragment or credentials.
 */
export function siteBaseUrl(value: string): string {
  try {
    return normalizeBaseUrl(value);
  } catch (error) {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `--base-url ${JSON.stringify(value)} is not an http(s) URL without query, fragment or credentials`, {
      cause: error,
    });
  }
}

/**
 * The OAI-PMH base URL oaibag-repository serves for a site at `baseUrl` (normalized): the
 * source a site's files join when `--source` is not given.
 */
export function repositoryOaiUrl(baseUrl: string): string {
  return `${baseUrl}/${REPOSITORY_OAI_PATH}`;
}

/** Why a delivered file is not a resource of the site, or null when it is one. */
export function notAResource(name: string): ExclusionReason | null {
  return exportPolicy.excludedReason(name);
}

/**
 * The record of one file. Its datestamp is the file's modification time (capped at `now`, as
 * the repository's first scan dates a site's files); the record carries the bytes By-Value and
 * By-Reference at its URL, as the repository's oai_didl does.
 */
export function siteRecord(baseUrl: string, file: SiteFile, now: Date = new Date()): { header: OaiHeader; didl: DidlDocument } {
  const identifier = identifierForPath(baseUrl, file.name);
  const mimeType = mimeTypeForPath(file.name);
  const nowNs = BigInt(now.getTime()) * 1_000_000n;
  const datedNs = file.mtimeNs > nowNs ? nowNs : file.mtimeNs;
  const setSpec = mimeSetSpec(mimeType);
  const header: OaiHeader = {
    identifier,
    datestamp: formatDatestamp(Number(datedNs / 1_000_000_000n)),
    setSpecs: setSpec === null ? [] : [setSpec],
    deleted: false,
  };
  const didl: DidlDocument = {
    identifier,
    item: {
      identifier,
      headers: fileHeaders({ mimeType, size: file.size, mtimeNs: file.mtimeNs, sha256: file.sha256 }),
      components: [
        {
          digest: { algorithm: 'SHA-256', value: file.sha256 },
          resources: [
            { mimeType, ref: identifier },
            { mimeType, byValue: { encoding: 'base64', size: file.size, sha256: file.sha256 } },
          ],
          descriptors: [],
        },
      ],
      items: [],
      descriptors: [],
    },
  };
  return { header, didl };
}
