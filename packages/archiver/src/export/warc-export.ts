// `oaibag export --warc` (docs/import-export.md, "WARC, CDXJ and WACZ"): the archive's versions
// as WARC 1.1 records, for web-archive tools (warcio, pywb, ReplayWeb.page), with a CDXJ index
// and, with --wacz, packaged as one WACZ file.
//
// 1. Choose the versions (every one; those of the archive as it stood at --as-of; those
//    captured since --since), paging through the catalog by row id, into the export's table
//    (catalog/warc-queries.ts), which gives them back in capture order: stored_at, then id.
// 2. Write them in that order, a page at a time: the first chosen version to carry a payload
//    file as a response record with its bytes, every later one as a revisit of that record.
// 3. Write the CDXJ index from the table, sorted; then rename every file into place (or, with
//    --wacz, write the WACZ from them and remove them).
//
// The records are written with our own few lines (warc-record.ts), not warcio's WARCSerializer:
// warcio 2.4 buffers each record's whole payload before writing it (in memory up to 2 MB, then in
// a temporary file of its own under the system's temporary folder, which a killed process leaves
// behind), takes random record ids and compresses through CompressionStream, whose level cannot
// be fixed. Here a payload is streamed from its bag (read twice when it is over 4 MiB: the block
// digest comes before the block), ids come from the content, and zlib's level is fixed. warcio's
// own parser and indexer read the output back in the tests.
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { AipStorage } from '../aip/aip-storage.js';
import { openArchiveStorage } from '../aip/archive-storage.js';
import { Catalog } from '../catalog/catalog.js';
import {
  type ChosenVersion,
  WARC_PAGE_ROWS,
  WarcExportTable,
  type WarcVersionDetails,
  type WarcVersionKey,
  warcHistoryOf,
  warcResourcePage,
  warcVersionDetails,
  warcVersionPage,
} from '../catalog/warc-queries.js';
import { parseCommandLineDate } from '../core/command-line-date.js';
import { ArchiverError, archiveIoError } from '../core/errors.js';
import { ARCHIVER_VERSION } from '../core/version.js';
import { PAGES_HEADER, writeWacz } from './wacz-package.js';
import { type ExportFile, ExportFiles } from './warc-files.js';
import { type RecordHeaders, readRecordHeaders } from './warc-headers.js';
import type { PayloadPlace } from './warc-payload.js';
import { warcDate } from './warc-record.js';
import { WarcWriter } from './warc-writer.js';

/** A WARC file is closed, and the next begun, once it holds this many bytes (1 GiB, as Webrecorder's tools roll over at about 1 GB). */
export const DEFAULT_WARC_FILE_BYTES = 1024 * 1024 * 1024;
/** The files' names: `oaibag-00001.warc.gz`, `oaibag.cdxj`, `oaibag.wacz`. */
export const DEFAULT_EXPORT_NAME = 'oaibag';

export interface ExportWarcOptions {
  archiveDir: string;
  /** The folder to write into (created when missing; an existing file there is refused). */
  to: string;
  /** The files' names (letters, digits, `.`, `_`, `-`); default {@link DEFAULT_EXPORT_NAME}. */
  name?: string;
  /** The archive as it stood at this instant (the command-line date grammar; a day is its end). */
  asOf?: string;
  /** Only the versions captured at or after this instant (a day is its start). */
  since?: string;
  /** Only this source (its OAI-PMH base URL); default every source. */
  source?: string;
  /** Package everything as `<name>.wacz` instead of WARC files and a CDXJ index. */
  wacz?: boolean;
  /** The size bound of each WARC file; default {@link DEFAULT_WARC_FILE_BYTES}. */
  maxFileBytes?: number;
  /** Rows read from the catalog and the export table at a time (tests set it low). */
  pageRows?: number;
  /** After each record: records written, bytes of WARC written. */
  progress?: (done: { records: number; bytes: number }) => void;
  /** Stops the export before the next record (SIGINT, SIGTERM): its AbortError is thrown, and nothing is left. */
  signal?: AbortSignal;
}

/** A file the export wrote, under its final name. */
export interface ExportedWarcFile {
  name: string;
  /** Absolute. */
  file: string;
  bytes: number;
  sha256: string;
}

