// `oaibag urls`: mod_oai's first use case. A crawler that only needs to know what changed asks
// the repository's ListIdentifiers (headers only, no content) and fetches those URLs itself.
// No archive is involved.

import { setTimeout as sleep } from 'node:timers/promises';
import { isDidlError, type ReadRecord } from '@oaibag/didl';
import { oaiDateOf, parseCommandLineDate } from '../core/command-line-date.js';
import { ArchiverError } from '../core/errors.js';
import { shown } from '../core/remote-text.js';
import { dateAtGranularity, identifyRepository } from '../oai/identify.js';
import { type ListPage, readListPage } from '../oai/list-page.js';
import { walkList } from '../oai/list-walk.js';
import { type Credentials, OaiClient } from '../oai/oai-client.js';
import { DEFAULT_RETRY_POLICY, type RetryPolicy, retryDelayMs } from '../oai/retry-policy.js';

export interface ListChangedUrlsOptions {
  /** The repository's OAI-PMH base URL. */
  baseUrl: string;
  /** `YYYY-MM-DD` or `YYYY-MM-DDThh:mm:ssZ`; sent at the repository's granularity. */
  from?: string;
  until?: string;
  set?: string;
  /** The metadata format named in ListIdentifiers (default `oai_didl`). */
  prefix?: string;
  /**
   * False: deleted resources are left out of the entries handed over and of `listed`, and counted
   * in `deletedLeftOut` instead (`--no-deleted`). Default true.
   */
  includeDeleted?: boolean;
  credentials?: Credentials;
  retry?: RetryPolicy;
  log?: (line: string) => void;
  /**
   * Called with each page's entries, in list order, once the whole page has been read: a page
   * that breaks off is asked for again, so nothing is handed over twice.
   */
  onPage: (entries: ChangedUrl[]) => void | Promise<void>;
}

/** One changed resource. */
export interface ChangedUrl {
  /** The OAI identifier, which mod_oai makes the resource's URL. */
  url: string;
  datestamp: string;
  deleted: boolean;
  sets: string[];
  /** False when the identifier is not an http(s) URL on one line (see {@link isCrawlableUrl}). */
  crawlable: boolean;
}

export interface ListChangedUrlsSummary {
  /** The responseDate of the list's first page: the `from` of the next incremental listing. */
  responseDate: string | null;
  /** `from` and `until` as sent (at the repository's granularity). */
  from: string | null;
  until: string | null;
  /** Entries handed over to `onPage` (including those that are not URLs). */
  listed: number;
  /** Deleted resources among `listed`. */
  deleted: number;
  /** Deleted resources left out (`includeDeleted: false`), not part of `listed`. */
  deletedLeftOut: number;
  /** Identifiers that are not http(s) URLs. */
  notUrls: number;
  pages: number;
  requests: number;
}

/**
 * Lists what changed in the repository at `baseUrl` between `from` and `until` (optionally in
 * one set) with Identify, then ListIdentifiers page after page (resumption tokens followed, a
 * loop refused; a page that breaks off or is not well-formed is asked for again with backoff).
 * An empty list (noRecordsMatch) is not an error. Throws ERR_ARCHIVE_USAGE for a malformed
 * date, ERR_HARVEST_* when the source is unreachable, not OAI-PMH, or the list fails.
 */
