// The HTML form of `oaibag audit`: one self-contained file (inline CSS, SVG and script; a
// Content-Security-Policy forbids loading anything else), with the totals, a stacked bar chart
// of what each harvest recorded, and the table of rows, sortable and filterable by its script.
// Every catalog value is escaped: identifiers come from the harvested repository.
import { type AuditLinks, auditLinks } from './audit-links.js';
import { AUDIT_CHANGES, type AuditChange, type AuditHarvestTotals, type AuditReport, type AuditRow, type AuditState } from './audit-query.js';

/** What the page is made of: the totals known before the rows (they come first), the rows read once, as they come. */
export type AuditPage = Omit<AuditReport, 'rows'> & { rows: Iterable<AuditRow> };

const CHUNK = 64 * 1024;

/** What the page may add (docs/audit.md, "Links to the archive"). */
export interface AuditHtmlOptions {
  /** Where `oaibag serve` serves the archive: identifiers link to their history, modified rows to their diff. */
  serveUrl?: string;
}

/** Colours of the change kinds (chart, legend and table badges). */
const COLOURS: Record<AuditChange, string> = {
  added: '#2e7d32',
  modified: '#1565c0',
  touched: '#8d8d8d',
  deleted: '#c62828',
  restored: '#ef6c00',
};

/**
 * The audit as one HTML document, in chunks. The rows travel as a JSON data block that the
 * page's script draws, 1,000 a page; the script keeps its state in the URL fragment
 * (`#filter=deleted&q=text&sort=identifier&dir=desc&page=2`), so a view can be bookmarked,
 * and sets `data-ready="1"` on the root element once it has drawn the table. With a
 * `serveUrl`, each row's data carries its history and diff links, which the script makes
 * into `<a>` elements; without it the page is exactly the page without links.
 */
export function* renderAuditHtml(report: AuditPage, options: AuditHtmlOptions = {}): Generator<string> {
  const links = options.serveUrl === undefined ? undefined : auditLinks(options.serveUrl);
  const scope = report.sources.map((source) => source.baseUrl).join(', ') || 'no source';
  let buffer =
    '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n' +
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">\n` +
    '<meta name="viewport" content="width=device-width, initial-scale=1">\n' +
    `<title>oaibag audit: ${htmlValue(scope)}</title>\n<style>${STYLE}</style>\n</head>\n<body>\n` +
    `<h1>Audit of ${htmlValue(scope)}</h1>\n<p class="period">${htmlValue(periodText(report))}</p>\n` +
    (links === undefined ? '' : linksNote(links)) +
    totalsHtml(report) +
    chartHtml(report.totals.byHarvest) +
    '<section id="changes">\n<h2>Resources changed</h2>\n<div class="controls">' +
    '<label>Identifier contains <input id="filter-text" type="search" autocomplete="off"></label> ' +
    '<label>Change <select id="filter-change"><option value="">all</option>' +
    AUDIT_CHANGES.map((kind) => `<option value="${kind}">${kind}</option>`).join('') +
    '<option value="mime-changed">MIME type changed</option></select></label> ' +
    `<output id="shown">${report.totals.rows} rows</output> <span class="pager"><button type="button" id="previous">previous</button> <button type="button" id="next">next</button></span></div>\n` +
    '<noscript><p>The table of rows needs JavaScript (the totals and chart above do not); the same rows are in <code>oaibag audit --format csv</code> and <code>--format json</code>.</p></noscript>\n' +
    '<table id="rows">\n<thead><tr>' +
    COLUMNS.map(([key, type, label]) => `<th data-key="${key}" data-type="${type}" tabindex="0" aria-sort="none">${label}</th>`).join('') +
    '</tr></thead>\n<tbody></tbody>\n</table>\n</section>\n<script type="application/json" id="audit-rows">[';
  let first = true;
  for (const row of report.rows) {
    buffer += `${first ? '\n' : ',\n'}${scriptJson(links === undefined ? rowData(row) : [...rowData(row), links.history(row.identifier), links.diff(row)])}`;
    first = false;
    if (buffer.length >= CHUNK) {
      yield buffer;
      buffer = '';
    }
  }
  yield `${buffer}\n]</script>\n<script>${links === undefined ? SCRIPT : LINKED_SCRIPT}</script>\n</body>\n</html>\n`;
}

/** Where the links lead, under the period (the URL was checked: http(s), no credentials). */
function linksNote(links: AuditLinks): string {
  return (
    `<p class="links">Identifiers link to their history, and modified rows to the diff of their two versions, in the archive served at ` +
    `<a href="${escapeHtml(links.serveUrl)}">${htmlValue(links.serveUrl)}</a>.</p>\n`
  );
}

