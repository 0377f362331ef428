// A gzip or deflate stream that stops looking for repeats while it compresses base64 text.
//
// An oai_didl page is mostly base64 (the By-Value datastreams). Deflate's LZ77 search finds
// almost nothing to reuse in it, yet costs most of the time: 3 MB of base64 took 95-125 ms
// with the default strategy against 25-40 ms with Huffman coding alone, for the same size
// (2 cores); it was two thirds of the repository's CPU while serving a harvest. The markup
// around the datastreams (headers, DIDL elements, whole pages of oai_dc or identifiers)
// compresses 10 to 20 times better with LZ77, so the strategy is switched per chunk written:
// Huffman only for a chunk of base64 text, the default otherwise. zlib's deflateParams()
// flushes to a byte boundary at each switch (a few bytes).
//
// Node applies params() to deflate and raw deflate streams only (a gzip stream ignores it), so
// gzip is written as its RFC 1952 frame around a raw deflate stream, with the CRC-32 and length
// of the input computed here.

import { PassThrough, type Readable, Writable } from 'node:stream';
import { constants, crc32, createDeflate, createDeflateRaw, type Deflate, type DeflateRaw } from 'node:zlib';

/** A body chunk shorter than this is compressed with the default strategy, whatever it holds. */
const MIN_BASE64_CHUNK = 4096;
/** How many bytes at each end of a chunk are checked to be base64 text. */
const PROBE_BYTES = 256;

const BASE64_TEXT = new Uint8Array(256);
for (const character of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=\n') BASE64_TEXT[character.charCodeAt(0)] = 1;

/** 64 KiB output chunks rather than 16: a quarter of the thread-pool round trips per page. */
const ZLIB_OPTIONS = { chunkSize: 64 * 1024 };

/** RFC 1952 member header: magic, deflate, no flags, no mtime, no extra flags, OS unknown. */
const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff]);

export interface AdaptiveCompressor {
  /** Where the body is written. */
  input: Writable;
  /** The compressed bytes (pipe them to the response). Destroying it destroys `input` too. */
  output: Readable;
}

/** A compressor for `encoding` (deflate: the zlib format, RFC 9110 section 8.4.1.2). */
export function createAdaptiveCompressor(encoding: 'gzip' | 'deflate'): AdaptiveCompressor {
  const deflater: Deflate | DeflateRaw = encoding === 'gzip' ? createDeflateRaw(ZLIB_OPTIONS) : createDeflate(ZLIB_OPTIONS);
  // The deflater is never handed out: only stopDeflater() below may destroy it (see there).
  const output = new PassThrough();
  let strategy: number = constants.Z_DEFAULT_STRATEGY;
  let crc = 0;
  let size = 0;
  /** A params() call is waiting for its flush to complete. */
  let switching = false;
  /** Set when the deflater was asked to stop during a switch: destroy it once the switch is done. */
  let stopAfterSwitch: { error: Error | undefined } | undefined;

  // Node 20's params() flushes, then asserts in the flush's callback that the zlib handle is
  // still open; destroying the stream in between throws ERR_INTERNAL_ASSERTION ("zlib binding
  // closed") from a callback, which takes the whole repository down (a client leaving at the
  // wrong moment did it). So a stop during a switch waits for it: the compressed bytes are
  // read and dropped until the flush completes, then the deflater is destroyed.
  const stopDeflater = (error?: Error): void => {
    if (deflater.destroyed || stopAfterSwitch !== undefined) return;
    if (!switching) {
      deflater.destroy(error);
      return;
    }
    stopAfterSwitch = { error };
    deflater.unpipe();
    deflater.resume();
  };

  const input = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      crc = crc32(chunk, crc);
      size = (size + chunk.length) % 2 ** 32;
      const forward = (): void => {
        if (deflater.write(chunk)) callback();
        else deflater.once('drain', () => callback());
      };
      const wanted = isBase64Text(chunk) ? constants.Z_HUFFMAN_ONLY : constants.Z_DEFAULT_STRATEGY;
      if (wanted === strategy) return forward();
      strategy = wanted;
      switching = true;
      deflater.params(constants.Z_DEFAULT_COMPRESSION, wanted, () => {
        switching = false;
        if (stopAfterSwitch === undefined) return forward();
        deflater.destroy(stopAfterSwitch.error);
        callback();
      });
    },
    final(callback) {
      deflater.end(() => callback());
    },
    destroy(error, callback) {
      // After a normal end (autoDestroy), the deflater still holds the compressed tail: leave it.
      if (error !== null || !this.writableFinished) stopDeflater(error ?? undefined);
      callback(error);
    },
  });

  if (encoding === 'gzip') frameAsGzip(deflater, output, () => ({ crc, size }));
  else deflater.pipe(output);
  deflater.once('error', (error) => output.destroy(error));
  // The response went away (pipeline destroyed the output): the deflater must stop, and the
  // writer too, with the error a client leaving gives, instead of waiting for a 'drain' that
  // never comes.
  output.once('close', () => {
    if (!deflater.readableEnded) stopDeflater();
  });
  for (const stream of [deflater, output]) {
    stream.once('close', () => {
      if (input.destroyed || input.writableFinished) return;
      input.destroy(Object.assign(new Error('the response was closed before the body ended'), { code: 'ERR_STREAM_PREMATURE_CLOSE' }));
    });
  }
  return { input, output };
}

/** Header, the raw deflate stream, then the CRC-32 and length of the input (RFC 1952 section 2.3). */
function frameAsGzip(raw: DeflateRaw | Deflate, framed: PassThrough, trailer: () => { crc: number; size: number }): void {
  framed.write(GZIP_HEADER);
  raw.pipe(framed, { end: false });
  raw.once('end', () => {
    const { crc, size } = trailer();
    const bytes = Buffer.alloc(8);
    bytes.writeUInt32LE(crc >>> 0, 0);
    bytes.writeUInt32LE(size, 4);
    framed.end(bytes);
  });
}

/** True for a long chunk whose both ends are base64 text (the encoder yields whole lines). */
export function isBase64Text(chunk: Uint8Array): boolean {
  if (chunk.length < MIN_BASE64_CHUNK) return false;
  for (let i = 0; i < PROBE_BYTES; i++) {
    if (BASE64_TEXT[chunk[i]!] === 0 || BASE64_TEXT[chunk[chunk.length - 1 - i]!] === 0) return false;
  }
  return true;
}
