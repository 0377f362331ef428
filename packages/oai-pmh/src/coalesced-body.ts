import type { ResponseBody } from './oai-envelope.js';

/** About the size of a socket write, and of the harvester's reads. */
const PIECE_CHARS = 64 * 1024;

/**
 * A response body's strings joined into pieces of about 64 K characters. A ListRecords page
 * is written as many small strings (a record's header, each DIDL part, each base64 block):
 * written one by one, each became a write of its own and, on a keep-alive connection, an HTTP
 * chunk of its own, which the harvester then took in one by one (720 chunks for a 2.4 MB page,
 * 655 of them under 1 KB). The text is unchanged; only where the writes fall moves.
 */
export async function* coalescedBody(body: ResponseBody): AsyncGenerator<string> {
  let pending = '';
  for await (const part of body) {
    pending += part;
    if (pending.length >= PIECE_CHARS) {
      yield pending;
      pending = '';
    }
  }
  if (pending.length > 0) yield pending;
}
