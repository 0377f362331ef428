// `/directory` (HTML) and `/all` (RDF), OAI2LOD's directory of the archive (docs/linked-data.md,
// "Directory and /all"): the kinds of things the archive describes with their counts, and each
// kind's members a page at a time (`?after=`, `?limit=`), read from the catalog so that they
// answer whatever the archive's size, without the SPARQL store. The caller has asked the access
// decision of the Linked Data graph first (archive-server.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { escapeAttribute, escapeText } from '@oaibag/didl';
import type { Catalog } from '../catalog/catalog.js';
import { ArchiveUris } from './archive-graph.js';
import { negotiate } from './content-negotiation.js';
import {
  COUNTED_NOTE,
  countKind,
  countText,
  DIRECTORY_KINDS,
  DIRECTORY_PAGE,
  type DirectoryPage,
  DirectoryRequestError,
  type KindCount,
  type KindInfo,
  kindInfo,
  listKind,
  pageLimit,
} from './directory-listing.js';
import { ALL_FORMATS, allDocument, allPage } from './directory-rdf.js';
import { htmlPage } from './page-shell.js';
import { answerPlain, answerText } from './text-answers.js';

export interface DirectoryContext {
  catalog: Catalog;
  /** The archive's base URL, without a trailing slash. */
  base: string;
}

/** Whether `path` is the directory's: `/directory`, `/directory/<kind>`, `/all`, `/all/<kind>`. */
export function isDirectoryPath(path: string): boolean {
  return path === '/directory' || path.startsWith('/directory/') || path === '/all' || path.startsWith('/all/');
}

/** Answers a request to one of the directory's paths (isDirectoryPath). */
export async function answerDirectory(context: DirectoryContext, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.setHeader('Allow', 'GET, HEAD');
    return answerPlain(res, 405, 'only GET and HEAD are answered here\n');
  }
  const match = /^\/(directory|all)(?:\/([^/]*))?$/.exec(url.pathname);
  const kind = match?.[2] === undefined || match[2] === '' ? undefined : kindInfo(match[2]);
  if (!match || (match[2] !== undefined && match[2] !== '' && !kind)) {
    return answerPlain(
      res,
      404,
      `not found: the directory lists ${DIRECTORY_KINDS.map((info) => `/directory/${info.kind}`).join(', ')} (and the same under /all as RDF)\n`,
    );
  }
  const rdf = match[1] === 'all';
  const uris = new ArchiveUris(context.base);
  let page: DirectoryPage | undefined;
  let limit: number = DIRECTORY_PAGE.default;
  try {
    if (kind) {
      limit = pageLimit(url.searchParams.get('limit'));
      page = listKind(context.catalog, uris, kind, url.searchParams.get('after'), limit);
    }
  } catch (error) {
    if (error instanceof DirectoryRequestError) return answerPlain(res, 400, `${error.message} [${error.code}]\n`);
    throw error;
  }
  const pageUrl = (prefix: string, info: KindInfo) => (after?: string) => {
    const params = new URLSearchParams();
    if (after !== undefined) params.set('after', after);
    if (limit !== DIRECTORY_PAGE.default) params.set('limit', String(limit));
    const query = params.toString();
    return `${context.base}/${prefix}/${info.kind}${query ? `?${query}` : ''}`;
  };
  if (rdf) {
    const output = url.searchParams.get('output');
    const chosen = output !== null ? ALL_FORMATS.find((offer) => offer.value === output) : negotiate(req.headers.accept, ALL_FORMATS);
    if (!chosen) {
      return answerPlain(res, 406, `offered: ${ALL_FORMATS.map((offer) => `${offer.mediaType} (output=${offer.value})`).join(', ')}\n`);
    }
    const text =
      kind && page
        ? allPage(context.base, page, countKind(context.catalog, kind), pageOf(pageUrl('all', kind), url), chosen.mediaType)
        : allDocument(context.base, countAll(context.catalog), chosen.mediaType);
    return answerText(req, res, chosen.mediaType, text, { Vary: 'Accept' });
  }
  const html =
    kind && page
      ? kindPage(context.base, page, countKind(context.catalog, kind), pageUrl('directory', kind), pageOf(pageUrl('all', kind), url)())
      : directoryPage(context.base, countAll(context.catalog));
  return answerText(req, res, 'text/html', html);
}

function countAll(catalog: Catalog): Array<{ info: KindInfo; count: KindCount }> {
  return DIRECTORY_KINDS.map((info) => ({ info, count: countKind(catalog, info) }));
}

/** The URL of this page (`after` as asked) for the page's own links, and of any other position. */
function pageOf(make: (after?: string) => string, url: URL): (after?: string) => string {
  const asked = url.searchParams.get('after');
  return (after?: string) => make(after ?? (asked === null || asked === '' ? undefined : asked));
}

/** `/directory`: the kinds, their counts, and where to go. */
function directoryPage(base: string, kinds: ReadonlyArray<{ info: KindInfo; count: KindCount }>): string {
  let body =
    `<p>Everything the archive describes, by kind: each kind lists its members ${DIRECTORY_PAGE.default} a page, each linking to its page. ` +
    `The same as RDF: <a href="${escapeAttribute(`${base}/all`)}">/all</a>; any question across them: <a href="${escapeAttribute(`${base}/sparql`)}">SPARQL</a>.</p>\n` +
    '<table><tr><th>kind</th><th class="num">how many</th><th>what they are</th></tr>\n';
  for (const { info, count } of kinds) {
    body +=
      `<tr><td><a href="${escapeAttribute(`${base}/directory/${info.kind}`)}">${escapeText(info.title)}</a></td>` +
      `<td class="num">${escapeText(countText(count))}</td><td>${escapeText(info.about)}</td></tr>\n`;
  }
  body += `</table>\n<p class="muted">${escapeText(COUNTED_NOTE)}</p>\n`;
  return htmlPage({ base, title: 'Directory of the archive', body, data: `${base}/all` });
}

/** `/directory/<kind>`: one page of its members, with the way to the next. */
function kindPage(base: string, page: DirectoryPage, count: KindCount, pageUrl: (after?: string) => string, rdf: string): string {
  let body = `<p>${escapeText(countText(count))} · ${escapeText(page.kind.about)} · <a href="${escapeAttribute(`${base}/directory`)}">all kinds</a></p>\n`;
  if (page.members.length === 0) body += '<p>Nothing here after this position.</p>\n';
  else {
    body += '<table><tr><th>name</th><th>about it</th></tr>\n';
    for (const member of page.members) {
      body +=
        `<tr><td><a href="${escapeAttribute(`${base}/page/${member.tail}`)}">${escapeText(member.label)}</a></td>` +
        `<td>${escapeText(member.detail)}</td></tr>\n`;
    }
    body += '</table>\n';
  }
  body += `<p class="pager"><a href="${escapeAttribute(pageUrl())}">first page</a>`;
  if (page.next !== undefined) body += `<a rel="next" href="${escapeAttribute(pageUrl(page.next))}">next page</a>`;
  body += '</p>\n';
  return htmlPage({ base, title: page.kind.title, body, data: rdf });
}
