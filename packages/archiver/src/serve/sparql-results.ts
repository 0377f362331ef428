// SPARQL solution sequences cut to the endpoint's row limit and written in the four result
// formats (SPARQL 1.1 Query Results JSON, XML, CSV and TSV), from the JSON form the store gives.
import { escapeAttribute, escapeText } from '@oaibag/didl';

export interface SolutionsJson {
  head: { vars: string[] };
  results: { bindings: Array<Record<string, Term>> };
}

interface Term {
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

function xml(vars: string[], rows: Array<Record<string, Term>>): string {
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
function csv(vars: string[], rows: Array<Record<string, Term>>): string {
  const field = (value: string) => (/[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value);
  const lines = [vars.map(field).join(',')];
  for (const row of rows) lines.push(vars.map((name) => field(row[name]?.value ?? '')).join(','));
  return `${lines.join('\r\n')}\r\n`;
}

/** TSV: terms in their SPARQL/Turtle form. */
function tsv(vars: string[], rows: Array<Record<string, Term>>): string {
  const lines = [vars.map((name) => `?${name}`).join('\t')];
  for (const row of rows) lines.push(vars.map((name) => (row[name] ? termText(row[name]!) : '')).join('\t'));
  return `${lines.join('\n')}\n`;
}

function termText(term: Term): string {
  if (term.type === 'uri') return `<${term.value}>`;
  if (term.type === 'bnode') return `_:${term.value}`;
  const quoted = `"${term.value.replace(/[\\"\n\r\t]/g, (char) => ({ '\\': '\\\\', '"': '\\"', '\n': '\\n', '\r': '\\r', '\t': '\\t' })[char]!)}"`;
  if (term['xml:lang']) return `${quoted}@${term['xml:lang']}`;
  if (term.datatype && term.datatype !== 'http://www.w3.org/2001/XMLSchema#string') return `${quoted}^^<${term.datatype}>`;
  return quoted;
}
