// Where an archive's bags are kept on S3-compatible object storage (`--store s3://BUCKET/PREFIX`)
// and how the store is reached: the URL parsed and checked, the endpoint, region and
// credentials taken from the options or from the usual AWS environment variables, and the
// bounds every request is held to (docs/scale-out.md).
import { ArchiverError } from '../core/errors.js';

/** The bucket and the key prefix (`''` or ending in `/`) of a store. */
export interface S3Location {
  bucket: string;
  prefix: string;
}

/** Static credentials; absent, the AWS SDK's usual chain is asked (environment, profile, …). */
export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string | undefined;
}

export interface S3StoreOptions {
  /** `s3://BUCKET` or `s3://BUCKET/PREFIX`. */
  url: string;
  /** The S3 endpoint (`http://127.0.0.1:7480`); default AWS_ENDPOINT_URL_S3, then AWS_ENDPOINT_URL, then AWS's own. */
  endpoint?: string | undefined;
  /** Default AWS_REGION, then AWS_DEFAULT_REGION, then us-east-1. */
  region?: string | undefined;
  credentials?: S3Credentials | undefined;
  /** Path-style addressing (`endpoint/bucket/key`); default: on when an endpoint is given, as non-AWS stores want. */
  pathStyle?: boolean | undefined;
  /** `--retain`: every object committed is kept under S3 Object Lock (COMPLIANCE) this long. */
  retainMs?: number | undefined;
  /** Files larger than this are uploaded in parts of this size (default MULTIPART_BYTES). */
  partBytes?: number | undefined;
  /** A request that makes no progress for this long is given up (default REQUEST_IDLE_MS). */
  requestIdleMs?: number | undefined;
  /** Attempts per request, the first included (default REQUEST_ATTEMPTS). */
  attempts?: number | undefined;
  /** Uploads at once (default UPLOADS_AT_ONCE). */
  uploadsAtOnce?: number | undefined;
}

/**
 * 64 MiB: files above it go up in parts of this size. S3 takes 5 MiB to 5 GiB a part and
 * 10,000 parts, so one file may reach 625 GiB; a part is retried alone.
 */
export const MULTIPART_BYTES = 64 * 1024 * 1024;
/** Time without progress on one request (connecting, sending or receiving). */
export const REQUEST_IDLE_MS = 60_000;
export const REQUEST_ATTEMPTS = 4;
export const UPLOADS_AT_ONCE = 4;
/** S3's own bounds on a part's size. */
const MIN_PART_BYTES = 5 * 1024 * 1024;
const MAX_PART_BYTES = 5 * 1024 * 1024 * 1024;

/** Parses `s3://BUCKET/PREFIX`, refusing what S3 or the archive's path rules would not take. */
export function parseS3Url(url: string): S3Location {
  const refuse = (why: string): never => {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `--store ${JSON.stringify(url.slice(0, 200))} ${why}`, {
      hint: 'write --store s3://BUCKET or s3://BUCKET/PREFIX',
    });
  };
  const match = /^s3:\/\/([^/]*)(?:\/(.*))?$/.exec(url);
  if (match === null) return refuse('is not an s3:// URL');
  const bucket = match[1]!;
  // S3's rules for a bucket name usable in either addressing style.
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket) || bucket.includes('..')) {
    return refuse('has no valid bucket name (3 to 63 lower-case letters, digits, dots and hyphens)');
  }
  const path = (match[2] ?? '').replace(/\/$/, '');
  if (path !== '' && path.split('/').some((segment) => segment === '' || segment === '.' || segment === '..')) {
    return refuse('has an empty, "." or ".." segment in its prefix');
  }
  if (/[\0-\x1f\\]/.test(path)) return refuse('has a control character or a backslash in its prefix');
  return { bucket, prefix: path === '' ? '' : `${path}/` };
}

/** The options with every default filled in, checked. */
export interface ResolvedS3Options {
  location: S3Location;
  endpoint: string | undefined;
  region: string;
  credentials: S3Credentials | undefined;
  pathStyle: boolean;
  retainMs: number | undefined;
  partBytes: number;
  requestIdleMs: number;
  attempts: number;
  uploadsAtOnce: number;
}

export function resolveS3Options(options: S3StoreOptions, env: NodeJS.ProcessEnv = process.env): ResolvedS3Options {
  const location = parseS3Url(options.url);
  const endpoint = options.endpoint ?? (env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || undefined);
  if (endpoint !== undefined && !/^https?:\/\/[^/]+\/?$/.test(endpoint)) {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `the S3 endpoint ${JSON.stringify(endpoint.slice(0, 200))} is not http(s)://HOST[:PORT]`);
  }
  const partBytes = options.partBytes ?? MULTIPART_BYTES;
  if (!Number.isSafeInteger(partBytes) || partBytes < MIN_PART_BYTES || partBytes > MAX_PART_BYTES) {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `a part of ${partBytes} bytes is outside S3's 5 MiB to 5 GiB`);
  }
  const positive = (name: string, value: number): number => {
    if (!Number.isSafeInteger(value) || value < 1) throw new ArchiverError('ERR_ARCHIVE_USAGE', `${name} must be a whole number of at least 1, not ${value}`);
    return value;
  };
  if (options.retainMs !== undefined) positive('the retention in milliseconds', options.retainMs);
  return {
    location,
    endpoint,
    region: options.region ?? (env.AWS_REGION || env.AWS_DEFAULT_REGION || 'us-east-1'),
    credentials: options.credentials,
    pathStyle: options.pathStyle ?? endpoint !== undefined,
    retainMs: options.retainMs,
    partBytes,
    requestIdleMs: positive('the request idle time', options.requestIdleMs ?? REQUEST_IDLE_MS),
    attempts: positive('the attempts per request', options.attempts ?? REQUEST_ATTEMPTS),
    uploadsAtOnce: positive('the uploads at once', options.uploadsAtOnce ?? UPLOADS_AT_ONCE),
  };
}
