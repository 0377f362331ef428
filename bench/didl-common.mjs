// Shared by the DIDL benchmark's parent (didl-parse.mjs) and its child (didl-read-child.mjs):
// how to load the codec and sax, and one function per measurement. Plain ESM, no build step.
import { createHash } from 'node:crypto';
import { createReadStream, readFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const DIDL_PACKAGE = join(ROOT, 'packages/didl');

/** 1 MiB: the chunk size of readDidlFile, and of every other file read here. */
export const CHUNK = 1 << 20;
/** One line of writeDidl's base64: 76 characters and a line feed. */
export const BASE64_LINE = 77;
/** Whole lines closest to 1 MiB, so every base64 chunk is a whole number of quads. */
export const BASE64_CHUNK = BASE64_LINE * Math.floor(CHUNK / BASE64_LINE);

/** The codec's public API, from its build output (the root script runs `tsc -b` first). */
export async function loadDidl() {
  try {
    return await import(new URL('../packages/didl/dist/index.js', import.meta.url).href);
  } catch (error) {
    if (error?.code === 'ERR_MODULE_NOT_FOUND') {
      throw new Error('packages/didl/dist is missing: build first (npx tsc -b), or run `npx --yes pnpm@10.34.9 bench:didl`');
    }
    throw error;
  }
}

/** sax is a dependency of @oaibag/didl, not of the root: resolve it from that package. */
export function loadSax() {
  const require = createRequire(join(DIDL_PACKAGE, 'package.json'));
  const sax = require('sax');
  const main = require.resolve('sax');
  const version = JSON.parse(readFileSync(join(dirname(main), '..', 'package.json'), 'utf8')).version;
  return { sax, version };
}

/**
 * (a) Our reader over the whole file, datastream bytes consumed and discarded.
 * The reader also sizes and hashes the datastream and checks both against the record.
 */
export async function measureReader(readDidlFile, path) {
  let decoded = 0;
  let chunks = 0;
  let byValue;
  const start = process.hrtime.bigint();
  const summary = await readDidlFile(path, {
    onDatastream: async (datastream) => {
      for await (const chunk of datastream.bytes) {
        decoded += chunk.length;
        chunks++;
      }
    },
    onRecord: (record) => {
      byValue = record.didl?.item.components[0]?.resources.find((resource) => resource.byValue)?.byValue;
    },
  });
  const seconds = elapsed(start);
  if (summary.records !== 1 || !byValue) throw new Error(`reader: expected one record with a By-Value datastream, got ${summary.records}`);
  return { seconds, decodedBytes: decoded, streamChunks: chunks, size: byValue.size, sha256: byValue.sha256 };
}

/** (b) A strict, namespace-aware sax parser with empty handlers, fed 1 MiB chunks as strings. */
export async function measureSax(sax, path) {
  const parser = sax.parser(true, { xmlns: true });
  let texts = 0;
  parser.ontext = () => {
    texts++;
  };
  parser.onopentag = () => {};
  parser.onclosetag = () => {};
  parser.onerror = (error) => {
    throw error;
  };
  const decoder = new StringDecoder('utf8');
  const start = process.hrtime.bigint();
  for await (const chunk of createReadStream(path, { highWaterMark: CHUNK })) parser.write(decoder.write(chunk));
  const rest = decoder.end();
  if (rest) parser.write(rest);
  parser.close();
  return { seconds: elapsed(start), textEvents: texts };
}

/**
 * (c) Base64 decoding of the By-Value content alone, in whole-line chunks of about 1 MiB.
 * Only the decode calls are timed (file reads and the latin1 string conversion are not),
 * so this is the decoder's own speed on data already in memory.
 */
export async function measureBase64(Base64Decoder, path, region) {
  const handle = await open(path, 'r');
  const buffer = Buffer.allocUnsafe(BASE64_CHUNK);
  const decoder = new Base64Decoder();
  let nodeNs = 0n;
  let oursNs = 0n;
  let nodeBytes = 0;
  let oursBytes = 0;
  try {
    for (let offset = region.start; offset < region.end; ) {
      const want = Math.min(BASE64_CHUNK, region.end - offset);
      const { bytesRead } = await handle.read(buffer, 0, want, offset);
      if (bytesRead !== want) throw new Error(`base64: short read at ${offset}`);
      offset += want;
      const chunk = buffer.subarray(0, want);

      const text = chunk.toString('latin1');
      let t = process.hrtime.bigint();
      const viaNode = Buffer.from(text, 'base64');
      nodeNs += process.hrtime.bigint() - t;
      nodeBytes += viaNode.length;

      t = process.hrtime.bigint();
      const result = decoder.write(chunk, 0, want);
      oursNs += process.hrtime.bigint() - t;
      if (result.stoppedAt !== want) throw new Error(`Base64Decoder stopped at byte ${offset - want + result.stoppedAt}`);
      oursBytes += result.bytes.length;
    }
  } finally {
    await handle.close();
  }
  const problem = decoder.end();
  if (problem) throw new Error(`Base64Decoder: ${problem}`);
  return {
    inputBytes: region.end - region.start,
    node: { seconds: Number(nodeNs) / 1e9, decodedBytes: nodeBytes },
    ours: { seconds: Number(oursNs) / 1e9, decodedBytes: oursBytes },
  };
}

/** Context, not a target: reading the file in 1 MiB chunks and doing nothing else. */
export async function measureFileRead(path) {
  let bytes = 0;
  const start = process.hrtime.bigint();
  for await (const chunk of createReadStream(path, { highWaterMark: CHUNK })) bytes += chunk.length;
  return { seconds: elapsed(start), bytes };
}

/** Context, not a target: sha-256 speed (the reader hashes every decoded byte). Only update() is timed. */
export async function measureSha256(path, limit) {
  const hash = createHash('sha256');
  let bytes = 0;
  let ns = 0n;
  for await (const chunk of createReadStream(path, { highWaterMark: CHUNK, end: limit - 1 })) {
    const t = process.hrtime.bigint();
    hash.update(chunk);
    ns += process.hrtime.bigint() - t;
    bytes += chunk.length;
  }
  hash.digest();
  return { seconds: Number(ns) / 1e9, bytes };
}

/** Peak resident set size of this process so far (VmHWM), in bytes; undefined off Linux. */
export function peakRssFromProc() {
  try {
    const match = /^VmHWM:\s+(\d+)\s+kB/m.exec(readFileSync('/proc/self/status', 'utf8'));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

function elapsed(start) {
  return Number(process.hrtime.bigint() - start) / 1e9;
}
