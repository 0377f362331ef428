import { escapeText } from '@oaibag/didl';
import {
  errorElements,
  formatDatestamp,
  isOaiRequestFailure,
  type OaiProtocolError,
  oaiError,
  parseOaiRequest,
  pathForIdentifier,
  RESPONSE_END,
  type ResponseBody,
  responseStart,
  rightsManifestXml,
} from '@oaibag/oai-pmh';
import type { Viewer } from '../access/access-control.js';
import type { IndexedFile } from '../core/model.js';
import type { FileIndex } from '../site/file-index.js';
import { setNameFor, setSpecAncestors } from '../site/set-spec.js';
import type { SiteIndexer } from '../site/site-indexer.js';
import { type ListSettings, listItems } from './list-items.js';
import type { MetadataFormat } from './metadata-formats.js';
import { writeRecord } from './record-xml.js';
import { recordAbout } from './rights-option.js';

export interface ProviderSettings extends ListSettings {
  /** Identify's repositoryName; default `Web files at <base URL>` ({@link defaultRepositoryName}). */
  repositoryName?: string;
  adminEmails: readonly string[];
}

/** One OAI-PMH request as the server hands it over. */
export interface OaiExchange {
  /** Decoded name/value pairs of the query string or form body, in order. */
  pairs: Array<[string, string]>;
  viewer: Viewer;
  baseUrl: string;
}

/**
 * The OAI-PMH 2.0 data provider: turns a request into a response body. Every protocol
 * error is decided before the first byte is produced, so an error response is always a
 * complete, valid document; what follows is streamed (records, with their files' bytes).
 */
export class OaiProvider {
  constructor(
    private readonly index: FileIndex,
    private readonly indexer: SiteIndexer,
    private readonly settings: ProviderSettings,
    private readonly formats: (baseUrl: string) => MetadataFormat[],
  ) {}

  async respond(exchange: OaiExchange): Promise<ResponseBody> {
    const now = Math.floor(Date.now() / 1000);
    const endpoint = `${exchange.baseUrl}/oai`;
    const formats = this.formats(exchange.baseUrl);
    const request = parseOaiRequest(exchange.pairs, { metadataPrefixes: formats.map((format) => format.prefix) });
    if (isOaiRequestFailure(request)) {
      return [responseStart(now, endpoint, request.echo ? request.args : null) + errorElements(request.errors) + RESPONSE_END];
    }
    const fail = (...errors: OaiProtocolError[]) => [responseStart(now, endpoint, request.args) + errorElements(errors) + RESPONSE_END];
    const start = responseStart(now, endpoint, request.args);
    const context = { ...exchange, now, formats };

    switch (request.verb) {
      case 'Identify':
        return [start + this.identify(exchange.baseUrl, exchange.viewer) + RESPONSE_END];
      case 'ListMetadataFormats': {
        if (request.identifier !== undefined) {
          const file = await this.lookUp(request.identifier, exchange);
          if (!file) return fail(oaiError('idDoesNotExist', `no item has the identifier ${quote(request.identifier)}`));
          if (file.deleted) {
            return fail(oaiError('noMetadataFormats', `the item ${quote(request.identifier)} was deleted; only its header is disseminated`));
          }
        }
        return [start + listMetadataFormats(formats) + RESPONSE_END];
      }
      case 'ListSets': {
        if (request.resumptionToken !== undefined) {
          return fail(oaiError('badResumptionToken', 'ListSets is never split, so it issues no resumptionToken'));
        }
        const sets = this.visibleSets(exchange.viewer);
        if (sets.length === 0) return fail(oaiError('noSetHierarchy', 'no set has members yet: the sets are the MIME types of the files exported'));
        return [start + listSets(sets) + RESPONSE_END];
      }
      case 'GetRecord': {
        const format = formats.find((candidate) => candidate.prefix === request.metadataPrefix)!;
        const file = await this.lookUp(request.identifier, exchange);
        if (!file) return fail(oaiError('idDoesNotExist', `no item has the identifier ${quote(request.identifier)}`));
        return (async function* (provider) {
          yield `${start}<GetRecord>\n`;
          yield* writeRecord(
            provider.indexer,
            file,
            request.identifier,
            format,
            provider.settings.byValueMax,
            recordAbout(provider.settings.rights, exchange.baseUrl),
          );
          yield `</GetRecord>\n${RESPONSE_END}`;
        })(this);
      }
      case 'ListIdentifiers':
      case 'ListRecords':
        return listItems(this.index, this.indexer, this.settings, context, request, start);
    }
  }

