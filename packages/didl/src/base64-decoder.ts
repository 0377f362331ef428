/**
 * Incremental base64 decoder over raw bytes, for By-Value datastreams.
 *
 * Why not Buffer.from(text, 'base64'): Node's decoder silently skips characters outside
 * the alphabet, so corrupt content would decode to wrong bytes without an error. This
 * loop validates while it decodes, takes whitespace anywhere (76-column lines or one
 * long line), carries partial quads across chunks, and counts line breaks so the reader
 * can keep its line/column bookkeeping without scanning the bytes a second time.
 * See bench/README.md for its throughput, several times sax's on the same bytes.
 */

const INVALID = -1;
const WHITESPACE = -2;
const PAD = -3;

const TABLE = buildTable();
/**
 * Two characters at once, indexed by a little-endian 16-bit read (second << 8 | first):
 * their 12 bits, or -1 unless both are in the alphabet. 256 KiB.
 */
const PAIRS_LITTLE_ENDIAN = buildPairs();

function buildTable(): Int16Array {
  const table = new Int16Array(256).fill(INVALID);
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  for (let i = 0; i < alphabet.length; i++) table[alphabet.charCodeAt(i)] = i;
  for (const ws of [0x09, 0x0a, 0x0d, 0x20]) table[ws] = WHITESPACE;
  table[0x3d] = PAD;
  return table;
}

function buildPairs(): Int32Array {
  const pairs = new Int32Array(65536).fill(INVALID);
  for (let first = 0; first < 256; first++) {
    const high = TABLE[first]!;
    if (high < 0) continue;
    for (let second = 0; second < 256; second++) {
      const low = TABLE[second]!;
      if (low >= 0) pairs[(second << 8) | first] = (high << 6) | low;
    }
  }
  return pairs;
}

/**
 * Decodes quads of alphabet characters from input[start] into out[o] until one holds
 * anything else (whitespace, padding, junk) or fewer than four bytes remain. Returns where
 * it stopped; it wrote ((stop - start) / 4) * 3 bytes, plus one scratch byte after them
 * (out needs one spare byte). One 32-bit read and one 32-bit write per quad: measured
 * 1.3 GB/s here, against 0.7 GB/s byte by byte.
 */
function decodeWholeQuads(input: DataView, start: number, end: number, out: DataView, o: number): number {
  const pairs = PAIRS_LITTLE_ENDIAN;
  let i = start;
  while (i + 4 <= end) {
    const word = input.getUint32(i, true);
    const high = pairs[word & 0xffff]!;
    const low = pairs[word >>> 16]!;
    if ((high | low) < 0) break;
    out.setUint32(o, ((high << 12) | low) << 8); // big-endian: the three bytes, then scratch
    o += 3;
    i += 4;
  }
  return i;
}

/** What one `write` call did. */
export interface Base64WriteResult {
  /** Decoded bytes (a fresh buffer the caller may keep). */
  bytes: Buffer;
  /** Index in the input where decoding stopped: `end`, or the first byte that is not base64. */
  stoppedAt: number;
  /** Line feeds seen in the consumed input. */
  newlines: number;
  /** Index of the last line feed consumed, or -1. */
  lastNewline: number;
}

export class Base64Decoder {
  /** Sextets of an incomplete quad carried to the next write. */
  private carry = 0;
  private carried = 0;
  /** Padding seen: after it only whitespace (and more '=' of the same quad) may follow. */
  private padded = 0;
  private finished = false;

  /**
   * Decodes input[start, end). Stops early, without throwing, at the first byte that is
   * neither base64 nor whitespace (or at data after padding), so the caller can decide
   * whether that byte is an error or markup (an entity reference, say).
   */
  write(input: Uint8Array, start = 0, end = input.length): Base64WriteResult {
    const out = Buffer.allocUnsafe(Math.ceil(((end - start) * 3) / 4) + 3);
    const done = this.decode(input, start, end, out, 0);
    return { bytes: out.subarray(0, done.o), stoppedAt: done.i, newlines: done.newlines, lastNewline: done.lastNewline };
  }

