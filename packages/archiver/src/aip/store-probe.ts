// The capability probe an object store must pass before an archive uses it (docs/scale-out.md,
// "The probe"): each check is one the commit protocol or the fixity relies on, tried on small
// objects under `PREFIX/probe/<random>/`, and a store that fails one is refused with one line
// naming it. What the probe writes is removed, except an object it locked, which expires.
//
//   reach               the bucket answers (its versioning and Object Lock settings are read);
//   conditional create  a second create of the same key is refused (412), or, on a versioned
//                       bucket, its versions are listed oldest last (s3-commit.ts's fallback);
//   streamed write      a file streamed up reads back byte for byte, whole and by range;
//   object lock         (with --retain) a locked version cannot be deleted.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ArchiverError } from '../core/errors.js';
import type { S3Bucket } from './s3-bucket.js';
import type { CreateOnceRule } from './s3-commit.js';

export interface StoreProbe {
  createOnce: CreateOnceRule;
  versioned: boolean;
  objectLock: boolean;
}

/** The size of the streamed write: over one read of a file stream (64 KiB) many times. */
const STREAM_BYTES = 1024 * 1024 + 7;
/** How long the probe's locked object is kept. */
const PROBE_LOCK_MS = 60_000;

export async function probeStore(bucket: S3Bucket, wanted: { objectLock: boolean }): Promise<StoreProbe> {
  const fail = (check: string, why: string, hint?: string): never => {
    throw new ArchiverError('ERR_ARCHIVE_STORE', `the store ${bucket.url(bucket.options.location.prefix)} fails the ${check} check: ${why}`, {
      path: bucket.url(bucket.options.location.prefix),
      ...(hint ? { hint } : {}),
    });
  };
  const features = await bucket.features().catch((error: unknown) => fail('reach', (error as Error).message));
  const folder = `${bucket.options.location.prefix}probe/${new Date().toISOString().replace(/[-:.]/g, '')}-${randomBytes(4).toString('hex')}/`;
  const written: Array<{ key: string; versionId: string | undefined }> = [];
  try {
    const createOnce = await conditionalCreate(bucket, folder, features.versioned, written, fail);
    await streamedWrite(bucket, folder, written, fail);
    if (wanted.objectLock) {
      if (!features.objectLock)
        fail('object lock', 'the bucket was not created with Object Lock on', 'create the bucket with Object Lock enabled, or run without --retain');
      await lockedDelete(bucket, folder, fail);
    }
    return { createOnce, ...features };
  } finally {
    for (const { key, versionId } of written) await bucket.delete(key, versionId);
  }
}

async function conditionalCreate(
  bucket: S3Bucket,
  folder: string,
  versioned: boolean,
  written: Array<{ key: string; versionId: string | undefined }>,
  fail: (check: string, why: string, hint?: string) => never,
): Promise<CreateOnceRule> {
  const key = `${folder}commit`;
  const first = await bucket.put(key, Buffer.from('first\n'), { ifAbsent: true });
  written.push({ key, versionId: first.versionId });
  if (!first.created) fail('conditional create', `the first create of ${bucket.url(key)} was refused (412)`);
  const second = await bucket.put(key, Buffer.from('second\n'), { ifAbsent: true });
  if (!second.created) return 'if-none-match';
  written.push({ key, versionId: second.versionId });
  const hint = 'use a store that answers 412 to PUT If-None-Match: * on an existing key (AWS S3, Ceph RGW, MinIO), or a bucket with versioning on';
  if (!versioned) fail('conditional create', `a second PUT If-None-Match: * of ${bucket.url(key)} was accepted, not refused with 412`, hint);
  // A versioned bucket that ignores the header (Ceph RGW does): the first version must be told
  // from the second by the listing alone.
  const versions = await bucket.versions(key);
  if (versions.length !== 2 || versions[1]!.versionId !== first.versionId || versions[0]!.versionId !== second.versionId) {
    fail('conditional create', `a second PUT If-None-Match: * of ${bucket.url(key)} was accepted and its versions are not listed newest first`, hint);
  }
  const read = await bucket.readSmall(key, 64, first.versionId);
  if (read?.toString() !== 'first\n') fail('conditional create', `the first version of ${bucket.url(key)} does not read back`);
  return 'first-version';
}

async function streamedWrite(
  bucket: S3Bucket,
  folder: string,
  written: Array<{ key: string; versionId: string | undefined }>,
  fail: (check: string, why: string) => never,
): Promise<void> {
  const bytes = randomBytes(STREAM_BYTES);
  const local = await mkdtemp(join(tmpdir(), 'oaibag-probe-'));
  const key = `${folder}stream`;
  try {
    await writeFile(join(local, 'stream'), bytes);
    const answer = await bucket.put(key, { file: join(local, 'stream'), offset: 0, length: bytes.length });
    written.push({ key, versionId: answer.versionId });
  } finally {
    await rm(local, { recursive: true, force: true });
  }
  const whole = await bucket.readSmall(key, STREAM_BYTES + 1);
  if (whole === undefined || !whole.equals(bytes))
    fail('streamed write', `${bucket.url(key)} read back ${whole?.length ?? 0} bytes that differ from the ${bytes.length} written`);
  const chunks: Buffer[] = [];
  for await (const chunk of bucket.read(key, { offset: 65_531, length: 70_001 })) chunks.push(chunk as Buffer);
  if (!Buffer.concat(chunks).equals(bytes.subarray(65_531, 65_531 + 70_001))) fail('streamed write', `a range of ${bucket.url(key)} read back other bytes`);
}

async function lockedDelete(bucket: S3Bucket, folder: string, fail: (check: string, why: string, hint?: string) => never): Promise<void> {
  const key = `${folder}locked`;
  const answer = await bucket.put(key, Buffer.from('locked\n'), { retainUntil: new Date(Date.now() + PROBE_LOCK_MS) });
  if (answer.versionId === undefined) fail('object lock', `${bucket.url(key)} was written without a version`);
  const refused = await bucket.delete(key, answer.versionId);
  if (refused === undefined)
    fail(
      'object lock',
      `a version of ${bucket.url(key)} under COMPLIANCE retention was deleted`,
      'use a store that keeps S3 Object Lock, or run without --retain',
    );
}