  /**
   * The item an identifier names, as this viewer may see it, refreshed from the disk first
   * (a file the scanner has not seen yet exists all the same). Undefined: no such item.
   */
  private async lookUp(identifier: string, exchange: OaiExchange): Promise<IndexedFile | undefined> {
    const path = pathForIdentifier(exchange.baseUrl, identifier);
    if (path === null || !exchange.viewer.canSee(path)) return undefined;
    await this.indexer.refresh(path);
    return this.index.byPath(path);
  }

  private identify(baseUrl: string, viewer: Viewer): string {
    const earliest = this.index.earliestDatestamp(viewer.hiddenPrefixes) ?? Math.floor(Date.now() / 1000);
    let xml =
      '<Identify>\n' +
      `<repositoryName>${escapeText(this.settings.repositoryName ?? defaultRepositoryName(baseUrl))}</repositoryName>\n` +
      `<baseURL>${escapeText(`${baseUrl}/oai`)}</baseURL>\n` +
      '<protocolVersion>2.0</protocolVersion>\n';
    const emails = this.settings.adminEmails.length > 0 ? this.settings.adminEmails : [defaultAdminEmail(baseUrl)];
    for (const email of emails) xml += `<adminEmail>${escapeText(email)}</adminEmail>\n`;
    xml +=
      `<earliestDatestamp>${formatDatestamp(earliest)}</earliestDatestamp>\n` +
      '<deletedRecord>persistent</deletedRecord>\n' +
      '<granularity>YYYY-MM-DDThh:mm:ssZ</granularity>\n' +
      '<compression>gzip</compression>\n<compression>deflate</compression>\n' +
      (this.settings.rights ? `<description>${rightsManifestXml(this.settings.rights)}</description>\n` : '') +
      '</Identify>\n';
    return xml;
  }

  /** Sets with at least one live member this viewer may see, with their ancestors. */
  private visibleSets(viewer: Viewer): string[] {
    const sets = new Set<string>();
    for (const leaf of this.index.liveSetSpecs(viewer.hiddenPrefixes)) for (const spec of setSpecAncestors(leaf)) sets.add(spec);
    return [...sets].sort();
  }
}

function listMetadataFormats(formats: MetadataFormat[]): string {
  let xml = '<ListMetadataFormats>\n';
  for (const format of formats) {
    xml +=
      `<metadataFormat><metadataPrefix>${format.prefix}</metadataPrefix>` +
      `<schema>${escapeText(format.schema)}</schema>` +
      `<metadataNamespace>${escapeText(format.namespace)}</metadataNamespace></metadataFormat>\n`;
  }
  return `${xml}</ListMetadataFormats>\n`;
}

function listSets(sets: string[]): string {
  let xml = '<ListSets>\n';
  for (const spec of sets) xml += `<set><setSpec>${escapeText(spec)}</setSpec><setName>${escapeText(setNameFor(spec))}</setName></set>\n`;
  return `${xml}</ListSets>\n`;
}

/**
 * Identify's repositoryName when none is given: the site by its public URL. Never the folder
 * served (it was `Web files of <root>`): a repositoryName travels into every harvester's
 * bag-info.txt and RDF, and a server's file system layout is nobody's business.
 */
export function defaultRepositoryName(baseUrl: string): string {
  return `Web files at ${baseUrl}`;
}

/** webmaster@ the site's host when that is a domain (the schema wants a dot), else a placeholder. */
function defaultAdminEmail(baseUrl: string): string {
  const host = new URL(baseUrl).hostname;
  return /^[^\s[\]]+\.[^\s[\]]+$/.test(host) ? `webmaster@${host}` : 'webmaster@localhost.localdomain';
}

function quote(value: string): string {
  const short = value.length > 100 ? `${value.slice(0, 100)}…` : value;
  return JSON.stringify(short);
}
