import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Readable } from 'node:stream';
import { writeDidl, type DidlWriteInput, type DidlWriteOptions } from '../src/index.ts';

const here = dirname(fileURLToPath(import.meta.url));
/** ../shared/schemas beside the repository (see its README). */
export const SCHEMAS = resolve(here, '../../../../shared/schemas');

export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Writes a document into one string. */
export async function writeToString(input: DidlWriteInput, options?: DidlWriteOptions): Promise<string> {
  let xml = '';
  for await (const part of writeDidl(input, options)) xml += part;
  return xml;
}

/** Splits a document into chunks of `size` bytes (copies, like a socket would give them). */
export function split(input: string | Uint8Array, size: number): Buffer[] {
  const bytes = typeof input === 'string' ? Buffer.from(input, 'utf8') : Buffer.from(input);
  const parts: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) parts.push(Buffer.from(bytes.subarray(i, i + size)));
  return parts;
}

/** Bytes as an async iterable in chunks of `size`, like a file or socket would give them. */
export function chunked(bytes: Uint8Array, size: number): AsyncIterable<Uint8Array> {
  return Readable.from(split(bytes, size), { objectMode: true });
}

/** Collects a stream's bytes. */
export async function collect(stream: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of stream) parts.push(Buffer.from(part));
  return Buffer.concat(parts);
}

/** Runs xmllint against a schema in ../shared/schemas; returns its exit status and messages. */
export function validateWithSchema(xml: string, schema: string): { ok: boolean; output: string } {
  const dir = mkdtempSync(join(tmpdir(), 'didl-xsd-'));
  try {
    const file = join(dir, 'doc.xml');
    writeFileSync(file, xml);
    const run = spawnSync('xmllint', ['--noout', '--nonet', '--schema', join(SCHEMAS, schema), file], { encoding: 'utf8' });
    if (run.error) throw new Error(`xmllint could not run (${run.error.message}); install libxml2-utils`);
    return { ok: run.status === 0, output: `${run.stdout}${run.stderr}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
