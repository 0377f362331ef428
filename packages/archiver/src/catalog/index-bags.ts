// Records batch bags in the catalog from their own files, harvest by harvest: the harvest rows
// that wrote them (with their ids, so bag names and catalog agree), each bag's versions and
// deletions, and per source the watermark of its last complete list and the list state after
// its last bag. `oaibag reindex` does it for every bag of an archive, into a new catalog;
// `oaibag import` of serialized bags for the bags it adopts, into the archive's catalog.

import type { AipStorage } from '../aip/aip-storage.js';
import type { ReadBagInfo } from '../aip/bag-info.js';
import { readBatchBag, readStoredBatchBag } from '../aip/batch-bag-reader.js';
import { ArchiverError } from '../core/errors.js';
import type { Catalog } from './catalog.js';
import {
  type CatalogSource,
  type HarvestArguments,
  type HarvestCounts,
  type HarvestStatus,
  type ResumeState,
  type RunKind,
  zeroCounts,
} from './catalog-types.js';
import { indexBatchBag } from './index-bag.js';

export interface IndexBagsOptions {
  /** Where the bags are read (default: the archive's folder). */
  storage?: AipStorage;
  /** After each bag: bags done, bags in all. */
  progress?: (done: number, total: number) => void;
  /**
   * Into a catalog that has other bags already (an import): a source's watermark only moves
   * forward, and its saved list state is left as it is.
   */
  adopting?: boolean;
}

export interface IndexedBags {
  bags: number;
  sources: number;
  harvests: number;
  versions: number;
  deletions: number;
}

interface HarvestFacts {
  sourceId: number;
  counts: HarvestCounts;
  status: Exclude<HarvestStatus, 'running'>;
  endedAt: string;
  listResponseDate: string | null;
}

/**
 * The run a batch bag says it was written by: its id, kind and arguments, from bag-info.txt (an
 * import's bags name its delivery).
 */
export function harvestOfBag(bag: { bagPath: string; info: ReadBagInfo }): {
  harvestId: number;
  kind: RunKind;
  args: HarvestArguments;
  startedAt: string;
  baggedAt: string;
} {
  const { info, bagPath } = bag;
  const { harvestId, delivery } = info;
  if (harvestId === null) {
    throw new ArchiverError('ERR_ARCHIVE_DAMAGED', `${bagPath}: bag-info.txt has no valid Harvest-Id`, { path: bagPath });
  }
  const args: HarvestArguments = {
    from: info.harvestFrom,
    until: info.harvestUntil,
    set: info.harvestSet,
    prefix: info.metadataPrefix ?? 'oai_didl',
    ...(delivery ? { delivery } : {}),
  };
  const baggedAt = info.baggedAt ?? `${info.baggingDate ?? '1970-01-01'}T00:00:00.000Z`;
  return { harvestId, kind: delivery ? 'import' : 'harvest', args, startedAt: info.harvestStarted ?? baggedAt, baggedAt };
}

/** Records `bags` (archive-relative paths, in the order written) in the catalog; see the file comment. */
export async function indexBags(catalog: Catalog, archiveDir: string, bags: readonly string[], options: IndexBagsOptions = {}): Promise<IndexedBags> {
  const harvests = new Map<number, HarvestFacts>();
  /** Per source: the watermark of its last complete list, and the list state after its last bag. */
  const sources = new Map<number, { watermark: string | null; resume: ResumeState | null; before: CatalogSource }>();
  let versions = 0;
  let deletions = 0;
  for (const [index, bagPath] of bags.entries()) {
    const bag = options.storage ? await readStoredBatchBag({ storage: options.storage, bagPath }) : await readBatchBag(archiveDir, bagPath);
    const info = bag.info;
    const source = catalog.ensureSource(info.baseUrl, info.repositoryName);
    const { harvestId, kind, args, startedAt, baggedAt } = harvestOfBag(bag);
    const { listEnd, listResponseDate } = info;
    const status: Exclude<HarvestStatus, 'running'> = listEnd ?? 'interrupted';
    catalog.ensureRun(harvestId, source.id, kind, args, startedAt);
    const tally = indexBatchBag(catalog, bag);
    const facts = harvests.get(harvestId) ?? {
      sourceId: source.id,
      counts: zeroCounts(),
      status,
      endedAt: baggedAt,
      listResponseDate,
    };
    facts.endedAt = baggedAt;
    for (const key of ['records', 'added', 'modified', 'touched', 'deleted', 'bytes'] as const) facts.counts[key] += tally[key];
    if (status !== 'interrupted') facts.status = status;
    harvests.set(harvestId, facts);
    versions += tally.added + tally.modified + tally.touched;
    deletions += tally.deleted;

    const state = sources.get(source.id) ?? { watermark: null, resume: null, before: source };
    if (listEnd !== null) {
      if (listEnd === 'complete' && listResponseDate !== null) state.watermark = listResponseDate;
      state.resume = null;
    } else {
      const token = info.resumptionToken;
      state.resume =
        token === null
          ? state.resume
          : { token, listFrom: args.from ?? null, listUntil: args.until ?? null, set: args.set ?? null, prefix: args.prefix, listResponseDate, harvestId };
    }
    sources.set(source.id, state);
    options.progress?.(index + 1, bags.length);
  }
  catalog.transaction(() => {
    for (const [id, facts] of harvests) {
      catalog.closeRebuiltRun(id, facts.status, facts.counts, facts.endedAt, facts.listResponseDate);
      // Adopting, a run may have bags recorded by an earlier call (an import killed half-way).
      if (options.adopting) catalog.recountRebuiltRun(id);
    }
    for (const [sourceId, list] of sources) {
      // Adopting: what the source had before these bags came (a later watermark, a list under way) stays.
      const had = options.adopting ? list.before : undefined;
      if (list.watermark !== null && (!had?.watermark || list.watermark > had.watermark)) catalog.setWatermark(sourceId, list.watermark);
      if (!had?.resume) catalog.saveResumeState(sourceId, list.resume);
    }
  });
  return { bags: bags.length, sources: sources.size, harvests: harvests.size, versions, deletions };
}
