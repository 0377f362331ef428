// The site's files as the items of the shared OAI-PMH provider (@oaibag/oai-pmh): what one
// client may see of the index, each file's header, and its record in the mod_oai formats.
import {
  type IdentifyFacts,
  type ItemHeader,
  type ItemKey,
  type ItemRecord,
  type ItemSource,
  type ListWindow,
  OaiProvider,
  type ProviderSettings,
  pathForIdentifier,
  type ResponseBody,
  type RightsStatement,
  rightsManifestXml,
  type SetDescription,
} from '@oaibag/oai-pmh';
import type { Viewer } from '../access/access-control.js';
import type { IndexedFile } from '../core/model.js';
import type { FileIndex, ListQuery } from '../site/file-index.js';
import { setNameFor, setSpecAncestors } from '../site/set-spec.js';
import type { SiteIndexer } from '../site/site-indexer.js';
import { identifierForPath } from '../site/site-mapping.js';
import { type MetadataFormat, metadataFormats } from './metadata-formats.js';
import { openRecord } from './record-xml.js';
import { recordAbout } from './rights-option.js';

/** What the repository says of itself, and how large the files it sends By-Value may be. */
export interface SiteSettings {
  /** Identify's repositoryName; default `Web files at <base URL>` ({@link defaultRepositoryName}). */
  repositoryName?: string;
  adminEmails: readonly string[];
  /** Files up to this size go By-Value in oai_didl; 0: By-Reference only. */
  byValueMax: number;
  /** The rights of the metadata (`--rights`): each record carries them in an `about`. */
  rights?: RightsStatement;
}

/**
 * The repository's OAI-PMH answers: the shared provider over the site's items as each request's
 * client may see them. Its tokens are signed with the index's key, so they outlive a restart.
 */
export function siteOai(
  index: FileIndex,
  indexer: SiteIndexer,
  settings: SiteSettings & Omit<ProviderSettings, 'tokenKey'>,
): (pairs: Array<[string, string]>, viewer: Viewer, baseUrl: string) => Promise<ResponseBody> {
  const { pageRecords, pageIdentifiers, pageBytes, countLimit } = settings;
  const provider = new OaiProvider({ tokenKey: index.tokenKey, pageRecords, pageIdentifiers, pageBytes, ...(countLimit !== undefined ? { countLimit } : {}) });
  return (pairs, viewer, baseUrl) => provider.respond(new SiteItems(index, indexer, settings, viewer, baseUrl), pairs);
}

/** The site's files as one client may see them, for one request. */
export class SiteItems implements ItemSource<IndexedFile> {
  readonly endpoint: string;
  readonly formats: readonly MetadataFormat[];

  constructor(
    private readonly index: FileIndex,
    private readonly indexer: SiteIndexer,
    private readonly settings: SiteSettings,
    private readonly viewer: Viewer,
    private readonly baseUrl: string,
  ) {
    this.endpoint = `${baseUrl}/oai`;
    this.formats = metadataFormats(baseUrl);
  }

  identify(): IdentifyFacts {
    return {
      repositoryName: this.settings.repositoryName ?? defaultRepositoryName(this.baseUrl),
      adminEmails: this.settings.adminEmails.length > 0 ? this.settings.adminEmails : [defaultAdminEmail(this.baseUrl)],
      earliestDatestamp: this.index.earliestDatestamp(this.viewer.hiddenPrefixes),
      deletedRecord: 'persistent',
      compression: ['gzip', 'deflate'],
      ...(this.settings.rights ? { descriptions: [rightsManifestXml(this.settings.rights)] } : {}),
    };
  }

  /** Sets with at least one live member this client may see, with their ancestors. */
  sets(): SetDescription[] {
    const sets = new Set<string>();
    for (const leaf of this.index.liveSetSpecs(this.viewer.hiddenPrefixes)) for (const spec of setSpecAncestors(leaf)) sets.add(spec);
    return [...sets].sort().map((spec) => ({ spec, name: setNameFor(spec) }));
  }

  count(window: ListWindow, limit: number): number {
    return this.index.count({ ...this.query(window), limit });
  }

  estimate(window: ListWindow): number | undefined {
    return this.index.estimate(this.query(window));
  }

  list(window: ListWindow, after: ItemKey | undefined, limit: number): IndexedFile[] {
    return this.index.list({ ...this.query(window), ...(after ? { after } : {}), limit });
  }

  /**
   * The file an identifier names, as this client may see it, refreshed from the disk first (a
   * file the scanner has not seen yet exists all the same).
   */
  async get(identifier: string): Promise<IndexedFile | undefined> {
    const path = pathForIdentifier(this.baseUrl, identifier);
    if (path === null || !this.viewer.canSee(path)) return undefined;
    await this.indexer.refresh(path);
    return this.index.byPath(path);
  }

  key(file: IndexedFile): ItemKey {
    return { datestamp: file.datestamp, id: file.id };
  }

  /** Only the leaf set is named: membership of its ancestors follows. */
  header(file: IndexedFile): ItemHeader {
    return { identifier: identifierForPath(this.baseUrl, file.path), datestamp: file.datestamp, deleted: file.deleted, setSpecs: [file.setSpec] };
  }

  byValueBytes(file: IndexedFile, prefix: string): number {
    return this.format(prefix).carriesContent && !file.deleted && file.size <= this.settings.byValueMax ? file.size : 0;
  }

  record(file: IndexedFile, prefix: string): Promise<ItemRecord> {
    const about = recordAbout(this.settings.rights, this.baseUrl);
    return openRecord(this.indexer, file, (now) => this.header(now), this.format(prefix), this.settings.byValueMax, about);
  }

  private format(prefix: string): MetadataFormat {
    return this.formats.find((format) => format.prefix === prefix)!;
  }

  private query(window: ListWindow): Omit<ListQuery, 'limit'> {
    return {
      until: window.until,
      ...(window.from !== undefined ? { from: window.from } : {}),
      ...(window.set !== undefined ? { setSpec: window.set } : {}),
      hiddenPrefixes: this.viewer.hiddenPrefixes,
    };
  }
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
