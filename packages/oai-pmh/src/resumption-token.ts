import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Where an incomplete ListIdentifiers or ListRecords list stands: everything needed to serve
 * the next page, carried in the token itself so that no server-side state has to survive a
 * restart, and fixed at the first page so that re-issuing a token gives the same page
 * (section 3.5.1, idempotency).
 */
export interface ListState {
  verb: 'ListIdentifiers' | 'ListRecords';
  metadataPrefix: string;
  set?: string;
  /** Seconds, inclusive. */
  from?: number;
  /** Seconds, inclusive, fixed when the first page was served. */
  until: number;
  /** Keyset: the last item sent; the next page starts strictly after it. */
  after: { datestamp: number; id: number };
  /** Items sent before this page (the `cursor` attribute of the next resumptionToken). */
  cursor: number;
  /**
   * The list's size as the first page counted it (or estimated it: see ListSettings.countLimit),
   * revised up as pages pass it; absent when the first page could not tell. Encoded as 0, which
   * no list with a token can be.
   */
  completeListSize?: number;
}

/** Tokens longer than this are refused before any decoding work. */
export const MAX_RESUMPTION_TOKEN_LENGTH = 1024;

/** The shortest HMAC key accepted: a key anyone can guess would make tokens forgeable. */
export const MIN_RESUMPTION_KEY_BYTES = 16;

// Layout, version 1 (all integers unsigned LEB128, strings as length + UTF-8):
//   version · flags · until · [from] · after.datestamp · after.id · cursor · completeListSize
//   · metadataPrefix · [set] · tag
// flags: bit 0 ListRecords (else ListIdentifiers), bit 1 set present, bit 2 from present.
// tag: the first 16 bytes of HMAC-SHA256 over a context label and everything before it.
const VERSION = 1;
const FLAG_LIST_RECORDS = 1;
const FLAG_SET = 2;
const FLAG_FROM = 4;
const KNOWN_FLAGS = FLAG_LIST_RECORDS | FLAG_SET | FLAG_FROM;
const TAG_BYTES = 16;
// Binds the tag to this use, so a key shared with any other MAC cannot be replayed here.
const CONTEXT_LABEL = Buffer.from('oaibag resumptionToken\0', 'utf8');
// 8 × 7 bits hold every safe integer (53 bits).
const MAX_VARINT_BYTES = 8;
const TOKEN_ALPHABET = /^[A-Za-z0-9_-]+$/;
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * A compact, URL-safe (`[A-Za-z0-9_-]` only), tamper-evident token for `state`: base64url of
 * a small binary form and a truncated HMAC-SHA256 tag under `key`. Nothing is stored, so the
 * token stays valid across restarts as long as the key does. Throws a RangeError when
 * `state` is not one {@link decodeResumptionToken} would accept, or the token would be
 * longer than {@link MAX_RESUMPTION_TOKEN_LENGTH}: issuing a token that is then refused
 * would strand the harvester mid-list, so it fails where the bug is.
 */
export function encodeResumptionToken(state: ListState, key: Uint8Array): string {
  if (key.length < MIN_RESUMPTION_KEY_BYTES) {
    throw new RangeError(`encodeResumptionToken: the key has ${key.length} bytes, at least ${MIN_RESUMPTION_KEY_BYTES} are needed`);
  }
  const problem = stateProblem(state);
  if (problem !== undefined) throw new RangeError(`encodeResumptionToken: ${problem}`);

  const bytes: number[] = [VERSION];
  bytes.push((state.verb === 'ListRecords' ? FLAG_LIST_RECORDS : 0) | (state.set !== undefined ? FLAG_SET : 0) | (state.from !== undefined ? FLAG_FROM : 0));
  writeVarint(bytes, state.until);
  if (state.from !== undefined) writeVarint(bytes, state.from);
  writeVarint(bytes, state.after.datestamp);
  writeVarint(bytes, state.after.id);
  writeVarint(bytes, state.cursor);
  writeVarint(bytes, state.completeListSize ?? 0);
  writeString(bytes, state.metadataPrefix);
  if (state.set !== undefined) writeString(bytes, state.set);
  const body = Buffer.from(bytes);
  const token = Buffer.concat([body, tag(body, key)]).toString('base64url');
  if (token.length > MAX_RESUMPTION_TOKEN_LENGTH) {
    throw new RangeError(`encodeResumptionToken: the token would be ${token.length} characters long, more than ${MAX_RESUMPTION_TOKEN_LENGTH}`);
  }
  return token;
}

