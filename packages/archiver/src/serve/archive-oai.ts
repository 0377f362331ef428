// The OAI-PMH 2.0 endpoint of `oaibag serve` over the catalog (docs/serve.md): the request
// rules, errors, dates and tokens are @oaibag/oai-pmh's, as in oaibag-repository. Every protocol
// error is decided before the first byte; records are then streamed, payloads' base64 read from
// the bags as the client reads.
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
  mimeSetSelection,
  mimeSetSpec,
  type OaiProtocolError,
  type OaiRequest,
  oaiError,
  parseOaiRequest,
  RESPONSE_END,
  type ResponseBody,
  responseStart,
  resumptionTokenXml,
  setNameFor,
  setSpecAncestors,
} from '@oaibag/oai-pmh';
import { bagFolders } from '../aip/layout-names.js';
import type { Catalog } from '../catalog/catalog.js';
import type { PayloadLocation } from '../catalog/catalog-schema.js';
import {
  type ArchiveItem,
  countItems,
  earliestDatestamp,
  findItem,
  type ItemQuery,
  itemMimeTypes,
  itemOfRecord,
  listItems,
  type ServedVersion,
  sourcesWithItems,
} from '../catalog/served-items.js';
import { ORE_PREFIX } from './ore-map.js';
import { payloadBase64 } from './payload-base64.js';
import { payloadUrlPath } from './payload-files.js';
import { servedAbout } from './provenance-about.js';
import type { DidlPart } from './served-didl.js';
import { SERVED_FORMATS, type ServedFormat } from './served-formats.js';
import type { StoredRecords, StoredRecordXml } from './stored-records.js';

export interface ArchiveOaiSettings {
  /** Identify's repositoryName, the ORE maps' creator; default `oaibag archive at <base URL>` ({@link defaultArchiveName}). */
  repositoryName?: string;
  adminEmails: readonly string[];
  /** Payloads up to this many bytes go By-Value (base64) in oai_didl too; default 16 MiB. */
  byValueMax?: number;
  /** Records per ListRecords page (default 100), headers per ListIdentifiers page (default 1000). */
  pageRecords?: number;
  pageIdentifiers?: number;
  /** A ListRecords page ends once it carries this many By-Value bytes (default 64 MiB). */
  pageBytes?: number;
}

/**
 * Identify's adminEmail when none is given. OAI-PMH's schema wants one that matches
 * `\S+@(\S+\.)+\S+` (a dot after the `@`, so `nobody@localhost` is not valid), and no real
 * address is known: `.invalid` is the top-level domain reserved for names that never resolve
 * (RFC 2606), so the placeholder is valid and says honestly that nobody reads it.
 */
export const DEFAULT_ADMIN_EMAIL = 'nobody@oaibag.invalid';

/**
 * The archive's repositoryName when none is given: the archive by its URL, never its folder
 * (a repositoryName travels into every harvester's bag-info.txt and RDF), and one archive told
 * from another when a harvester takes from several.
 */
export function defaultArchiveName(baseUrl: string): string {
  return `oaibag archive at ${baseUrl}`;
}

/**
 * True when `value` is an adminEmail OAI-PMH's schema accepts: its emailType pattern
 * `\S+@(\S+\.)+\S+` (`\S`: anything but XML's four white-space characters), and no character
 * an XML document cannot carry. Checked without that regular expression, whose nested
 * repetition backtracks exponentially on a long run of dots: the pattern holds exactly when
 * some `@` after the first character is followed by a dot that is neither right after it nor last.
 */
export function isOaiEmail(value: string): boolean {
  if (/[\x20\t\n\r]/.test(value) || /[\p{Cc}\p{Cs}\uFFFE\uFFFF]/u.test(value)) return false;
  const at = value.indexOf('@', 1);
  if (at < 0) return false;
  const domain = value.slice(at + 1);
  const dot = domain.indexOf('.', 1);
  return dot > 0 && dot <= domain.length - 2;
}

export const SERVE_DEFAULTS = { byValueMax: 16 * 1024 * 1024, pageRecords: 100, pageIdentifiers: 1000, pageBytes: 64 * 1024 * 1024 } as const;

const SOURCE_SET = /^source:(\d+)$/;

