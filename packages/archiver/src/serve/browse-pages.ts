// The pages people browse the archive by (docs/browse.md): the home page (`/`), search by URL
// (`/search`) and one URL's history (`/history/<URL>`), all read from the catalog, each a few
// index seeks, so that they cost the same at a million resources as at ten. No script; every
// form is a plain GET.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { escapeAttribute, escapeText } from '@oaibag/didl';
import { mimeSetSelection } from '@oaibag/oai-pmh';
import { bagFolders } from '../aip/layout-names.js';
import { archiveTotals, type ChangeRow, recentChanges, searchUrls, sourceSummaries, type UrlSearch, urlHistory } from '../catalog/browse-queries.js';
import type { Catalog } from '../catalog/catalog.js';
import { isDiffable } from './diff-page.js';
import { answerPage, htmlPage } from './page-shell.js';
import { REPLAY_PREFIX } from './replay.js';
import { readableInstant, timestamp14 } from './replay-time.js';

/** Bounds of the pages (docs/browse.md, "Bounds"). */
export const BROWSE_BOUNDS = {
  /** Results per search page. */
  searchPage: 50,
  /** Candidates a search with a MIME set looks at per page. */
  searchWindow: 5_000,
  /** The longest search text. */
  searchText: 2_048,
  /** Rows per history page. */
  historyPage: 200,
  /** Changes on the home page. */
  recent: 20,
} as const;

const SEARCH_SETS = ['mime:text:html', 'mime:text', 'mime:image', 'mime:application:pdf', 'mime:application', 'mime:audio', 'mime:video'];

/** `/`: the sources and their last harvest, the totals, the latest changes, a search box. */
export function answerHome(catalog: Catalog, base: string, req: IncomingMessage, res: ServerResponse): void {
  const sources = sourceSummaries(catalog);
  const totals = archiveTotals(catalog);
  let body = searchForm(base, '', 'contains', '');
  body +=
    `<p>${number(totals.resources)} resources · ${number(totals.records)} records in ${number(totals.bags)} bags · ` +
    `${number(totals.payloads)} payload files, ${bytes(totals.payloadBytes)}</p>\n`;
  body += '<h2>Sources</h2>\n';
  if (sources.length === 0) body += '<p>Nothing has been harvested into this archive yet.</p>\n';
  else {
    body +=
      '<table><tr><th>repository</th><th>last run</th><th>outcome</th><th class="num">records</th><th class="num">added</th><th class="num">modified</th>' +
      '<th class="num">deleted</th><th class="num">failed</th></tr>\n';
    for (const source of sources) {
      const run = source.last;
      const name = source.repositoryName ?? source.baseUrl;
      body +=
        `<tr><td><a href="${escapeAttribute(`${base}/page/source/${source.id}`)}">${escapeText(name)}</a><br><span class="muted">${escapeText(source.baseUrl)}</span></td>` +
        (run
          ? `<td>${escapeText(readableInstant(run.endedAt ?? run.startedAt))}</td><td class="${escapeAttribute(outcomeClass(run.status))}">${escapeText(run.status)}${run.reason ? ` <span class="muted">${escapeText(run.reason)}</span>` : ''}</td>` +
            `<td class="num">${number(run.counts.records)}</td><td class="num">${number(run.counts.added)}</td><td class="num">${number(run.counts.modified)}</td>` +
            `<td class="num">${number(run.counts.deleted)}</td><td class="num">${number(run.counts.failed)}</td>`
          : '<td colspan="7">never harvested</td>') +
        '</tr>\n';
    }
    body += '</table>\n';
  }
  body += '<h2>Recent changes</h2>\n';
  const changes = recentChanges(catalog, BROWSE_BOUNDS.recent);
  body += changes.length === 0 ? '<p>None yet.</p>\n' : changeTable(base, changes, { url: true });
  answerPage(req, res, htmlPage({ base, title: 'The archive', body }));
}

