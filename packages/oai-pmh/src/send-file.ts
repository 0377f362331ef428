import type { FileHandle } from 'node:fs/promises';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';

/** One HTTP response header field. */
export interface HeaderField {
  name: string;
  value: string;
}

/**
 * An open, already verified version of an indexed file, as the server hands it over:
 * the handle to read from and the facts (size, validators, headers) of that version.
 * `headers` are the `fileHeaders()` of the file, so a GET carries what the records promise.
 */
export interface SendableFile {
  handle: FileHandle;
  size: number;
  headers: HeaderField[];
  /** The strong entity tag, quotes included, as in the ETag header. */
  etag: string;
  /** Last-Modified in whole seconds since the epoch, as in the Last-Modified header. */
  lastModifiedSeconds: number;
}

/**
 * What to answer, decided before any byte is read: status, headers, and which bytes of the
 * file form the body (none for HEAD, 304, 412, 416, 405). `start` is a file offset,
 * `length` a byte count.
 */
export interface FileResponsePlan {
  status: 200 | 206 | 304 | 405 | 412 | 416;
  headers: HeaderField[];
  body?: { start: number; length: number };
}

/** Bytes read and written per step: memory per response stays at about this much. */
const CHUNK_SIZE = 64 * 1024;

/**
 * Answers a GET or HEAD for one file, as a careful static web server: conditional requests
 * (RFC 9110 section 13), single byte ranges (section 14), and a body streamed from the handle
 * with backpressure. Resolves once the response has finished or the client has gone away;
 * a client disconnect is not an error. If the file turns out shorter than `size` while
 * streaming, the response is destroyed so the client sees an incomplete body, never a
 * clean short one. Rejects only when reading the file fails (the response has then already
 * been destroyed). The handle stays open: the caller owns it.
 */
export async function sendFile(req: IncomingMessage, res: ServerResponse, file: SendableFile): Promise<void> {
  const plan = planFileResponse(req.method ?? 'GET', req.headers, file);
  res.statusCode = plan.status;
  for (const { name, value } of plan.headers) res.setHeader(name, value);
  if (plan.body === undefined || plan.body.length === 0) {
    res.end();
    await responseOver(res);
    return;
  }
  await streamBody(res, file.handle, plan.body.start, plan.body.length);
}

/**
 * The pure decision behind `sendFile`. Preconditions are evaluated in the order of
 * RFC 9110 section 13.2.2; Range only for GET (section 14.2 defines it for GET alone).
 */
export function planFileResponse(
  method: string,
  requestHeaders: IncomingHttpHeaders,
  file: Omit<SendableFile, 'handle'>,
  now: number = Date.now(),
): FileResponsePlan {
  if (method !== 'GET' && method !== 'HEAD') {
    return { status: 405, headers: [{ name: 'Allow', value: 'GET, HEAD' }] };
  }
  const header = (name: string): string | undefined => {
    const value = requestHeaders[name];
    return typeof value === 'string' ? value : undefined;
  };

  const ifMatch = header('if-match');
  if (ifMatch !== undefined) {
    if (!listMatches(ifMatch, file.etag, strongMatch)) return { status: 412, headers: [] };
  } else {
    const since = parseHttpDate(header('if-unmodified-since') ?? '', now);
    if (since !== undefined && file.lastModifiedSeconds > since) return { status: 412, headers: [] };
  }

  const ifNoneMatch = header('if-none-match');
  if (ifNoneMatch !== undefined) {
    if (listMatches(ifNoneMatch, file.etag, weakMatch)) return notModified(file.headers);
  } else {
    const since = parseHttpDate(header('if-modified-since') ?? '', now);
    if (since !== undefined && file.lastModifiedSeconds <= since) return notModified(file.headers);
  }

  const full: FileResponsePlan = {
    status: 200,
    headers: file.headers,
    ...(method === 'GET' ? { body: { start: 0, length: file.size } } : {}),
  };
  const rangeHeader = header('range');
  if (method !== 'GET' || rangeHeader === undefined) return full;
  const ifRange = header('if-range');
  if (ifRange !== undefined && !ifRangeHolds(ifRange, file, now)) return full;

  const range = parseRange(rangeHeader, file.size);
  switch (range.kind) {
    case 'ignore':
      return full;
    case 'unsatisfiable':
      return { status: 416, headers: [{ name: 'Content-Range', value: `bytes */${file.size}` }] };
    case 'range': {
      const length = range.end - range.start + 1;
      const headers = file.headers.map((field) => (field.name.toLowerCase() === 'content-length' ? { name: field.name, value: String(length) } : field));
      headers.push({ name: 'Content-Range', value: `bytes ${range.start}-${range.end}/${file.size}` });
      return { status: 206, headers, body: { start: range.start, length } };
    }
  }
}

