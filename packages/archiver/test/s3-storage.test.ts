// The AIP storage on S3 (issue 28) against a real Ceph RADOS Gateway started here
// (test/ceph-rgw-server.ts): bags placed by the commit protocol read back byte for byte and
// verify as BagIt through the store, a file larger than a part goes up in parts, two writers
// racing for one bag leave exactly one committed and intact, a bag whose writer stopped before
// its commit does not exist, the probe finds how each kind of bucket creates a key once and
// refuses stores that break a promise (test/faulty-s3-server.ts), and Object Lock keeps what
// was committed (a locked version cannot be deleted; a revisited bag's retention grows).
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectRetentionCommand,
  HeadObjectCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { CEPH_SKIP, type CephRgw, startCephRgw } from '../../../test/ceph-rgw-server.ts';
import { type FaultyS3, type S3Fault, startFaultyS3 } from '../../../test/faulty-s3-server.ts';
import { S3Storage } from '../src/aip/s3-storage.ts';
import { storedBagSource } from '../src/aip/stored-bag-source.ts';
import { verifyBagSource } from '../src/bag/bag-verifier.ts';
import { createBagBuilder } from '../src/bag/bag-writer.ts';
import type { SealedBag } from '../src/bag/sealed-bag.ts';
import type { ArchiverError } from '../src/core/errors.ts';

// The SDK's notice that its 2027 releases need Node 22 (docs/scale-out.md: a 2026 release is pinned).
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

let rgw: CephRgw;
let admin: S3Client;
let work: string;

async function bytesOf(stream: AsyncIterable<unknown>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** A real bag sealed in `<work>/tmp/` by the bag writer, for `destination`. */
async function sealed(destination: string, payloads: Record<string, Buffer>, note = 'test'): Promise<SealedBag> {
  const builder = await createBagBuilder(work);
  for (const [name, bytes] of Object.entries(payloads)) await builder.addPayload(name, Readable.from([bytes]));
  await builder.addTagFile('note.txt', note);
  return builder.seal({ bagInfo: [['Source-Organization', note]], destination });
}

async function open(bucket: string, extra: Partial<Parameters<typeof S3Storage.open>[0]> = {}): Promise<S3Storage> {
  return S3Storage.open({
    url: `s3://${bucket}/archive`,
    endpoint: rgw.endpoint,
    region: rgw.region,
    credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey },
    ...extra,
  });
}

