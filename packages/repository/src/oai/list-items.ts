import {
  decodeResumptionToken,
  encodeResumptionToken,
  errorElements,
  identifierForPath,
  type ListState,
  listIsEmpty,
  listStart,
  type OaiRequest,
  oaiError,
  RESPONSE_END,
  type ResponseBody,
  type RightsStatement,
  resumptionTokenXml,
} from '@oaibag/oai-pmh';
import type { Viewer } from '../access/access-control.js';
import type { FileIndex, ListQuery } from '../site/file-index.js';
import type { SiteIndexer } from '../site/site-indexer.js';
import type { MetadataFormat } from './metadata-formats.js';
import { headerXml } from './oai-xml.js';
import { writeRecord } from './record-xml.js';
import { recordAbout } from './rights-option.js';

export interface ListSettings {
  /** Records per ListRecords page (the mod_oai paper found ~50 the sweet spot). */
  pageRecords: number;
  /** Headers per ListIdentifiers page. */
  pageIdentifiers: number;
  /** A ListRecords page ends once it has carried this many By-Value bytes. */
  pageBytes: number;
  /** Files up to this size go By-Value in oai_didl; 0: By-Reference only. */
  byValueMax: number;
  /** The rights of the metadata (`--rights`): each record carries them in an `about`. */
  rights?: RightsStatement;
}

interface ListContext {
  viewer: Viewer;
  baseUrl: string;
  now: number;
  formats: MetadataFormat[];
}

type ListRequest = Extract<OaiRequest, { verb: 'ListIdentifiers' | 'ListRecords' }>;

/**
 * ListIdentifiers and ListRecords, paged with stateless resumption tokens. The list is the
 * items with datestamps in [from, until], in (datestamp, id) order; `until` is fixed when
 * the first page is served, at one second before that response's responseDate, so an item
 * that changes during the list leaves it, never shifts the others, and is delivered by the
 * next harvest whose `from` is that responseDate (docs/repository.md).
 */
export async function listItems(
  index: FileIndex,
  indexer: SiteIndexer,
  settings: ListSettings,
  context: ListContext,
  request: ListRequest,
  start: string,
): Promise<ResponseBody> {
  const fail = (code: 'badResumptionToken' | 'noRecordsMatch', detail: string) => [start + errorElements([oaiError(code, detail)]) + RESPONSE_END];
  let state: ListState;
  let first: boolean;
  if (request.resumptionToken !== undefined) {
    const decoded = decodeResumptionToken(request.resumptionToken, index.tokenKey);
    if (!decoded || decoded.verb !== request.verb) {
      return fail('badResumptionToken', 'the resumptionToken is not one this repository issued for this verb');
    }
    state = decoded;
    first = false;
  } else {
    const base = listStart(request, context.now);
    const empty = listIsEmpty(base);
    const total = empty ? 0 : index.count(query(base, context.viewer));
    if (total === 0) return fail('noRecordsMatch', 'no item matches the given from, until and set');
    state = { ...base, after: { datestamp: Number.MIN_SAFE_INTEGER, id: 0 }, cursor: 0, completeListSize: total };
    first = true;
  }

  const records = state.verb === 'ListRecords';
  const limit = records ? settings.pageRecords : settings.pageIdentifiers;
  const rows = index.list({ ...query(state, context.viewer), ...(first ? {} : { after: state.after }), limit: limit + 1 });
  if (rows.length === 0) {
    // Every item left the list since the previous page (they all changed): nothing is lost,
    // the next incremental harvest delivers them.
    return fail('noRecordsMatch', 'the rest of this list changed since the previous page; harvest again from its responseDate');
  }
  const format = context.formats.find((candidate) => candidate.prefix === state.metadataPrefix)!;

  return (async function* () {
    yield `${start}<${state.verb}>\n`;
    let sent = 0;
    let byValueBytes = 0;
    let last = state.after;
    // Headers are gathered into chunks of about 64 KB: one stream write per header costs
    // more than the XML itself on a 1,000-header page.
    let headerChunk = '';
    for (const row of rows.slice(0, limit)) {
      const identifier = identifierForPath(context.baseUrl, row.path);
      if (records) byValueBytes += yield* writeRecord(indexer, row, identifier, format, settings.byValueMax, recordAbout(settings.rights, context.baseUrl));
      else {
        headerChunk += headerXml(row, identifier);
        if (headerChunk.length >= 65536) {
          yield headerChunk;
          headerChunk = '';
        }
      }
      sent++;
      last = { datestamp: row.datestamp, id: row.id };
      if (byValueBytes >= settings.pageBytes) break;
    }
    if (headerChunk !== '') yield headerChunk;
    const more = rows.length > sent;
    const cursor = state.cursor;
    const completeListSize = Math.max(state.completeListSize, cursor + sent + (more ? 1 : 0));
    if (more) {
      const next: ListState = { ...state, after: last, cursor: cursor + sent, completeListSize };
      yield resumptionTokenXml(encodeResumptionToken(next, index.tokenKey), cursor, completeListSize);
    } else if (!first) {
      yield resumptionTokenXml('', cursor, completeListSize);
    }
    yield `</${state.verb}>\n${RESPONSE_END}`;
  })();
}

function query(state: Pick<ListState, 'set' | 'from' | 'until'>, viewer: Viewer): Omit<ListQuery, 'limit'> {
  return {
    until: state.until,
    ...(state.from !== undefined ? { from: state.from } : {}),
    ...(state.set !== undefined ? { setSpec: state.set } : {}),
    hiddenPrefixes: viewer.hiddenPrefixes,
  };
}
