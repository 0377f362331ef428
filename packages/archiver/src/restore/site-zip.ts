// `oaibag export --site` (docs/import-export.md, "The site as one ZIP"): the site as `oaibag
// restore` rebuilds it, written as one deterministic ZIP file instead of into a folder (so it
// lives with restore, whose other writer is site-writer.ts). Everything but the writing is
// restore's: the catalog read and the plan (restore.ts, planSite: the version of each resource
// at the instant, its path, the refusals), the payload files read and checked against the
// catalog (restore-bag.ts) and each file's mtime (versionMtime). Where restore skips a damaged
// file and writes the others, the export stops: a ZIP without that file would not be the site,
// so it is not finished under its name.
import { type FileHandle, mkdir, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { AipStorage } from '../aip/aip-storage.js';
import { openArchiveStorage } from '../aip/archive-storage.js';
import { writeZipDurably } from '../archive/zip-writer.js';
import { ArchiverError, archiveIoError } from '../core/errors.js';
import { type PlannedWork, planSite } from './restore.js';
import { Damage, holdingBag, locatePayload, openPayload, type PayloadSource, payloadName, readStoredVerified, readVerified } from './restore-bag.js';
import { countProblems, damageLine, listEntry, type RestoreCounts, type RestoreReport, type RestoreSummary } from './restore-summary.js';
import type { PlannedFile } from './site-writer.js';
import { versionMtime } from './stage-version.js';

export interface ExportSiteOptions {
  archiveDir: string;
  /** The ZIP file to write (its folder is created when missing; an existing folder is refused). */
  to: string;
  /** Only this source (its OAI-PMH base URL, as harvested); default: every source, as restore. */
  source?: string;
  /** The instant, as restore's `--as-of`; default: the latest state. */
  asOf?: string;
  /** Each refused resource, one line, as restore logs it. */
  log?: (line: string) => void;
  /** After each file, with the totals planned (bytes as the catalog records them). */
  progress?: (done: RestoreCounts, total: RestoreCounts) => void;
  /** Rows read from the catalog and the plan at a time (tests set it low), as restore's. */
  pageRows?: number;
}

export interface ExportedSite {
  /** The ZIP file written (absolute). */
  file: string;
  sha256: string;
  /** The ZIP file's size. */
  zipBytes: number;
  /**
   * What is in it, as restore would report it: `restored` entries of `bytes` bytes, `deleted`,
   * `metadataOnly`, `refused`, `failed` (unreadable datestamps), `extraParts`; `damaged` is
   * always empty (a damaged file stops the export); `problems` > 0 makes the command exit 1.
   */
  summary: RestoreSummary;
}

/** Unix mode of every entry: a regular file, rw-r--r--. */
const ENTRY_MODE = 0o100644;
/** zlib's default level: most of a site's text shrinks to a fraction, images and PDFs do not grow. */
const DEFLATE_LEVEL = 6;

/**
 * Writes the site as of `asOf` (default: latest) as one ZIP at `to`: one entry per file restore
 * would write, named by the same relative path, with the same mtime, deflated, in code-unit
 * order of the names, no folder entries. Every payload is streamed from its bag into the ZIP
 * while its size and sha-256 are checked against the catalog. Throws ERR_ARCHIVE_USAGE (`to`
 * is a folder, bad `asOf`, unknown `source`), ERR_ARCHIVE_DAMAGED (a payload file fails its
 * check: one line naming the resource and the bag), ERR_ARCHIVE_CATALOG or ERR_ARCHIVE_IO; then
 * no ZIP is left at `to` nor at `to.partial`.
 */
export async function exportSite(options: ExportSiteOptions): Promise<ExportedSite> {
  const target = resolve(options.to);
  await refuseFolder(options.to, target);
  const { report, work } = planSite({
    archiveDir: options.archiveDir,
    to: target,
    ...(options.source !== undefined ? { source: options.source } : {}),
    ...(options.asOf !== undefined ? { asOf: options.asOf } : {}),
    ...(options.log !== undefined ? { log: options.log } : {}),
    ...(options.pageRows !== undefined ? { pageRows: options.pageRows } : {}),
  });
  try {
    const opened = await openArchiveStorage(options.archiveDir, { reading: true });
    try {
      return await writeSiteZip(options, target, report, work, opened.objectStore === undefined ? undefined : opened.storage);
    } finally {
      opened.close();
    }
  } finally {
    work.close();
  }
}

/** The files of the plan a ZIP entry can name (the others were refused by the first pass). */
function* zipEntries(work: PlannedWork): Generator<PlannedFile> {
  for (const entry of work.files()) if (zipNameProblem(entry.path) === undefined) yield entry;
}

async function writeSiteZip(
  options: ExportSiteOptions,
  target: string,
  report: RestoreReport,
  work: PlannedWork,
  store: AipStorage | undefined,
): Promise<ExportedSite> {
  const summary = report.summary;
  const total: RestoreCounts = { files: 0, bytes: 0 };
  for (const entry of work.fileNames()) {
    const problem = zipNameProblem(entry.path);
    if (problem !== undefined) report.refuse('path', entry.identifier, problem);
    else {
      total.files += 1;
      total.bytes += entry.size;
    }
  }
  await mkdir(dirname(target), { recursive: true }).catch((error: unknown) => {
    throw archiveIoError(error, `cannot create the folder of ${target}`, dirname(target));
  });

  const added = (entry: PlannedFile, size: number): void => {
    summary.restored += 1;
    summary.bytes += size;
    const extra = entry.version.parts.slice(1).map(payloadName);
    if (extra.length > 0)
      listEntry(summary, 'extraParts', summary.extraParts, {
        identifier: entry.version.identifier,
        bag: holdingBag(options.archiveDir, entry.version, store),
        parts: extra,
      });
    options.progress?.({ files: summary.restored, bytes: summary.bytes }, total);
  };
  // The plan comes in code-unit order of the paths, so the entries do too; one at a time, each
  // entry's central record spilled to a file as it ends (archive/zip-writer.ts): memory does not
  // grow with the site.
  const written = await writeZipDurably(target, async (zip) => {
    for (const entry of zipEntries(work)) {
      const entryOptions = {
        name: entry.path,
        mtime: versionMtime(entry.version),
        mode: ENTRY_MODE,
        level: DEFLATE_LEVEL,
        size: entry.version.parts[0]?.size ?? 0,
      };
      await zip.add(entryOptions, await entryBytes(options.archiveDir, entry, added, store));
    }
  });
  summary.problems = countProblems(summary);
  return { file: target, sha256: written.sha256, zipBytes: written.bytes, summary };
}

/**
 * The verified bytes of one planned file, its payload file opened now (so that a missing one is
 * told before any byte is asked for). Damage and read errors become the one-line errors the
 * export stops with; `added` is told once every byte has been read and checked.
 */
async function entryBytes(
  archiveDir: string,
  entry: PlannedFile,
  added: (entry: PlannedFile, size: number) => void,
  store: AipStorage | undefined,
): Promise<AsyncGenerator<Buffer>> {
  const fail = (error: unknown): ArchiverError => {
    if (error instanceof Damage) {
      const bag = holdingBag(archiveDir, entry.version, store);
      return new ArchiverError('ERR_ARCHIVE_DAMAGED', damageLine(entry.version.identifier, bag, error.message), {
        cause: error,
        path: bag,
        hint: 'no ZIP was written; oaibag verify names every version relying on that file',
      });
    }
    return archiveIoError(error, `cannot read the bytes of ${entry.version.identifier}`);
  };
  let payload: PayloadSource;
  try {
    payload = locatePayload(archiveDir, entry.version);
  } catch (error) {
    throw fail(error);
  }
  if (store !== undefined) {
    // On object storage a missing payload is told by its first read, as the ZIP entry starts.
    const stored = readStoredVerified(store, payload, entry.version);
    return (async function* () {
      let size = 0;
      try {
        for await (const chunk of stored) {
          size += chunk.byteLength;
          yield chunk;
        }
      } catch (error) {
        throw fail(error);
      }
      added(entry, size);
    })();
  }
  let handle: FileHandle;
  try {
    handle = await openPayload(payload);
  } catch (error) {
    throw fail(error);
  }
  return (async function* () {
    let size = 0;
    try {
      for await (const chunk of readVerified(handle, payload, entry.version)) {
        size += chunk.byteLength;
        yield chunk;
      }
    } catch (error) {
      throw fail(error);
    } finally {
      await handle.close().catch(() => undefined);
    }
    added(entry, size);
  })();
}

/** With --site, `--to` names the ZIP file: an existing folder there (or a name ending in a slash) is a usage error. */
async function refuseFolder(given: string, target: string): Promise<void> {
  const info = await stat(target).catch(() => undefined);
  if (info?.isDirectory() || /[/\\]$/.test(given)) {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `--to ${given} names a folder: with --site, --to names the ZIP file to write`, {
      path: target,
      hint: `give a file name, such as ${given.replace(/[/\\]+$/, '')}/site.zip`,
    });
  }
}

/**
 * Why a restore path cannot name a ZIP entry, or undefined. The only paths restore writes that
 * a ZIP cannot name: one starting with a drive letter and a colon (`C:…`, taken by ZIP readers
 * for a drive: yazl refuses it), and one over the 65,535 bytes of a ZIP entry's name.
 */
function zipNameProblem(path: string): string | undefined {
  if (/^[a-zA-Z]:/.test(path)) return `its path ${path} starts like a drive letter, which the name of a ZIP entry must not`;
  if (Buffer.byteLength(path, 'utf8') > 0xffff) return 'its path is longer than the name of a ZIP entry can be (65,535 bytes)';
  return undefined;
}
