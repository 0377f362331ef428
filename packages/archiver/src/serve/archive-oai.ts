// The OAI-PMH 2.0 endpoint of `oaibag serve` over the catalog (docs/serve.md): the request
// rules, errors, dates and tokens are @oaibag/oai-pmh's, as in oaibag-repository.
import { randomBytes } from 'node:crypto';
import { escapeText, NS } from '@oaibag/didl';
import {
  decodeResumptionToken,
  encodeResumptionToken,
  errorElements,
  formatDatestamp,
  isOaiRequestFailure,
  type ListState,
  listIsEmpty,
  listStart,
  type OaiProtocolError,
  type OaiRequest,
  oaiError,
  parseOaiRequest,
  RESPONSE_END,
  responseStart,
  resumptionTokenXml,
} from '@oaibag/oai-pmh';
import type { Catalog } from '../catalog/catalog.js';
import { type ArchiveItem, countItems, earliestDatestamp, findItem, listItems, sourcesWithItems } from '../catalog/served-items.js';

export interface ArchiveOaiSettings {
  repositoryName: string;
  adminEmails: readonly string[];
  /** Records per ListRecords page, headers per ListIdentifiers page. */
  pageRecords?: number;
  pageIdentifiers?: number;
}

interface MetadataFormat {
  prefix: string;
  schema: string;
  namespace: string;
  write(item: ArchiveItem): string;
}

const OAI_DC_NAMESPACE = 'http://www.openarchives.org/OAI/2.0/oai_dc/';
const FORMATS: readonly MetadataFormat[] = [
  { prefix: 'oai_dc', schema: 'http://www.openarchives.org/OAI/2.0/oai_dc.xsd', namespace: OAI_DC_NAMESPACE, write: oaiDc },
];
const SOURCE_SET = /^source:(\d+)$/;

export class ArchiveOai {
  /** Tokens are signed with a key of this process: after a restart a harvester starts its list again. */
  private readonly tokenKey = randomBytes(32);

  constructor(
    private readonly catalog: Catalog,
    private readonly settings: ArchiveOaiSettings,
  ) {}

  /** The whole response to one request (the archive's records are small without their payloads). */
  respond(pairs: Array<[string, string]>, baseUrl: string, now = Math.floor(Date.now() / 1000)): string {
    const endpoint = `${baseUrl}/oai`;
    const request = parseOaiRequest(pairs, { metadataPrefixes: FORMATS.map((format) => format.prefix) });
    if (isOaiRequestFailure(request)) return responseStart(now, endpoint, request.echo ? request.args : null) + errorElements(request.errors) + RESPONSE_END;
    const start = responseStart(now, endpoint, request.args);
    const fail = (...errors: OaiProtocolError[]) => start + errorElements(errors) + RESPONSE_END;
    switch (request.verb) {
      case 'Identify':
        return `${start}${this.identify(endpoint)}${RESPONSE_END}`;
      case 'ListMetadataFormats': {
        if (request.identifier !== undefined) {
          const item = findItem(this.catalog, request.identifier);
          if (!item) return fail(oaiError('idDoesNotExist', `no item has the identifier ${request.identifier}`));
          if (item.deleted) return fail(oaiError('noMetadataFormats', 'the item was deleted; only its header is disseminated'));
        }
        const formats = FORMATS.map(
          (format) =>
            `<metadataFormat><metadataPrefix>${format.prefix}</metadataPrefix><schema>${format.schema}</schema><metadataNamespace>${format.namespace}</metadataNamespace></metadataFormat>\n`,
        );
        return `${start}<ListMetadataFormats>\n${formats.join('')}</ListMetadataFormats>\n${RESPONSE_END}`;
      }
      case 'ListSets': {
        if (request.resumptionToken !== undefined) return fail(oaiError('badResumptionToken', 'ListSets is never split, so it issues no resumptionToken'));
        const sources = sourcesWithItems(this.catalog);
        if (sources.length === 0) return fail(oaiError('noSetHierarchy', 'the archive holds no record yet'));
        const sets = sources.map(
          (source) =>
            `<set><setSpec>source:${source.id}</setSpec><setName>${escapeText(`${source.name ?? 'repository'} (${source.baseUrl})`)}</setName></set>\n`,
        );
        return `${start}<ListSets>\n${sets.join('')}</ListSets>\n${RESPONSE_END}`;
      }
      case 'GetRecord': {
        const item = findItem(this.catalog, request.identifier);
        if (!item) return fail(oaiError('idDoesNotExist', `no item has the identifier ${request.identifier}`));
        const format = FORMATS.find((candidate) => candidate.prefix === request.metadataPrefix)!;
        return `${start}<GetRecord>\n${recordXml(item, format)}</GetRecord>\n${RESPONSE_END}`;
      }
      default:
        return this.list(request, start, now);
    }
  }

  private identify(endpoint: string): string {
    const earliest = earliestDatestamp(this.catalog) ?? Math.floor(Date.now() / 1000);
    const emails = this.settings.adminEmails.map((email) => `<adminEmail>${escapeText(email)}</adminEmail>\n`).join('');
    return (
      `<Identify>\n<repositoryName>${escapeText(this.settings.repositoryName)}</repositoryName>\n<baseURL>${escapeText(endpoint)}</baseURL>\n` +
      `<protocolVersion>2.0</protocolVersion>\n${emails}<earliestDatestamp>${formatDatestamp(earliest)}</earliestDatestamp>\n` +
      '<deletedRecord>persistent</deletedRecord>\n<granularity>YYYY-MM-DDThh:mm:ssZ</granularity>\n</Identify>\n'
    );
  }