describe('S3 storage on Ceph RGW', { skip: CEPH_SKIP }, () => {
  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'oaibag-s3-storage-'));
    rgw = await startCephRgw();
    admin = new S3Client({
      endpoint: rgw.endpoint,
      region: rgw.region,
      forcePathStyle: true,
      credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey },
    });
    await admin.send(new CreateBucketCommand({ Bucket: 'plain' }));
    await admin.send(new CreateBucketCommand({ Bucket: 'versioned' }));
    await admin.send(new PutBucketVersioningCommand({ Bucket: 'versioned', VersioningConfiguration: { Status: 'Enabled' } }));
    await admin.send(new CreateBucketCommand({ Bucket: 'locked', ObjectLockEnabledForBucket: true }));
  });

  after(async () => {
    admin?.destroy();
    await rgw?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  test('the probe finds how each kind of bucket creates a key once', async () => {
    const plain = await open('plain');
    const versioned = await open('versioned');
    const locked = await open('locked', { retainMs: 60_000 });
    try {
      assert.deepEqual(plain.probe, { createOnce: 'if-none-match', versioned: false, objectLock: false });
      // Ceph RGW accepts PUT If-None-Match: * on an existing key of a versioned bucket.
      assert.deepEqual(versioned.probe, { createOnce: 'first-version', versioned: true, objectLock: false });
      assert.deepEqual(locked.probe, { createOnce: 'first-version', versioned: true, objectLock: true });
      await assert.rejects(open('versioned', { retainMs: 60_000 }), (error: ArchiverError) => {
        assert.equal(error.code, 'ERR_ARCHIVE_STORE');
        assert.match(error.message, /fails the object lock check: the bucket was not created with Object Lock on/);
        return true;
      });
    } finally {
      for (const storage of [plain, versioned, locked]) storage.close();
    }
  });

  for (const bucket of ['plain', 'versioned']) {
    test(`${bucket}: a placed bag reads back byte for byte, verifies as BagIt, and leaves nothing in tmp/`, async () => {
      const storage = await open(bucket, { partBytes: 5 * 1024 * 1024 });
      try {
        const large = randomBytes(11 * 1024 * 1024 + 3);
        const small = Buffer.from('<html>hello</html>');
        const bag = await sealed('aips/harvest-000001/batch-00001', { 'big/file.bin': large, 'index.html': small, 'empty.txt': Buffer.alloc(0) });
        let before = 0;
        const [placement] = await storage.placeBags([bag], { beforeRename: () => void before++ });
        assert.equal(placement?.error, undefined);
        assert.equal(placement!.bag!.existing, false);
        assert.equal(placement!.bag!.bagPath, `s3://${bucket}/archive/aips/harvest-000001/batch-00001`);
        assert.equal(before, 1);
        assert.equal(existsSync(bag.tempDir), false, 'the temporary copy is removed');
        const stored = { storage, bagPath: bag.destination };
        assert.ok((await bytesOf(storage.read(`${bag.destination}/data/big/file.bin`))).equals(large), 'multipart upload, byte for byte');
        assert.ok(
          (await bytesOf(storage.read(`${bag.destination}/data/big/file.bin`, { offset: 5 * 1024 * 1024 - 2, length: 9 }))).equals(
            large.subarray(5 * 1024 * 1024 - 2, 5 * 1024 * 1024 + 7),
          ),
        );
        assert.equal((await bytesOf(storage.read(`${bag.destination}/data/empty.txt`))).length, 0);
        const head = await admin.send(new HeadObjectCommand({ Bucket: bucket, Key: `archive/${bag.destination}/data/big/file.bin` }));
        assert.match(head.ETag ?? '', /-3"?$/, 'three parts: the ETag is no digest');
        const files = await storage.listBag(bag.destination);
        assert.deepEqual(
          files.map((file) => file.path),
          [
            'bag-info.txt',
            'bagit.txt',
            'data/big/file.bin',
            'data/empty.txt',
            'data/index.html',
            'manifest-sha256.txt',
            'manifest-sha512.txt',
            'metadata/note.txt',
            'tagmanifest-sha256.txt',
            'tagmanifest-sha512.txt',
          ].filter((path) => files.some((file) => file.path === path)),
        );
        assert.ok(files.length >= 9);
        const report = await verifyBagSource(storedBagSource(stored));
        assert.deepEqual(report.problems, []);
        assert.equal(report.valid, true);
        assert.deepEqual([...(await collect(storage.committedBags()))], [bag.destination]);
        const error = await bytesOf(storage.read(`${bag.destination}/data/absent.html`)).catch((caught: unknown) => caught as NodeJS.ErrnoException);
        assert.equal((error as NodeJS.ErrnoException).code, 'ENOENT');
      } finally {
        storage.close();
      }
    });

    test(`${bucket}: two writers racing for one bag: exactly one commits, and its bag is whole`, async () => {
      const first = await open(bucket);
      const second = await open(bucket);
      try {
        for (let round = 1; round <= 4; round++) {
          const destination = `aips/harvest-000002/batch-0000${round}`;
          const ours = await sealed(destination, { 'page.html': randomBytes(40_000), 'same.txt': Buffer.from('same') }, 'first writer');
          const theirs = await sealed(destination, { 'page.html': randomBytes(40_000), 'other.txt': Buffer.from('other') }, 'second writer');
          const [[a], [b]] = await Promise.all([first.placeBags([ours]), second.placeBags([theirs])]);
          const committed = [a, b].filter((placement) => placement?.error === undefined);
          assert.equal(committed.length, 1, `round ${round}: exactly one commits`);
          const refused = [a, b].find((placement) => placement?.error !== undefined)!;
          assert.equal(refused.error!.code, 'ERR_ARCHIVE_BAG');
          assert.match(refused.error!.message, /another writer (holds|committed)/);
          const winner = a?.error === undefined ? ours : theirs;
          const record = await first.commitOf(destination);
          assert.ok(record);
          for (const file of record.files) {
            const bytes = await bytesOf(first.read(`${destination}/${file.path}`));
            assert.equal(sha256(bytes), file.sha256, `round ${round}: ${file.path} is the committed writer's`);
          }
          assert.deepEqual(
            record.files.filter((file) => file.path.startsWith('data/')).map(({ path, sha256 }) => ({ path, sha256 })),
            winner.files.map(({ path, sha256 }) => ({ path, sha256 })),
          );
          assert.equal((await verifyBagSource(storedBagSource({ storage: first, bagPath: destination }))).valid, true);
        }
      } finally {
        first.close();
        second.close();
      }
    });
  }

  test('a bag whose writer stopped before its commit does not exist, and its name is never reused', async () => {
    const storage = await open('plain');
    try {
      const destination = 'aips/harvest-000003/batch-00001';
      const bag = await sealed(destination, { 'a.html': Buffer.from('a') });
      await assert.rejects(
        storage.placeBags([bag], {
          beforeRename: () => {
            throw new Error('power cut');
          },
        }),
        /power cut/,
      );
      assert.equal(existsSync(bag.tempDir), false);
      assert.equal(await storage.commitOf(destination), undefined);
      await assert.rejects(storage.listBag(destination), (error: NodeJS.ErrnoException) => error.code === 'ENOENT');
      assert.ok(!(await collect(storage.committedBags())).includes(destination));
      const again = await sealed(destination, { 'a.html': Buffer.from('a') });
      const [placement] = await storage.placeBags([again]);
      assert.equal(placement?.error?.code, 'ERR_ARCHIVE_BAG');
      assert.match(placement!.error!.message, /claimed, not committed/);
    } finally {
      storage.close();
    }
  });

  test('the same bag delivered twice is kept once', async () => {
    const storage = await open('plain');
    try {
      const destination = 'aips/harvest-000004/batch-00001';
      const payload = { 'a.html': Buffer.from('the same bytes') };
      const [first] = await storage.placeBags([await sealed(destination, payload)]);
      assert.equal(first?.bag?.existing, false);
      const [second] = await storage.placeBags([await sealed(destination, payload)]);
      assert.equal(second?.error, undefined);
      assert.equal(second?.bag?.existing, true);
    } finally {
      storage.close();
    }
  });

  test('Object Lock: committed objects cannot be deleted, and a revisited bag is kept as long as its newest user', async () => {
    const storage = await open('locked', { retainMs: 60_000 });
    try {
      const destination = 'aips/harvest-000005/batch-00001';
      const started = Date.now();
      const [placement] = await storage.placeBags([await sealed(destination, { 'a.html': Buffer.from('kept'), 'b.html': Buffer.from('also kept') })]);
      assert.equal(placement?.error, undefined);
      const record = await storage.commitOf(destination);
      assert.ok(record?.retainUntil);
      const retention = async (key: string): Promise<Date> =>
        (await admin.send(new GetObjectRetentionCommand({ Bucket: 'locked', Key: `archive/${key}` }))).Retention!.RetainUntilDate!;
      for (const file of record.files) {
        const until = await retention(`${destination}/${file.path}`);
        assert.ok(until.getTime() >= started + 59_000, `${file.path} is locked for the retention`);
      }
      const head = await admin.send(new HeadObjectCommand({ Bucket: 'locked', Key: `archive/${destination}/data/a.html` }));
      await assert.rejects(
        admin.send(new DeleteObjectCommand({ Bucket: 'locked', Key: `archive/${destination}/data/a.html`, VersionId: head.VersionId! })),
        /object lock/i,
      );
      const commitHead = await admin.send(new HeadObjectCommand({ Bucket: 'locked', Key: `archive/commits/${destination}` }));
      await assert.rejects(
        admin.send(new DeleteObjectCommand({ Bucket: 'locked', Key: `archive/commits/${destination}`, VersionId: commitHead.VersionId! })),
        /object lock/i,
      );
      // A later batch revisits a.html: that file, the bag's tag files and its commit record are
      // kept at least as long as the new version is; b.html keeps its own date.
      const later = new Date(Date.now() + 3_600_000);
      await storage.extendRetention(destination, ['data/a.html'], later);
      assert.equal((await retention(`${destination}/data/a.html`)).getTime(), later.getTime());
      assert.equal((await retention(`${destination}/manifest-sha512.txt`)).getTime(), later.getTime());
      assert.equal((await retention(`commits/${destination}`)).getTime(), later.getTime());
      assert.ok((await retention(`${destination}/data/b.html`)).getTime() < later.getTime());
      // Extending to an earlier date than held changes nothing (COMPLIANCE never shortens).
      await storage.extendRetention(destination, ['data/a.html'], new Date(Date.now() + 120_000));
      assert.equal((await retention(`${destination}/data/a.html`)).getTime(), later.getTime());
    } finally {
      storage.close();
    }
  });

  test("a claim and a commit whose answers are lost on the way are not taken for another writer's", async () => {
    // A relay to the gateway that lets the first successful PUT of a claim and of a commit
    // through, then cuts the connection before its answer: the SDK tries again, and the store
    // answers 412 to the retry of a create that did happen.
    const lost: string[] = [];
    const relay = createServer((request, response) => {
      const target = new URL(rgw.endpoint);
      const upstream = httpRequest(
        { host: target.hostname, port: target.port, method: request.method, path: request.url, headers: request.headers },
        (answer) => {
          const kind = /\/(claims|commits)\//.exec(request.url ?? '')?.[1];
          if (request.method === 'PUT' && kind !== undefined && answer.statusCode === 200 && !lost.includes(kind)) {
            lost.push(kind);
            answer.resume();
            response.socket?.destroy();
            return;
          }
          response.writeHead(answer.statusCode!, answer.headers);
          answer.pipe(response);
        },
      );
      upstream.on('error', () => response.destroy());
      request.pipe(upstream);
    });
    relay.listen(0, '127.0.0.1');
    await once(relay, 'listening');
    const storage = await open('plain', { endpoint: `http://127.0.0.1:${(relay.address() as { port: number }).port}` });
    try {
      const destination = 'aips/harvest-000007/batch-00001';
      const [placement] = await storage.placeBags([await sealed(destination, { 'a.html': Buffer.from('once') })]);
      assert.equal(placement?.error, undefined);
      assert.deepEqual(lost.sort(), ['claims', 'commits'], 'both answers were lost');
      assert.equal((await storage.commitOf(destination))?.bag, destination);
    } finally {
      storage.close();
      relay.closeAllConnections();
      relay.close();
    }
  });

  test('a commit record that is not one is damage, named', async () => {
    const storage = await open('plain');
    try {
      const destination = 'aips/harvest-000006/batch-00001';
      await admin.send(new PutObjectCommand({ Bucket: 'plain', Key: `archive/commits/${destination}`, Body: '{"format":1,"bag":"aips/elsewhere"}' }));
      await assert.rejects(storage.listBag(destination), (error: ArchiverError) => {
        assert.equal(error.code, 'ERR_ARCHIVE_DAMAGED');
        assert.match(error.message, /the commit record s3:\/\/plain\/archive\/commits\/aips\/harvest-000006\/batch-00001 names the bag "aips\/elsewhere"/);
        return true;
      });
    } finally {
      storage.close();
    }
  });
});

describe('the probe refuses a store that breaks a promise', () => {
  const cases: Array<[S3Fault, number | undefined, RegExp]> = [
    [
      'ignores-conditional-create',
      undefined,
      /fails the conditional create check: a second PUT If-None-Match: \* of s3:\/\/probed\/archive\/probe\/.*\/commit was accepted, not refused with 412/,
    ],
    [
      'short-reads',
      undefined,
      /fails the streamed write check: s3:\/\/probed\/archive\/probe\/.*\/stream read back 1048582 bytes that differ from the 1048583 written/,
    ],
    ['deletes-locked', 60_000, /fails the object lock check: a version of s3:\/\/probed\/archive\/probe\/.*\/locked under COMPLIANCE retention was deleted/],
  ];
  for (const [fault, retainMs, message] of cases) {
    test(fault, async () => {
      const store: FaultyS3 = await startFaultyS3(fault);
      try {
        await assert.rejects(
          S3Storage.open({
            url: 's3://probed/archive',
            endpoint: store.endpoint,
            region: 'us-east-1',
            credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
            attempts: 1,
            ...(retainMs ? { retainMs } : {}),
          }),
          (error: ArchiverError) => {
            assert.equal(error.code, 'ERR_ARCHIVE_STORE');
            assert.match(error.message, message);
            assert.doesNotMatch(error.message, /\n/);
            return true;
          },
        );
      } finally {
        await store.close();
      }
    });
  }
});

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const found: T[] = [];
  for await (const item of items) found.push(item);
  return found;
}