export async function listChangedUrls(options: ListChangedUrlsOptions): Promise<ListChangedUrlsSummary> {
  // The one command-line grammar (core/command-line-date.ts), sent as OAI-PMH's UTC forms.
  const userFrom = options.from === undefined ? undefined : oaiDateOf(parseCommandLineDate(options.from, '--from'));
  const userUntil = options.until === undefined ? undefined : oaiDateOf(parseCommandLineDate(options.until, '--until'));
  const prefix = options.prefix ?? 'oai_didl';
  const log = options.log ?? (() => undefined);
  const policy = options.retry ?? DEFAULT_RETRY_POLICY;
  const client = new OaiClient(options.baseUrl, {
    ...(options.credentials ? { credentials: options.credentials } : {}),
    retry: policy,
    onRetry: ({ attempt, delayMs, reason }) => log(`retry ${attempt} in ${Math.round(delayMs / 1000)} s: ${reason}`),
  });
  try {
    // A listing of identifiers asks for them in any format the source offers (oai_dc too).
    const facts = await identifyRepository(client, prefix, 'any');
    const from = userFrom === undefined ? null : dateAtGranularity(userFrom, facts.granularity);
    const until = userUntil === undefined ? null : dateAtGranularity(userUntil, facts.granularity);
    const first: Record<string, string> = { verb: 'ListIdentifiers', metadataPrefix: prefix };
    if (from !== null) first.from = from;
    if (until !== null) first.until = until;
    if (options.set !== undefined) first.set = options.set;

    const summary: ListChangedUrlsSummary = { responseDate: null, from, until, listed: 0, deleted: 0, deletedLeftOut: 0, notUrls: 0, pages: 0, requests: 0 };
    const includeDeleted = options.includeDeleted ?? true;
    // The one list loop (oai/list-walk.ts), never restarted: a listing is cheap to run again.
    const steps = walkList({
      verb: 'ListIdentifiers',
      first,
      maxRestarts: 0,
      limits: client.limits,
      what: `ListIdentifiers of ${shown(client.endpoint.href)}`,
      readPage: (args) => readPage(client, args, policy, log),
    });
    for await (const step of steps) {
      summary.pages++;
      if (step.kind === 'failed' || step.kind === 'restart') {
        const errors = step.page.errors.filter((error) => error.code !== 'noRecordsMatch');
        const hint = errors.some((error) => error.code === 'badResumptionToken')
          ? 'list again with the same --from: the repository no longer accepts the token'
          : undefined;
        throw new ArchiverError(
          'ERR_HARVEST_PROTOCOL',
          `ListIdentifiers of ${shown(client.endpoint.href)} failed: ${errors.map((e) => `${shown(e.code, 40)}: ${shown(e.message)}`).join('; ')}`,
          { hint },
        );
      }
      const page = step.page;
      summary.responseDate ??= page.responseDate ?? null;
      const entries = includeDeleted ? page.entries : page.entries.filter((entry) => !entry.deleted);
      summary.deletedLeftOut += page.entries.length - entries.length;
      for (const entry of entries) {
        summary.listed++;
        if (entry.deleted) summary.deleted++;
        if (!entry.crawlable) summary.notUrls++;
      }
      if (entries.length > 0) await options.onPage(entries);
      if (step.kind === 'loop') {
        throw new ArchiverError(
          'ERR_HARVEST_PROTOCOL',
          `the resumption token ${shown(step.token, 80)} of ${shown(client.endpoint.href)} came back a second time`,
        );
      }
    }
    summary.requests = client.requests;
    return summary;
  } finally {
    await client.close();
  }
}

/**
 * True for an identifier a crawler can take as it is: an absolute http(s) URL with no white
 * space or control character (so one line of output is one URL, whatever the repository sends).
 */
export function isCrawlableUrl(identifier: string): boolean {
  return /^https?:\/\/[^\s\p{Cc}]+$/iu.test(identifier) && URL.canParse(identifier);
}

/** One output line: `URL`, `URL<TAB>deleted`, or a JSON line. */
export function formatChangedUrl(entry: ChangedUrl, json: boolean): string {
  if (json) return `${JSON.stringify({ url: entry.url, datestamp: entry.datestamp, deleted: entry.deleted, sets: entry.sets })}\n`;
  return entry.deleted ? `${entry.url}\tdeleted\n` : `${entry.url}\n`;
}

/** The closing stderr line: counts, and the `--from` of the next listing. */
export function formatUrlsSummary(summary: ListChangedUrlsSummary): string {
  // With --no-deleted the deletions are not among the changes listed, so they are not counted as such.
  const deleted =
    summary.deletedLeftOut > 0 ? `${summary.deletedLeftOut} ${summary.deletedLeftOut === 1 ? 'deletion' : 'deletions'} left out` : `${summary.deleted} deleted`;
  const notUrls = summary.notUrls > 0 ? `, ${summary.notUrls} not URLs (left out)` : '';
  const next = summary.responseDate !== null ? `; next time: --from ${summary.responseDate}` : '';
  return `${summary.listed} changed (${deleted}${notUrls}) from ${summary.from ?? 'the beginning'} until ${summary.until ?? 'now'}${next}`;
}

/** A ListIdentifiers page: its entries and what it says about the list. */
interface Page extends ListPage {
  entries: ChangedUrl[];
}

/** One ListIdentifiers page, read whole; asked for again when it breaks off or is not well-formed. */
async function readPage(client: OaiClient, args: Record<string, string>, policy: RetryPolicy, log: (line: string) => void): Promise<Page> {
  for (let attempt = 0; ; attempt++) {
    const entries: ChangedUrl[] = [];
    try {
      const page = await readListPage(client.oai(args), `ListIdentifiers of ${client.endpoint.href}`, {
        onRecord: (record: ReadRecord) => {
          const header = record.header;
          if (header === undefined || header.identifier === '') return;
          entries.push({
            url: header.identifier,
            datestamp: header.datestamp,
            deleted: header.deleted,
            sets: [...header.setSpecs],
            crawlable: isCrawlableUrl(header.identifier),
          });
        },
      });
      return { entries, ...page };
    } catch (error) {
      if (error instanceof ArchiverError) throw error;
      if (attempt >= policy.retries) {
        throw new ArchiverError(
          'ERR_HARVEST_PROTOCOL',
          `a ListIdentifiers page of ${client.endpoint.href} failed ${attempt + 1} times: ${(error as Error).message}`,
          { cause: error },
        );
      }
      const delayMs = retryDelayMs(attempt + 1, policy);
      log(`page failed (${isDidlError(error) ? error.code : (error as Error).message}); asking again in ${Math.round(delayMs / 1000)} s`);
      await sleep(delayMs);
    }
  }
}
