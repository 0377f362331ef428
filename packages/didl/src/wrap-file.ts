import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { basename } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { DidlError } from './errors.js';
import { statInputFile } from './input-file.js';
import { guessMimeType } from './mime-types.js';
import type { HttpHeader } from './model.js';
import { type DidlWriteOptions, writeDidl } from './write-didl.js';

export interface WrapFileOptions {
  /** The resource URL (http or https): the dii:Identifier. */
  identifier: string;
  /** MIME type; guessed from the file name when absent. */
  mimeType?: string;
  /** By-Reference URL; defaults to the identifier. */
  ref?: string;
  /** Also carry the bytes By-Value (base64). */
  byValue?: boolean;
  /** Headers added after Content-Type, Content-Length and Last-Modified. */
  headers?: HttpHeader[];
}

/**
 * Wraps one file as a DIDL document in the mod_oai profile: its headers as a web server
 * would send them, a sha-256 fixity Descriptor, a By-Reference Resource and, on request,
 * a By-Value one. The file is read twice (digest first, since the Descriptor precedes the
 * content), never held in memory.
 */
export async function* wrapFile(path: string, options: WrapFileOptions, writeOptions: DidlWriteOptions = {}): AsyncGenerator<string> {
  const info = await statInputFile(path);
  const url = parseHttpUrl(options.identifier, 'identifier');
  const ref = options.ref ?? url.href;
  parseHttpUrl(ref, 'ref');
  const mimeType = options.mimeType ?? guessMimeType(basename(path));
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  const headers: HttpHeader[] = [
    { name: 'Content-Type', value: mimeType },
    { name: 'Content-Length', value: String(info.size) },
    { name: 'Last-Modified', value: info.mtime.toUTCString() },
    ...(options.headers ?? []),
  ];
  yield* writeDidl(
    {
      identifier: options.identifier,
      headers,
      components: [
        {
          mimeType,
          ref,
          digest: { algorithm: 'SHA-256', value: hash.digest('hex') },
          ...(options.byValue ? { byValue: createReadStream(path, { highWaterMark: 1 << 20 }) } : {}),
        },
      ],
    },
    writeOptions,
  );
}

/** Parses "Name: value" as given on the command line. */
export function parseHeaderArgument(text: string): HttpHeader {
  const colon = text.indexOf(':');
  if (colon <= 0) throw new DidlError('ERR_DIDL_BAD_HEADER', `header "${text}" is not of the form "Name: value"`);
  return { name: text.slice(0, colon).trim(), value: text.slice(colon + 1).trim() };
}

function parseHttpUrl(text: string, what: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new DidlError('ERR_DIDL_BAD_REF', `${what} "${text}" is not an absolute URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new DidlError('ERR_DIDL_BAD_REF', `${what} "${text}" must be an http or https URL`);
  }
  return url;
}
