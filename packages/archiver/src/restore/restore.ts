// `oaibag restore`: rebuilds a web site from the archive's AIPs. The catalog says which
// version of which resource is current at the chosen instant (restore-plan.ts), the URL says
// where it goes (aip/restore-path.ts), and the catalog's payload index says which payload file
// of which batch bag holds the version's bytes (for a revisit, an earlier bag than the
// record's). The bytes are checked against the digest and size the catalog records while they
// are written to a temporary file beside their target; only verified bytes are renamed into
// place. A damaged payload file, a refused URL or a path that cannot be written is reported and
// skipped; the others are still restored.
//
// No archive lock: bags are immutable once in place, and the catalog is only read (in one
// read transaction, so a harvest committing meanwhile is not half seen). An archive whose bags
// are on object storage is restored the same way, its payloads read through the store.

import { join } from 'node:path';
import { openArchiveStorage } from '../aip/archive-storage.js';
import { PathClaims, restorePathFor } from '../aip/restore-path.js';
import { Catalog } from '../catalog/catalog.js';
import { RestorePlanTable } from '../catalog/restore-plan-table.js';
import { deletionsOfResources, RESTORE_PAGE_RESOURCES, resourcePage, sourceList, versionsOfResources } from '../catalog/restore-queries.js';
import { ArchiverError } from '../core/errors.js';
import { compareExisting } from './existing-file.js';
import { type PlannedPaths, surveyFolder } from './folder-survey.js';
import { datestampSeconds, formatInstant, type PlanVersion, parseAsOf, resourceStateAt } from './restore-plan.js';
import { countProblems, type RestoreCounts, type RestoreOptions, RestoreReport, type RestoreSummary } from './restore-summary.js';
import { checkRestoreTarget } from './restore-target.js';
import { type ExistingFiles, type PlannedFile, SiteWriter } from './site-writer.js';

export type { DamageFound, FolderChanges, RefusedResource, RestoreCounts, RestoredFile, RestoreOptions, RestoreSummary } from './restore-summary.js';
export { RESTORE_TEMP_PREFIX } from './stage-version.js';

/**
 * Rebuilds the site(s) of an archive in `options.to`: every resource live at `asOf` (default:
 * latest), in its version current then, at the path its URL gives, with its Last-Modified as
 * mtime. Read, plan, apply: `to` is checked (restore-target.ts), the catalog is read in one
 * transaction, the plan decides every version and every path before anything is written; in a
 * folder that was not empty, what is there is surveyed (and with `clean` what is not the
 * state's removed), then the site writer writes. The plan is kept in a temporary database, not
 * in memory (catalog/restore-plan-table.ts), so memory does not grow with the archive. Never
 * throws for one resource's trouble (it is in the summary); throws ERR_ARCHIVE_USAGE for a bad
 * `asOf`, one before the archive's first version, an unknown `source` or a `to` refused (not
 * empty without `force` or `clean`, a file, around the archive…), ERR_ARCHIVE_CATALOG when
 * there is no catalog, ERR_ARCHIVE_IO when the restore folder cannot be made, ERR_ARCHIVE_FULL
 * when it fills up.
 */
