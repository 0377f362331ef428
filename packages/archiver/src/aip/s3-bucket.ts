// The few S3 requests the object store needs, over the AWS SDK v3 (loaded only when a store is
// opened: the `oaibag` bundle leaves it out, and an archive in a folder never pays for it).
// Every failure becomes one line naming the request, the key and S3's answer; a missing key is
// an error with code ENOENT, as a missing file is; a refused conditional create is an answer,
// not an error. Requests are bounded by the store options (time without progress, attempts).
import { createReadStream } from 'node:fs';
import { PassThrough, Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import { ArchiverError } from '../core/errors.js';
import type { ResolvedS3Options, S3Credentials } from './s3-location.js';

type Sdk = typeof import('@aws-sdk/client-s3');

/** A file's bytes to upload: `length` bytes of `file` from `offset`, or bytes in memory. */
export type UploadBody = Uint8Array | { file: string; offset: number; length: number };

/** One version of a key, newest first as S3 lists them. */
export interface KeyVersion {
  versionId: string;
  lastModified: Date | undefined;
}

export interface PutAnswer {
  /** False when the store refused a conditional create (412: the key exists). */
  created: boolean;
  /** The version written, on a versioned bucket. */
  versionId: string | undefined;
}

export interface PutOptions {
  /** Create only: `If-None-Match: *`. */
  ifAbsent?: boolean;
  /** Written under Object Lock (COMPLIANCE) until then. */
  retainUntil?: Date | undefined;
  contentType?: string;
}

/** An S3 bucket as the store uses it, keys relative to the bucket. */
export class S3Bucket {
  private constructor(
    private readonly sdk: Sdk,
    private readonly client: S3Client,
    readonly options: ResolvedS3Options,
  ) {}

  static async connect(options: ResolvedS3Options): Promise<S3Bucket> {
    // The SDK warns on Node 20 that its releases after January 2027 need Node 22; the lockfile
    // pins a 2026 release (docs/scale-out.md), so the warning would only be noise on every run.
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
    const sdk = await import('@aws-sdk/client-s3');
    const client = new sdk.S3Client({
      region: options.region,
      forcePathStyle: options.pathStyle,
      ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }),
      ...(options.credentials === undefined ? {} : { credentials: definedCredentials(options.credentials) }),
      maxAttempts: options.attempts,
      // Streamed uploads to stores other than AWS's are refused (411) with the SDK's default
      // trailing checksums; our own SHA-256/512 are the fixity anyway, never S3's.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      requestHandler: { connectionTimeout: options.requestIdleMs, requestTimeout: options.requestIdleMs },
    });
    return new S3Bucket(sdk, client, options);
  }

  get name(): string {
    return this.options.location.bucket;
  }

  /** `s3://bucket/key`, as messages name an object. */
  url(key: string): string {
    return `s3://${this.name}/${key}`;
  }

  close(): void {
    this.client.destroy();
  }

  /**
   * Writes `body` at `key`. With `ifAbsent`, a 412 answer (the key exists) is `created: false`.
   * An upload from a file is retried here (the SDK cannot replay a stream), each attempt
   * reading the file again.
   */
  async put(key: string, body: UploadBody, options: PutOptions = {}): Promise<PutAnswer> {
    const input = {
      Bucket: this.name,
      Key: key,
      ...(options.ifAbsent ? { IfNoneMatch: '*' } : {}),
      ...(options.contentType ? { ContentType: options.contentType } : {}),
      ...(options.retainUntil ? { ObjectLockMode: 'COMPLIANCE' as const, ObjectLockRetainUntilDate: options.retainUntil } : {}),
    };
    try {
      const answer = await this.retried(`PUT ${this.url(key)}`, () =>
        this.client.send(
          new this.sdk.PutObjectCommand(
            body instanceof Uint8Array
              ? { ...input, Body: body, ContentLength: body.length }
              : { ...input, Body: body.length === 0 ? new Uint8Array(0) : fileRange(body), ContentLength: body.length },
          ),
        ),
      );
      return { created: true, versionId: answer.VersionId };
    } catch (error) {
      if (options.ifAbsent && statusOf(error) === 412) return { created: false, versionId: undefined };
      throw this.failure(error, 'PUT', key);
    }
  }

  /** Uploads `length` bytes of `file` in parts of `partBytes`, completing or aborting the upload. */
  async putInParts(key: string, file: string, length: number, options: PutOptions = {}): Promise<PutAnswer> {
    const started = await this.client
      .send(
        new this.sdk.CreateMultipartUploadCommand({
          Bucket: this.name,
          Key: key,
          ...(options.contentType ? { ContentType: options.contentType } : {}),
          ...(options.retainUntil ? { ObjectLockMode: 'COMPLIANCE', ObjectLockRetainUntilDate: options.retainUntil } : {}),
        }),
      )
      .catch((error: unknown) => Promise.reject(this.failure(error, 'start a multipart upload of', key)));
    const uploadId = started.UploadId!;
    try {
      const parts: Array<{ PartNumber: number; ETag: string }> = [];
      const size = this.options.partBytes;
      for (let offset = 0, number = 1; offset < length; offset += size, number++) {
        const part = Math.min(size, length - offset);
        const answer = await this.retried(`PUT part ${number} of ${this.url(key)}`, () =>
          this.client.send(
            new this.sdk.UploadPartCommand({
              Bucket: this.name,
              Key: key,
              UploadId: uploadId,
              PartNumber: number,
              Body: fileRange({ file, offset, length: part }),
              ContentLength: part,
            }),
          ),
        );
        parts.push({ PartNumber: number, ETag: answer.ETag! });
      }
      const done = await this.client.send(
        new this.sdk.CompleteMultipartUploadCommand({
          Bucket: this.name,
          Key: key,
          UploadId: uploadId,
          MultipartUpload: { Parts: parts },
          ...(options.ifAbsent ? { IfNoneMatch: '*' } : {}),
        }),
      );
      return { created: true, versionId: done.VersionId };
    } catch (error) {
      await this.client.send(new this.sdk.AbortMultipartUploadCommand({ Bucket: this.name, Key: key, UploadId: uploadId })).catch(() => undefined);
      if (options.ifAbsent && statusOf(error) === 412) return { created: false, versionId: undefined };
      throw this.failure(error, 'PUT', key);
    }
  }

  /**
   * The object's bytes (or `length` of them from `offset`) as a stream, returned at once; a
   * failure, a missing key (code ENOENT) included, comes as the stream's error.
   */
  read(key: string, range?: { offset: number; length: number }, versionId?: string): Readable {
    if (range !== undefined && range.length <= 0) return Readable.from([]);
    const out = new PassThrough();
    this.client
      .send(
        new this.sdk.GetObjectCommand({
          Bucket: this.name,
          Key: key,
          ...(versionId ? { VersionId: versionId } : {}),
          ...(range === undefined ? {} : { Range: `bytes=${range.offset}-${range.offset + range.length - 1}` }),
        }),
      )
      .then(
        (answer) => {
          const body = answer.Body as Readable;
          body.once('error', (error) => out.destroy(this.failure(error, 'GET', key)));
          out.once('close', () => body.destroy());
          body.pipe(out);
        },
        (error: unknown) => out.destroy(this.failure(error, 'GET', key)),
      );
    return out;
  }

  /** A small object whole, or undefined when the key is absent; one larger than `limit` bytes is refused. */
  async readSmall(key: string, limit: number, versionId?: string): Promise<Buffer | undefined> {
    const chunks: Buffer[] = [];
    let total = 0;
    try {
      for await (const chunk of this.read(key, undefined, versionId)) {
        total += (chunk as Buffer).length;
        if (total > limit) throw new ArchiverError('ERR_ARCHIVE_DAMAGED', `${this.url(key)} is larger than the ${limit} bytes such an object may have`);
        chunks.push(chunk as Buffer);
      }
    } catch (error) {
      if ((error as { code?: string }).code === 'ENOENT') return undefined;
      throw error;
    }
    return Buffer.concat(chunks);
  }

  /** Every key under `prefix` with its size, in S3's (binary) key order, a page at a time. */
  async *list(prefix: string, startAfter?: string): AsyncGenerator<{ key: string; size: number }> {
    let token: string | undefined;
    do {
      const page = await this.client
        .send(
          new this.sdk.ListObjectsV2Command({
            Bucket: this.name,
            Prefix: prefix,
            ...(token ? { ContinuationToken: token } : startAfter ? { StartAfter: startAfter } : {}),
          }),
        )
        .catch((error: unknown) => Promise.reject(this.failure(error, 'LIST', prefix)));
      for (const item of page.Contents ?? []) yield { key: item.Key!, size: item.Size ?? 0 };
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  /** The versions of exactly `key` (not of longer keys it prefixes), newest first. */
  async versions(key: string): Promise<KeyVersion[]> {
    const found: KeyVersion[] = [];
    let keyMarker: string | undefined;
    let versionMarker: string | undefined;
    for (;;) {
      const page = await this.client
        .send(
          new this.sdk.ListObjectVersionsCommand({
            Bucket: this.name,
            Prefix: key,
            ...(keyMarker ? { KeyMarker: keyMarker } : {}),
            ...(versionMarker ? { VersionIdMarker: versionMarker } : {}),
          }),
        )
        .catch((error: unknown) => Promise.reject(this.failure(error, 'LIST the versions of', key)));
      for (const version of page.Versions ?? []) {
        if (version.Key === key && version.VersionId) found.push({ versionId: version.VersionId, lastModified: version.LastModified });
      }
      if (!page.IsTruncated || (page.Versions ?? []).some((version) => version.Key! > key)) return found;
      keyMarker = page.NextKeyMarker;
      versionMarker = page.NextVersionIdMarker;
    }
  }

  /** Sets (or extends: COMPLIANCE never shortens) the retention of a key's version. */
  async retain(key: string, versionId: string | undefined, until: Date): Promise<void> {
    await this.client
      .send(
        new this.sdk.PutObjectRetentionCommand({
          Bucket: this.name,
          Key: key,
          ...(versionId ? { VersionId: versionId } : {}),
          Retention: { Mode: 'COMPLIANCE', RetainUntilDate: until },
        }),
      )
      .catch((error: unknown) => Promise.reject(this.failure(error, 'set the retention of', key)));
  }

  /** The retention date of a key's version, if it has one. */
  async retainedUntil(key: string, versionId?: string): Promise<Date | undefined> {
    try {
      const answer = await this.client.send(
        new this.sdk.GetObjectRetentionCommand({ Bucket: this.name, Key: key, ...(versionId ? { VersionId: versionId } : {}) }),
      );
      return answer.Retention?.RetainUntilDate;
    } catch (error) {
      if (statusOf(error) === 404 || nameOf(error) === 'NoSuchObjectLockConfiguration') return undefined;
      throw this.failure(error, 'read the retention of', key);
    }
  }

  /** Deletes a key (or one version of it). Resolves to the error S3 answered, if any: callers decide. */
  async delete(key: string, versionId?: string): Promise<Error | undefined> {
    try {
      await this.client.send(new this.sdk.DeleteObjectCommand({ Bucket: this.name, Key: key, ...(versionId ? { VersionId: versionId } : {}) }));
      return undefined;
    } catch (error) {
      return this.failure(error, 'DELETE', key);
    }
  }

  /** Whether the bucket keeps versions, and whether Object Lock is on. */
  async features(): Promise<{ versioned: boolean; objectLock: boolean }> {
    const versioning = await this.client
      .send(new this.sdk.GetBucketVersioningCommand({ Bucket: this.name }))
      .catch((error: unknown) => Promise.reject(this.failure(error, 'read the versioning of', '')));
    const lock = await this.client.send(new this.sdk.GetObjectLockConfigurationCommand({ Bucket: this.name })).then(
      (answer) => answer.ObjectLockConfiguration?.ObjectLockEnabled === 'Enabled',
      () => false,
    );
    return { versioned: versioning.Status === 'Enabled', objectLock: lock };
  }

  /** Retries `send` on what may pass (network errors, 5xx, throttling); the SDK's own retries do not replay a stream. */
  private async retried<T>(what: string, send: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await send();
      } catch (error) {
        const status = statusOf(error);
        const passing = status === undefined || status >= 500 || status === 429 || nameOf(error) === 'RequestTimeout';
        if (!passing || attempt >= this.options.attempts || status === 412) throw error;
        await new Promise((resolve) => setTimeout(resolve, Math.min(5000, 200 * 2 ** (attempt - 1))));
        void what;
      }
    }
  }

  /** One line for a failed request: `S3 PUT s3://b/k: AccessDenied (HTTP 403): …`; a missing key carries code ENOENT. */
  failure(error: unknown, request: string, key: string): Error {
    if (error instanceof ArchiverError) return error;
    const status = statusOf(error);
    const name = nameOf(error) ?? 'Error';
    const message = `S3 ${request} ${this.url(key)}: ${name}${status ? ` (HTTP ${status})` : ''}: ${(error as Error).message ?? String(error)}`.slice(0, 600);
    if (status === 404 && (name === 'NoSuchKey' || name === 'NotFound')) {
      return Object.assign(new Error(message, { cause: error }), { code: 'ENOENT' });
    }
    return new ArchiverError('ERR_ARCHIVE_IO', message, { cause: error, path: this.url(key) });
  }
}

function definedCredentials({ accessKeyId, secretAccessKey, sessionToken }: S3Credentials): S3Credentials & { sessionToken?: string } {
  return { accessKeyId, secretAccessKey, ...(sessionToken === undefined ? {} : { sessionToken }) };
}

function fileRange(body: { file: string; offset: number; length: number }): Readable {
  return createReadStream(body.file, { start: body.offset, end: body.offset + body.length - 1 });
}

function statusOf(error: unknown): number | undefined {
  return (error as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode;
}

function nameOf(error: unknown): string | undefined {
  return (error as { name?: string })?.name;
}