/**
 * The state a token carries, or null when it is not one this repository issued under `key`
 * or says something impossible: malformed, longer than {@link MAX_RESUMPTION_TOKEN_LENGTH},
 * a wrong tag or version, numbers that are negative, fractional, unsafe or inconsistent.
 * Null maps to badResumptionToken. Never throws, whatever the input: it is the harvester's.
 */
export function decodeResumptionToken(token: string, key: Uint8Array): ListState | null {
  try {
    if (typeof token !== 'string' || token.length === 0 || token.length > MAX_RESUMPTION_TOKEN_LENGTH) return null;
    if (!TOKEN_ALPHABET.test(token) || token.length % 4 === 1) return null;
    if (!(key instanceof Uint8Array) || key.length < MIN_RESUMPTION_KEY_BYTES) return null;
    const raw = Buffer.from(token, 'base64url');
    // Node ignores the unused low bits of the last character, so several spellings decode
    // to the same bytes; only the one the encoder writes is accepted.
    if (raw.toString('base64url') !== token) return null;
    if (raw.length < 2 + TAG_BYTES || raw[0] !== VERSION) return null;
    const body = raw.subarray(0, raw.length - TAG_BYTES);
    if (!timingSafeEqual(raw.subarray(raw.length - TAG_BYTES), tag(body, key))) return null;
    const state = readState(body);
    if (state === null || stateProblem(state) !== undefined) return null;
    return state;
  } catch {
    return null;
  }
}

function tag(body: Buffer, key: Uint8Array): Buffer {
  return createHmac('sha256', key).update(CONTEXT_LABEL).update(body).digest().subarray(0, TAG_BYTES);
}

function readState(body: Buffer): ListState | null {
  const reader = { body, offset: 1 };
  const flags = body[reader.offset++];
  if (flags === undefined || (flags & ~KNOWN_FLAGS) !== 0) return null;
  const until = readVarint(reader);
  const from = flags & FLAG_FROM ? readVarint(reader) : undefined;
  const datestamp = readVarint(reader);
  const id = readVarint(reader);
  const cursor = readVarint(reader);
  const completeListSize = readVarint(reader);
  const metadataPrefix = readString(reader);
  const set = flags & FLAG_SET ? readString(reader) : undefined;
  if (
    until === null ||
    from === null ||
    datestamp === null ||
    id === null ||
    cursor === null ||
    completeListSize === null ||
    metadataPrefix === null ||
    set === null ||
    reader.offset !== body.length
  ) {
    return null;
  }
  const state: ListState = {
    verb: flags & FLAG_LIST_RECORDS ? 'ListRecords' : 'ListIdentifiers',
    metadataPrefix,
    until,
    after: { datestamp, id },
    cursor,
  };
  if (completeListSize !== 0) state.completeListSize = completeListSize;
  if (set !== undefined) state.set = set;
  if (from !== undefined) state.from = from;
  return state;
}

