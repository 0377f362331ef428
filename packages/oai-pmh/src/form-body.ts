import type { IncomingMessage } from 'node:http';

/** The largest POST body an OAI-PMH request may have: its arguments are short. */
export const MAX_FORM_BYTES = 64 * 1024;

/** A POSTed request's body as text, or null once it grows past `maxBytes` (the rest is not read). */
export async function readFormBody(req: IncomingMessage, maxBytes = MAX_FORM_BYTES): Promise<string | null> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const part of req as AsyncIterable<Buffer>) {
    size += part.length;
    if (size > maxBytes) return null;
    parts.push(part);
  }
  return Buffer.concat(parts).toString('utf8');
}