export interface ExportedWarc {
  /** The files written, in the order they were renamed into place: the WARC files then the CDXJ index; or the WACZ alone. */
  files: ExportedWarcFile[];
  warcFiles: number;
  responses: number;
  revisits: number;
  /** Bytes of payload in the response records. */
  payloadBytes: number;
  /** What was chosen, in words: `every version`, `the archive as of …`, `the versions captured since …`. */
  selection: string;
  /** The export's instant (every warcinfo's WARC-Date, the WACZ's `created`). */
  instant: string;
}

type Selection = { kind: 'all' } | { kind: 'as-of'; ms: number } | { kind: 'since'; ms: number };

/**
 * Writes the export. Throws ERR_ARCHIVE_USAGE (both --as-of and --since, a bad date or name, an
 * unknown source, `to` an existing file), ERR_ARCHIVE_DAMAGED (a payload file or a records file
 * fails its check: one line naming the bag), ERR_ARCHIVE_CATALOG, ERR_ARCHIVE_IO or
 * ERR_ARCHIVE_FULL; then nothing is left under a final name, and no temporary file either.
 */
export async function exportWarc(options: ExportWarcOptions): Promise<ExportedWarc> {
  const selection = selectionOf(options);
  const name = options.name ?? DEFAULT_EXPORT_NAME;
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/.test(name)) {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `--name ${JSON.stringify(name)} is not a file name of letters, digits, ".", "_" and "-"`, {
      hint: 'for example --name site-2026',
    });
  }
  const maxFileBytes = options.maxFileBytes ?? DEFAULT_WARC_FILE_BYTES;
  if (!Number.isSafeInteger(maxFileBytes) || maxFileBytes < 1) throw new ArchiverError('ERR_ARCHIVE_USAGE', 'the WARC file size bound must be at least 1 byte');
  const folder = resolve(options.to);
  const catalog = Catalog.openForReading(options.archiveDir);
  try {
    let sourceId: number | undefined;
    if (options.source !== undefined) {
      sourceId = catalog.source(options.source)?.id;
      if (sourceId === undefined) {
        throw new ArchiverError('ERR_ARCHIVE_USAGE', `the archive has no source ${options.source}`, { hint: 'oaibag status lists the sources' });
      }
    }
    await prepareFolder(options.to, folder);
    const pageRows = options.pageRows ?? WARC_PAGE_ROWS;
    const table = WarcExportTable.open(pageRows);
    try {
      chooseVersions(catalog, table, selection, sourceId, pageRows, options.signal);
      const opened = await openArchiveStorage(options.archiveDir, { reading: true });
      try {
        const place: PayloadPlace = { archiveDir: options.archiveDir, store: opened.objectStore === undefined ? undefined : opened.storage };
        return await writeExport({ options, catalog, table, place, bags: opened.storage, folder, name, maxFileBytes, selection });
      } finally {
        opened.close();
      }
    } finally {
      table.close();
    }
  } finally {
    catalog.close();
  }
}

function selectionOf(options: ExportWarcOptions): Selection {
  if (options.asOf !== undefined && options.since !== undefined) {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', '--as-of and --since cannot go together', {
      hint: '--as-of writes the archive as it stood at an instant, --since every version captured after one',
    });
  }
  if (options.asOf !== undefined) {
    // The end of the unit given: a day's last millisecond, a second's (capture times have milliseconds).
    return { kind: 'as-of', ms: parseCommandLineDate(options.asOf, '--as-of').end };
  }
  if (options.since !== undefined) return { kind: 'since', ms: parseCommandLineDate(options.since, '--since').start };
  return { kind: 'all' };
}

/** `--to` names a folder: created when missing; an existing file there is a usage error. */
async function prepareFolder(given: string, folder: string): Promise<void> {
  const info = await stat(folder).catch(() => undefined);
  if (info !== undefined && !info.isDirectory()) {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `--to ${given} is a file: with --warc, --to names the folder to write into`, { path: folder });
  }
  await mkdir(folder, { recursive: true }).catch((error: unknown) => {
    throw archiveIoError(error, `cannot create ${folder}`, folder);
  });
}

/** A capture time as milliseconds; a catalog row that holds no instant is ERR_ARCHIVE_CATALOG. */
function capturedMs(version: WarcVersionKey): number {
  const ms = Date.parse(version.storedAt);
  if (Number.isNaN(ms)) {
    throw new ArchiverError('ERR_ARCHIVE_CATALOG', `the catalog's capture time of version ${version.id} (${version.storedAt}) is not an instant`, {
      hint: 'oaibag reindex rebuilds the catalog from the bags',
    });
  }
  return ms;
}

