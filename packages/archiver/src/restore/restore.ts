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
// read transaction, so a harvest committing meanwhile is not half seen).

import { join } from 'node:path';
import { placeResources } from '../aip/restore-path.js';
import { Catalog } from '../catalog/catalog.js';
import { deletionsOfSource, sourceList, versionsOfSource } from '../catalog/restore-queries.js';
import { ArchiverError } from '../core/errors.js';
import { compareExisting } from './existing-file.js';
import { plannedPaths, surveyFolder } from './folder-survey.js';
import { earliestVersion, formatInstant, type PlanDeletion, type PlanVersion, parseAsOf, planRestore } from './restore-plan.js';
import { type RestoreCounts, type RestoreOptions, RestoreReport, type RestoreSummary } from './restore-summary.js';
import { checkRestoreTarget } from './restore-target.js';
import { type ExistingFiles, type PlannedFile, SiteWriter } from './site-writer.js';

export type { DamageFound, FolderChanges, RefusedResource, RestoreCounts, RestoredFile, RestoreOptions, RestoreSummary } from './restore-summary.js';
export { RESTORE_TEMP_PREFIX } from './stage-version.js';

/** What a restore reads from the catalog: the sources restored, their versions and deletions. */
interface CatalogRows {
  sources: string[];
  /** Source id → base URL. */
  sourceUrls: Map<number, string>;
  versions: PlanVersion[];
  deletions: PlanDeletion[];
  identifiers: Map<number, string>;
}

/**
 * Rebuilds the site(s) of an archive in `options.to`: every resource live at `asOf` (default:
 * latest), in its version current then, at the path its URL gives, with its Last-Modified as
 * mtime. Read, plan, apply: `to` is checked (restore-target.ts), the catalog is read in one
 * transaction, the plan decides every version and every path before anything is written; in a
 * folder that was not empty, what is there is surveyed (and with `clean` what is not the
 * state's removed), then the site writer writes. Never throws for one resource's trouble (it is
 * in the summary); throws ERR_ARCHIVE_USAGE for a bad `asOf`, one before the archive's first
 * version, an unknown `source` or a `to` refused (not empty without `force` or `clean`, a file,
 * around the archive…), ERR_ARCHIVE_CATALOG when there is no catalog, ERR_ARCHIVE_IO when the
 * restore folder cannot be made, ERR_ARCHIVE_FULL when it fills up.
 */
export async function restoreSite(options: RestoreOptions): Promise<RestoreSummary> {
  const target = await checkRestoreTarget(options.to, options.archiveDir, options);
  const { report, work, total, before } = planSite(options);
  if (before !== undefined) throw beforeTheArchive(report.summary, before);
  const summary = report.summary;
  const mode = options.clean ? 'clean' : 'force';
  const paths = target.nonEmpty ? plannedPaths(work.map((entry) => entry.path)) : undefined;
  if (summary.dryRun) {
    for (const { version, path } of work) summary.planned.push({ path, identifier: version.identifier, size: version.size, datestamp: version.datestamp });
    summary.restored = work.length;
    summary.bytes = total.bytes;
    if (paths !== undefined) {
      report.takeFolder(mode);
      const present = await surveyFolder(target.root, paths, report, false);
      for (const { version, path, segments } of work) {
        if (!present.has(path) || version.parts[0] === undefined) continue;
        const existing = await compareExisting(join(target.root, ...segments), version.parts[0]);
        if (existing === 'same' || existing === 'different') report.existing(path, version.identifier, existing === 'same');
      }
    }
  } else {
    const writer = await SiteWriter.open(options.archiveDir, target.root, report, options.progress);
    let existing: ExistingFiles | undefined;
    if (paths !== undefined) {
      report.takeFolder(mode);
      // --clean removes first: what is in the way (a link or a file where a folder goes) is gone before the writes.
      existing = { present: await surveyFolder(target.root, paths, report, mode === 'clean'), clean: mode === 'clean' };
    }
    await writer.writeAll(work, total, existing);
  }
  summary.problems = summary.refused.length + summary.damaged.length + summary.failed.length + (summary.folder?.notRemoved.length ?? 0);
  return summary;
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

/** What {@link planSite} decided: the files to write, in path order, and the report (refusals already in it). */
export interface SitePlan {
  report: RestoreReport;
  work: PlannedFile[];
  total: RestoreCounts;
  /** Set when `asOf` comes before every version of the sources restored: the earliest one's datestamp and source. */
  before?: { datestamp: string; source: string };
}

/**
 * Read and plan, the part of a restore that `oaibag export --site` shares: `asOf` parsed, the
 * catalog read (the sources chosen by `source`), every resource's version at the instant and
 * its path decided; refused URLs, collisions and unreadable datestamps are in the report (and
 * logged). Throws as {@link restoreSite} does for a bad `asOf`, an unknown `source` or no catalog.
 */
export function planSite(options: RestoreOptions): SitePlan {
  const asOf = options.asOf === undefined ? undefined : parseAsOf(options.asOf);
  const rows = readArchiveCatalog(options.archiveDir, options.source);
  const report = new RestoreReport(emptySummary(options, rows.sources, asOf), options.log ?? (() => undefined));
  return { report, ...planFiles(rows, asOf, report) };
}

/** Read: the catalog's rows for the restore, in one read transaction, the catalog closed after. */
function readArchiveCatalog(archiveDir: string, only: string | undefined): CatalogRows {
  const catalog = Catalog.openForReading(archiveDir);
  try {
    return readCatalog(catalog, only);
  } finally {
    catalog.close();
  }
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
  };
}

