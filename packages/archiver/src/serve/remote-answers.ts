// Reading a remote SPARQL store's answers within the endpoint's bounds: the bytes read are
// capped (the answer is abandoned past the limit, never held whole), and a select query's
// solutions are read only up to the row limit and one more (which says there were more), the
// rest of the answer never fetched. Written back with sparql-results.ts, so that the formats
// and the `SPARQL-Results-Truncated` header are those of the embedded store.
import type { SolutionsJson } from './sparql-results.js';

/** The body as text, or undefined once it is past `limit` bytes (the rest is not read). */
export async function readCapped(body: ReadableStream<Uint8Array> | null, limit: number): Promise<string | undefined> {
  if (!body) return '';
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let bytes = 0;
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text + decoder.decode();
    bytes += value.byteLength;
    if (bytes > limit) {
      await reader.cancel();
      return undefined;
    }
    text += decoder.decode(value, { stream: true });
  }
}

/**
 * The solutions of a SPARQL JSON results body, at most `rowLimit` of them (`truncated` when the
 * store gave more); undefined when the part read is past `byteLimit` bytes. Counts the objects
 * of the `bindings` array as the text arrives and stops reading after the one past the limit.
 */
export async function readSolutions(
  body: ReadableStream<Uint8Array> | null,
  rowLimit: number,
  byteLimit: number,
): Promise<{ solutions: SolutionsJson; truncated: boolean } | undefined> {
  if (!body) throw new Error('the store sent no results');
  const decoder = new TextDecoder();
  const reader = body.getReader();
  const scan = new BindingsScan(rowLimit);
  let bytes = 0;
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) {
      text += decoder.decode();
      scan.feed(text);
      break;
    }
    bytes += value.byteLength;
    text += decoder.decode(value, { stream: true });
    scan.feed(text);
    if (scan.more) {
      await reader.cancel();
      break;
    }
    // Past the limit only when what was read holds no more than the rows wanted.
    if (bytes > byteLimit) {
      await reader.cancel();
      return undefined;
    }
  }
  const json = scan.more ? `${text.slice(0, scan.cut)}]}}` : text;
  return { solutions: normalized(JSON.parse(json) as SolutionsJson), truncated: scan.more };
}

/** Where the `bindings` array's objects end, found as the text grows. */
class BindingsScan {
  /** Set when an object follows the `limit`-th: the store gave more. */
  more = false;
  /** The end of the `limit`-th object. */
  cut = 0;
  private at = 0;
  private inArray = false;
  private depth = 0;
  private inString = false;
  private count = 0;
  private ended = false;

  constructor(private readonly limit: number) {}

  feed(text: string): void {
    if (this.ended) return;
    if (!this.inArray) {
      const start = /"bindings"\s*:\s*\[/.exec(text);
      if (!start) return;
      this.inArray = true;
      this.at = start.index + start[0].length;
      if (this.limit === 0) this.cut = this.at;
    }
    for (; this.at < text.length; this.at++) {
      const char = text.charCodeAt(this.at);
      if (this.inString) {
        if (char === 0x5c) {
          if (this.at + 1 >= text.length) return; // the escaped character has not arrived
          this.at++;
        } else if (char === 0x22) this.inString = false;
      } else if (char === 0x22) this.inString = true;
      else if (char === 0x7b) {
        if (this.depth === 0 && this.count === this.limit) {
          this.more = true;
          this.ended = true;
          return;
        }
        this.depth++;
      } else if (char === 0x7d) {
        if (--this.depth === 0 && ++this.count === this.limit) this.cut = this.at + 1;
      } else if (char === 0x5d && this.depth === 0) {
        this.ended = true;
        return;
      }
    }
  }
}

/** Virtuoso writes typed literals as `typed-literal` (an older draft of the format): written as `literal`. */
function normalized(solutions: SolutionsJson): SolutionsJson {
  for (const row of solutions.results?.bindings ?? []) {
    for (const term of Object.values(row)) if ((term.type as string) === 'typed-literal') term.type = 'literal';
  }
  return solutions;
}

/**
 * The boolean of an ask query's JSON answer: `boolean`, or Virtuoso's form, a solution binding
 * `__ASK_RETVAL` to 1 (no solution: false).
 */
export function askAnswer(json: string): boolean {
  const parsed = JSON.parse(json) as { boolean?: boolean; results?: { bindings?: Array<Record<string, { value: string }>> } };
  if (typeof parsed.boolean === 'boolean') return parsed.boolean;
  const first = parsed.results?.bindings?.[0];
  if (!first) return false;
  const value = Object.values(first)[0]?.value;
  return value !== undefined && value !== '0' && value !== 'false';
}

/** An ask query's answer as the embedded store writes it in each results format. */
export function writeBoolean(value: boolean, mediaType: string): string {
  if (mediaType === 'application/sparql-results+xml') {
    return `<?xml version="1.0"?><sparql xmlns="http://www.w3.org/2005/sparql-results#"><head></head><boolean>${value}</boolean></sparql>`;
  }
  if (mediaType === 'text/csv' || mediaType === 'text/tab-separated-values') return String(value);
  return JSON.stringify({ head: {}, boolean: value });
}
