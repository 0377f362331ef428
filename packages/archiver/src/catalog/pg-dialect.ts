// The catalog's SQL, written once for SQLite, as PostgreSQL runs it. Most of it is the common
// language of both already (the queries keep to it: explicit casts, NULLS FIRST where SQLite's
// order of NULLs matters, no bare columns beside an aggregate); what differs is rewritten here,
// mechanically, once per statement text (the result is cached with the statement):
//
//   `?`, `@name`, `:name` parameters  →  `$1`, `$2`…  (a name used twice keeps its number)
//   INSERT OR IGNORE INTO …           →  INSERT INTO … ON CONFLICT DO NOTHING
//   an INSERT into a table with an id →  … RETURNING id  (SQLite's lastInsertRowid)
//   SELECT value FROM json_each(x)    →  the elements of the JSON array x, as BIGINT
//   strftime('%s', x)                 →  floor(EXTRACT(EPOCH FROM x::timestamptz))
//   CAST(… AS INTEGER)                →  CAST(… AS BIGINT)   (SQLite's integers are 64-bit)
//   json_array(…)                     →  json_build_array(…)  (read back as its text)
//   CROSS JOIN t x ON …               →  JOIN t x ON …  (SQLite's way to fix the join order)
//
// Anything else SQLite-only would fail loudly in PostgreSQL (a syntax error naming it), and
// the catalog's tests run every query on both.

/** A statement as PostgreSQL takes it. */
export interface PgStatementText {
  text: string;
  /** For `@name` parameters: the name of `$1`, `$2`… in order. Empty for `?` parameters. */
  names: string[];
  /** How many `?` parameters the text had. */
  positional: number;
  /** True when the text is a statement that reads only (SELECT, WITH … SELECT, EXPLAIN). */
  readonly: boolean;
  /** True when `RETURNING id` was added (the statement's lastInsertRowid). */
  returnsId: boolean;
}

/** The catalog's tables whose rows have an `id` (INTEGER PRIMARY KEY in SQLite). */
const TABLES_WITH_ID = new Set([
  'sources',
  'harvests',
  'resources',
  'deletions',
  'failures',
  'events',
  'bags',
  'payloads',
  'versions',
  'fetches',
  'verifications',
]);

export function toPostgres(sql: string): PgStatementText {
  const names: string[] = [];
  let positional = 0;
  let out = '';
  for (let i = 0; i < sql.length; i++) {
    const c = sql[i]!;
    if (c === "'" || c === '"') {
      // A quoted literal or identifier, its doubled quotes included, copied as it is.
      let j = i + 1;
      while (j < sql.length && !(sql[j] === c && sql[j + 1] !== c)) j += sql[j] === c ? 2 : 1;
      out += sql.slice(i, j + 1);
      i = j;
    } else if (c === '-' && sql[i + 1] === '-') {
      const end = sql.indexOf('\n', i);
      i = end < 0 ? sql.length : end - 1;
    } else if (c === '?') {
      out += `$${++positional}`;
    } else if ((c === '@' || (c === ':' && sql[i - 1] !== ':' && sql[i + 1] !== ':')) && /[A-Za-z_]/.test(sql[i + 1] ?? '')) {
      const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(sql.slice(i + 1))![0];
      let index = names.indexOf(name);
      if (index < 0) index = names.push(name) - 1;
      out += `$${index + 1}`;
      i += name.length;
    } else out += c;
  }
  let text = out
    .replace(/\bSELECT value FROM json_each\(([^()]+)\)/g, 'SELECT value::bigint AS value FROM json_array_elements_text(($1)::json) AS value')
    .replace(/\bstrftime\('%s', ([\w.]+)\)/g, 'floor(EXTRACT(EPOCH FROM ($1)::timestamptz))')
    .replace(/\bAS INTEGER\)/g, 'AS BIGINT)')
    .replace(/\bjson_array\(/g, 'json_build_array(')
    .replace(/\bCROSS JOIN (\w+ \w+) ON\b/g, 'JOIN $1 ON');
  const ignore = /^\s*INSERT OR IGNORE INTO\b/i.test(text);
  if (ignore) text = `${text.replace(/^\s*INSERT OR IGNORE INTO\b/i, 'INSERT INTO')} ON CONFLICT DO NOTHING`;
  const table = /^\s*INSERT INTO\s+(\w+)/i.exec(text)?.[1];
  const returnsId = table !== undefined && TABLES_WITH_ID.has(table) && !/\bRETURNING\b/i.test(text);
  if (returnsId) text += ' RETURNING id';
  return { text, names, positional, readonly: /^\s*(SELECT|WITH|EXPLAIN|VALUES)\b/i.test(text) && !/\b(INSERT|UPDATE|DELETE)\b/i.test(text), returnsId };
}