/**
 * Plan: the version live at the instant for each resource (restore-plan.ts), then, for the whole
 * plan, where each one goes (refused URLs and collisions are reported now, before anything is
 * written). Resources without payload and deleted ones are counted, not written.
 */
function planFiles(rows: CatalogRows, asOf: number | undefined, report: RestoreReport): Omit<SitePlan, 'report'> {
  const plan = planRestore(rows.versions, rows.deletions, asOf);
  const earliest = asOf !== undefined && plan.live.length === 0 && plan.deleted.length === 0 ? earliestVersion(rows.versions) : undefined;
  const summary = report.summary;
  summary.deleted = plan.deleted.length;
  for (const row of plan.unreadable) {
    report.failed(rows.identifiers.get(row.resourceId) ?? `resource ${row.resourceId}`, '', new Error(`unreadable ${row.kind} datestamp ${row.datestamp}`));
  }
  const withPayload = plan.live.filter((version) => version.payloadFiles !== 0);
  summary.metadataOnly = plan.live.length - withPayload.length;
  const { placed, unplaced } = placeResources(withPayload, { withHost: rows.sources.length > 1 });
  for (const { kind, identifier, reason } of unplaced) report.refuse(kind, identifier, reason);
  const work = placed.map(({ item, path, segments }) => ({ version: item, path, segments }));
  return {
    work,
    total: { files: work.length, bytes: work.reduce((sum, entry) => sum + entry.version.size, 0) },
    ...(earliest !== undefined ? { before: { datestamp: earliest.datestamp, source: rows.sourceUrls.get(earliest.sourceId) ?? '' } } : {}),
  };
}

/** The sources restored and their versions and deletions, read in one transaction. */
function readCatalog(catalog: Catalog, only: string | undefined): CatalogRows {
  return catalog.read(() => {
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
    const versions: PlanVersion[] = [];
    const deletions: PlanDeletion[] = [];
    const identifiers = new Map<number, string>();
    for (const source of sources) {
      for (const version of versionsOfSource(catalog, source.id)) {
        versions.push(version);
        identifiers.set(version.resourceId, version.identifier);
      }
      for (const deletion of deletionsOfSource(catalog, source.id)) {
        deletions.push({ resourceId: deletion.resourceId, datestamp: deletion.datestamp });
        identifiers.set(deletion.resourceId, deletion.identifier);
      }
    }
    return {
      sources: sources.map((source) => source.baseUrl),
      sourceUrls: new Map(sources.map((source) => [source.id, source.baseUrl])),
      versions,
      deletions,
      identifiers,
    };
  });
}
