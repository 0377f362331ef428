// The text, JSON and CSV forms of `oaibag audit`, produced as a stream of chunks from an
// AuditRun (rows are formatted as the catalog yields them; no whole report is held as one
// string), and the writer that puts the chunks on stdout or, atomically, into a file.
import { Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { streamFileDurably } from '../archive/durable-file.js';
import { ArchiverError } from '../core/errors.js';
import { renderAuditHtml } from './audit-html.js';
import { type AuditLinks, auditLinks } from './audit-links.js';
import { AUDIT_CHANGES, type AuditHarvestTotals, type AuditRow, type AuditRun, type AuditState, type AuditTotals } from './audit-query.js';

/** The output forms of `oaibag audit`. */
export type AuditFormat = 'text' | 'json' | 'csv' | 'html';

export const AUDIT_FORMATS: readonly AuditFormat[] = ['text', 'json', 'csv', 'html'];

/** The one header line of the CSV form (the column order is part of the interface). */
export const AUDIT_CSV_HEADER =
  'identifier,change,mime_changed,before_datestamp,before_size,before_sha256,before_mime,after_datestamp,after_size,after_sha256,after_mime,harvest_id';

/** What the forms may add to the rows (docs/audit.md, "Links to the archive"). */
export interface AuditFormatOptions {
  /**
   * Where `oaibag serve` serves this archive (an http(s) URL without query or fragment): JSON
   * rows get a `diff` field, CSV a `diff` column, the HTML page links each identifier to its
   * history and each modified row to its diff; text is unchanged. Without it every form is as
   * it was.
   */
  serveUrl?: string;
}

/** About how many characters are gathered before a chunk is handed on. */
const CHUNK = 64 * 1024;

/** The chunks of the audit in `format`; consuming them consumes `run.rows`. */
export function formatAudit(run: AuditRun, format: AuditFormat, options: AuditFormatOptions = {}): Iterable<string> {
  // Checked before anything is read or written: a bad URL is a usage error, nothing partial.
  const links = options.serveUrl === undefined ? undefined : auditLinks(options.serveUrl);
  switch (format) {
    case 'text':
      return auditText(run);
    case 'json':
      return auditJson(run, links);
    case 'csv':
      return auditCsv(run, links);
    case 'html':
      // The page starts with the totals: counted by a pass of their own, so that the rows are never held.
      return renderAuditHtml(
        { period: run.period, sources: run.sources, totals: run.countTotals(), rows: run.rows },
        links === undefined ? {} : { serveUrl: links.serveUrl },
      );
  }
}

/**
 * CSV (RFC 4180): the header line, then one line per row, CRLF line ends. A deleted state has
 * its deletion's datestamp and empty size, sha-256 and MIME type; no state, all four empty.
 * Values are written verbatim (quoted when needed), never altered. With `links`, a last
 * column `diff`: the row's diff page, or empty.
 */
export function* auditCsv(run: AuditRun, links?: AuditLinks): Generator<string> {
  if (links === undefined) {
    yield* batched([`${AUDIT_CSV_HEADER}\r\n`], run.rows, (row) => `${auditCsvLine(row)}\r\n`);
    return;
  }
  yield* batched([`${AUDIT_CSV_HEADER},diff\r\n`], run.rows, (row) => `${auditCsvLine(row)},${csvField(links.diff(row) ?? '')}\r\n`);
}

/** One row as a CSV line, without its line end. */
export function auditCsvLine(row: AuditRow): string {
  return [row.identifier, row.change, row.mimeChanged ? 'true' : 'false', ...csvState(row.before), ...csvState(row.after), String(row.harvestId)]
    .map(csvField)
    .join(',');
}

/** A CSV field, quoted (quotes doubled) when it holds a comma, quote, CR or LF. */
export function csvField(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}

function csvState(state: AuditState | null): string[] {
  if (state === null) return ['', '', '', ''];
  return [state.datestamp, state.size === null ? '' : String(state.size), state.sha256 ?? '', state.mimeType ?? ''];
}

/**
 * JSON: one object `{ period, sources, rows, totals }`, rows one per line. The rows are
 * written as they are read, then the totals they added up to. With `links`, each row has a
 * last field `diff`: its diff page, or null.
 */
export function* auditJson(run: AuditRun, links?: AuditLinks): Generator<string> {
  const head = `{\n"period": ${JSON.stringify(run.period)},\n"sources": ${JSON.stringify(run.sources)},\n"rows": [`;
  let first = true;
  yield* batched([head], run.rows, (row) => {
    const line = `${first ? '\n' : ',\n'}${JSON.stringify(links === undefined ? row : { ...row, diff: links.diff(row) })}`;
    first = false;
    return line;
  });
  yield `${first ? '' : '\n'}],\n"totals": ${JSON.stringify(run.totals())}\n}\n`;
}

/**
 * Text: the period, a table (one line per row; the identifier last, so long ones do not push
 * the other columns about), then the totals. Control characters in catalog values are shown
 * escaped (`\u001b`, as restore does), so a hostile identifier cannot drive the terminal.
 */
export function* auditText(run: AuditRun): Generator<string> {
  const scope = run.sources.map((source) => source.baseUrl).join(', ') || 'no source';
  const harvests = run.period.harvestIds.length === 0 ? 'no harvest recorded a change' : `harvests ${run.period.harvestIds.map((id) => `#${id}`).join(', ')}`;
  const bounds =
    run.period.selection === 'dates'
      ? ` started ${run.period.since ?? 'any time'} to ${run.period.until ?? 'now'}`
      : run.period.selection === 'latest'
        ? ' (the latest that recorded a change)'
        : '';
  const head =
    `audit of ${terminalSafe(scope)}: ${harvests}${bounds}\n\n` +
    `${'CHANGE'.padEnd(9)} ${'HARVEST'.padEnd(7)} ${'BEFORE'.padEnd(STATE_WIDTH)} ${'AFTER'.padEnd(STATE_WIDTH)} ${'MIME'.padEnd(24)} IDENTIFIER\n`;
  yield* batched([head], run.rows, auditTextLine);
  yield `\n${auditTotalsText(run.totals())}`;
}

const STATE_WIDTH = 20 + 1 + 12 + 1 + 12;

/** One row of the text table, with its line end. */
export function auditTextLine(row: AuditRow): string {
  const mime = row.mimeChanged ? `${row.before?.mimeType ?? ''} -> ${row.after.mimeType ?? ''}` : (row.after.mimeType ?? row.before?.mimeType ?? '-');
  return `${row.change.padEnd(9)} ${`#${row.harvestId}`.padEnd(7)} ${textState(row.before)} ${textState(row.after)} ${terminalSafe(mime).padEnd(24)} ${terminalSafe(row.identifier)}\n`;
}

function textState(state: AuditState | null): string {
  if (state === null) return '-'.padEnd(STATE_WIDTH);
  const size = state.deleted ? 'deleted' : `${state.size ?? '?'} B`;
  const sha = state.sha256 === null ? '' : state.sha256.slice(0, 12);
  return `${terminalSafe(state.datestamp).padEnd(20)} ${size.padStart(12)} ${sha.padEnd(12)}`;
}

/** The totals as text lines: per change kind, then per harvest. */
export function auditTotalsText(totals: AuditTotals): string {
  const kinds = AUDIT_CHANGES.map((kind) => `${totals.byChange[kind]} ${kind}`).join(', ');
  const mime = totals.byChange.mimeChanged === 1 ? '1 MIME type change' : `${totals.byChange.mimeChanged} MIME type changes`;
  let text = `${totals.rows} ${totals.rows === 1 ? 'resource' : 'resources'} changed: ${kinds}; ${mime}\n`;
  if (totals.byHarvest.length > 0) text += 'recorded per harvest:\n';
  for (const harvest of totals.byHarvest) text += `  ${harvestLine(harvest)}\n`;
  return text;
}

function harvestLine(harvest: AuditHarvestTotals): string {
  const kinds = AUDIT_CHANGES.map((kind) => `${harvest[kind]} ${kind}`).join(', ');
  return `#${harvest.harvestId} ${harvest.startedAt} ${harvest.status} ${terminalSafe(harvest.source)}: ${kinds}`;
}

/** Shows C0/C1 control characters (and DEL) as `\uXXXX`, leaving everything else as it is. */
export function terminalSafe(value: string): string {
  // eslint-disable-next-line no-control-regex
  return value.replace(/[\x00-\x1f\x7f-\x9f]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function* batched<T>(head: string[], items: Iterable<T>, line: (item: T) => string): Generator<string> {
  let buffer = head.join('');
  for (const item of items) {
    buffer += line(item);
    if (buffer.length >= CHUNK) {
      yield buffer;
      buffer = '';
    }
  }
  if (buffer.length > 0) yield buffer;
}

/**
 * Writes the chunks to `out`, or to `stdout` when `out` is undefined. A file is written durably
 * (archive/durable-file.ts: under a temporary name beside it, fsynced and renamed into place),
 * so it is either the whole audit or left as it was. Honours back-pressure.
 */
export async function writeAuditOutput(chunks: Iterable<string>, out: string | undefined, stdout: Writable = process.stdout): Promise<void> {
  if (out === undefined) {
    try {
      await pipeline(Readable.from(chunks, { objectMode: false }), stdout, { end: false });
    } catch (error) {
      // The reader went away (`oaibag audit | head`): like other filters, stop quietly.
      if ((error as NodeJS.ErrnoException).code !== 'EPIPE') throw error;
    }
    return;
  }
  const hint = 'check that the folder of --out exists and is writable';
  await streamFileDurably(
    out,
    async (file) => {
      try {
        for (const chunk of chunks) await file.write(chunk);
      } catch (error) {
        if (error instanceof ArchiverError) throw error;
        throw new ArchiverError('ERR_ARCHIVE_IO', `cannot write the audit to ${out}: ${(error as Error).message}`, { cause: error, path: out, hint });
      }
    },
    { ioHint: hint },
  );
}
