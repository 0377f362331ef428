// The one OAI-PMH list loop, for harvest (ListRecords) and urls (ListIdentifiers): follow the
// resumption tokens page after page; a token the repository refuses (badResumptionToken) or
// one that comes back (a loop) restarts the list from its first request while restarts are
// left, and ends it otherwise; OAI-PMH errors other than noRecordsMatch end it. The caller
// reads each page (`readPage`, which may use a response asked for in advance) and decides what
// each step means for it: harvest commits and restarts twice, urls prints and never restarts.
import { createHash } from 'node:crypto';
import type { ListPage } from './list-page.js';
import { limitError, type SourceLimits } from './source-limits.js';

/**
 * Tokens remembered to find a loop: the most recent ones, as sha-256 digests, so that neither a
 * long list nor long tokens grow the memory. A longer loop ends at `listPages`.
 */
const REMEMBERED_TOKENS = 10_000;

/** One step of a list, with the page it came from. */
export type ListStep<P extends ListPage> =
  /** More pages: `next` asks for the following one. */
  | { kind: 'next'; page: P; next: Record<string, string> }
  /** The last page: the list is complete. */
  | { kind: 'end'; page: P }
  /** The list starts again from its first request, for the reason given. */
  | { kind: 'restart'; page: P; why: string }
  /** OAI-PMH errors other than noRecordsMatch (all the page's errors are given). */
  | { kind: 'failed'; page: P; errors: ListPage['errors'] }
  /** A token came back a second time and no restart is left. */
  | { kind: 'loop'; page: P; token: string };

export interface ListWalk<P extends ListPage> {
  /** `ListRecords` or `ListIdentifiers`: the verb of the requests with a token. */
  verb: string;
  /** The list's first request (metadataPrefix, from, until, set), asked for again on a restart. */
  first: Record<string, string>;
  /** Where to begin instead (a saved resumption token); default `first`. */
  start?: Record<string, string> | undefined;
  /** How many times the list may start again (harvest 2, urls 0). */
  maxRestarts: number;
  readPage: (args: Record<string, string>) => Promise<P>;
  /** Bounds on the list the source gives (empty pages in a row, pages, token length). */
  limits: Pick<SourceLimits, 'emptyPages' | 'listPages' | 'tokenChars'>;
  /** Names the list in a limit's error (`ListRecords of <base URL>`). */
  what: string;
}

/** The steps of one list, in order; it ends after `end`, `failed` or `loop`. */
export async function* walkList<P extends ListPage>(walk: ListWalk<P>): AsyncGenerator<ListStep<P>, void, undefined> {
  let args = walk.start ?? walk.first;
  const seen = new Set<string>();
  let restarts = 0;
  let pages = 0;
  let emptyInARow = 0;
  const restart = (): boolean => {
    if (restarts >= walk.maxRestarts) return false;
    restarts++;
    seen.clear();
    emptyInARow = 0;
    args = walk.first;
    return true;
  };
  const { limits, what } = walk;
  for (;;) {
    if (++pages > limits.listPages) throw limitError('listPages', limits, what, `more than ${limits.listPages} pages`);
    const page = await walk.readPage(args);
    if (page.errors.some((error) => error.code === 'badResumptionToken') && restart()) {
      yield { kind: 'restart', page, why: 'the repository refused the resumption token' };
      continue;
    }
    if (page.errors.some((error) => error.code !== 'noRecordsMatch')) {
      yield { kind: 'failed', page, errors: page.errors };
      return;
    }
    const token = page.token;
    if (token === undefined) {
      yield { kind: 'end', page };
      return;
    }
    if (token.length > limits.tokenChars) {
      throw limitError('tokenChars', limits, what, `a resumption token of ${token.length} characters`);
    }
    emptyInARow = page.records === 0 ? emptyInARow + 1 : 0;
    if (emptyInARow > limits.emptyPages) {
      throw limitError('emptyPages', limits, what, `${emptyInARow} pages in a row without a record, each with a new resumption token`);
    }
    const digest = createHash('sha256').update(token).digest('base64');
    if (seen.has(digest)) {
      if (restart()) {
        yield { kind: 'restart', page, why: 'a resumption token came back a second time' };
        continue;
      }
      yield { kind: 'loop', page, token };
      return;
    }
    seen.add(digest);
    if (seen.size > REMEMBERED_TOKENS) seen.delete(seen.values().next().value!);
    args = { verb: walk.verb, resumptionToken: token };
    yield { kind: 'next', page, next: args };
  }
}
