// PostgreSQL and Ceph RGW started together for a test of the archive on them (issue 28), with
// the buckets it needs (`locked` ones with Object Lock), and stopped together.
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { type CephRgw, startCephRgw } from './ceph-rgw-server.ts';
import { type Postgres, startPostgres } from './postgres-server.ts';

// The SDK's notice that its 2027 releases need Node 22 (docs/scale-out.md: a 2026 release is pinned).
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

export interface StoreEngines {
  rgw: CephRgw;
  postgres: Postgres;
  /** A client of the store with its user's credentials, for what a test checks or breaks. */
  admin: S3Client;
  /** The store's credentials as the AWS environment variables, for an `oaibag` process. */
  env: Record<string, string>;
  stop(): Promise<void>;
}

export async function startStoreEngines(buckets: readonly { name: string; locked?: boolean }[]): Promise<StoreEngines> {
  const [rgw, postgres] = await Promise.all([startCephRgw(), startPostgres()]);
  const admin = new S3Client({
    endpoint: rgw.endpoint,
    region: rgw.region,
    forcePathStyle: true,
    credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey },
  });
  for (const bucket of buckets)
    await admin.send(new CreateBucketCommand({ Bucket: bucket.name, ...(bucket.locked ? { ObjectLockEnabledForBucket: true } : {}) }));
  return {
    rgw,
    postgres,
    admin,
    env: { AWS_ACCESS_KEY_ID: rgw.accessKeyId, AWS_SECRET_ACCESS_KEY: rgw.secretAccessKey },
    stop: async () => {
      admin.destroy();
      await Promise.all([rgw.stop(), postgres.stop()]);
    },
  };
}
