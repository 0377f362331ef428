import type { DidlResource } from './model.js';

/**
 * A DIDL element exactly as it arrived: its UTF-8 bytes, except that the content of each
 * By-Value Resource (the base64 text) is left out and its place taken by the Resource, whose
 * `byValue` holds the decoded size and SHA-256. Namespace declarations the element inherited
 * from the envelope (an OAI-PMH response) are added to its start tag, so that it means the
 * same thing on its own.
 */
export interface ReceivedDidl {
  parts: Array<Uint8Array | DidlResource>;
}

/** Above this many bytes of markup a record's DIDL is not kept as received (the caller rebuilds it). */
const MAX_RECEIVED_BYTES = 16 << 20;

const LT = 0x3c;

/**
 * Keeps the bytes of DIDL elements (and of OAI-PMH record headers) as the reader meets them. The reader hands over every run of
 * markup before the tokenizer sees it (`markup`), and says when it is back between constructs
 * (`settled`); the record builder says where a DIDL element starts, where each By-Value
 * Resource's content goes, and where the element ends. Base64 content never comes here: the
 * reader decodes it without passing it on.
 */
export class ReceivedXmlCapture {
  /** Markup since the tokenizer was last between constructs: holds the start tag when a DIDL element opens. */
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private parts: Array<Uint8Array | DidlResource> | undefined;
  private bytes = 0;
  private overflow = false;

  /**
   * @param keepViews the reader's chunks are its own and nobody changes them (`chunksAreOurs`):
   *   runs are kept as views, not copied (a record's markup comes in some 30 runs).
   */
  constructor(private readonly keepViews = false) {}

  /** A run of markup (possibly with the text before it), before the tokenizer reads it. */
  markup(run: Buffer): void {
    if (this.parts !== undefined) {
      this.append(run);
      return;
    }
    if (this.pendingBytes > MAX_RECEIVED_BYTES) return;
    // Otherwise the reader's buffer may be reused: keep a copy.
    this.pending.push(this.keepViews ? run : Buffer.from(run));
    this.pendingBytes += run.length;
  }

  /** The tokenizer is between constructs again: nothing pending can belong to a start tag still to come. */
  settled(): void {
    if (this.pendingBytes === 0) return;
    this.pending = [];
    this.pendingBytes = 0;
  }

  /**
   * A DIDL element (or an OAI-PMH header) has just opened: its start tag is the end of the pending markup. `declarations`
   * (` xmlns:p="uri"` …) are written into that start tag.
   */
  start(declarations: string): void {
    this.parts = [];
    this.bytes = 0;
    this.overflow = this.pendingBytes > MAX_RECEIVED_BYTES;
    // The start tag nearly always came in the last run: no need to join them all then.
    const last = this.pending[this.pending.length - 1];
    const held = last?.includes(LT) ? last : Buffer.concat(this.pending);
    this.settled();
    const from = held.lastIndexOf(LT);
    if (this.overflow || from === -1) {
      this.overflow = true;
      return;
    }
    const tag = held.subarray(from);
    if (declarations === '') {
      this.append(tag);
      return;
    }
    // The tag ends with '>' or '/>': the declarations go just before.
    const end = tag[tag.length - 2] === 0x2f ? tag.length - 2 : tag.length - 1;
    this.append(Buffer.concat([tag.subarray(0, end), Buffer.from(declarations, 'utf8'), tag.subarray(end)]));
  }

  /** A By-Value Resource's start tag was the last markup: its content's place. */
  byValue(resource: DidlResource, elementName: string, selfClosing: boolean): void {
    const parts = this.parts;
    if (parts === undefined || this.overflow) return;
    if (!selfClosing) {
      parts.push(resource);
      return;
    }
    // `<didl:Resource … />`: open it so that the place has somewhere to be. Its `/>` may have
    // come in two runs (a chunk ended between them).
    const tail: Uint8Array[] = [];
    let tailBytes = 0;
    while (tailBytes < 2 && parts[parts.length - 1] instanceof Uint8Array) {
      const run = parts.pop() as Uint8Array;
      tail.unshift(run);
      tailBytes += run.length;
    }
    const end = Buffer.concat(tail);
    if (end.length < 2 || end[end.length - 2] !== 0x2f || end[end.length - 1] !== 0x3e) {
      parts.push(end);
      return;
    }
    parts.push(end.subarray(0, end.length - 2), Buffer.from('>'), resource, Buffer.from(`</${elementName}>`, 'utf8'));
  }

  /** The DIDL element has closed (its end tag was the last markup): what was kept, if anything. */
  finish(): ReceivedDidl | undefined {
    const parts = this.parts;
    this.parts = undefined;
    if (parts === undefined || this.overflow) return undefined;
    return { parts: joinRuns(parts) };
  }

  /** Forgets a DIDL element in progress (the record turned out bad, or reading stopped). */
  discard(): void {
    this.parts = undefined;
  }

  private append(run: Buffer): void {
    if (this.overflow) return;
    this.bytes += run.length;
    if (this.bytes > MAX_RECEIVED_BYTES) {
      this.overflow = true;
      return;
    }
    this.parts!.push(this.keepViews ? run : Buffer.from(run));
  }
}

/**
 * The parts with each stretch of runs joined into one buffer of its own: views of the reader's
 * chunks must not outlive the record (a chunk may be 1 MiB, mostly someone's decoded bytes).
 */
function joinRuns(parts: ReadonlyArray<Uint8Array | DidlResource>): Array<Uint8Array | DidlResource> {
  const joined: Array<Uint8Array | DidlResource> = [];
  let runs: Uint8Array[] = [];
  for (const part of parts) {
    if (part instanceof Uint8Array) {
      runs.push(part);
      continue;
    }
    if (runs.length > 0) joined.push(ownedCopy(runs));
    runs = [];
    joined.push(part);
  }
  if (runs.length > 0) joined.push(ownedCopy(runs));
  return joined;
}

/**
 * `runs` joined into a buffer with memory of its own. Buffer.concat takes a small result from
 * Node's shared 8 KiB pool, and one such slice kept keeps its whole slab: a page's records, each
 * holding its header and DIDL as received until the page ends, held up to 8 KiB each that way
 * (in a heap snapshot of a page that never ends, 14,000 records held 11,000 slabs).
 */
export function ownedCopy(runs: readonly Uint8Array[]): Buffer {
  let size = 0;
  for (const run of runs) size += run.length;
  const copy = Buffer.allocUnsafeSlow(size);
  let at = 0;
  for (const run of runs) {
    copy.set(run, at);
    at += run.length;
  }
  return copy;
}