/**
 * A row as the page's script reads it: [identifier, change, mimeChanged (0/1), harvest,
 * then before and after as [deleted (0/1), datestamp, size, sha256, mimeType] or null];
 * with links, then its history and diff URLs (or null).
 */
function rowData(row: AuditRow): unknown[] {
  return [row.identifier, row.change, row.mimeChanged ? 1 : 0, row.harvestId, stateData(row.before), stateData(row.after)];
}

function stateData(state: AuditState | null): unknown[] | null {
  return state === null ? null : [state.deleted ? 1 : 0, state.datestamp, state.size, state.sha256, state.mimeType];
}

/**
 * JSON that is inert inside a `<script>` element: `<`, `>` and `&` as `\\u` escapes, so no
 * value can close the element or open a comment, and the line separators JavaScript once
 * rejected.
 */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Escapes `& < > " '`: safe in text and in quoted attribute values. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

/**
 * A catalog value for the page: escaped, and its control characters shown as `\uXXXX` (as the
 * text form does), so an identifier with a line break or an escape sequence is seen as such.
 */
export function htmlValue(value: string): string {
  // eslint-disable-next-line no-control-regex
  return escapeHtml(value.replace(/[\x00-\x1f\x7f-\x9f]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`));
}

const COLUMNS: ReadonlyArray<[string, 'text' | 'number', string]> = [
  ['identifier', 'text', 'Identifier'],
  ['change', 'text', 'Change'],
  ['harvest', 'number', 'Harvest'],
  ['before', 'text', 'Before'],
  ['before-size', 'number', 'Size before'],
  ['before-sha256', 'text', 'SHA-256 before'],
  ['after', 'text', 'After'],
  ['after-size', 'number', 'Size after'],
  ['after-sha256', 'text', 'SHA-256 after'],
  ['mime', 'text', 'MIME type'],
];

function periodText(report: AuditPage): string {
  const { period } = report;
  const ids = period.harvestIds.map((id) => `#${id}`).join(', ');
  if (period.harvestIds.length === 0) return 'No harvest in the period recorded a change.';
  if (period.selection === 'latest') return `The latest harvest of each source that recorded a change: ${ids}.`;
  if (period.selection === 'harvest') return `The changes recorded by harvest ${ids}.`;
  return `Harvests started from ${period.since ?? 'the first'} to ${period.until ?? 'now'}: ${ids}.`;
}

function totalsHtml(report: AuditPage): string {
  const { totals } = report;
  const kinds = AUDIT_CHANGES.map(
    (kind) => `<tr><th><span class="k k-${kind}">${kind}</span></th><td data-kind="${kind}">${totals.byChange[kind]}</td></tr>`,
  ).join('');
  const harvests = totals.byHarvest
    .map(
      (harvest) =>
        `<tr data-harvest="${harvest.harvestId}"><td>#${harvest.harvestId}</td><td>${escapeHtml(harvest.startedAt)}</td><td>${escapeHtml(harvest.status)}</td>` +
        `<td>${htmlValue(harvest.source)}</td>${AUDIT_CHANGES.map((kind) => `<td>${harvest[kind]}</td>`).join('')}</tr>`,
    )
    .join('\n');
  return (
    '<section id="totals">\n<h2>Totals</h2>\n<div class="totals">' +
    `<table class="by-change"><caption>${totals.rows} resources changed</caption><tbody>${kinds}` +
    `<tr><th>MIME type changed</th><td data-kind="mime-changed">${totals.byChange.mimeChanged}</td></tr></tbody></table>\n` +
    '<table class="by-harvest"><caption>Recorded per harvest</caption><thead><tr><th>Harvest</th><th>Started</th><th>Status</th><th>Source</th>' +
    `${AUDIT_CHANGES.map((kind) => `<th>${kind}</th>`).join('')}</tr></thead><tbody>\n${harvests}</tbody></table></div>\n</section>\n`
  );
}

/**
 * One stacked bar per harvest, oldest first, labelled with its start (UTC); the stack is what
 * the harvest recorded by kind. Each bar group carries its harvest id and a tooltip.
 */
export function chartHtml(harvests: readonly AuditHarvestTotals[]): string {
  if (harvests.length === 0) return '<section id="chart"><h2>Changes per harvest</h2><p>No harvest in the period.</p></section>\n';
  const slot = Math.max(8, Math.min(80, 800 / harvests.length));
  const left = 56;
  const top = 16;
  const plot = 200;
  const width = Math.ceil(left + slot * harvests.length + 16);
  const height = top + plot + 52;
  const largest = Math.max(1, ...harvests.map((harvest) => AUDIT_CHANGES.reduce((sum, kind) => sum + harvest[kind], 0)));
  const scale = plot / largest;
  const labelEvery = Math.ceil(harvests.length / Math.max(1, Math.floor((slot * harvests.length) / 80)));
  let svg =
    `<svg xmlns="http://www.w3.org/2000/svg" id="chart-svg" role="img" aria-label="changes recorded per harvest" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">\n` +
    `<line x1="${left}" y1="${top}" x2="${left}" y2="${top + plot}" class="axis"/><line x1="${left}" y1="${top + plot}" x2="${width - 8}" y2="${top + plot}" class="axis"/>\n`;
  for (const tick of [0, Math.round(largest / 2), largest]) {
    const y = top + plot - tick * scale;
    svg += `<text x="${left - 6}" y="${y.toFixed(1)}" class="tick" text-anchor="end" dominant-baseline="middle">${tick}</text>\n`;
  }
  harvests.forEach((harvest, index) => {
    const x = left + index * slot + slot * 0.15;
    const barWidth = (slot * 0.7).toFixed(1);
    let y = top + plot;
    const tip = `#${harvest.harvestId} ${harvest.startedAt} ${harvest.source}: ${AUDIT_CHANGES.map((kind) => `${harvest[kind]} ${kind}`).join(', ')}`;
    svg += `<g class="bar" data-harvest="${harvest.harvestId}"><title>${htmlValue(tip)}</title>`;
    for (const kind of AUDIT_CHANGES) {
      if (harvest[kind] === 0) continue;
      const h = harvest[kind] * scale;
      y -= h;
      svg += `<rect class="k-${kind}" data-kind="${kind}" data-count="${harvest[kind]}" x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${barWidth}" height="${h.toFixed(1)}" fill="${COLOURS[kind]}"/>`;
    }
    svg += '</g>\n';
    if (index % labelEvery === 0) {
      const cx = (x + slot * 0.35).toFixed(1);
      svg += `<text x="${cx}" y="${top + plot + 14}" class="tick" text-anchor="middle">#${harvest.harvestId}</text>`;
      svg += `<text x="${cx}" y="${top + plot + 28}" class="tick" text-anchor="middle">${htmlValue(harvest.startedAt.slice(0, 10))}</text>`;
      svg += `<text x="${cx}" y="${top + plot + 42}" class="tick" text-anchor="middle">${htmlValue(harvest.startedAt.slice(11, 16))}</text>\n`;
    }
  });
  svg += '</svg>';
  const legend = AUDIT_CHANGES.map(
    (kind) =>
      `<span class="legend-item"><svg width="12" height="12" aria-hidden="true"><rect width="12" height="12" fill="${COLOURS[kind]}"/></svg> ${kind}</span>`,
  ).join(' ');
  return `<section id="chart">\n<h2>Changes per harvest</h2>\n<figure>${svg}\n<figcaption class="legend">${legend}</figcaption></figure>\n</section>\n`;
}

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:1.5rem;color:#1b1b1b;background:#fff}
h1{font-size:1.4rem;margin:0 0 .25rem}h2{font-size:1.1rem;margin:1.5rem 0 .5rem}
.period{color:#555;margin:0}
.totals{display:flex;flex-wrap:wrap;gap:2rem;align-items:flex-start}
table{border-collapse:collapse}caption{text-align:left;font-weight:600;padding-bottom:.25rem}
th,td{padding:.2rem .5rem;border-bottom:1px solid #e3e3e3;text-align:left;vertical-align:top}
.by-change td,.by-harvest td{text-align:right;white-space:nowrap}
#rows{width:100%;font-size:13px}#rows th{cursor:pointer;user-select:none;background:#f4f4f4;position:sticky;top:0}
#rows th[aria-sort=ascending]::after{content:" \\25B2"}#rows th[aria-sort=descending]::after{content:" \\25BC"}
#rows td.id{word-break:break-all;max-width:40rem}.sha{font-family:ui-monospace,monospace}.gone{color:#c62828}
.mime-changed{font-weight:600}
.k{display:inline-block;padding:0 .4rem;border-radius:.6rem;color:#fff;font-size:12px}
${AUDIT_CHANGES.map((kind) => `.k-${kind}{background:${COLOURS[kind]}}`).join('')}
.controls{display:flex;gap:1rem;align-items:center;margin-bottom:.5rem;flex-wrap:wrap}
.axis{stroke:#888}.tick{font-size:11px;fill:#444}.legend{display:flex;gap:1rem}.legend-item{white-space:nowrap}
figure{margin:0}
`;

// Plain ES5-style script, nothing external. The rows are data (the JSON block above it), drawn
// a page at a time with textContent, never as markup: a table of 100,000 rows as markup takes
// a browser minutes to lay out, and text can never become an element. State: the URL fragment.
// With links (`--serve-url`) the identifier cell and the change cell get <a> elements, their
// href set through the DOM and kept only when the browser reads it as http(s); without them the
// script is exactly the script of the pages written before links existed.
// The href of r[6] (history) and r[7] (diff) only when it is http(s) once the browser parsed it.
const LINK_FUNCTIONS = `
  function anchor(href, text) {
    if (typeof href !== 'string') return null;
    var scheme = href.slice(0, 8).toLowerCase();
    if (scheme.indexOf('http://') !== 0 && scheme !== 'https://') return null;
    var a = document.createElement('a');
    a.href = href;
    if (a.protocol !== 'http:' && a.protocol !== 'https:') return null;
    a.textContent = text;
    return a;
  }
  function linkCell(tr, value, className, href) {
    var a = anchor(href, value);
    if (!a) { cell(tr, value, className); return; }
    var td = document.createElement('td');
    td.className = className;
    td.appendChild(a);
    tr.appendChild(td);
  }`;

const SCRIPT = pageScript(false);
const LINKED_SCRIPT = pageScript(true);

function pageScript(links: boolean): string {
  return `
(function () {
  'use strict';
  var KINDS = ${JSON.stringify([...AUDIT_CHANGES, 'mime-changed'])};
  var PAGE = 1000;
  var data = JSON.parse(document.getElementById('audit-rows').textContent);
  var table = document.getElementById('rows');
  var body = table.tBodies[0];
  var heads = Array.prototype.slice.call(table.tHead.rows[0].cells);
  var text = document.getElementById('filter-text');
  var kind = document.getElementById('filter-change');
  var shown = document.getElementById('shown');
  var previous = document.getElementById('previous');
  var next = document.getElementById('next');
  var state = { q: '', filter: '', sort: '', dir: 'asc', page: 0 };
  var matches = [];
  function visible(value) {
    return String(value).replace(/[\\u0000-\\u001f\\u007f-\\u009f]/g, function (c) { return '\\\\u' + ('000' + c.charCodeAt(0).toString(16)).slice(-4); });
  }
  var ids = data.map(function (row) { return visible(row[0]).toLowerCase(); });
  function mimeText(r) {
    var before = r[4], after = r[5];
    if (r[2]) return (before[4] || '') + ' \\u2192 ' + (after[4] || '');
    if (after[4] != null) return after[4];
    return before && before[4] != null ? before[4] : '';
  }
  function size(state) { return state && state[2] != null ? state[2] : -Infinity; }
  var KEYS = {
    identifier: function (r) { return r[0]; },
    change: function (r) { return r[1]; },
    harvest: function (r) { return r[3]; },
    before: function (r) { return r[4] ? r[4][1] : ''; },
    'before-size': function (r) { return size(r[4]); },
    'before-sha256': function (r) { return (r[4] && r[4][3]) || ''; },
    after: function (r) { return r[5][1]; },
    'after-size': function (r) { return size(r[5]); },
    'after-sha256': function (r) { return r[5][3] || ''; },
    mime: mimeText
  };
  function readHash() {
    var params = new URLSearchParams(location.hash.replace(/^#/, ''));
    state.q = params.get('q') || '';
    state.filter = KINDS.indexOf(params.get('filter')) >= 0 ? params.get('filter') : '';
    state.sort = Object.prototype.hasOwnProperty.call(KEYS, params.get('sort')) ? params.get('sort') : '';
    state.dir = params.get('dir') === 'desc' ? 'desc' : 'asc';
    state.page = Math.max(0, (parseInt(params.get('page'), 10) || 1) - 1);
  }
  function writeHash() {
    var params = new URLSearchParams();
    if (state.filter) params.set('filter', state.filter);
    if (state.q) params.set('q', state.q);
    if (state.sort) { params.set('sort', state.sort); params.set('dir', state.dir); }
    if (state.page > 0) params.set('page', String(state.page + 1));
    try { history.replaceState(null, '', '#' + params.toString()); } catch (e) { /* a file: URL may refuse */ }
  }
  function select() {
    var q = state.q.toLowerCase();
    var list = [];
    for (var i = 0; i < data.length; i++) {
      var r = data[i];
      if (state.filter && (state.filter === 'mime-changed' ? !r[2] : r[1] !== state.filter)) continue;
      if (q && ids[i].indexOf(q) < 0) continue;
      list.push(i);
    }
    if (state.sort) {
      var key = KEYS[state.sort];
      var sign = state.dir === 'desc' ? -1 : 1;
      var values = [];
      list.forEach(function (i) { values[i] = key(data[i]); });
      list.sort(function (a, b) { return values[a] < values[b] ? -sign : values[a] > values[b] ? sign : a - b; });
    }
    matches = list;
  }
  function cell(tr, value, className, title) {
    var td = document.createElement('td');
    td.textContent = value;
    if (className) td.className = className;
    if (title) td.title = title;
    tr.appendChild(td);
  }
  function stateCells(tr, s) {
    if (!s) { cell(tr, '\\u2014'); cell(tr, ''); cell(tr, ''); return; }
    if (s[0]) cell(tr, 'deleted ' + visible(s[1]), 'gone'); else cell(tr, visible(s[1]));
    cell(tr, s[2] == null ? '' : String(s[2]));
    cell(tr, s[3] ? s[3].slice(0, 12) : '', s[3] ? 'sha' : '', s[3] || '');
  }${links ? LINK_FUNCTIONS : ''}
  function rowElement(r) {
    var tr = document.createElement('tr');
    tr.setAttribute('data-change', r[1]);
    tr.setAttribute('data-mime', r[2] ? '1' : '0');
    ${links ? "linkCell(tr, visible(r[0]), 'id', r[6]);" : "cell(tr, visible(r[0]), 'id');"}
    var td = document.createElement('td');
    var badge = document.createElement('span');
    badge.className = 'k k-' + r[1];
    badge.textContent = r[1];
    td.appendChild(badge);${links ? "\n    var diff = anchor(r[7], 'diff');\n    if (diff) { diff.className = 'diff'; td.appendChild(document.createTextNode(' ')); td.appendChild(diff); }" : ''}
    tr.appendChild(td);
    cell(tr, '#' + r[3]);
    stateCells(tr, r[4]);
    stateCells(tr, r[5]);
    cell(tr, visible(mimeText(r)), r[2] ? 'mime-changed' : '');
    return tr;
  }
  function render() {
    var pages = Math.max(1, Math.ceil(matches.length / PAGE));
    if (state.page > pages - 1) state.page = pages - 1;
    var start = state.page * PAGE;
    var end = Math.min(matches.length, start + PAGE);
    var fragment = document.createDocumentFragment();
    for (var n = start; n < end; n++) fragment.appendChild(rowElement(data[matches[n]]));
    body.textContent = '';
    body.appendChild(fragment);
    shown.textContent = matches.length + ' of ' + data.length + ' rows shown' + (pages > 1 ? ' (' + (start + 1) + '\\u2013' + end + ')' : '');
    previous.disabled = state.page === 0;
    next.disabled = state.page >= pages - 1;
    previous.parentNode.hidden = pages === 1;
    heads.forEach(function (head) {
      var on = head.getAttribute('data-key') === state.sort;
      head.setAttribute('aria-sort', on ? (state.dir === 'asc' ? 'ascending' : 'descending') : 'none');
    });
  }
  function update(reselect) {
    if (reselect) select();
    render();
    writeHash();
  }
  function sortBy(key) {
    if (state.sort === key) state.dir = state.dir === 'asc' ? 'desc' : 'asc';
    else { state.sort = key; state.dir = 'asc'; }
    state.page = 0;
    update(true);
  }
  heads.forEach(function (head) {
    head.addEventListener('click', function () { sortBy(head.getAttribute('data-key')); });
    head.addEventListener('keydown', function (event) { if (event.key === 'Enter' || event.key === ' ') { event.preventDefault(); sortBy(head.getAttribute('data-key')); } });
  });
  text.addEventListener('input', function () { state.q = text.value; state.page = 0; update(true); });
  kind.addEventListener('change', function () { state.filter = kind.value; state.page = 0; update(true); });
  previous.addEventListener('click', function () { state.page--; update(false); });
  next.addEventListener('click', function () { state.page++; update(false); });
  function load() {
    readHash();
    text.value = state.q;
    kind.value = state.filter;
    select();
    render();
  }
  window.addEventListener('hashchange', load);
  load();
  document.documentElement.setAttribute('data-ready', '1');
})();
`;
}