export async function restoreSite(options: RestoreOptions): Promise<RestoreSummary> {
  const target = await checkRestoreTarget(options.to, options.archiveDir, options);
  const plan = planSite(options);
  try {
    const { report, work, total, before } = plan;
    if (before !== undefined) throw beforeTheArchive(report.summary, before);
    const summary = report.summary;
    const mode = options.clean ? 'clean' : 'force';
    const paths = target.nonEmpty ? work.paths : undefined;
    if (summary.dryRun) {
      summary.restored = total.files;
      summary.bytes = total.bytes;
      if (paths !== undefined) {
        report.takeFolder(mode);
        await surveyFolder(target.root, paths, report, false, work.present);
        for (const { version, path, segments } of work.files()) {
          if (!work.present.has(path) || version.parts[0] === undefined) continue;
          const existing = await compareExisting(join(target.root, ...segments), version.parts[0]);
          if (existing === 'same' || existing === 'different') report.existing(path, version.identifier, existing === 'same');
        }
      }
      summary.problems = countProblems(summary);
      for (const { version, path } of work.files()) {
        const file = { path, identifier: version.identifier, size: version.size, datestamp: version.datestamp };
        if (options.onPlanned) options.onPlanned(file, summary);
        else summary.planned.push(file);
      }
    } else {
      // Bags on object storage are read through it (opened for reading: nothing is written there).
      const opened = await openArchiveStorage(options.archiveDir, { reading: true });
      try {
        const store = opened.objectStore === undefined ? undefined : opened.storage;
        const writer = await SiteWriter.open(options.archiveDir, target.root, report, options.progress, store);
        let existing: ExistingFiles | undefined;
        if (paths !== undefined) {
          report.takeFolder(mode);
          // --clean removes first: what is in the way (a link or a file where a folder goes) is gone before the writes.
          await surveyFolder(target.root, paths, report, mode === 'clean', work.present);
          existing = { present: work.present, clean: mode === 'clean' };
        }
        await writer.writeAll(work.files(), total, existing);
      } finally {
        opened.close();
      }
    }
    summary.problems = countProblems(summary);
    return summary;
  } finally {
    plan.work.close();
  }
}

/**
 * A restore as of an instant before the archive's first version: nothing to write, and with
 * --clean everything to remove, which is never what was meant. A usage error naming the
 * earliest date the archive holds (of the sources restored).
 */
function beforeTheArchive(summary: RestoreSummary, earliest: { datestamp: string; source: string }): ArchiverError {
  return new ArchiverError(
    'ERR_ARCHIVE_USAGE',
    `nothing to restore as of ${summary.asOf}: the earliest version the archive holds${summary.sources.length > 1 ? ` (of ${earliest.source})` : ''} is dated ${earliest.datestamp}`,
    { hint: `give --as-of ${earliest.datestamp} or later; nothing was written` },
  );
}

/**
 * The files of a plan, kept in its temporary database: read back a page at a time, in path
 * order, as often as wanted; {@link close} deletes them.
 */
export interface PlannedWork {
  /** The files to write (the resources that kept their path), in code-unit order of the paths. */
  files(): Iterable<PlannedFile>;
  /** The same files as their path, identifier and size alone (cheaper: no version is read). */
  fileNames(): Iterable<{ path: string; identifier: string; size: number }>;
  /** Which paths are files of the plan or folders they go into (for the survey of a non-empty folder). */
  paths: PlannedPaths;
  /** Planned paths where something other than a folder already is (filled by the survey). */
  present: { has(path: string): boolean; add(path: string): void };
  close(): void;
}

/** What {@link planSite} decided: the files to write, in path order, and the report (refusals already in it). */
export interface SitePlan {
  report: RestoreReport;
  work: PlannedWork;
  total: RestoreCounts;
  /** Set when `asOf` comes before every version of the sources restored: the earliest one's datestamp and source. */
  before?: { datestamp: string; source: string };
}

/**
 * Read and plan, the part of a restore that `oaibag export --site` shares: `asOf` parsed, the
 * catalog read (the sources chosen by `source`), every resource's version at the instant and
 * its path decided; refused URLs, collisions and unreadable datestamps are in the report (and
 * logged). Throws as {@link restoreSite} does for a bad `asOf`, an unknown `source` or no catalog.
 * The caller closes `work`.
 */