  private list(request: Extract<OaiRequest, { verb: 'ListIdentifiers' | 'ListRecords' }>, start: string, now: number): string {
    const fail = (code: 'badResumptionToken' | 'noRecordsMatch', detail: string) => start + errorElements([oaiError(code, detail)]) + RESPONSE_END;
    let state: ListState;
    let first = false;
    if (request.resumptionToken !== undefined) {
      const decoded = decodeResumptionToken(request.resumptionToken, this.tokenKey);
      if (!decoded || decoded.verb !== request.verb) return fail('badResumptionToken', 'the resumptionToken is not one this server issued for this verb');
      state = decoded;
    } else {
      const base = listStart(request, now);
      const sourceId = sourceOfSet(base.set);
      const empty = sourceId === null || listIsEmpty(base);
      const total = empty ? 0 : countItems(this.catalog, query(base));
      if (total === 0) return fail('noRecordsMatch', 'no item matches the given from, until and set');
      state = { ...base, after: { datestamp: -1, id: 0 }, cursor: 0, completeListSize: total };
      first = true;
    }
    const records = state.verb === 'ListRecords';
    const limit = records ? (this.settings.pageRecords ?? 100) : (this.settings.pageIdentifiers ?? 1000);
    const items = listItems(this.catalog, { ...query(state), ...(first ? {} : { after: state.after }), limit: limit + 1 });
    if (items.length === 0) return fail('noRecordsMatch', 'the rest of this list changed since the previous page; harvest again from its responseDate');
    const format = FORMATS.find((candidate) => candidate.prefix === state.metadataPrefix)!;
    const page = items.slice(0, limit);
    let body = `${start}<${state.verb}>\n`;
    for (const item of page) body += records ? recordXml(item, format) : headerXml(item);
    const more = items.length > limit;
    const completeListSize = Math.max(state.completeListSize, state.cursor + page.length + (more ? 1 : 0));
    if (more) {
      const last = page[page.length - 1]!;
      const next: ListState = { ...state, after: { datestamp: last.datestamp, id: last.id }, cursor: state.cursor + page.length, completeListSize };
      body += resumptionTokenXml(encodeResumptionToken(next, this.tokenKey), state.cursor, completeListSize);
    } else if (!first) {
      body += resumptionTokenXml('', state.cursor, completeListSize);
    }
    return `${body}</${state.verb}>\n${RESPONSE_END}`;
  }
}

/** The source a set names; undefined for no set, null for a set that is not the archive's. */
function sourceOfSet(set: string | undefined): number | undefined | null {
  if (set === undefined) return undefined;
  const match = SOURCE_SET.exec(set);
  return match ? Number(match[1]) : null;
}

function query(state: Pick<ListState, 'from' | 'until' | 'set'>): { from?: number; until: number; sourceId?: number } {
  const sourceId = sourceOfSet(state.set);
  return { ...(state.from !== undefined ? { from: state.from } : {}), until: state.until, ...(typeof sourceId === 'number' ? { sourceId } : {}) };
}

function headerXml(item: ArchiveItem): string {
  return (
    `<header${item.deleted ? ' status="deleted"' : ''}><identifier>${escapeText(item.identifier)}</identifier>` +
    `<datestamp>${formatDatestamp(item.datestamp)}</datestamp><setSpec>source:${item.sourceId}</setSpec></header>\n`
  );
}

function recordXml(item: ArchiveItem, format: MetadataFormat): string {
  if (item.deleted || !item.version) return `<record>${headerXml(item)}</record>\n`;
  return `<record>${headerXml(item)}<metadata>\n${format.write(item)}</metadata></record>\n`;
}

/** Dublin Core from what the catalog knows of the version (docs/serve.md, oai_dc). */
function oaiDc(item: ArchiveItem): string {
  const version = item.version!;
  const title = lastSegment(item.original) || item.original;
  const date =
    version.lastModified !== null && !Number.isNaN(Date.parse(version.lastModified)) ? new Date(version.lastModified).toISOString() : version.datestamp;
  return (
    `<oai_dc:dc xmlns:oai_dc="${OAI_DC_NAMESPACE}" xmlns:dc="${NS.dc}" xmlns:xsi="${NS.xsi}" ` +
    `xsi:schemaLocation="${OAI_DC_NAMESPACE} http://www.openarchives.org/OAI/2.0/oai_dc.xsd">\n` +
    `<dc:title>${escapeText(title)}</dc:title>\n<dc:identifier>${escapeText(item.original)}</dc:identifier>\n` +
    (version.mimeType ? `<dc:format>${escapeText(version.mimeType)}</dc:format>\n` : '') +
    `<dc:date>${escapeText(date)}</dc:date>\n<dc:source>${escapeText(item.sourceBaseUrl)}</dc:source>\n</oai_dc:dc>\n`
  );
}

/** The last path segment of a URL identifier, percent-decoded when it can be. */
function lastSegment(identifier: string): string {
  let segment: string;
  try {
    segment = new URL(identifier).pathname.split('/').filter(Boolean).pop() ?? '';
  } catch {
    return '';
  }
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