/**
 * Fills the table with the versions the selection takes, each with a payload file (a record
 * without datastream has no bytes to write): a page of versions (or, for --as-of, of resources
 * with their versions and deletions) at a time, by row id.
 */
function chooseVersions(
  catalog: Catalog,
  table: WarcExportTable,
  selection: Selection,
  sourceId: number | undefined,
  pageRows: number,
  signal: AbortSignal | undefined,
): void {
  const chosen = (version: WarcVersionKey): ChosenVersion => ({ storedAt: version.storedAt, versionId: version.id, payloadId: version.payloadId! });
  if (selection.kind !== 'as-of') {
    for (let after = 0; ; ) {
      signal?.throwIfAborted();
      const page = warcVersionPage(catalog, after, pageRows);
      table.batch(() => {
        for (const version of page) {
          if (version.payloadId === null || (sourceId !== undefined && version.sourceId !== sourceId)) continue;
          const ms = capturedMs(version);
          if (selection.kind === 'since' && ms < selection.ms) continue;
          table.choose(chosen(version));
        }
      });
      if (page.length < pageRows) return;
      after = page.at(-1)!.id;
    }
  }
  for (let after = 0; ; ) {
    signal?.throwIfAborted();
    const resources = warcResourcePage(catalog, after, pageRows);
    const taken = resources.filter((resource) => sourceId === undefined || resource.sourceId === sourceId);
    const { versions, deletions } = warcHistoryOf(catalog, taken);
    const current = new Map<number, { version: WarcVersionKey; ms: number }>();
    for (const version of versions) {
      const ms = capturedMs(version);
      if (ms > selection.ms) continue;
      const best = current.get(version.resourceId);
      if (best === undefined || ms > best.ms || (ms === best.ms && version.id > best.version.id)) current.set(version.resourceId, { version, ms });
    }
    const deletedAt = new Map<number, number>();
    for (const deletion of deletions) {
      const ms = Date.parse(deletion.recordedAt);
      if (Number.isNaN(ms) || ms > selection.ms) continue;
      deletedAt.set(deletion.resourceId, Math.max(ms, deletedAt.get(deletion.resourceId) ?? ms));
    }
    table.batch(() => {
      for (const { version, ms } of current.values()) {
        const deleted = deletedAt.get(version.resourceId);
        if (version.payloadId === null || (deleted !== undefined && deleted >= ms)) continue;
        table.choose(chosen(version));
      }
    });
    if (resources.length < pageRows) return;
    after = resources.at(-1)!.id;
  }
}

interface WriteContext {
  options: ExportWarcOptions;
  catalog: Catalog;
  table: WarcExportTable;
  place: PayloadPlace;
  /** The archive's bags (its folder, or its object store), for their records files. */
  bags: AipStorage;
  folder: string;
  name: string;
  maxFileBytes: number;
  selection: Selection;
}

async function writeExport(context: WriteContext): Promise<ExportedWarc> {
  const { options, catalog, table, place, bags, folder, name, selection } = context;
  const instant = exportInstant(table, selection);
  const described = describe(selection);
  const files = new ExportFiles(folder);
  try {
    const pages = options.wacz === true ? await files.create('pages.jsonl') : undefined;
    await pages?.write(Buffer.from(PAGES_HEADER, 'utf8'));
    const writer = new WarcWriter({
      files,
      table,
      place,
      name,
      maxFileBytes: context.maxFileBytes,
      instant,
      info: [
        ['software', `oaibag ${ARCHIVER_VERSION}`],
        ['format', 'WARC File Format 1.1'],
        ['conformsTo', 'https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/'],
        ['isPartOf', name],
        ['description', `${described}, exported from an oaibag archive`],
      ],
      pages,
      progress: options.progress,
    });
    for (const page of table.pages()) {
      await writePage(catalog, table, bags, writer, page, options.signal);
      await writer.flush();
    }
    await writer.finish();
    const index = await files.create(options.wacz === true ? 'index.cdxj' : `${name}.cdxj`);
    for (const lines of table.indexLines()) {
      await index.write(Buffer.concat(lines.flatMap((line) => [line, NEWLINE])));
    }
    await index.complete();
    const counts = { warcFiles: writer.warcFiles.length, ...writer.written, selection: described, instant };
    if (pages !== undefined) {
      await pages.complete();
      const target = join(folder, `${name}.wacz`);
      const zip = await writeWacz(target, {
        warcFiles: writer.warcFiles,
        index,
        pages,
        title: name,
        instant,
        software: `oaibag ${ARCHIVER_VERSION}`,
      });
      await files.abandon();
      return { files: [{ name: `${name}.wacz`, file: target, bytes: zip.bytes, sha256: zip.sha256 }], ...counts };
    }
    const written = [...writer.warcFiles, index].map((file: ExportFile) => ({
      name: file.name,
      file: join(folder, file.name),
      bytes: file.bytes,
      sha256: file.sha256,
    }));
    await files.commit();
    await removeStaleParts(folder, name, writer.warcFiles.length);
    return { files: written, ...counts };
  } finally {
    await files.abandon();
  }
}