export function planSite(options: RestoreOptions): SitePlan {
  const asOf = options.asOf === undefined ? undefined : parseAsOf(options.asOf);
  const table = RestorePlanTable.open(options.pageRows);
  try {
    const read = readArchiveCatalog(options.archiveDir, options.source, table, asOf, options.pageRows ?? RESTORE_PAGE_RESOURCES);
    const report = new RestoreReport(emptySummary(options, read.sources, asOf), options.log ?? (() => undefined));
    const summary = report.summary;
    summary.deleted = read.deleted;
    summary.metadataOnly = read.metadataOnly;
    for (const row of table.unreadable()) report.failed(row.identifier, '', new Error(`unreadable ${row.kind} datestamp ${row.datestamp}`));
    for (const row of table.refused()) report.refuse('path', row.identifier, row.reason);
    const total = claimPaths(table, report);
    const earliest = asOf !== undefined && read.live === 0 && read.deleted === 0 ? read.earliest : undefined;
    return {
      report,
      work: plannedWork(table),
      total,
      ...(earliest !== undefined ? { before: { datestamp: earliest.datestamp, source: read.sourceUrls.get(earliest.sourceId) ?? '' } } : {}),
    };
  } catch (error) {
    table.close();
    throw error;
  }
}

/**
 * The collisions, decided over the whole plan in path order (aip/restore-path.ts, PathClaims:
 * the first to claim a place keeps it): each loser is reported and marked. Returns the files
 * and bytes left to write.
 */
function claimPaths(table: RestorePlanTable, report: RestoreReport): RestoreCounts {
  const claims = new PathClaims();
  const total: RestoreCounts = { files: 0, bytes: 0 };
  const lost: Array<Parameters<RestorePlanTable['markLost']>[0]> = [];
  const markLost = () => table.batch(() => lost.splice(0).forEach((cursor) => table.markLost(cursor)));
  for (const row of table.placed(false)) {
    const winner = claims.claim(row.path, row.version.identifier);
    if (winner === undefined) {
      total.files += 1;
      total.bytes += row.version.size;
      continue;
    }
    report.refuse('collision', row.version.identifier, `its path ${row.path} is taken by ${winner.identifier} (${winner.path})`);
    lost.push(row.rowId);
    if (lost.length >= table.pageRows) markLost();
  }
  markLost();
  return total;
}

function plannedWork(table: RestorePlanTable): PlannedWork {
  return {
    *files() {
      for (const row of table.placed(true)) yield { version: row.version, path: row.path, segments: row.path.split('/') };
    },
    fileNames: () => table.winnerPaths(),
    paths: { files: { has: (path) => table.hasFile(path) }, folders: { has: (path) => table.hasFolder(path) } },
    present: { has: (path) => table.isPresent(path), add: (path) => table.addPresent(path) },
    close: () => table.close(),
  };
}

function emptySummary(options: RestoreOptions, sources: string[], asOf: number | undefined): RestoreSummary {
  return {
    archive: options.archiveDir,
    to: options.to,
    asOf: asOf === undefined ? null : formatInstant(asOf),
    dryRun: options.dryRun === true,
    sources,
    restored: 0,
    bytes: 0,
    deleted: 0,
    metadataOnly: 0,
    refused: [],
    damaged: [],
    failed: [],
    extraParts: [],
    planned: [],
    folder: null,
    problems: 0,
    counts: { refused: 0, damaged: 0, failed: 0, extraParts: 0, replaced: 0, notRemoved: 0 },
  };
}

/** What reading the catalog into the plan found besides the plan's rows. */
interface CatalogRead {
  sources: string[];
  /** Source id → base URL. */
  sourceUrls: Map<number, string>;
  live: number;
  deleted: number;
  metadataOnly: number;
  /** The version with the earliest readable datestamp (the first of equals, by source then row). */
  earliest: PlanVersion | undefined;
}

/** Read: the catalog's rows for the restore, in one read transaction, into `table`; the catalog closed after. */
function readArchiveCatalog(
  archiveDir: string,
  only: string | undefined,
  table: RestorePlanTable,
  asOf: number | undefined,
  pageResources: number,
): CatalogRead {
  const catalog = Catalog.openForReading(archiveDir);
  try {
    return catalog.read(() => readCatalog(catalog, only, table, asOf, pageResources));
  } finally {
    catalog.close();
  }
}

