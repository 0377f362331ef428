// Reads a batch bag back (docs/aip-profile.md, format 2): its bag-info.txt labels and the
// index facts of metadata/records.xml.gz (each record's identifier, datestamp, digests and
// where its bytes are held), streamed, without the records' DIDL. What `oaibag reindex` and the
// adoption of a bag placed just before a crash rebuild the catalog from.
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createGunzip } from 'node:zlib';
import sax from 'sax';
import { ArchiverError } from '../core/errors.js';
import { AIP_NAMESPACE, type Delivery, type RecordPayload } from './aip-metadata.js';
import { RECORDS_FILE } from './batch-bag.js';

/**
 * A datastream of a record read back, in the shape it was written (RecordPayload): bytes in
 * this bag, or a revisit (`revisitOf`: the bag holding them, this one or an earlier one).
 */
export type ReadPayload = Omit<RecordPayload, 'promisedSha256' | 'fetched'> & { fetched?: { ref: string; url: string; redirects: string[] } };

export type ReadRecordEntry =
  | {
      kind: 'version';
      n: number;
      identifier: string;
      datestamp: string;
      sha256: string;
      size: number;
      mimeType: string | null;
      lastModified: string | null;
      payloads: ReadPayload[];
    }
  | { kind: 'deletion'; n: number; identifier: string; datestamp: string };

/** bag-info.txt as label → value (the first value of a repeated label). */
export async function readBagInfo(bagDir: string): Promise<Map<string, string>> {
  const text = await readFile(join(bagDir, 'bag-info.txt'), 'utf8').catch((error: unknown) => {
    throw new ArchiverError('ERR_ARCHIVE_DAMAGED', `${join(bagDir, 'bag-info.txt')} cannot be read: ${(error as Error).message}`, { path: bagDir });
  });
  const labels = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const label = line.slice(0, colon).trim();
    if (!labels.has(label)) labels.set(label, line.slice(colon + 1).trim());
  }
  return labels;
}

/**
 * The records of a batch bag in order, from metadata/records.xml.gz. A file that is missing,
 * not gzip, not well-formed, or whose records lack a fact the catalog needs is damage
 * (ERR_ARCHIVE_DAMAGED naming the bag).
 */
export async function readBatchRecords(bagDir: string): Promise<ReadRecordEntry[]> {
  const file = join(bagDir, ...RECORDS_FILE.split('/'));
  const entries: ReadRecordEntry[] = [];
  const damaged = (why: string): ArchiverError => new ArchiverError('ERR_ARCHIVE_DAMAGED', `${file}: ${why}`, { path: bagDir });
  let current: (ReadRecordEntry & { kind: 'version' }) | undefined;
  let payload: ReadPayload | undefined;
  let problem: ArchiverError | undefined;
  const parser = sax.parser(true, { xmlns: true });
  const attribute = (tag: sax.QualifiedTag, name: string): string | undefined => tag.attributes[name]?.value;
  const required = (tag: sax.QualifiedTag, name: string): string => {
    const value = attribute(tag, name);
    if (value === undefined) throw damaged(`<${tag.local}> without ${name}`);
    return value;
  };
  const whole = (tag: sax.QualifiedTag, name: string): number => {
    const value = Number(required(tag, name));
    if (!Number.isSafeInteger(value) || value < 0) throw damaged(`<${tag.local}> ${name} is not a whole number`);
    return value;
  };
  parser.onopentag = (node) => {
    const tag = node as sax.QualifiedTag;
    if (tag.uri !== AIP_NAMESPACE || problem) return;
    try {
      if (tag.local === 'record') {
        current = {
          kind: 'version',
          n: whole(tag, 'n'),
          identifier: required(tag, 'identifier'),
          datestamp: required(tag, 'datestamp'),
          sha256: required(tag, 'sha256'),
          size: whole(tag, 'size'),
          mimeType: attribute(tag, 'mimeType') ?? null,
          lastModified: attribute(tag, 'lastModified') ?? null,
          payloads: [],
        };
        entries.push(current);
      } else if (tag.local === 'deleted') {
        entries.push({ kind: 'deletion', n: whole(tag, 'n'), identifier: required(tag, 'identifier'), datestamp: required(tag, 'datestamp') });
      } else if ((tag.local === 'payload' || tag.local === 'revisit') && current) {
        const via = required(tag, 'via');
        if (via !== 'by-value' && via !== 'by-reference') throw damaged(`<${tag.local}> via is neither by-value nor by-reference`);
        const sha512 = attribute(tag, 'sha512');
        payload = {
          part: whole(tag, 'part'),
          path: required(tag, 'path'),
          ...(tag.local === 'revisit' ? { revisitOf: required(tag, 'bag') } : {}),
          size: whole(tag, 'size'),
          sha256: required(tag, 'sha256'),
          ...(sha512 !== undefined ? { sha512 } : {}),
          via: via as Delivery,
        };
        current.payloads.push(payload);
      } else if (tag.local === 'fetch' && payload) {
        payload.fetched = { ref: required(tag, 'ref'), url: required(tag, 'url'), redirects: [] };
      } else if (tag.local === 'redirect' && payload?.fetched) {
        payload.fetched.redirects.push(required(tag, 'to'));
      }
    } catch (error) {
      problem = error as ArchiverError;
    }
  };
  parser.onclosetag = (name) => {
    if (name === 'record') current = undefined;
    else if (name === 'payload' || name === 'revisit') payload = undefined;
  };
  parser.onerror = (error) => {
    problem ??= damaged(`not well-formed XML: ${error.message.split('\n')[0]}`);
  };
  try {
    const source = createReadStream(file).pipe(createGunzip());
    source.setEncoding('utf8'); // characters split between chunks are joined
    for await (const chunk of source as AsyncIterable<string>) {
      parser.write(chunk);
      if (problem) break;
    }
    if (!problem) parser.close();
  } catch (error) {
    if (error instanceof ArchiverError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    throw damaged(code === 'ENOENT' ? 'missing' : `cannot be read: ${(error as Error).message}`);
  }
  if (problem) throw problem;
  return entries;
}
