// ListIdentifiers and ListRecords over an item source, paged with stateless resumption tokens.
import { errorElements, RESPONSE_END, type ResponseBody, resumptionTokenXml } from '../oai-envelope.js';
import { type OaiErrorCode, oaiError } from '../oai-errors.js';
import type { OaiRequest } from '../oai-request.js';
import { decodeResumptionToken, encodeResumptionToken, type ListState, listIsEmpty, listStart } from '../resumption-token.js';
import type { ItemKey, ItemSource, ListWindow } from './item-source.js';
import { cutPage } from './page-cut.js';
import { headerXml, recordXml } from './provider-xml.js';

export type ListRequest = Extract<OaiRequest, { verb: 'ListIdentifiers' | 'ListRecords' }>;

export interface ListSettings {
  tokenKey: Uint8Array;
  /** Records per ListRecords page, headers per ListIdentifiers page. */
  pageRecords: number;
  pageIdentifiers: number;
  /** By-Value bytes a ListRecords page carries at most (its first record aside). */
  pageBytes: number;
  /**
   * Items a list's first page counts at most for completeListSize (default DEFAULT_COUNT_LIMIT):
   * past it the size is the source's estimate, or left out. Any client can start lists, and a
   * count costs in proportion to what it counts: 26 ms a million items here, a quarter of a
   * second at ten million, where a page costs a few ms.
   */
  countLimit?: number;
}

export const DEFAULT_COUNT_LIMIT = 100_000;

// Headers are joined into pieces of about this many characters: one write per header costs
// more than the XML itself on a 1,000-header page.
const HEADER_PIECE_CHARS = 65536;

/**
 * One page of a list. The list is the items with datestamps in [from, until], in (datestamp, id)
 * order; `until` is fixed when the first page is served, at one second before that response's
 * responseDate, so an item that changes during the list leaves it rather than shifting the
 * others, and comes with the next harvest whose `from` is that responseDate. A page starts
 * strictly after the key of the last item the previous page sent, which its token carries.
 */
export async function listItems<Item>(
  source: ItemSource<Item>,
  settings: ListSettings,
  request: ListRequest,
  start: string,
  now: number,
): Promise<ResponseBody> {
  const fail = (code: OaiErrorCode, detail: string) => [start + errorElements([oaiError(code, detail)]) + RESPONSE_END];
  let state: Omit<ListState, 'after'>;
  let after: ItemKey | undefined;
  if (request.resumptionToken !== undefined) {
    const decoded = decodeResumptionToken(request.resumptionToken, settings.tokenKey);
    if (!decoded || decoded.verb !== request.verb || !source.formats.some((format) => format.prefix === decoded.metadataPrefix)) {
      return fail('badResumptionToken', 'the resumptionToken is not one this repository issued for this verb');
    }
    ({ after, ...state } = decoded);
  } else {
    const base = listStart(request, now);
    if (listIsEmpty(base)) return fail('noRecordsMatch', 'no item matches the given from, until and set');
    const limit = settings.countLimit ?? DEFAULT_COUNT_LIMIT;
    // A size the source can tell without counting (a whole list's highest row id), when it is
    // past the limit, spares the first page a count that would stop at the limit anyway.
    const estimate = await source.estimate?.(windowOf(base));
    let total: number | undefined;
    if (estimate !== undefined && estimate > limit) total = estimate;
    else {
      const counted = await source.count(windowOf(base), limit);
      if (counted === 0) return fail('noRecordsMatch', 'no item matches the given from, until and set');
      // A count that reached its limit says only "at least": the estimate, if any, stands in.
      total = counted < limit ? counted : estimate === undefined ? undefined : Math.max(counted, estimate);
    }
    state = { ...base, cursor: 0, ...(total !== undefined ? { completeListSize: total } : {}) };
  }

  const records = state.verb === 'ListRecords';
  const prefix = state.metadataPrefix;
  const limit = records ? settings.pageRecords : settings.pageIdentifiers;
  const items = await source.list(windowOf(state), after, limit + 1);
  if (items.length === 0) {
    // A first page that was not counted (its size estimated) finds nothing: the window is empty.
    if (after === undefined) return fail('noRecordsMatch', 'no item matches the given from, until and set');
    // Every item left the list since the previous page (they all changed): nothing is lost,
    // the next incremental harvest delivers them.
    return fail('noRecordsMatch', 'the rest of this list changed since the previous page; harvest again from its responseDate');
  }
  const page = cutPage(items, { items: limit, bytes: settings.pageBytes }, records ? (item) => source.byValueBytes(item, prefix) : () => 0);
  if (records) await source.prepare?.(page);
  const more = items.length > page.length;
  // The size revised up by what the list has shown; unknown until its last page when the first did not tell.
  const seen = state.cursor + page.length + (more ? 1 : 0);
  const completeListSize = state.completeListSize !== undefined ? Math.max(state.completeListSize, seen) : more ? undefined : seen;
  let token = '';
  if (more) {
    const next: ListState = {
      ...state,
      after: source.key(page[page.length - 1]!),
      cursor: state.cursor + page.length,
      ...(completeListSize !== undefined ? { completeListSize } : {}),
    };
    token = resumptionTokenXml(encodeResumptionToken(next, settings.tokenKey), state.cursor, completeListSize);
  } else if (after !== undefined) {
    // The last page of a list that had more than one ends it with an empty token.
    token = resumptionTokenXml('', state.cursor, completeListSize);
  }

  return (async function* () {
    yield `${start}<${state.verb}>\n`;
    if (records) {
      for (const item of page) yield* recordXml(await source.record(item, prefix));
    } else {
      let piece = '';
      for (const item of page) {
        piece += headerXml(source.header(item));
        if (piece.length >= HEADER_PIECE_CHARS) {
          yield piece;
          piece = '';
        }
      }
      if (piece !== '') yield piece;
    }
    yield `${token}</${state.verb}>\n${RESPONSE_END}`;
  })();
}

function windowOf(state: Pick<ListState, 'from' | 'until' | 'set'>): ListWindow {
  return {
    until: state.until,
    ...(state.from !== undefined ? { from: state.from } : {}),
    ...(state.set !== undefined ? { set: state.set } : {}),
  };
}
