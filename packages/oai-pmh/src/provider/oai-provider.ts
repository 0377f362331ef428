// The OAI-PMH 2.0 data provider both servers run (`oaibag-repository` over a site, `oaibag serve`
// over an archive): the verbs, their arguments and errors, Identify, ListSets,
// ListMetadataFormats, GetRecord and the paged lists, over an item source each server supplies.
import { errorElements, RESPONSE_END, type ResponseBody, responseStart } from '../oai-envelope.js';
import { type OaiProtocolError, oaiError } from '../oai-errors.js';
import { isOaiRequestFailure, parseOaiRequest } from '../oai-request.js';
import { MIN_RESUMPTION_KEY_BYTES } from '../resumption-token.js';
import type { ItemSource } from './item-source.js';
import { type ListSettings, listItems } from './list-items.js';

export { DEFAULT_COUNT_LIMIT } from './list-items.js';

import { identifyXml, listMetadataFormatsXml, listSetsXml, recordXml } from './provider-xml.js';

/** How a provider pages its lists, and the key that signs its resumption tokens. */
export type ProviderSettings = ListSettings;

/**
 * Turns a request into a response body. Every protocol error is decided before the first byte is
 * produced, so an error response is always a complete, valid document; what follows is streamed
 * (records, with the bytes they carry).
 */
export class OaiProvider {
  private readonly settings: ProviderSettings;

  /** Throws a RangeError for a page bound below 1 or a token key shorter than 16 bytes. */
  constructor(settings: ProviderSettings) {
    for (const name of ['pageRecords', 'pageIdentifiers', 'pageBytes', 'countLimit'] as const) {
      const value = settings[name];
      if (value === undefined && name === 'countLimit') continue;
      if (!Number.isSafeInteger(value) || (value as number) < 1) throw new RangeError(`OaiProvider: ${name} must be a whole number of at least 1`);
    }
    if (settings.tokenKey.length < MIN_RESUMPTION_KEY_BYTES)
      throw new RangeError(`OaiProvider: the token key needs at least ${MIN_RESUMPTION_KEY_BYTES} bytes`);
    this.settings = { ...settings };
  }

  /** The answer to one request, given as its decoded name/value pairs in order (query string or form body). */
  async respond<Item>(source: ItemSource<Item>, pairs: ReadonlyArray<readonly [string, string]>, now = Math.floor(Date.now() / 1000)): Promise<ResponseBody> {
    const request = parseOaiRequest(pairs, { metadataPrefixes: source.formats.map((format) => format.prefix) });
    if (isOaiRequestFailure(request)) {
      return [responseStart(now, source.endpoint, request.echo ? request.args : null) + errorElements(request.errors) + RESPONSE_END];
    }
    const start = responseStart(now, source.endpoint, request.args);
    const fail = (...errors: OaiProtocolError[]) => [start + errorElements(errors) + RESPONSE_END];
    const unknown = (identifier: string) => fail(oaiError('idDoesNotExist', `no item has the identifier ${quoteIdentifier(identifier)}`));

    switch (request.verb) {
      case 'Identify':
        return [start + identifyXml(await source.identify(), source.endpoint, now) + RESPONSE_END];
      case 'ListMetadataFormats': {
        if (request.identifier !== undefined) {
          const item = await source.get(request.identifier);
          if (item === undefined) return unknown(request.identifier);
          if (source.header(item).deleted) {
            return fail(oaiError('noMetadataFormats', `the item ${quoteIdentifier(request.identifier)} was deleted; only its header is disseminated`));
          }
        }
        return [start + listMetadataFormatsXml(source.formats) + RESPONSE_END];
      }
      case 'ListSets': {
        if (request.resumptionToken !== undefined) return fail(oaiError('badResumptionToken', 'ListSets is never split, so it issues no resumptionToken'));
        const sets = await source.sets();
        if (sets.length === 0) return fail(oaiError('noSetHierarchy', 'no set has a member yet'));
        return [start + listSetsXml(sets) + RESPONSE_END];
      }
      case 'GetRecord': {
        const item = await source.get(request.identifier);
        if (item === undefined) return unknown(request.identifier);
        await source.prepare?.([item]);
        return (async function* () {
          yield `${start}<GetRecord>\n`;
          yield* recordXml(await source.record(item, request.metadataPrefix));
          yield `</GetRecord>\n${RESPONSE_END}`;
        })();
      }
      case 'ListIdentifiers':
      case 'ListRecords':
        return listItems(source, this.settings, request, start, now);
    }
  }
}

/** An identifier as an error message quotes it: a JSON string, cut after 100 characters (it is the client's, of any length). */
function quoteIdentifier(value: string): string {
  return JSON.stringify(value.length > 100 ? `${value.slice(0, 100)}…` : value);
}
