// A payload's bytes as base64 lines for a By-Value Resource of `oaibag serve`, streamed from the
// bag and checked on the way: a file that is not the size and SHA-256 the catalog holds cuts the
// response off (the harvester sees a broken page and asks again; `oaibag verify` names the
// damage), so a record is never sent with bytes its digest does not match.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { encodeBase64Lines } from '@oaibag/didl';
import type { PayloadLocation } from '../catalog/catalog-types.js';
import { ArchiverError } from '../core/errors.js';

// A multiple of 57 bytes (one 76-column line): the encoder keeps no remainder between chunks.
const READ_CHUNK = 57 * 4600;

export function payloadBase64(archiveDir: string, payload: PayloadLocation): AsyncGenerator<string> {
  return encodeBase64Lines(checkedBytes(archiveDir, payload));
}

async function* checkedBytes(archiveDir: string, payload: PayloadLocation): AsyncGenerator<Uint8Array> {
  const file = join(archiveDir, ...payload.bagPath.split('/'), ...payload.path.split('/'));
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(file, { highWaterMark: READ_CHUNK }) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    size += chunk.length;
    yield chunk;
  }
  if (size !== payload.size || hash.digest('hex') !== payload.sha256) {
    throw new ArchiverError('ERR_ARCHIVE_DAMAGED', `${file} is not the payload the catalog holds (size or SHA-256 differ): run oaibag verify`, { path: file });
  }
}