/** The access decision for a payload's bytes, for the client of one request. */
export type PayloadGate = (payload: PayloadLocation) => boolean;

export class ArchiveOai {
  /** Tokens are signed with a key of this process: after a restart a harvester starts its list again. */
  private readonly tokenKey = randomBytes(32);

  constructor(
    private readonly archiveDir: string,
    private readonly catalog: Catalog,
    private readonly records: StoredRecords,
    private readonly settings: ArchiveOaiSettings,
  ) {}

  /**
   * The response to one request: a whole document for errors, streamed records otherwise.
   * `mayRead` is the access decision for a payload's bytes: a payload it refuses is given
   * By-Reference only, whatever its size.
   */
  async respond(pairs: Array<[string, string]>, baseUrl: string, mayRead: PayloadGate, now = Math.floor(Date.now() / 1000)): Promise<ResponseBody> {
    const endpoint = `${baseUrl}/oai`;
    const request = parseOaiRequest(pairs, { metadataPrefixes: SERVED_FORMATS.map((format) => format.prefix) });
    if (isOaiRequestFailure(request)) return [responseStart(now, endpoint, request.echo ? request.args : null) + errorElements(request.errors) + RESPONSE_END];
    const start = responseStart(now, endpoint, request.args);
    const fail = (...errors: OaiProtocolError[]) => [start + errorElements(errors) + RESPONSE_END];
    switch (request.verb) {
      case 'Identify':
        return [`${start}${this.identify(baseUrl)}${RESPONSE_END}`];
      case 'ListMetadataFormats': {
        if (request.identifier !== undefined) {
          const item = findItem(this.catalog, request.identifier);
          if (!item) return fail(oaiError('idDoesNotExist', `no item has the identifier ${request.identifier}`));
          if (item.deleted) return fail(oaiError('noMetadataFormats', 'the item was deleted; only its header is disseminated'));
        }
        const formats = SERVED_FORMATS.map(
          (format) =>
            `<metadataFormat><metadataPrefix>${format.prefix}</metadataPrefix><schema>${escapeText(format.schema(baseUrl))}</schema>` +
            `<metadataNamespace>${format.namespace}</metadataNamespace></metadataFormat>\n`,
        );
        return [`${start}<ListMetadataFormats>\n${formats.join('')}</ListMetadataFormats>\n${RESPONSE_END}`];
      }
      case 'ListSets': {
        if (request.resumptionToken !== undefined) return fail(oaiError('badResumptionToken', 'ListSets is never split, so it issues no resumptionToken'));
        const sets = this.sets();
        if (sets.length === 0) return fail(oaiError('noSetHierarchy', 'the archive holds no record yet'));
        return [
          `${start}<ListSets>\n${sets.map(({ spec, name }) => `<set><setSpec>${escapeText(spec)}</setSpec><setName>${escapeText(name)}</setName></set>\n`).join('')}</ListSets>\n${RESPONSE_END}`,
        ];
      }
      case 'GetRecord': {
        const item = findItem(this.catalog, request.identifier);
        if (!item) return fail(oaiError('idDoesNotExist', `no item has the identifier ${request.identifier}`));
        const format = SERVED_FORMATS.find((candidate) => candidate.prefix === request.metadataPrefix)!;
        const record = await this.recordParts(item, format, baseUrl, mayRead);
        return this.stream([`${start}<GetRecord>\n`, ...record, `</GetRecord>\n${RESPONSE_END}`]);
      }
      default:
        return this.list(request, start, now, baseUrl, mayRead);
    }
  }

  private identify(baseUrl: string): string {
    const earliest = earliestDatestamp(this.catalog) ?? Math.floor(Date.now() / 1000);
    const emails = this.settings.adminEmails.map((email) => `<adminEmail>${escapeText(email)}</adminEmail>\n`).join('');
    return (
      `<Identify>\n<repositoryName>${escapeText(this.settings.repositoryName ?? defaultArchiveName(baseUrl))}</repositoryName>\n<baseURL>${escapeText(`${baseUrl}/oai`)}</baseURL>\n` +
      `<protocolVersion>2.0</protocolVersion>\n${emails}<earliestDatestamp>${formatDatestamp(earliest)}</earliestDatestamp>\n` +
      '<deletedRecord>persistent</deletedRecord>\n<granularity>YYYY-MM-DDThh:mm:ssZ</granularity>\n</Identify>\n'
    );
  }

