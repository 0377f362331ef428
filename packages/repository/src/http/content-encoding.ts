import type { ServerResponse } from 'node:http';
import { pipeline, type Writable } from 'node:stream';
import { createAdaptiveCompressor } from './adaptive-compressor.js';

/** The content codings the OAI-PMH responses can be sent in (Identify advertises gzip and deflate). */
export type ContentEncoding = 'gzip' | 'deflate' | 'identity';

/**
 * Chooses the coding of a response from Accept-Encoding (RFC 9110 section 12.5.3).
 * Codings are case-insensitive, `x-gzip` counts as gzip, `*` stands for every coding not
 * named, q=0 forbids, a malformed q drops its element. The highest q wins; on equal q
 * gzip beats deflate and compression beats identity. Identity competes only when named
 * (directly or by `*`): a client that lists `gzip;q=0.5` and nothing else asked for gzip.
 * No header, or nothing acceptable, gives identity, even after `identity;q=0`: an
 * uncompressed answer is more useful than a 406.
 */
export function negotiateContentEncoding(acceptEncoding: string | undefined): ContentEncoding {
  if (acceptEncoding === undefined) return 'identity';
  const weights = new Map<string, number>();
  for (const element of acceptEncoding.split(',')) {
    const [codingPart, ...parameters] = element.split(';');
    const coding = codingPart!.trim().toLowerCase();
    if (coding === '') continue;
    let q = 1;
    for (const parameter of parameters) {
      const [name, value] = parameter.split('=').map((part) => part.trim());
      if (name?.toLowerCase() !== 'q') continue;
      q = value !== undefined && QVALUE.test(value) ? Number(value) : NaN;
    }
    if (Number.isNaN(q)) continue;
    const key = coding === 'x-gzip' ? 'gzip' : coding;
    // A coding named twice keeps its best weight.
    weights.set(key, Math.max(q, weights.get(key) ?? 0));
  }
  const weightOf = (coding: ContentEncoding): number => weights.get(coding) ?? weights.get('*') ?? 0;
  let best: ContentEncoding = 'identity';
  let bestWeight = 0;
  for (const coding of ['gzip', 'deflate', 'identity'] as const) {
    const weight = weightOf(coding);
    if (weight > bestWeight) {
      best = coding;
      bestWeight = weight;
    }
  }
  return best;
}

/** RFC 9110 section 12.4.2: 0 to 1 with at most three decimals. */
const QVALUE = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/;

/**
 * Prepares `res` for a body in `encoding` and returns the stream to write that body into:
 * a zlib stream piped to `res` (Content-Encoding set, Content-Length removed since the
 * compressed length is unknown), or `res` itself for identity. Vary: Accept-Encoding is
 * set either way, so a cache never serves one client's coding to another. "deflate" in
 * HTTP is the zlib format (RFC 9110 section 8.4.1.2), hence createDeflate, not raw deflate.
 * Call before the headers are sent. If the client goes away, the zlib stream is destroyed
 * too, so a writer using `pipeline` stops with an error instead of compressing into the void.
 * Base64 text is compressed with Huffman coding only (see adaptive-compressor.ts).
 */
export function encodeResponse(res: ServerResponse, encoding: ContentEncoding): Writable {
  addVary(res, 'Accept-Encoding');
  if (encoding === 'identity') return res;
  const compressor = createAdaptiveCompressor(encoding);
  res.setHeader('Content-Encoding', encoding);
  res.removeHeader('Content-Length');
  pipeline(compressor.output, res, (error) => {
    // Compression itself does not fail; an error here is the client leaving, and the
    // pipeline has already destroyed both streams.
    if (error) res.destroy();
  });
  return compressor.input;
}

function addVary(res: ServerResponse, field: string): void {
  const current = res.getHeader('Vary');
  const listed = (Array.isArray(current) ? current.join(',') : current === undefined ? '' : String(current))
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  if (listed.includes('*') || listed.some((name) => name.toLowerCase() === field.toLowerCase())) return;
  res.setHeader('Vary', [...listed, field].join(', '));
}