/** The outcome of a Range header for a representation of `size` bytes. `end` is inclusive. */
export type RangeDecision = { kind: 'ignore' } | { kind: 'unsatisfiable' } | { kind: 'range'; start: number; end: number };

/**
 * Reads a Range header (RFC 9110 section 14.1.2). Ignored, so the whole file is sent: another
 * unit than bytes, a malformed or invalid range-set, several ranges (rather than a
 * multipart/byteranges body, which the RFC lets a server decline), and a suffix range of an
 * empty file (satisfiable per section 14.1.3, but a 206 cannot describe zero bytes).
 * Unsatisfiable: a first position at or past the end (so any `a-b` or `a-` of an empty file),
 * or `-0`.
 */
export function parseRange(value: string, size: number): RangeDecision {
  const equals = value.indexOf('=');
  if (equals <= 0) return { kind: 'ignore' };
  const unit = value.slice(0, equals);
  if (!TOKEN.test(unit) || unit.toLowerCase() !== 'bytes') return { kind: 'ignore' };
  const specs = value
    .slice(equals + 1)
    .split(',')
    .map((spec) => spec.replace(/^[ \t]+|[ \t]+$/g, ''))
    .filter((spec) => spec !== '');
  if (specs.length === 0) return { kind: 'ignore' };
  const parsed: Array<{ first: number; last: number } | { suffix: number }> = [];
  for (const spec of specs) {
    const intRange = /^(\d+)-(\d*)$/.exec(spec);
    const suffixRange = /^-(\d+)$/.exec(spec);
    if (intRange) {
      const first = Number(intRange[1]);
      const last = intRange[2] === '' ? Infinity : Number(intRange[2]);
      if (last < first) return { kind: 'ignore' };
      parsed.push({ first, last });
    } else if (suffixRange) {
      parsed.push({ suffix: Number(suffixRange[1]) });
    } else {
      return { kind: 'ignore' };
    }
  }
  const only = parsed[0];
  if (parsed.length > 1 || only === undefined) return { kind: 'ignore' };
  if ('suffix' in only) {
    if (only.suffix === 0) return { kind: 'unsatisfiable' };
    if (size === 0) return { kind: 'ignore' };
    return { kind: 'range', start: Math.max(0, size - only.suffix), end: size - 1 };
  }
  if (only.first >= size) return { kind: 'unsatisfiable' };
  return { kind: 'range', start: only.first, end: Math.min(only.last, size - 1) };
}

/**
 * Parses an HTTP-date in any of the three forms a recipient must accept (RFC 9110 section
 * 5.6.7): IMF-fixdate, obsolete RFC 850 and asctime, all in UTC. Returns whole seconds since
 * the epoch, or undefined for anything else (so the header that carried it is ignored).
 * `now` places RFC 850's two-digit year: never more than 50 years ahead.
 */
export function parseHttpDate(value: string, now: number = Date.now()): number | undefined {
  let day: string, month: string, year: number, time: string;
  let match = IMF_FIXDATE.exec(value);
  if (match) {
    [day, month, year, time] = [match[1]!, match[2]!, Number(match[3]), match[4]!];
  } else if ((match = RFC850_DATE.exec(value))) {
    [day, month, time] = [match[1]!, match[2]!, match[4]!];
    const thisYear = new Date(now).getUTCFullYear();
    year = Math.floor(thisYear / 100) * 100 + Number(match[3]);
    if (year > thisYear + 50) year -= 100;
  } else if ((match = ASCTIME_DATE.exec(value))) {
    [month, day, time, year] = [match[1]!, match[2]!.trim(), match[3]!, Number(match[4])];
  } else {
    return undefined;
  }
  const [hours, minutes, seconds] = time.split(':').map(Number) as [number, number, number];
  // 60 is a leap second; it counts as the first second of the next minute.
  if (hours > 23 || minutes > 59 || seconds > 60) return undefined;
  const dayOfMonth = Number(day);
  // setUTCFullYear, unlike Date.UTC, keeps years below 100 as they are.
  const date = new Date(0);
  date.setUTCFullYear(year, MONTHS.indexOf(month), dayOfMonth);
  // 31 Feb would roll over into March: such a date is not a date.
  if (date.getUTCDate() !== dayOfMonth) return undefined;
  return date.getTime() / 1000 + hours * 3600 + minutes * 60 + seconds;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const MONTH = `(${MONTHS.join('|')})`;
const TIME = '(\\d{2}:\\d{2}:\\d{2})';
const IMF_FIXDATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`);
const RFC850_DATE = new RegExp(`^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`);
const ASCTIME_DATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ${MONTH} ([ \\d]\\d) ${TIME} (\\d{4})$`);