// One rule for both directions, so that whatever is encoded also decodes.
function stateProblem(state: ListState): string | undefined {
  if (state.verb !== 'ListIdentifiers' && state.verb !== 'ListRecords') return `verb ${String(state.verb)} cannot be resumed`;
  if (!isText(state.metadataPrefix)) return 'metadataPrefix is empty or not well-formed Unicode';
  if (state.set !== undefined && !isText(state.set)) return 'set is empty or not well-formed Unicode';
  const numbers: Array<[string, unknown]> = [
    ['until', state.until],
    ['after.datestamp', state.after?.datestamp],
    ['after.id', state.after?.id],
    ['cursor', state.cursor],
  ];
  if (state.completeListSize !== undefined) numbers.push(['completeListSize', state.completeListSize]);
  if (state.from !== undefined) numbers.push(['from', state.from]);
  for (const [name, value] of numbers) {
    if (!Number.isSafeInteger(value) || (value as number) < 0) {
      return `${name} is ${String(value)}, not a safe integer of at least 0`;
    }
  }
  if (state.from !== undefined && state.from > state.until) return `from ${state.from} is later than until ${state.until}`;
  if (state.completeListSize !== undefined && state.cursor > state.completeListSize) {
    return `cursor ${state.cursor} is beyond completeListSize ${state.completeListSize}`;
  }
  return undefined;
}

// A non-empty string that survives UTF-8 unchanged (no unpaired surrogates).
function isText(value: unknown): value is string {
  return typeof value === 'string' && value !== '' && !UNPAIRED_SURROGATE.test(value);
}

const UNPAIRED_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function writeVarint(bytes: number[], value: number): void {
  // Arithmetic rather than bit operators: those truncate to 32 bits.
  let rest = value;
  while (rest >= 0x80) {
    bytes.push((rest % 0x80) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  bytes.push(rest);
}

function writeString(bytes: number[], value: string): void {
  const encoded = Buffer.from(value, 'utf8');
  writeVarint(bytes, encoded.length);
  for (const byte of encoded) bytes.push(byte);
}

interface Reader {
  body: Buffer;
  offset: number;
}

function readVarint(reader: Reader): number | null {
  let value = 0;
  let scale = 1;
  for (let count = 0; count < MAX_VARINT_BYTES; count++) {
    const byte = reader.body[reader.offset++];
    if (byte === undefined) return null;
    value += (byte & 0x7f) * scale;
    if ((byte & 0x80) === 0) {
      // A final zero byte after others is a second spelling of a shorter number.
      if (byte === 0 && count > 0) return null;
      return Number.isSafeInteger(value) ? value : null;
    }
    scale *= 0x80;
  }
  return null;
}

function readString(reader: Reader): string | null {
  const length = readVarint(reader);
  if (length === null || length > reader.body.length - reader.offset) return null;
  const slice = reader.body.subarray(reader.offset, reader.offset + length);
  reader.offset += length;
  try {
    return strictUtf8.decode(slice);
  } catch {
    return null;
  }
}

/** What a list's first page fixes: everything of its ListState but the keyset, cursor and size. */
export type ListStart = Omit<ListState, 'after' | 'cursor' | 'completeListSize'>;

/**
 * The start of a list from its first request. `until` is fixed at one second before the
 * response's responseDate (`now`), so an item that changes while the list is paged leaves it
 * rather than shifting the others, and comes with the next harvest, whose `from` is that
 * responseDate. Tokens hold no negative numbers: `from` is at least 0 (1970).
 */
export function listStart(
  request: { verb: ListState['verb']; metadataPrefix: string; set?: string; from?: { seconds: number }; until?: { seconds: number } },
  now: number,
): ListStart {
  return {
    verb: request.verb,
    metadataPrefix: request.metadataPrefix,
    ...(request.set !== undefined ? { set: request.set } : {}),
    ...(request.from !== undefined ? { from: Math.max(0, request.from.seconds) } : {}),
    until: Math.min(request.until?.seconds ?? Number.MAX_SAFE_INTEGER, now - 1),
  };
}

/** Whether a list's start can match nothing whatever the items: until before 1970, or from after until. */
export function listIsEmpty(start: ListStart): boolean {
  return start.until < 0 || (start.from !== undefined && start.from > start.until);
}
