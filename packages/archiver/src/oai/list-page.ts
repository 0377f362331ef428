// One page of an OAI-PMH list, as harvest (ListRecords) and urls (ListIdentifiers) both read it:
// the response streamed through packages/didl with the caller's record handlers, refused when it
// is not an OAI-PMH response, and reduced to what the list loop needs next.
import { type ReadDidlOptions, readDidl } from '@oaibag/didl';
import { ArchiverError } from '../core/errors.js';
import { bodyChunks } from './body-chunks.js';
import type { OaiHttpResponse } from './oai-client.js';

/** What a page says about the list: its errors, its responseDate, the next token. */
export interface ListPage {
  /** OAI-PMH `error` elements (noRecordsMatch included: the caller decides). */
  errors: Array<{ code: string; message: string }>;
  responseDate?: string;
  /** The next page's token; absent on the last page. */
  token?: string;
  completeListSize?: number;
  /** Records (headers included) the page carried. */
  records: number;
}

/**
 * Reads one list page from `response` with `read`'s handlers (records are reported, not thrown:
 * `recordErrors: 'report'`). Throws ERR_HARVEST_NOT_OAI when the answer is a DIDL document
 * rather than an OAI-PMH response; a page that breaks off or is not well-formed rejects with
 * the reader's error (the caller asks for it again).
 */
export async function readListPage(response: Promise<OaiHttpResponse>, what: string, read: ReadDidlOptions): Promise<ListPage> {
  // The body's chunks are nobody else's: base64 is decoded into them (no buffer per chunk).
  const summary = await readDidl(bodyChunks((await response).body), { ...read, recordErrors: 'report', chunksAreOurs: true });
  if (summary.kind !== 'oai-pmh') throw new ArchiverError('ERR_HARVEST_NOT_OAI', `${what} did not answer with an OAI-PMH response`);
  const { errors, responseDate, resumptionToken } = summary.page;
  const page: ListPage = { errors, records: summary.records };
  if (responseDate !== undefined) page.responseDate = responseDate;
  if (resumptionToken?.value) page.token = resumptionToken.value;
  if (resumptionToken?.completeListSize !== undefined) page.completeListSize = resumptionToken.completeListSize;
  return page;
}
