// How bags are committed on object storage, where there is no rename (docs/scale-out.md, "The
// commit protocol"). Two small records per bag, each created once:
//
//   claims/<bag>   taken before the first object of the bag is written: exactly one writer
//                  ever writes under a bag's name, so two writers never mix their objects;
//   commits/<bag>  created after every object of the bag is written: the bag exists from then
//                  on. It lists every file with its size and SHA-256, so readers (reindex,
//                  verify) need neither a listing nor an ETag.
//
// "Created once" is `PUT If-None-Match: *` (a 412 means another writer has it). Ceph RGW
// ignores that header on a versioned bucket (and Object Lock needs versioning), so there the
// first version of the key wins: every writer lists the key's versions after writing and the
// one whose version is the oldest has it. The capability probe (store-probe.ts) tells which of
// the two a store keeps, and refuses a store that keeps neither.
import { hostname } from 'node:os';
import { ArchiverError } from '../core/errors.js';
import type { S3Bucket } from './s3-bucket.js';

/** The version of the commit record's format. */
export const COMMIT_FORMAT = 1;
/** A commit record larger than this is damage (a bag of a million files lists in about 150 MB… is not a batch bag). */
export const COMMIT_RECORD_LIMIT = 64 * 1024 * 1024;

/** How a store decides which writer created a key first (store-probe.ts finds it). */
export type CreateOnceRule = 'if-none-match' | 'first-version';

/** One file of a committed bag. */
export interface CommittedFile {
  path: string;
  size: number;
  sha256: string;
}

/** The record that makes a bag exist on object storage. */
export interface CommitRecord {
  format: number;
  /** The bag's name in the store (`aips/harvest-000001/batch-00001`). */
  bag: string;
  committed: string;
  writer: string;
  payloadOxum: string;
  /** Every file of the bag, paths relative to it, in code-unit order. */
  files: CommittedFile[];
  /** The Object Lock retention its objects were given, if any. */
  retainUntil?: string;
}

export const CLAIMS_FOLDER = 'claims/';
export const COMMITS_FOLDER = 'commits/';

/** Who writes, as claims and commits name it: host, process and a token unique to this process's store. */
export function writerName(token: string): string {
  return `${hostname()} pid ${process.pid} ${token}`;
}

/**
 * Creates `key` with `body` unless it exists. Resolves to true when this call created it, false
 * when another writer had (or, under 'first-version', got it first: this call's version is then
 * deleted unless it is locked).
 */
export async function createOnce(bucket: S3Bucket, rule: CreateOnceRule, key: string, body: Uint8Array, retainUntil?: Date): Promise<boolean> {
  const answer = await bucket.put(key, body, { ifAbsent: true, retainUntil, contentType: 'application/json' });
  // A 412 may answer a retry of this very request whose first answer was lost on the way: the
  // record there is then this call's own (its body names this writer and its instant).
  if (!answer.created) return Buffer.from(body).equals((await readFirstVersion(bucket, rule, key, body.length + 1)) ?? Buffer.alloc(0));
  if (rule === 'if-none-match') return true;
  if (answer.versionId === undefined) {
    throw new ArchiverError('ERR_ARCHIVE_STORE', `${bucket.url(key)} was written without a version on a store said to keep versions`);
  }
  const first = (await bucket.versions(key)).at(-1);
  if (first?.versionId === answer.versionId) return true;
  if (retainUntil === undefined) await bucket.delete(key, answer.versionId);
  return false;
}

/** The record at `key` as first created (the first version, under 'first-version'), or undefined. */
export async function readFirstVersion(bucket: S3Bucket, rule: CreateOnceRule, key: string, limit = COMMIT_RECORD_LIMIT): Promise<Buffer | undefined> {
  if (rule === 'if-none-match') return bucket.readSmall(key, limit);
  const first = (await bucket.versions(key)).at(-1);
  return first === undefined ? undefined : bucket.readSmall(key, limit, first.versionId);
}

export function encodeCommit(record: CommitRecord): Buffer {
  return Buffer.from(`${JSON.stringify(record)}\n`);
}

/** A commit record read back, checked; anything else is ERR_ARCHIVE_DAMAGED naming `where`. */
export function decodeCommit(bytes: Buffer, where: string, bag: string): CommitRecord {
  const damaged = (why: string): never => {
    throw new ArchiverError('ERR_ARCHIVE_DAMAGED', `the commit record ${where} ${why}`, { path: where });
  };
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch {
    return damaged('is not JSON');
  }
  const record = value as Partial<CommitRecord>;
  if (typeof record !== 'object' || record === null) return damaged('is not an object');
  if (record.format !== COMMIT_FORMAT) return damaged(`has format ${JSON.stringify(record.format)}, not ${COMMIT_FORMAT}`);
  if (record.bag !== bag) return damaged(`names the bag ${JSON.stringify(record.bag)}, not ${bag}`);
  if (typeof record.committed !== 'string' || typeof record.writer !== 'string' || typeof record.payloadOxum !== 'string')
    return damaged('lacks its dates or names');
  if (!Array.isArray(record.files)) return damaged('lists no files');
  let previous = '';
  for (const file of record.files as unknown[]) {
    const { path, size, sha256 } = file as Partial<CommittedFile>;
    if (typeof path !== 'string' || path === '' || path.split('/').some((segment) => segment === '' || segment === '.' || segment === '..')) {
      return damaged(`lists a file with the path ${JSON.stringify(path)}`);
    }
    if (!Number.isSafeInteger(size) || (size as number) < 0 || typeof sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(sha256)) {
      return damaged(`lists ${path} without a size and a SHA-256`);
    }
    if (path <= previous) return damaged(`lists ${path} out of order or twice`);
    previous = path;
  }
  return record as CommitRecord;
}
