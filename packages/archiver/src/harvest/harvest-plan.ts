// What a harvest asks for, decided before anything is asked: a pure function of the user's
// options, what the catalog knows of the source (its watermark, an interrupted list) and what
// Identify said (the granularity). Tested with tables (test/harvest-plan.test.ts).
import type { ResumeState } from '../catalog/catalog-types.js';
import { dateAtGranularity } from '../oai/identify.js';

export interface HarvestPlanInput {
  prefix: string;
  set?: string | undefined;
  /** The user's `--from`, `--until` (OAI-PMH UTC forms); none: continue from the watermark. */
  from?: string | undefined;
  until?: string | undefined;
  /** The `from` of the next incremental harvest, from the catalog; null before the first complete list. */
  watermark: string | null;
  /** The list an earlier harvest left unfinished, if any. */
  resume: ResumeState | null;
  /** The repository's granularity (Identify): day-granularity repositories get days. */
  granularity?: string | null | undefined;
}

export interface HarvestPlan {
  /** The window harvested (recorded with the harvest): the user's, or from the watermark. */
  from: string | null;
  until: string | null;
  /** The first request of a fresh list, at the repository's granularity (also after a restart). */
  firstArgs: Record<string, string>;
  /** The interrupted list to continue with its saved token, when it is the same list. */
  resume: ResumeState | null;
  /** The first request made: the saved token's, or `firstArgs`. */
  pageArgs: Record<string, string>;
}

/**
 * Decides the harvest's requests: from the user's `from`, else the watermark (an incremental
 * harvest); the saved resumption token only when the user gave no `from` and the interrupted
 * list was of the same prefix and set (another list's token would skip records).
 */
export function planHarvest(input: HarvestPlanInput): HarvestPlan {
  const from = input.from ?? input.watermark ?? null;
  const until = input.until ?? null;
  const firstArgs: Record<string, string> = { verb: 'ListRecords', metadataPrefix: input.prefix };
  if (from) firstArgs.from = dateAtGranularity(from, input.granularity);
  if (until) firstArgs.until = dateAtGranularity(until, input.granularity);
  if (input.set) firstArgs.set = input.set;
  const saved = input.resume;
  const resume = input.from === undefined && saved && saved.prefix === input.prefix && saved.set === (input.set ?? null) ? saved : null;
  const pageArgs = resume ? { verb: 'ListRecords', resumptionToken: resume.token } : firstArgs;
  return { from, until, firstArgs, resume, pageArgs };
}