  /** One set per source, then the MIME-type sets of the items with their ancestors. */
  private sets(): Array<{ spec: string; name: string }> {
    const sources = sourcesWithItems(this.catalog).map((source) => ({
      spec: `source:${source.id}`,
      name: `${source.name ?? 'repository'} (${source.baseUrl})`,
    }));
    const mime = new Set<string>();
    for (const type of itemMimeTypes(this.catalog)) {
      const leaf = mimeSetSpec(type);
      if (leaf !== null) for (const spec of setSpecAncestors(leaf)) mime.add(spec);
    }
    return [...sources, ...[...mime].sort().map((spec) => ({ spec, name: setNameFor(spec) }))];
  }

  private async list(
    request: Extract<OaiRequest, { verb: 'ListIdentifiers' | 'ListRecords' }>,
    start: string,
    now: number,
    baseUrl: string,
    mayRead: PayloadGate,
  ): Promise<ResponseBody> {
    const fail = (code: 'badResumptionToken' | 'noRecordsMatch', detail: string) => [start + errorElements([oaiError(code, detail)]) + RESPONSE_END];
    let state: ListState;
    let first = false;
    if (request.resumptionToken !== undefined) {
      const decoded = decodeResumptionToken(request.resumptionToken, this.tokenKey);
      if (!decoded || decoded.verb !== request.verb) return fail('badResumptionToken', 'the resumptionToken is not one this server issued for this verb');
      state = decoded;
    } else {
      const base = listStart(request, now);
      const selection = query(base);
      const total = selection === null || listIsEmpty(base) ? 0 : countItems(this.catalog, selection);
      if (total === 0) return fail('noRecordsMatch', 'no item matches the given from, until and set');
      state = { ...base, after: { datestamp: -1, id: 0 }, cursor: 0, completeListSize: total };
      first = true;
    }
    const records = state.verb === 'ListRecords';
    const limit = records ? (this.settings.pageRecords ?? SERVE_DEFAULTS.pageRecords) : (this.settings.pageIdentifiers ?? SERVE_DEFAULTS.pageIdentifiers);
    const items = listItems(this.catalog, { ...query(state)!, ...(first ? {} : { after: state.after }), limit: limit + 1 });
    if (items.length === 0) return fail('noRecordsMatch', 'the rest of this list changed since the previous page; harvest again from its responseDate');
    const format = SERVED_FORMATS.find((candidate) => candidate.prefix === state.metadataPrefix)!;
    const page = records ? this.pageByBytes(items.slice(0, limit), format) : items.slice(0, limit);
    const parts: DidlPart[] = [`${start}<${state.verb}>\n`];
    for (const item of page) {
      if (records) parts.push(...(await this.recordParts(item, format, baseUrl, mayRead)));
      else parts.push(headerXml(item));
    }
    const more = items.length > page.length;
    const completeListSize = Math.max(state.completeListSize, state.cursor + page.length + (more ? 1 : 0));
    if (more) {
      const last = page[page.length - 1]!;
      const next: ListState = { ...state, after: { datestamp: last.datestamp, id: last.id }, cursor: state.cursor + page.length, completeListSize };
      parts.push(resumptionTokenXml(encodeResumptionToken(next, this.tokenKey), state.cursor, completeListSize));
    } else if (!first) {
      parts.push(resumptionTokenXml('', state.cursor, completeListSize));
    }
    parts.push(`</${state.verb}>\n${RESPONSE_END}`);
    return this.stream(parts);
  }

  /** The first items whose By-Value bytes fit in a page (always at least one). */
  private pageByBytes(items: ArchiveItem[], format: ServedFormat): ArchiveItem[] {
    if (!format.carriesContent) return items;
    const byValueMax = this.settings.byValueMax ?? SERVE_DEFAULTS.byValueMax;
    const pageBytes = this.settings.pageBytes ?? SERVE_DEFAULTS.pageBytes;
    let bytes = 0;
    for (let i = 0; i < items.length; i++) {
      const size = items[i]!.version?.size ?? 0;
      if (size <= byValueMax) bytes += size;
      if (bytes > pageBytes && i > 0) return items.slice(0, i);
    }
    return items;
  }