/** `/search?q=…&match=contains|prefix&set=mime:…&after=…`. */
export function answerSearch(catalog: Catalog, base: string, req: IncomingMessage, res: ServerResponse, url: URL): void {
  const text = (url.searchParams.get('q') ?? '').trim();
  const match = url.searchParams.get('match') === 'prefix' ? 'prefix' : 'contains';
  const set = url.searchParams.get('set') ?? '';
  const after = url.searchParams.get('after') ?? undefined;
  let body = searchForm(base, text, match, set);
  const mime = set === '' ? undefined : mimeSetSelection(set);
  const refusal =
    mime === null
      ? `${set} is not a MIME set (like mime:image or mime:text:html).`
      : text.length > BROWSE_BOUNDS.searchText || (after !== undefined && after.length > BROWSE_BOUNDS.searchText + 32)
        ? `A search text has at most ${BROWSE_BOUNDS.searchText} characters.`
        : text !== '' && match === 'contains' && [...text].length < 3
          ? 'A search for a part of a URL needs at least three characters (or search for URLs that begin with it).'
          : undefined;
  if (refusal !== undefined || mime === null) {
    answerPage(req, res, htmlPage({ base, title: 'Search', body: `${body}<p>${escapeText(refusal ?? '')}</p>\n` }), { status: 400 });
    return;
  }
  if (text === '' && mime === undefined) {
    answerPage(req, res, htmlPage({ base, title: 'Search', body }));
    return;
  }
  const search: UrlSearch = {
    text,
    match: text === '' ? 'prefix' : match,
    limit: BROWSE_BOUNDS.searchPage,
    window: BROWSE_BOUNDS.searchWindow,
    ...(mime ? { mime } : {}),
    ...(after !== undefined ? { after } : {}),
  };
  const found = searchUrls(catalog, search);
  const title = text === '' ? `Resources in ${set}` : `URLs ${match === 'prefix' ? 'beginning with' : 'containing'} “${text}”`;
  body += `<h2>${escapeText(title)}</h2>\n`;
  if (found.hits.length === 0) body += `<p>${found.next ? 'None in this stretch of the index.' : 'None found.'}</p>\n`;
  else {
    body += '<table><tr><th>URL</th><th>type</th><th>state</th><th></th></tr>\n';
    for (const hit of found.hits) {
      const state = hit.deletedAt !== null ? `<span class="deleted">deleted ${escapeText(hit.deletedAt.slice(0, 10))}</span>` : 'archived';
      const replay =
        hit.servedAt !== null && hit.deletedAt === null
          ? `<a href="${escapeAttribute(`${base}${REPLAY_PREFIX}${timestamp14(new Date(hit.servedAt * 1000).toISOString())}/${hit.url}`)}">replay</a>`
          : '';
      body +=
        `<tr><td><a href="${escapeAttribute(`${base}/history/${hit.url}`)}">${escapeText(hit.url)}</a></td><td>${escapeText(hit.mimeType ?? '')}</td>` +
        `<td>${state}</td><td>${replay}</td></tr>\n`;
    }
    body += '</table>\n';
  }
  if (found.next !== undefined) {
    const next = new URLSearchParams({ q: text, match, ...(set ? { set } : {}), after: found.next });
    const note =
      found.windowFull && found.hits.length < BROWSE_BOUNDS.searchPage
        ? ` <span class="muted">(${number(BROWSE_BOUNDS.searchWindow)} candidates looked at on this page)</span>`
        : '';
    body += `<p class="pager"><a href="${escapeAttribute(`${base}/search?${next}`)}" rel="next">more →</a>${note}</p>\n`;
  }
  answerPage(req, res, htmlPage({ base, title: 'Search', body }));
}

/**
 * `/history/<URL>` (the first page) and `/history?url=<URL>&after=<cursor>` (the next ones):
 * every version and deletion of a URL, oldest first. False when the path is neither.
 */
export function answerHistory(catalog: Catalog, base: string, req: IncomingMessage, res: ServerResponse, url: URL): boolean {
  const raw = req.url ?? '';
  let target: string;
  let after: { at: string; kind: string; id: number } | undefined;
  if (raw.startsWith('/history/')) target = raw.slice('/history/'.length);
  else if (url.pathname === '/history') {
    target = url.searchParams.get('url') ?? '';
    const [at, kind, id] = (url.searchParams.get('after') ?? '').split('|');
    if (at && kind && Number.isSafeInteger(Number(id))) after = { at, kind, id: Number(id) };
  } else return false;
  if (target.length > BROWSE_BOUNDS.searchText * 4) {
    answerPage(req, res, htmlPage({ base, title: 'Not in the archive', body: '<p>That URL is longer than any the archive looks up.</p>\n' }), { status: 400 });
    return true;
  }
  const rows = urlHistory(catalog, target, BROWSE_BOUNDS.historyPage + 1, after);
  if (rows.length === 0 && after === undefined) {
    const body =
      `<p>The archive holds nothing of <code>${escapeText(target)}</code>.</p>\n` +
      `<p><a href="${escapeAttribute(`${base}/search?${new URLSearchParams({ q: target, match: 'prefix' })}`)}">Search for URLs that begin with it</a>.</p>\n`;
    answerPage(req, res, htmlPage({ base, title: 'Not in the archive', body }), { status: 404 });
    return true;
  }
  const page = rows.slice(0, BROWSE_BOUNDS.historyPage);
  let body =
    `<p><a href="${escapeAttribute(target)}" rel="nofollow noreferrer">live</a> · <a href="${escapeAttribute(`${base}/timemap/link/${target}`)}">TimeMap</a>` +
    ` · <a href="${escapeAttribute(`${base}/timegate/${target}`)}">TimeGate</a></p>\n`;
  body += changeTable(base, page, { diff: true });
  if (rows.length > page.length) {
    const last = page[page.length - 1]!;
    const next = new URLSearchParams({ url: target, after: `${last.at}|${last.kind}|${last.id}` });
    body += `<p class="pager"><a href="${escapeAttribute(`${base}/history?${next}`)}" rel="next">later →</a></p>\n`;
  }
  answerPage(req, res, htmlPage({ base, title: target, body }));
  return true;
}

