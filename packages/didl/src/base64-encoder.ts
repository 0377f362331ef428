/**
 * Streaming base64 encoder that writes 76-column lines (the MIME line length), so a
 * By-Value Resource stays readable and no line grows with the file size.
 */

/** Bytes that make one 76-character line. */
const LINE_BYTES = 57;
/** Encode this many lines per string we hand out, to keep the number of strings small. */
const BLOCK_LINES = 1024;

export async function* encodeBase64Lines(source: AsyncIterable<Uint8Array>, lineEnd = '\n'): AsyncGenerator<string> {
  let pending: Buffer = Buffer.alloc(0);
  for await (const chunk of source) {
    const bytes = pending.length === 0 ? Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength) : Buffer.concat([pending, chunk]);
    const whole = bytes.length - (bytes.length % LINE_BYTES);
    for (let start = 0; start < whole; start += LINE_BYTES * BLOCK_LINES) {
      const stop = Math.min(whole, start + LINE_BYTES * BLOCK_LINES);
      yield linesOf(bytes.subarray(start, stop).toString('base64'), lineEnd);
    }
    // Copy the remainder: the caller may reuse the chunk's memory after we return.
    pending = Buffer.from(bytes.subarray(whole));
  }
  if (pending.length > 0) yield pending.toString('base64') + lineEnd;
}

function linesOf(text: string, lineEnd: string): string {
  const lines: string[] = [];
  for (let i = 0; i < text.length; i += 76) lines.push(text.slice(i, i + 76));
  lines.push('');
  return lines.join(lineEnd);
}
