// The benchmark's input: one DIDL document with one By-Value Resource of N MiB of
// pseudo-random bytes, written with writeDidl and cached under bench/work/ (git-ignored).
//
// The payload is the AES-256-CTR keystream of a fixed key: deterministic (the same file on
// every machine, the same sha-256), incompressible like real content, and fast to produce.
// It is produced twice: a first pass for the sha-256 (the PREMIS Descriptor comes before the
// content), a second one fed to writeDidl. Nothing is held in memory.
import { createCipheriv, createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { CHUNK } from './didl-common.mjs';

/** Bump when the document or the payload changes, so cached files are rebuilt. */
export const FIXTURE_VERSION = 1;
const KEY = createHash('sha256').update('oaibag bench/didl-parse payload').digest();
const IV = Buffer.alloc(16);
const BY_VALUE_START = 'encoding="base64">';
const BY_VALUE_END = '</didl:Resource>';

/** Deterministic pseudo-random bytes in 1 MiB chunks. */
async function* payload(bytes, onProgress) {
  const cipher = createCipheriv('aes-256-ctr', KEY, IV);
  const zeros = Buffer.alloc(CHUNK);
  for (let done = 0; done < bytes; ) {
    const n = Math.min(CHUNK, bytes - done);
    yield cipher.update(n === CHUNK ? zeros : zeros.subarray(0, n));
    done += n;
    onProgress?.(done);
  }
}

export function fixturePaths(workDir, payloadBytes) {
  const label = payloadBytes % CHUNK === 0 ? `${payloadBytes / CHUNK}MiB` : `${payloadBytes}B`;
  return { xml: join(workDir, `didl-${label}.xml`), meta: join(workDir, `didl-${label}.json`) };
}

/**
 * Returns the cached document for this payload size, generating it when missing, stale or
 * when `regenerate` is set. `log` receives progress lines.
 */
export async function ensureFixture({ workDir, payloadBytes, regenerate, writeDidl, log }) {
  const paths = fixturePaths(workDir, payloadBytes);
  if (!regenerate) {
    const cached = await readCached(paths, payloadBytes);
    if (cached) return { ...cached, path: paths.xml, generated: false };
  }
  await mkdir(workDir, { recursive: true });
  const started = process.hrtime.bigint();
  const progress = (phase) => {
    let next = 0.1;
    return (done) => {
      if (done / payloadBytes + 1e-9 >= next) {
        log(`  ${phase}: ${Math.round((done / payloadBytes) * 100)}%`);
        while (next <= done / payloadBytes + 1e-9) next += 0.1;
      }
    };
  };

  log(`generating ${paths.xml} (${payloadBytes} payload bytes); cached for later runs`);
  const hash = createHash('sha256');
  for await (const chunk of payload(payloadBytes, progress('pass 1/2, sha-256'))) hash.update(chunk);
  const sha256 = hash.digest('hex');

  const url = `https://bench.example.org/didl-parse/payload-${payloadBytes}.bin`;
  const document = writeDidl({
    identifier: url,
    headers: [
      { name: 'Content-Type', value: 'application/octet-stream' },
      { name: 'Content-Length', value: String(payloadBytes) },
      { name: 'Last-Modified', value: 'Thu, 01 Jan 2026 00:00:00 GMT' },
    ],
    components: [
      {
        mimeType: 'application/octet-stream',
        digest: { algorithm: 'SHA-256', value: sha256 },
        byValue: payload(payloadBytes, progress('pass 2/2, writeDidl')),
      },
    ],
  });
  const temporary = `${paths.xml}.tmp`;
  await rm(paths.meta, { force: true });
  await pipeline(document, createWriteStream(temporary));
  const handle = await open(temporary, 'r+');
  await handle.sync();
  await handle.close();
  await rename(temporary, paths.xml);

  const region = await findBase64Region(paths.xml);
  const { size: fileBytes } = await stat(paths.xml);
  const meta = { version: FIXTURE_VERSION, payloadBytes, sha256, fileBytes, region, generator: 'aes-256-ctr keystream, fixed key' };
  await writeFile(`${paths.meta}.tmp`, `${JSON.stringify(meta, null, 2)}\n`);
  await rename(`${paths.meta}.tmp`, paths.meta);
  const generationSeconds = Number(process.hrtime.bigint() - started) / 1e9;
  log(`  done in ${generationSeconds.toFixed(1)} s: ${fileBytes} bytes of XML`);
  return { ...meta, path: paths.xml, generated: true, generationSeconds };
}

async function readCached(paths, payloadBytes) {
  try {
    const meta = JSON.parse(await readFile(paths.meta, 'utf8'));
    const { size } = await stat(paths.xml);
    if (meta.version === FIXTURE_VERSION && meta.payloadBytes === payloadBytes && meta.fileBytes === size) return meta;
  } catch {
    // missing or unreadable: generate
  }
  return undefined;
}

/**
 * Byte range of the base64 text: from the first line after the By-Value start tag to the
 * `<` of its end tag (the indentation before it included; decoders skip whitespace).
 */
async function findBase64Region(path) {
  const handle = await open(path, 'r');
  try {
    const { size } = await handle.stat();
    const window = Math.min(size, 64 * 1024);
    const head = Buffer.alloc(window);
    await handle.read(head, 0, window, 0);
    const opening = head.indexOf(BY_VALUE_START);
    if (opening === -1) throw new Error(`${path}: no By-Value Resource in its first ${window} bytes`);
    let start = opening + BY_VALUE_START.length;
    while (head[start] === 0x0a || head[start] === 0x0d || head[start] === 0x20) start++;
    const tail = Buffer.alloc(window);
    await handle.read(tail, 0, window, size - window);
    const closing = tail.lastIndexOf(BY_VALUE_END);
    if (closing === -1) throw new Error(`${path}: no ${BY_VALUE_END} in its last ${window} bytes`);
    return { start, end: size - window + closing };
  } finally {
    await handle.close();
  }
}
