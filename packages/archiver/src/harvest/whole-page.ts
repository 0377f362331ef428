// A ListRecords page received whole before it is read, for a harvest allowed one connection to
// the repository's host (--max-connections 1). A page is otherwise read while its records are
// stored, and a record's By-Reference datastream on the same host would wait for the page's
// connection, held by a page that waits for its records: the harvest would stop for good.
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, rmSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { TEMP_DIRECTORY } from '../archive/storage-path.js';
import type { OaiHttpResponse } from '../oai/oai-client.js';

/**
 * The response with its (decoded, bounded) body received into a file in the archive's tmp/
 * folder, and read back from there; the file is removed when the body is closed. The page's
 * bounds (--max-page-size, --page-deadline) apply as it is received; a body that breaks off
 * rejects here, and the caller asks for the page again as it would have.
 */
export async function receivedWhole(response: Promise<OaiHttpResponse>, archiveDir: string): Promise<OaiHttpResponse> {
  const { body, headers } = await response;
  const folder = join(archiveDir, TEMP_DIRECTORY);
  const path = join(folder, `page-${randomBytes(8).toString('hex')}.xml`);
  try {
    await mkdir(folder, { recursive: true });
    await pipeline(body, createWriteStream(path, { flags: 'wx' }));
  } catch (error) {
    body.destroy();
    await rm(path, { force: true });
    throw error;
  }
  const whole = createReadStream(path, { highWaterMark: 1024 * 1024 });
  whole.once('close', () => rmSync(path, { force: true }));
  return { body: whole, headers };
}
