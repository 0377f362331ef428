// Reads a batch bag back (docs/aip-profile.md, format 2): its bag-info.txt (bag-info.ts) and the
// index facts of metadata/records.xml.gz (each record's identifier, datestamp, digests and
// where its bytes are held), streamed, without the records' DIDL. What `oaibag reindex` and the
// adoption of a bag placed just before a crash rebuild the catalog from. Read through the AIP
// storage (aip-storage.ts), from the archive or from any folder holding a bag.
import { pipeline } from 'node:stream';
import { createGunzip } from 'node:zlib';
import sax from 'sax';
import { ArchiverError } from '../core/errors.js';
import { AIP_NAMESPACE, type Delivery, type RecordPayload } from './aip-metadata.js';
import type { StoredBag } from './aip-storage.js';
import { checkBatchBagFormat, type ReadBagInfo, readBatchBagInfo } from './bag-info.js';
import { RECORDS_FILE } from './batch-bag.js';
import { bagInFolder, folderStorage } from './folder-storage.js';

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

/** A batch bag read back, ready to be recorded in a catalog. */
export interface ReadBatchBag {
  bagPath: string;
  info: ReadBagInfo & { baseUrl: string };
  records: ReadRecordEntry[];
}

/**
 * Reads the batch bag at `bagPath` of the archive: its bag-info.txt and records. Refuses a bag
 * of another format (ERR_ARCHIVE_FORMAT), and one that names no source or whose files cannot
 * be read (ERR_ARCHIVE_DAMAGED).
 */
export async function readBatchBag(archiveDir: string, bagPath: string): Promise<ReadBatchBag> {
  return readStoredBatchBag({ storage: folderStorage(archiveDir), bagPath });
}

/** {@link readBatchBag} of a bag of any AIP storage. */
export async function readStoredBatchBag(bag: StoredBag): Promise<ReadBatchBag> {
  const { bagPath } = bag;
  const info = await readBatchBagInfo(bag);
  checkBatchBagFormat(info, bag.storage.where(bagPath));
  return { bagPath, info, records: await readBatchRecords(bag) };
}

/**
 * The records of a batch bag (a folder on disk, or a bag of a store) in order, from
 * metadata/records.xml.gz. A file that is missing, not gzip, not well-formed, or whose records
 * lack a fact the catalog needs is damage (ERR_ARCHIVE_DAMAGED naming the bag).
 */
export async function readBatchRecords(bag: string | StoredBag): Promise<ReadRecordEntry[]> {
  const { storage, bagPath } = typeof bag === 'string' ? bagInFolder(bag) : bag;
  const file = storage.where(`${bagPath}/${RECORDS_FILE}`);
  const bagDir = storage.where(bagPath);
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
    // pipeline, not pipe: an error of the file (a missing one) reaches the loop below, and
    // leaving the loop early closes the file.
    const source = pipeline(storage.read(`${bagPath}/${RECORDS_FILE}`), createGunzip(), () => undefined);
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