  /** The ORE resource map of the version a bag's record holds (`/ore/<bag>/<record>`); undefined when there is none. */
  async oreMap(bagPath: string, record: number, baseUrl: string): Promise<string | undefined> {
    const item = itemOfRecord(this.catalog, bagPath, record);
    if (!item) return undefined;
    const ore = SERVED_FORMATS.find((format) => format.prefix === 'ore')!;
    const parts = await this.metadataParts(item, ore, baseUrl, () => false); // a map carries no bytes
    return `<?xml version="1.0" encoding="UTF-8"?>\n${parts.join('')}`;
  }

  /** One `<record>`: the header, and for a live item its metadata and `about` containers. */
  private async recordParts(item: ArchiveItem, format: ServedFormat, baseUrl: string, mayRead: PayloadGate): Promise<DidlPart[]> {
    const version = item.version;
    if (item.deleted || !version) return [`<record>${headerXml(item)}</record>\n`];
    const stored = await this.records.record(version.bagPath, version.record);
    const metadata = await this.metadataParts({ ...item, version }, format, baseUrl, mayRead, stored);
    const storedAt = formatDatestamp(Math.floor(Date.parse(version.storedAt) / 1000));
    const about = servedAbout(
      { baseUrl: item.sourceBaseUrl, identifier: item.original, datestamp: version.datestamp, harvestDate: storedAt, metadataNamespace: NS.didl },
      stored.about,
    );
    return [`<record>${headerXml(item)}<metadata>\n`, ...metadata, '</metadata>\n', about, '</record>\n'];
  }

  private async metadataParts(
    item: ArchiveItem & { version: ServedVersion },
    format: ServedFormat,
    baseUrl: string,
    mayRead: PayloadGate,
    known?: StoredRecordXml,
  ): Promise<DidlPart[]> {
    const version = item.version;
    const stored = known ?? (await this.records.record(version.bagPath, version.record));
    const parts = this.catalog.versionParts(version.id);
    const fetchedRefs = this.catalog.versionFetches(version.id).map(({ part, ref }) => ({ part, ref }));
    const storedAt = formatDatestamp(Math.floor(Date.parse(version.storedAt) / 1000));
    return format.write({
      item,
      stored,
      parts,
      fetchedRefs,
      baseUrl,
      urlOf: (location: PayloadLocation) => baseUrl + payloadUrlPath(location.bagPath, location.path),
      oreUrl: `${baseUrl}${ORE_PREFIX}${bagFolders(version.bagPath).map(encodeURIComponent).join('/')}/${version.record}`,
      repositoryName: this.settings.repositoryName ?? defaultArchiveName(baseUrl),
      byValueMax: this.settings.byValueMax ?? SERVE_DEFAULTS.byValueMax,
      mayRead,
      storedAt,
    });
  }

  /** The parts as a body: strings as they are, each payload's base64 read as the client reads. */
  private async *stream(parts: readonly DidlPart[]): AsyncGenerator<string> {
    for (const part of parts) {
      if (typeof part === 'string') yield part;
      else yield* payloadBase64(this.archiveDir, part.base64);
    }
  }
}

/** What a list's set selects; null for a set that is not one of the archive's. */
function query(state: Pick<ListState, 'from' | 'until' | 'set'>): ItemQuery | null {
  const selection: ItemQuery = { ...(state.from !== undefined ? { from: state.from } : {}), until: state.until };
  if (state.set === undefined) return selection;
  const source = SOURCE_SET.exec(state.set);
  if (source) return { ...selection, sourceId: Number(source[1]) };
  const mime = mimeSetSelection(state.set);
  return mime === null ? null : { ...selection, mime };
}

function headerXml(item: ArchiveItem): string {
  const mimeSet = item.mimeType === null ? null : mimeSetSpec(item.mimeType);
  return (
    `<header${item.deleted ? ' status="deleted"' : ''}><identifier>${escapeText(item.identifier)}</identifier>` +
    `<datestamp>${formatDatestamp(item.datestamp)}</datestamp><setSpec>source:${item.sourceId}</setSpec>` +
    (mimeSet === null ? '' : `<setSpec>${escapeText(mimeSet)}</setSpec>`) +
    '</header>\n'
  );
}