  /**
   * Like {@link write}, but the decoded bytes overwrite the base64 they came from, behind the
   * read position, so nothing is allocated for them: `bytes` is a view of `input` (which the
   * caller must own and not read again in [start, stoppedAt)). A harvest decodes gigabytes
   * this way without a buffer per chunk for the garbage collector to find (docs/archiver.md,
   * memory). The bytes of a quad begun in the previous write come first, in `head`.
   */
  writeInPlace(input: Buffer, start = 0, end = input.length): Base64WriteResult & { head?: Buffer } {
    let from = start;
    let head: Base64WriteResult | undefined;
    if (this.carried !== 0 || this.padded !== 0) {
      // The quad begun in the previous write is finished into a small buffer of its own: its
      // bytes would land ahead of the read position. Padding, junk or a chunk too short to
      // finish it: the ordinary write does the whole chunk (the end of a datastream).
      const quadEnd = this.quadEnd(input, start, end);
      if (quadEnd === -1) return this.write(input, start, end);
      head = this.write(input, start, quadEnd);
      from = quadEnd;
    }
    const view = new DataView(input.buffer, input.byteOffset, input.byteLength);
    const done = this.decode(input, from, end, input, from, view);
    const bytes = input.subarray(from, done.o);
    if (!head) return { bytes, stoppedAt: done.i, newlines: done.newlines, lastNewline: done.lastNewline };
    return {
      ...(head.bytes.length > 0 ? { head: head.bytes } : {}),
      bytes,
      stoppedAt: done.i,
      newlines: head.newlines + done.newlines,
      lastNewline: done.lastNewline !== -1 ? done.lastNewline : head.lastNewline,
    };
  }

  /**
   * Where the carried quad is complete: the index after the alphabet characters it lacks
   * (whitespace skipped), or -1 when padding, junk or the end of the chunk comes first.
   */
  private quadEnd(input: Uint8Array, start: number, end: number): number {
    if (this.padded !== 0) return -1;
    let missing = 4 - this.carried;
    for (let i = start; i < end; i++) {
      const v = TABLE[input[i]!]!;
      if (v >= 0) {
        if (--missing === 0) return i + 1;
      } else if (v !== WHITESPACE) {
        return -1;
      }
    }
    return -1;
  }

  /**
   * The decoding loop: input[i, end) into out from `o`. In place (out === input) every write
   * lands behind the read position: a quad's bytes are written once its four characters are
   * read (o <= the quad's start), and the whole-quad path writes four bytes (three and a
   * scratch byte) at o, at most the quad's last character.
   */
  private decode(
    input: Uint8Array,
    i: number,
    end: number,
    out: Uint8Array,
    o: number,
    sharedView?: DataView,
  ): { i: number; o: number; newlines: number; lastNewline: number } {
    let acc = this.carry;
    let n = this.carried;
    let newlines = 0;
    let lastNewline = -1;
    const t = TABLE;
    let inputView: DataView | undefined = sharedView;
    let outputView: DataView | undefined = sharedView;
    while (i < end) {
      // Fast path: whole quads of alphabet characters, in a small function V8 optimises well.
      if (n === 0 && this.padded === 0) {
        inputView ??= new DataView(input.buffer, input.byteOffset, input.byteLength);
        outputView ??= new DataView(out.buffer, out.byteOffset, out.byteLength);
        const stop = decodeWholeQuads(inputView, i, end, outputView, o);
        o += ((stop - i) >> 2) * 3;
        i = stop;
        if (i >= end) break;
      }
      const byte = input[i]!;
      const v = t[byte]!;
      if (v === WHITESPACE) {
        if (byte === 0x0a) {
          newlines++;
          lastNewline = i;
        }
        i++;
        continue;
      }
      if (v >= 0) {
        if (this.padded > 0) break; // data after padding
        acc = (acc << 6) | v;
        if (++n === 4) {
          out[o++] = (acc >> 16) & 255;
          out[o++] = (acc >> 8) & 255;
          out[o++] = acc & 255;
          n = 0;
          acc = 0;
        }
        i++;
        continue;
      }
      if (v === PAD) {
        // '=' completes a quad of two or three sextets; '==' only after two.
        if (this.padded === 0) {
          if (n === 2) {
            out[o++] = (acc >> 4) & 255;
            this.padded = 1;
          } else if (n === 3) {
            out[o++] = (acc >> 10) & 255;
            out[o++] = (acc >> 2) & 255;
            this.padded = 2;
            n = 0;
          } else {
            break;
          }
          // After "xx=" n stays 2: the quad still wants its second '='.
          acc = 0;
          i++;
          continue;
        }
        if (this.padded === 1 && n === 2) {
          n = 0; // second '=' of "xx=="
          this.padded = 2;
          i++;
          continue;
        }
        break;
      }
      break; // not base64
    }
    this.carry = acc;
    this.carried = n;
    return { i, o, newlines, lastNewline };
  }

  /** Characters still waiting to complete a quad; a non-zero count at the end means truncation. */
  get pending(): number {
    return this.carried;
  }

  /**
   * Ends the content. Throws nothing: returns an explanation when the content was not a
   * whole number of quads, undefined when it was.
   */
  end(): string | undefined {
    if (this.finished) return undefined;
    this.finished = true;
    if (this.padded === 1 && this.carried === 2) return 'base64 content ends after "=" where "==" was expected';
    if (this.carried !== 0) return `base64 content ends with an incomplete group of ${this.carried} character(s)`;
    return undefined;
  }

  /** True once padding was seen: any further alphabet character is an error. */
  get sawPadding(): boolean {
    return this.padded > 0;
  }
}