/**
 * Plan: each source's resources a page at a time (identifier order), each resource's state at
 * the instant decided from its rows (restore-plan.ts), then, for a live one with a payload, its
 * path (aip/restore-path.ts) or why it has none, written to `table`. Deleted resources and those
 * without payload are counted, not written; rows with unreadable datestamps are noted.
 */
function readCatalog(catalog: Catalog, only: string | undefined, table: RestorePlanTable, asOf: number | undefined, pageResources: number): CatalogRead {
  let sources = sourceList(catalog);
  if (only !== undefined) {
    const chosen = sources.filter((source) => source.baseUrl === only || source.baseUrl === only.replace(/\/+$/, ''));
    if (chosen.length === 0) {
      throw new ArchiverError('ERR_ARCHIVE_USAGE', `the archive has no source ${only}`, {
        hint: sources.length > 0 ? `its sources: ${sources.map((source) => source.baseUrl).join(', ')}` : 'the archive has no source yet',
      });
    }
    sources = chosen;
  }
  const read: CatalogRead = {
    sources: sources.map((source) => source.baseUrl),
    sourceUrls: new Map(sources.map((source) => [source.id, source.baseUrl])),
    live: 0,
    deleted: 0,
    metadataOnly: 0,
    earliest: undefined,
  };
  let earliestAt = Number.POSITIVE_INFINITY;
  let earliestSource = -1;
  const withHost = sources.length > 1;
  sources.forEach((source, sourceIndex) => {
    for (let after: string | undefined, page = resourcePage(catalog, source.id, after, pageResources); page.length > 0; ) {
      const versions = versionsOfResources(catalog, source.id, page);
      const deletions = deletionsOfResources(catalog, page);
      const rows = new Map(
        page.map((resource) => [resource.id, { versions: [] as PlanVersion[], deletions: [] as Array<{ resourceId: number; datestamp: string }> }]),
      );
      table.batch(() => {
        for (const version of versions) {
          const at = datestampSeconds(version.datestamp);
          if (at === undefined) {
            table.addUnreadable({ kind: 'version', sourceIndex, rowId: version.id, identifier: version.identifier, datestamp: version.datestamp });
            continue;
          }
          // The first of equals: by source (in order here), then by row id.
          if (at < earliestAt || (at === earliestAt && sourceIndex === earliestSource && version.id < (read.earliest?.id ?? 0))) {
            [earliestAt, earliestSource, read.earliest] = [at, sourceIndex, version];
          }
          rows.get(version.resourceId)?.versions.push(version);
        }
        for (const deletion of deletions) {
          if (datestampSeconds(deletion.datestamp) === undefined) {
            table.addUnreadable({ kind: 'deletion', sourceIndex, rowId: deletion.id, identifier: deletion.identifier, datestamp: deletion.datestamp });
          } else rows.get(deletion.resourceId)?.deletions.push(deletion);
        }
        for (const resource of page) {
          const { versions: own, deletions: gone } = rows.get(resource.id)!;
          const state = resourceStateAt(own, gone, asOf);
          if (state.state === 'deleted') read.deleted += 1;
          if (state.state !== 'live') continue;
          read.live += 1;
          if (state.version.payloadFiles === 0) {
            read.metadataOnly += 1;
            continue;
          }
          const target = restorePathFor(resource.identifier, { withHost });
          if (target.ok) table.addPlaced({ path: target.path, version: state.version });
          else table.addRefused({ identifier: resource.identifier, sourceId: source.id, reason: `the URL ${target.reason}` });
        }
      });
      after = page[page.length - 1]!.identifier;
      page = page.length < pageResources ? [] : resourcePage(catalog, source.id, after, pageResources);
    }
  });
  return read;
}
