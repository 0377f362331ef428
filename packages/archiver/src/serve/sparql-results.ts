// SPARQL solution sequences cut to the endpoint's row limit and written in the four result
// formats (SPARQL 1.1 Query Results JSON, XML, CSV and TSV), from the JSON form the store gives;
// and the triples of a graph query's N-Triples, read back for its table in a browser.
import { escapeAttribute, escapeText } from '@oaibag/didl';

export interface SolutionsJson {
  head: { vars: string[] };
  results: { bindings: Array<Record<string, SparqlTerm>> };
}

/** A term of a solution, as SPARQL JSON results give it. */
export interface SparqlTerm {
  type: 'uri' | 'literal' | 'bnode' | 'triple';
  value: string;
  datatype?: string;
  'xml:lang'?: string;
}

export const RESULT_MEDIA_TYPES = {
  json: 'application/sparql-results+json',
  xml: 'application/sparql-results+xml',
  csv: 'text/csv',
  tsv: 'text/tab-separated-values',
} as const;

/**
 * The solutions of the store's JSON text, at most `limit` of them (`truncated` when there were
 * more), parsing only those: a select query's text holds every solution, and parsed whole it
 * took several times its size in objects.
 */
export function firstSolutions(json: string, limit: number): { solutions: SolutionsJson; truncated: boolean } {
  const start = json.indexOf('"bindings":[');
  if (start < 0 || !json.endsWith(']}}')) return { solutions: JSON.parse(json) as SolutionsJson, truncated: false };
  let depth = 0;
  let count = 0;
  let inString = false;
  for (let i = start + '"bindings":['.length; i < json.length; i++) {
    const char = json.charCodeAt(i);
    if (inString) {
      if (char === 0x5c)
        i++; // a backslash escapes the next character
      else if (char === 0x22) inString = false;
    } else if (char === 0x22) inString = true;
    else if (char === 0x7b) depth++;
    else if (char === 0x7d && --depth === 0 && ++count === limit) {
      const more = /^\s*,/.test(json.slice(i + 1, i + 64));
      return { solutions: JSON.parse(`${json.slice(0, i + 1)}]}}`) as SolutionsJson, truncated: more };
    } else if (char === 0x5d && depth === 0) break;
  }
  return { solutions: JSON.parse(json) as SolutionsJson, truncated: false };
}

/** The solutions as `mediaType`, at most `limit` of them; `truncated` when there were more. */
export function writeSolutions(solutions: SolutionsJson, mediaType: string, limit: number): { text: string; truncated: boolean } {
  const truncated = solutions.results.bindings.length > limit;
  const rows = truncated ? solutions.results.bindings.slice(0, limit) : solutions.results.bindings;
  const vars = solutions.head.vars;
  switch (mediaType) {
    case RESULT_MEDIA_TYPES.xml:
      return { text: xml(vars, rows), truncated };
    case RESULT_MEDIA_TYPES.csv:
      return { text: csv(vars, rows), truncated };
    case RESULT_MEDIA_TYPES.tsv:
      return { text: tsv(vars, rows), truncated };
    default:
      return { text: JSON.stringify({ head: { vars }, results: { bindings: rows } }), truncated };
  }
}

function xml(vars: string[], rows: Array<Record<string, SparqlTerm>>): string {
  let out = '<?xml version="1.0"?>\n<sparql xmlns="http://www.w3.org/2005/sparql-results#">\n<head>';
  for (const name of vars) out += `<variable name="${escapeAttribute(name)}"/>`;
  out += '</head>\n<results>\n';
  for (const row of rows) {
    out += '<result>';
    for (const name of vars) {
      const term = row[name];
      if (!term) continue;
      out += `<binding name="${escapeAttribute(name)}">`;
      if (term.type === 'uri') out += `<uri>${escapeText(term.value)}</uri>`;
      else if (term.type === 'bnode') out += `<bnode>${escapeText(term.value)}</bnode>`;
      else {
        const language = term['xml:lang'];
        const attributes = language ? ` xml:lang="${escapeAttribute(language)}"` : term.datatype ? ` datatype="${escapeAttribute(term.datatype)}"` : '';
        out += `<literal${attributes}>${escapeText(term.value)}</literal>`;
      }
      out += '</binding>';
    }
    out += '</result>\n';
  }
  return `${out}</results>\n</sparql>\n`;
}