/** One entity tag of a list: `W/` marks it weak; `tag` keeps its quotes. */
interface EntityTag {
  weak: boolean;
  tag: string;
}

const ENTITY_TAG = /(W\/)?("[\x21\x23-\x7e\x80-\xff]*")/y;

/**
 * The tags of an If-Match / If-None-Match value, `'*'`, or undefined when malformed. A
 * malformed list matches nothing: If-None-Match then never gives 304 and If-Match gives
 * 412, the safe outcome of each. Commas may occur inside a tag, so the list is scanned
 * rather than split.
 */
function parseEntityTags(value: string): EntityTag[] | '*' | undefined {
  if (value.trim() === '*') return '*';
  const tags: EntityTag[] = [];
  let position = 0;
  let expectTag = true;
  while (position < value.length) {
    const char = value[position]!;
    if (char === ' ' || char === '\t') {
      position += 1;
    } else if (char === ',') {
      expectTag = true;
      position += 1;
    } else {
      if (!expectTag) return undefined;
      ENTITY_TAG.lastIndex = position;
      const match = ENTITY_TAG.exec(value);
      if (!match) return undefined;
      tags.push({ weak: match[1] !== undefined, tag: match[2]! });
      position = ENTITY_TAG.lastIndex;
      expectTag = false;
    }
  }
  return tags.length === 0 ? undefined : tags;
}

function listMatches(value: string, etag: string, compare: (listed: EntityTag, ours: EntityTag) => boolean): boolean {
  const listed = parseEntityTags(value);
  if (listed === '*') return true;
  const ours = parseEntityTags(etag);
  if (listed === undefined || ours === undefined || ours === '*' || ours.length !== 1) return false;
  return listed.some((tag) => compare(tag, ours[0]!));
}

function strongMatch(a: EntityTag, b: EntityTag): boolean {
  return !a.weak && !b.weak && a.tag === b.tag;
}

function weakMatch(a: EntityTag, b: EntityTag): boolean {
  return a.tag === b.tag;
}

/**
 * If-Range (RFC 9110 section 13.1.5): an entity tag must match strongly, a date must equal
 * Last-Modified to the second. Anything else sends the whole file.
 */
function ifRangeHolds(value: string, file: Omit<SendableFile, 'handle'>, now: number): boolean {
  const trimmed = value.trim();
  if (trimmed.startsWith('"') || trimmed.startsWith('W/')) {
    const tags = parseEntityTags(trimmed);
    return Array.isArray(tags) && tags.length === 1 && listMatches(trimmed, file.etag, strongMatch);
  }
  return parseHttpDate(trimmed, now) === file.lastModifiedSeconds;
}

/**
 * 304 carries the validators and nothing that describes a body (RFC 9110 section 15.4.5);
 * node adds Date and sends no body.
 */
function notModified(fileHeaders: HeaderField[]): FileResponsePlan {
  const kept = new Set(['etag', 'last-modified']);
  return { status: 304, headers: fileHeaders.filter((field) => kept.has(field.name.toLowerCase())) };
}

/**
 * Reads at explicit positions, one chunk at a time, and waits for the socket to drain
 * before reading on, so memory does not grow with the file and no read is pending when
 * this returns (the caller closes the handle right after). Each chunk is a fresh buffer
 * because `res.write` may still hold the previous one.
 */
async function streamBody(res: ServerResponse, handle: FileHandle, start: number, length: number): Promise<void> {
  // A ServerResponse rarely emits 'error', but without a listener one would crash the server.
  const ignore = (): void => {};
  res.on('error', ignore);
  try {
    let position = start;
    const end = start + length;
    while (position < end) {
      if (res.destroyed) return;
      const want = Math.min(CHUNK_SIZE, end - position);
      const chunk = Buffer.allocUnsafe(want);
      let bytesRead: number;
      try {
        ({ bytesRead } = await handle.read(chunk, 0, want, position));
      } catch (error) {
        res.destroy();
        throw error;
      }
      if (bytesRead === 0) {
        // Truncated since it was opened: a short body must not look complete.
        res.destroy();
        return;
      }
      position += bytesRead;
      if (res.destroyed) return;
      if (!res.write(bytesRead === want ? chunk : chunk.subarray(0, bytesRead))) await drained(res);
    }
    res.end();
    await responseOver(res);
  } finally {
    res.off('error', ignore);
  }
}

/** Resolves when the response can take more, or is closed (the listeners are removed either way). */
export function drained(res: ServerResponse): Promise<void> {
  if (res.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/** Resolves when the response has been handed to the socket or the connection closed. */
function responseOver(res: ServerResponse): Promise<void> {
  if (res.writableFinished || res.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('finish', done);
      res.off('close', done);
      resolve();
    };
    res.on('finish', done);
    res.on('close', done);
  });
}