const NEWLINE = Buffer.from('\n', 'latin1');

/** One page of chosen versions, in capture order: each a response, or a revisit of the first chosen version with its bytes. */
async function writePage(
  catalog: Catalog,
  table: WarcExportTable,
  bags: AipStorage,
  writer: WarcWriter,
  page: ChosenVersion[],
  signal: AbortSignal | undefined,
): Promise<void> {
  const firsts = page.map((chosen) => {
    const first = table.firstWith(chosen.payloadId);
    return first === undefined || first.versionId === chosen.versionId ? undefined : first.versionId;
  });
  const details = warcVersionDetails(catalog, [...page.map((chosen) => chosen.versionId), ...firsts.filter((id): id is number => id !== undefined)]);
  const detailsOf = (id: number): WarcVersionDetails => {
    const found = details.get(id);
    if (found === undefined) {
      throw new ArchiverError('ERR_ARCHIVE_CATALOG', `the catalog lost version ${id} (or the payload file it names) while it was exported`, {
        hint: 'run the export again',
      });
    }
    return found;
  };
  // The headers of the page's records, each bag's records file read once for the page.
  const wanted = new Map<string, Set<number>>();
  for (const chosen of page) {
    const version = detailsOf(chosen.versionId);
    let records = wanted.get(version.bagPath);
    if (records === undefined) wanted.set(version.bagPath, (records = new Set()));
    records.add(version.record);
  }
  const headers = new Map<string, Map<number, RecordHeaders>>();
  for (const [bagPath, records] of wanted) headers.set(bagPath, await readRecordHeaders(bags, bagPath, records));
  for (const [i, chosen] of page.entries()) {
    signal?.throwIfAborted();
    const version = detailsOf(chosen.versionId);
    const recorded = headers.get(version.bagPath)?.get(version.record);
    const first = firsts[i];
    if (first === undefined) await writer.response(version, recorded);
    else await writer.revisit(version, detailsOf(first), recorded);
  }
}

/**
 * The one instant of the export that no record gives (no clock is read): the --as-of instant;
 * otherwise the latest capture time written; with nothing written, the --since instant, or the
 * epoch.
 */
function exportInstant(table: WarcExportTable, selection: Selection): string {
  if (selection.kind === 'as-of') return `${new Date(Math.floor(selection.ms / 1000) * 1000).toISOString().slice(0, 19)}Z`;
  const latest = table.latestStoredAt();
  const date = latest === undefined ? undefined : warcDate(latest);
  if (date !== undefined) return date;
  const ms = selection.kind === 'since' ? selection.ms : 0;
  return `${new Date(ms).toISOString().slice(0, 19)}Z`;
}

function describe(selection: Selection): string {
  const instant = (ms: number) => `${new Date(ms).toISOString().slice(0, 19)}Z`;
  if (selection.kind === 'as-of') return `the archive as of ${instant(Math.floor(selection.ms / 1000) * 1000)}`;
  if (selection.kind === 'since') return `the versions captured since ${instant(selection.ms)}`;
  return 'every version';
}

/** Removes `<name>-NNNNN.warc.gz` files of an earlier export into the folder beyond the `count` this one wrote. */
async function removeStaleParts(folder: string, name: string, count: number): Promise<void> {
  const pattern = new RegExp(`^${name.replace(/[.]/g, '\\.')}-(\\d{5,})\\.warc\\.gz$`);
  for (const entry of await readdir(folder).catch(() => [] as string[])) {
    const match = pattern.exec(entry);
    if (match && Number(match[1]) > count) await rm(join(folder, entry), { force: true });
  }
}