/** CSV: plain values, quoted when needed, CRLF line ends (the SPARQL CSV format). */
function csv(vars: string[], rows: Array<Record<string, SparqlTerm>>): string {
  const field = (value: string) => (/[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value);
  const lines = [vars.map(field).join(',')];
  for (const row of rows) lines.push(vars.map((name) => field(row[name]?.value ?? '')).join(','));
  return `${lines.join('\r\n')}\r\n`;
}

/** TSV: terms in their SPARQL/Turtle form. */
function tsv(vars: string[], rows: Array<Record<string, SparqlTerm>>): string {
  const lines = [vars.map((name) => `?${name}`).join('\t')];
  for (const row of rows) lines.push(vars.map((name) => (row[name] ? termText(row[name]!) : '')).join('\t'));
  return `${lines.join('\n')}\n`;
}

function termText(term: SparqlTerm): string {
  if (term.type === 'uri') return `<${term.value}>`;
  if (term.type === 'bnode') return `_:${term.value}`;
  const quoted = `"${term.value.replace(/[\\"\n\r\t]/g, (char) => ({ '\\': '\\\\', '"': '\\"', '\n': '\\n', '\r': '\\r', '\t': '\\t' })[char]!)}"`;
  if (term['xml:lang']) return `${quoted}@${term['xml:lang']}`;
  if (term.datatype && term.datatype !== 'http://www.w3.org/2001/XMLSchema#string') return `${quoted}^^<${term.datatype}>`;
  return quoted;
}

type Triple = [SparqlTerm, SparqlTerm, SparqlTerm];

const IRI = '<([^>]*)>';
const BNODE = String.raw`_:([^\s.]+(?:\.[^\s.]+)*)`;
const LITERAL = String.raw`"((?:[^"\\]|\\.)*)"(?:\^\^<([^>]*)>|@([A-Za-z]+(?:-[A-Za-z0-9]+)*))?`;
const TERM = `(?:${IRI}|${BNODE}|${LITERAL})`;
const LINE = new RegExp(`^\\s*${TERM}\\s+${TERM}\\s+${TERM}\\s*\\.\\s*$`);

/**
 * The first `limit` triples of N-Triples text (as the store writes a graph query's answer),
 * with how many it holds; undefined when a line is not one N-Triples reads (the caller shows
 * the text instead).
 */
export function parseNTriples(text: string, limit: number): { triples: Triple[]; total: number } | undefined {
  const triples: Triple[] = [];
  let total = 0;
  for (const line of text.split('\n')) {
    if (/^\s*(#.*)?$/.test(line)) continue;
    total++;
    if (triples.length >= limit) continue;
    const match = LINE.exec(line);
    if (!match) return undefined;
    const terms: SparqlTerm[] = [];
    for (let at = 1; at < match.length; at += 5) terms.push(termOf(match.slice(at, at + 5)));
    triples.push(terms as Triple);
  }
  return { triples, total };
}

function termOf([iri, bnode, literal, datatype, language]: Array<string | undefined>): SparqlTerm {
  if (iri !== undefined) return { type: 'uri', value: unescaped(iri) };
  if (bnode !== undefined) return { type: 'bnode', value: bnode };
  const term: SparqlTerm = { type: 'literal', value: unescaped(literal ?? '') };
  if (datatype !== undefined) term.datatype = unescaped(datatype);
  if (language !== undefined) term['xml:lang'] = language;
  return term;
}

const ECHAR: Record<string, string> = { t: '\t', b: '\b', n: '\n', r: '\r', f: '\f', '"': '"', "'": "'", '\\': '\\' };

function unescaped(value: string): string {
  if (!value.includes('\\')) return value;
  return value.replace(/\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))/g, (whole, u4?: string, u8?: string, char?: string) => {
    const code = u4 ?? u8;
    if (code !== undefined) {
      const point = Number.parseInt(code, 16);
      return point <= 0x10ffff ? String.fromCodePoint(point) : whole;
    }
    return ECHAR[char!] ?? whole;
  });
}