function searchForm(base: string, text: string, match: string, set: string): string {
  const option = (value: string, label: string) => `<option value="${escapeAttribute(value)}"${value === set ? ' selected' : ''}>${escapeText(label)}</option>`;
  const sets = [
    option('', 'any type'),
    ...SEARCH_SETS.map((spec) => option(spec, spec)),
    ...(set !== '' && !SEARCH_SETS.includes(set) ? [option(set, set)] : []),
  ];
  return (
    `<form method="get" action="${escapeAttribute(`${base}/search`)}" class="search"><p>` +
    `<input type="search" name="q" value="${escapeAttribute(text)}" size="60" aria-label="URL or part of one"> ` +
    `<label><input type="radio" name="match" value="contains"${match === 'contains' ? ' checked' : ''}> contains</label> ` +
    `<label><input type="radio" name="match" value="prefix"${match === 'prefix' ? ' checked' : ''}> begins with</label> ` +
    `<select name="set" aria-label="MIME set">${sets.join('')}</select> <button type="submit">Search</button></p></form>\n`
  );
}

/** Versions and deletions as a table; with `diff`, each text version links a diff with the one before. */
function changeTable(base: string, rows: ChangeRow[], options: { url?: boolean; diff?: boolean }): string {
  let html = `<table><tr><th>archived</th>${options.url ? '<th>URL</th>' : ''}<th>change</th><th>type</th><th class="num">bytes</th><th>SHA-256</th><th></th></tr>\n`;
  let previous: ChangeRow | undefined;
  for (const row of rows) {
    const ts = timestamp14(row.at);
    const links: string[] = [];
    if (row.kind === 'version' && row.payloadFiles > 0) links.push(`<a href="${escapeAttribute(`${base}${REPLAY_PREFIX}${ts}/${row.url}`)}">replay</a>`);
    if (options.diff && row.kind === 'version' && previous && previous.payloadFiles > 0 && row.payloadFiles > 0 && previous.sha256 !== row.sha256) {
      const kind = isDiffable(row.mimeType) && isDiffable(previous.mimeType) ? 'diff' : 'compare';
      links.push(`<a href="${escapeAttribute(`${base}/diff/${timestamp14(previous.at)}/${ts}/${row.url}`)}">${kind}</a>`);
    }
    if (row.kind === 'version' && row.bagPath !== null)
      links.push(`<a href="${escapeAttribute(`${base}/memento/${bagFolders(row.bagPath).join('/')}/${row.record}`)}">memento</a>`);
    html +=
      `<tr><td>${escapeText(readableInstant(row.at))}</td>${options.url ? `<td><a href="${escapeAttribute(`${base}/history/${row.url}`)}">${escapeText(row.url)}</a></td>` : ''}` +
      `<td class="${escapeAttribute(row.change)}">${escapeText(row.change)}</td><td>${escapeText(row.mimeType ?? '')}</td>` +
      `<td class="num">${row.size === null ? '' : number(row.size)}</td><td><code title="${escapeAttribute(row.sha256 ?? '')}">${escapeText((row.sha256 ?? '').slice(0, 12))}</code></td>` +
      `<td>${links.join(' · ')}</td></tr>\n`;
    if (row.kind === 'version') previous = row;
  }
  return `${html}</table>\n`;
}

function outcomeClass(status: string): string {
  return status === 'complete' ? 'added' : status === 'running' ? 'touched' : status === 'partial' ? 'modified' : 'deleted';
}

function number(n: number): string {
  return n.toLocaleString('en-US');
}

function bytes(n: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${n} bytes` : `${value.toFixed(1)} ${units[unit]}`;
}
