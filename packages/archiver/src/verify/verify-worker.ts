// The worker of `oaibag verify` (see verify-archive.ts): a worker_threads thread that verifies
// whole bags, one at a time, as the main thread sends them, and answers with each bag's report.
// Hashing is CPU-bound, so N such threads keep N cores busy; each streams its files, so memory
// does not grow with file size. A bag on object storage is read through a store this thread
// opens itself (an S3 client is not shared between threads), from the location in the job.

import { lstat } from 'node:fs/promises';
import { join } from 'node:path';
import { parentPort } from 'node:worker_threads';
import type { StoreLocation } from '../archive/archive-locations.js';
import { type BagReport, type BagTally, verifyBag } from '../bag/bag-verifier.js';
import { type CommitProblem, verifyStoredBag } from './verify-stored-bag.js';

/** A bag to verify: its absolute directory and the mode. `id` comes back with the answer. */
export interface VerifyJob {
  id: number;
  /** The bag's folder; for a bag on object storage, how messages name it (`s3://…`). */
  bagDir: string;
  /** Set when the bag is on object storage: the store and the bag's path in it. */
  stored?: { location: StoreLocation; bagPath: string };
  fast: boolean;
  /** The payload files (`data/…`) the catalog places in this bag: the size of each on disk is measured. */
  payloads: string[];
}

/** The answer to a {@link VerifyJob}: the report, or why the bag could not be read at all. */
export interface VerifyJobResult {
  id: number;
  report?: BagReport;
  tally?: BagTally;
  /**
   * The size on disk of each of the job's `payloads`, in the same order: null when there is no
   * regular file there (absent, a folder, a link) or the path is not a plain `data/…` path.
   */
  sizes?: Array<number | null>;
  /** On object storage: where the objects differ from the commit record. */
  commitProblems?: CommitProblem[];
  /** Set when verifyBag itself failed (an unreadable directory): `code: message`. */
  error?: string;
}

/** Verifies one bag; never throws (a failure becomes `error`). Exported so tests and the main thread share it. */
export async function runVerifyJob(job: VerifyJob): Promise<VerifyJobResult> {
  const tally: BagTally = { payloadBytes: 0, payloadFiles: 0, hashedBytes: 0 };
  try {
    if (job.stored !== undefined) {
      const checked = await verifyStoredBag(job.stored.location, job.stored.bagPath, { fast: job.fast, tally, payloads: job.payloads });
      return { id: job.id, tally, ...checked };
    }
    const report = await verifyBag(job.bagDir, { fast: job.fast, tally });
    const sizes: Array<number | null> = [];
    for (const path of job.payloads) sizes.push(await sizeOf(job.bagDir, path));
    return { id: job.id, report, tally, sizes };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return { id: job.id, error: `${code ?? 'error'}: ${(error as Error).message}`.replace(/[\r\n]+/g, ' ') };
  }
}

/**
 * The size of the regular file at the bag-relative `path`, or null. Only metadata is read, and
 * only for a path of plain names under data/ (the catalog's paths are; one that is not is never
 * looked up), so a damaged catalog cannot point the check outside the bag.
 */
async function sizeOf(bagDir: string, path: string): Promise<number | null> {
  if (!isPlainPayloadPath(path)) return null;
  const info = await lstat(join(bagDir, ...path.split('/'))).catch(() => undefined);
  return info?.isFile() === true ? info.size : null;
}

/** A path of plain names under data/ (what the catalog records; anything else is never looked up). */
export function isPlainPayloadPath(path: string): boolean {
  const segments = path.split('/');
  return segments[0] === 'data' && segments.length >= 2 && !segments.some((s) => s === '' || s === '.' || s === '..' || s.includes('\0'));
}

const port = parentPort;
if (port !== null) {
  // Jobs are answered in arrival order, one at a time: the main thread sends the next when
  // this one answers, so a slow bag never holds up a queue of others.
  port.on('message', (job: VerifyJob) => {
    void runVerifyJob(job).then((result) => port.postMessage(result));
  });
}
