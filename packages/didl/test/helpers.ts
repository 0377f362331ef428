import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { validateXmlSchema } from '../../../test/xml-schema.ts';
import { type DidlWriteInput, type DidlWriteOptions, writeDidl } from '../src/index.ts';

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

/** Validates a document against a schema in test/schemas (see test/xml-schema.ts); `output` holds the problems. */
export function validateWithSchema(xml: string, schema: string): { ok: boolean; output: string } {
  return validateXmlSchema(schema, xml);
}
