// The AIP storage (aip-storage.ts) on S3-compatible object storage: a bag's files are objects
// under the same names as in a folder (`PREFIX/aips/harvest-000001/batch-00001/bag-info.txt`),
// placed by the commit protocol of s3-commit.ts, read by key and range. A store is opened only
// after the capability probe (store-probe.ts) passes. Our SHA-256/512 stay the fixity: an ETag
// is never read as a digest (a multipart upload's is not one).
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { resolveArchivePath } from '../archive/storage-path.js';
import { verifyBag } from '../bag/bag-verifier.js';
import type { FinishedBag, SealedBag } from '../bag/sealed-bag.js';
import { ArchiverError, archiveIoError } from '../core/errors.js';
import type { AipStorage, ByteRange, StoredFile } from './aip-storage.js';
import type { Placement, PlaceOptions } from './bag-placement.js';
import { S3Bucket } from './s3-bucket.js';
import {
  CLAIMS_FOLDER,
  COMMIT_FORMAT,
  COMMITS_FOLDER,
  type CommitRecord,
  type CommittedFile,
  type CreateOnceRule,
  createOnce,
  decodeCommit,
  encodeCommit,
  readFirstVersion,
  writerName,
} from './s3-commit.js';
import { resolveS3Options, type S3StoreOptions } from './s3-location.js';
import { probeStore, type StoreProbe } from './store-probe.js';

/** How many bags' commit records a store keeps in memory for reads (each lists its files). */
const COMMITS_CACHED = 64;

/**
 * How long a process trusts a probe it ran: a worker or a mirror harvesting many sources probes
 * each store once an hour, not at the start of every harvest (a dozen requests and 2 MiB each).
 * A store's settings changed under a running worker are found within the hour.
 */
const PROBE_REUSE_MS = 60 * 60_000;
/** The probes this process ran, by store (location, endpoint, region, access key) and whether Object Lock was asked for. */
const PROBED = new Map<string, { probe: StoreProbe; at: number }>();

export class S3Storage implements AipStorage {
  /** Commit records read lately, by bag name (a Map keeps insertion order: the oldest goes first). */
  private readonly commitsRead = new Map<string, CommitRecord>();
  private readonly writer = writerName(randomBytes(6).toString('hex'));

  private constructor(
    private readonly bucket: S3Bucket,
    /** What the probe found: how a key is created once, whether Object Lock works. */
    readonly probe: StoreProbe,
  ) {}

  /**
   * Connects and runs the capability probe (store-probe.ts): a store that fails it is refused
   * with ERR_ARCHIVE_STORE naming the check, before anything of the archive is written.
   */
  static async open(options: S3StoreOptions): Promise<S3Storage> {
    const resolved = resolveS3Options(options);
    const bucket = await S3Bucket.connect(resolved);
    try {
      const objectLock = resolved.retainMs !== undefined;
      const key = JSON.stringify([
        bucket.url(resolved.location.prefix),
        resolved.endpoint ?? null,
        resolved.region,
        resolved.credentials?.accessKeyId ?? null,
        objectLock,
      ]);
      const known = PROBED.get(key);
      if (known !== undefined && Date.now() - known.at < PROBE_REUSE_MS) return new S3Storage(bucket, known.probe);
      const probe = await probeStore(bucket, { objectLock });
      PROBED.set(key, { probe, at: Date.now() });
      return new S3Storage(bucket, probe);
    } catch (error) {
      bucket.close();
      throw error;
    }
  }

  /**
   * Connects for reading only (restore, verify, serve, export): nothing is written, so no probe
   * runs and credentials that may only read will do. A commit record is read as first created
   * (its first version on a versioned bucket), which is right whichever create-once rule the
   * writers kept: where the store honours If-None-Match, a record has one version.
   */
  static async openForReading(options: S3StoreOptions): Promise<S3Storage> {
    const bucket = await S3Bucket.connect(resolveS3Options(options));
    try {
      const features = await bucket.features();
      return new S3Storage(bucket, { createOnce: features.versioned ? 'first-version' : 'if-none-match', ...features });
    } catch (error) {
      bucket.close();
      throw error;
    }
  }

  close(): void {
    this.bucket.close();
  }

  private get prefix(): string {
    return this.bucket.options.location.prefix;
  }

  private get rule(): CreateOnceRule {
    return this.probe.createOnce;
  }

  /** The object key of a store path, checked as every archive path is. */
  private key(path: string): string {
    resolveArchivePath('/store', path);
    return this.prefix + path;
  }

  where(path: string): string {
    return this.bucket.url(this.prefix + path);
  }

  async putFile(path: string, content: string | Uint8Array | AsyncIterable<Uint8Array>): Promise<number> {
    const limit = this.bucket.options.partBytes;
    let bytes: Buffer;
    if (typeof content === 'string' || content instanceof Uint8Array) bytes = Buffer.from(content);
    else {
      const chunks: Buffer[] = [];
      let total = 0;
      for await (const chunk of content) {
        total += chunk.length;
        if (total > limit) throw new ArchiverError('ERR_ARCHIVE_IO', `${this.where(path)}: a file put whole may have ${limit} bytes at most`);
        chunks.push(Buffer.from(chunk));
      }
      bytes = Buffer.concat(chunks);
    }
    await this.bucket.put(this.key(path), bytes);
    return bytes.length;
  }

  read(path: string, range?: ByteRange): Readable {
    return this.bucket.read(this.key(path), range);
  }

  /** The files of a committed bag, from its commit record; a bag never committed is ENOENT. */
  async listBag(bagPath: string): Promise<StoredFile[]> {
    const record = await this.commitOf(bagPath);
    if (record === undefined) {
      throw Object.assign(new Error(`no bag committed at ${this.where(bagPath)}`), { code: 'ENOENT' });
    }
    return record.files.map(({ path, size }) => ({ path, size }));
  }

  /** The commit record of `bagPath`, or undefined when the bag was never committed. */
  async commitOf(bagPath: string): Promise<CommitRecord | undefined> {
    const cached = this.commitsRead.get(bagPath);
    if (cached !== undefined) return cached;
    const key = this.key(`${COMMITS_FOLDER}${bagPath}`);
    const bytes = await readFirstVersion(this.bucket, this.rule, key);
    if (bytes === undefined) return undefined;
    const record = decodeCommit(bytes, this.bucket.url(key), bagPath);
    this.commitsRead.set(bagPath, record);
    if (this.commitsRead.size > COMMITS_CACHED) this.commitsRead.delete(this.commitsRead.keys().next().value!);
    return record;
  }

  async taken(bagPath: string): Promise<boolean> {
    if ((await this.commitOf(bagPath)) !== undefined) return true;
    return (await readFirstVersion(this.bucket, this.rule, this.key(`${CLAIMS_FOLDER}${bagPath}`), 64 * 1024)) !== undefined;
  }

  /**
   * The writer the claim record of `bagPath` names ('' when it names none), or undefined when
   * nobody claimed the name.
   */
  async claimant(bagPath: string): Promise<string | undefined> {
    const claim = await readFirstVersion(this.bucket, this.rule, this.key(`${CLAIMS_FOLDER}${bagPath}`), 64 * 1024);
    return claim === undefined ? undefined : (claimWriter(claim) ?? '');
  }

  /** The Object Lock retention a bag committed now is given (`--retain` from now), or undefined when the store keeps none. */
  retentionFromNow(): Date | undefined {
    const { retainMs } = this.bucket.options;
    return retainMs === undefined ? undefined : new Date(Date.now() + retainMs);
  }

  /**
   * The objects under a bag's name as the store lists them (not the commit record's list):
   * paths relative to the bag, with their sizes, in key order. What verify compares with the
   * commit record.
   */
  async *objectsOf(bagPath: string): AsyncGenerator<StoredFile> {
    const folder = `${this.key(bagPath)}/`;
    for await (const { key, size } of this.bucket.list(folder)) yield { path: key.slice(folder.length), size };
  }

  /** The names of every committed bag, in key order (harvest by harvest, batch by batch). */
  async *committedBags(): AsyncGenerator<string> {
    const folder = this.prefix + COMMITS_FOLDER;
    for await (const { key } of this.bucket.list(folder)) yield key.slice(folder.length);
  }

  /** The names of every claimed bag (committed or not), in key order. */
  async *claimedBags(): AsyncGenerator<string> {
    const folder = this.prefix + CLAIMS_FOLDER;
    for await (const { key } of this.bucket.list(folder)) yield key.slice(folder.length);
  }

  /**
   * Commits a bag sealed in a folder (`bagDir`, left as it is) under its own name `bagPath`, by
   * the commit protocol, as `writer` (`oaibag migrate`). The bag is verified in full first (a
   * damaged bag is ERR_ARCHIVE_DAMAGED, nothing written); every object is read back and its
   * SHA-256 compared before the commit record is made. A bag committed there with the same
   * files is 'present' and left as it is; a name claimed by `writer` before (a copy cut short)
   * is taken up again; a name another writer holds is ERR_ARCHIVE_BAG. `verified`: the bag's
   * files as the caller verified them in full already (an import, against the digests of its
   * unpacking), so that the folder is neither verified nor hashed again here.
   */
  async commitFolderBag(
    bagDir: string,
    bagPath: string,
    writer: string,
    retainUntil?: Date,
    verified?: readonly CommittedFile[],
  ): Promise<'committed' | 'present'> {
    if (verified === undefined) {
      const report = await verifyBag(bagDir);
      if (!report.valid) {
        const first = report.problems[0]!;
        throw new ArchiverError('ERR_ARCHIVE_DAMAGED', `${bagDir} does not verify: ${first.path ? `${first.path}: ` : ''}${first.message}`, {
          path: bagDir,
          hint: 'run `oaibag verify` and `oaibag repair` on the archive first; a damaged bag is not copied',
        });
      }
    }
    const files = verified === undefined ? await describeFolder(bagDir) : [...verified];
    const theirs = await this.commitOf(bagPath);
    if (theirs !== undefined) {
      if (sameFiles(theirs.files, files)) return 'present';
      throw new ArchiverError('ERR_ARCHIVE_BAG', `${this.where(bagPath)} is committed with other files than ${bagDir}`, { path: this.where(bagPath) });
    }
    const claimKey = this.key(`${CLAIMS_FOLDER}${bagPath}`);
    const claim = Buffer.from(`${JSON.stringify({ bag: bagPath, claimed: new Date().toISOString(), writer })}\n`);
    if (!(await createOnce(this.bucket, this.rule, claimKey, claim))) {
      const held = await readFirstVersion(this.bucket, this.rule, claimKey, 64 * 1024);
      if (claimWriter(held) !== writer) {
        throw new ArchiverError('ERR_ARCHIVE_BAG', `another writer holds ${this.where(bagPath)} (claimed, not committed)`, { path: this.where(bagPath) });
      }
    }
    const versions = new Map<string, string | undefined>();
    const queue = [...files];
    const copy = async (): Promise<void> => {
      for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
        const key = this.key(`${bagPath}/${file.path}`);
        const local = join(bagDir, ...file.path.split('/'));
        const answer =
          file.size > this.bucket.options.partBytes
            ? await this.bucket.putInParts(key, local, file.size)
            : await this.bucket.put(key, { file: local, offset: 0, length: file.size });
        const read = createHash('sha256');
        for await (const chunk of this.bucket.read(key, undefined, answer.versionId)) read.update(chunk as Buffer);
        const found = read.digest('hex');
        if (found !== file.sha256) {
          throw new ArchiverError('ERR_ARCHIVE_STORE', `${this.where(`${bagPath}/${file.path}`)} reads back with SHA-256 ${found}, not ${file.sha256}`, {
            path: this.where(`${bagPath}/${file.path}`),
          });
        }
        versions.set(file.path, answer.versionId);
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.bucket.options.uploadsAtOnce, files.length) }, copy));
    if (retainUntil !== undefined) {
      for (const [path, versionId] of versions) await this.bucket.retain(this.key(`${bagPath}/${path}`), versionId, retainUntil);
    }
    const bagInfo = await readFile(join(bagDir, 'bag-info.txt'), 'utf8');
    const record: CommitRecord = {
      format: COMMIT_FORMAT,
      bag: bagPath,
      committed: new Date().toISOString(),
      writer,
      payloadOxum: /^Payload-Oxum:\s*(\S+)/m.exec(bagInfo)?.[1] ?? '',
      files,
      ...(retainUntil ? { retainUntil: retainUntil.toISOString() } : {}),
    };
    if (!(await createOnce(this.bucket, this.rule, this.key(`${COMMITS_FOLDER}${bagPath}`), encodeCommit(record), retainUntil))) {
      this.commitsRead.delete(bagPath);
      const now = await this.commitOf(bagPath);
      if (now !== undefined && sameFiles(now.files, files)) return 'present';
      throw new ArchiverError('ERR_ARCHIVE_BAG', `another writer committed ${this.where(bagPath)} first`, { path: this.where(bagPath) });
    }
    return 'committed';
  }

  /**
   * Places sealed bags: each is claimed, uploaded, locked when the store retains, and
   * committed (s3-commit.ts); `beforeRename` runs once every bag's objects are written and
   * before the first commit record. The temporary copies in tmp/ are removed either way.
   */
  async placeBags(bags: readonly SealedBag[], options: PlaceOptions = {}): Promise<Placement[]> {
    const placements: Array<Placement | undefined> = [];
    const uploaded: Array<{ bag: SealedBag; files: CommittedFile[]; versions: Map<string, string | undefined> } | undefined> = [];
    try {
      for (const bag of bags) {
        try {
          const outcome = await this.claimAndUpload(bag);
          if ('existing' in outcome) placements.push({ bag: outcome.existing });
          else {
            placements.push(undefined);
            uploaded.push({ bag, ...outcome });
          }
        } catch (error) {
          placements.push({ error: archiveIoError(error, `cannot place bag ${this.where(bag.destination)}`) });
        }
      }
      const retainUntil = this.bucket.options.retainMs === undefined ? undefined : new Date(Date.now() + this.bucket.options.retainMs);
      if (retainUntil !== undefined) {
        for (const entry of uploaded) {
          if (entry === undefined) continue;
          for (const [path, versionId] of entry.versions) await this.bucket.retain(this.key(`${entry.bag.destination}/${path}`), versionId, retainUntil);
        }
      }
      // An earlier bag a new version relies on is kept at least as long as the new bag is:
      // before the commit, so that no committed version outlives the bytes it points to.
      if (retainUntil !== undefined) {
        for (const [bagPath, paths] of options.reliedOn ?? []) await this.extendRetention(bagPath, [...paths], retainUntil);
      }
      await options.beforeRename?.();
      let next = 0;
      for (let index = 0; index < placements.length; index++) {
        if (placements[index] !== undefined) continue;
        const entry = uploaded[next++]!;
        placements[index] = await this.commit(entry.bag, entry.files, retainUntil).then(
          (bag) => ({ bag }),
          (error: unknown) => ({ error: archiveIoError(error, `cannot commit bag ${this.where(entry.bag.destination)}`) }),
        );
      }
      return placements as Placement[];
    } finally {
      await Promise.all(bags.map((bag) => rm(bag.tempDir, { recursive: true, force: true })));
    }
  }

  /**
   * Extends the Object Lock retention of files of a committed bag (and of its tag files and
   * commit record, so the bag stays whole) to at least `until`: a newer version relies on
   * bytes it holds. COMPLIANCE retention only ever grows.
   */
  async extendRetention(bagPath: string, paths: readonly string[], until: Date): Promise<void> {
    const record = await this.commitOf(bagPath);
    if (record === undefined) throw new ArchiverError('ERR_ARCHIVE_DAMAGED', `no bag committed at ${this.where(bagPath)}`);
    const keep = new Set([...paths, ...record.files.filter((file) => !file.path.startsWith('data/')).map((file) => file.path)]);
    for (const path of keep) {
      const key = this.key(`${bagPath}/${path}`);
      const current = await this.bucket.retainedUntil(key);
      if (current === undefined || current < until) await this.bucket.retain(key, undefined, until);
    }
    const commitKey = this.key(`${COMMITS_FOLDER}${bagPath}`);
    const first = this.rule === 'first-version' ? (await this.bucket.versions(commitKey)).at(-1)?.versionId : undefined;
    const current = await this.bucket.retainedUntil(commitKey, first);
    if (current === undefined || current < until) await this.bucket.retain(commitKey, first, until);
  }

  /** Claims the bag's name, then uploads its files; a name taken by the same bag is that bag. */
  private async claimAndUpload(bag: SealedBag): Promise<{ existing: FinishedBag } | { files: CommittedFile[]; versions: Map<string, string | undefined> }> {
    const files = await this.describe(bag);
    const claim = Buffer.from(`${JSON.stringify({ bag: bag.destination, claimed: new Date().toISOString(), writer: this.writer })}\n`);
    if (!(await createOnce(this.bucket, this.rule, this.key(`${CLAIMS_FOLDER}${bag.destination}`), claim))) {
      const theirs = await this.commitOf(bag.destination);
      const same = (name: string): boolean => theirs?.files.find((file) => file.path === name)?.sha256 === files.find((file) => file.path === name)?.sha256;
      if (theirs !== undefined && same('manifest-sha256.txt') && same('manifest-sha512.txt')) {
        return { existing: { bagPath: this.where(bag.destination), payloadOxum: bag.payloadOxum, files: bag.files, existing: true } };
      }
      throw new ArchiverError(
        'ERR_ARCHIVE_BAG',
        `another writer holds ${this.where(bag.destination)}${theirs ? ' with a different bag' : ' (claimed, not committed)'}`,
        {
          path: this.where(bag.destination),
          hint: 'the archive never overwrites a bag; the batch is written again under another name',
        },
      );
    }
    const versions = new Map<string, string | undefined>();
    const queue = [...files];
    const upload = async (): Promise<void> => {
      for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
        const key = this.key(`${bag.destination}/${file.path}`);
        const local = join(bag.tempDir, ...file.path.split('/'));
        const answer =
          file.size > this.bucket.options.partBytes
            ? await this.bucket.putInParts(key, local, file.size)
            : await this.bucket.put(key, { file: local, offset: 0, length: file.size });
        versions.set(file.path, answer.versionId);
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.bucket.options.uploadsAtOnce, files.length) }, upload));
    return { files, versions };
  }

  private async commit(bag: SealedBag, files: CommittedFile[], retainUntil: Date | undefined): Promise<FinishedBag> {
    const record: CommitRecord = {
      format: COMMIT_FORMAT,
      bag: bag.destination,
      committed: new Date().toISOString(),
      writer: this.writer,
      payloadOxum: bag.payloadOxum,
      files,
      ...(retainUntil ? { retainUntil: retainUntil.toISOString() } : {}),
    };
    const key = this.key(`${COMMITS_FOLDER}${bag.destination}`);
    if (!(await createOnce(this.bucket, this.rule, key, encodeCommit(record), retainUntil))) {
      throw new ArchiverError('ERR_ARCHIVE_BAG', `another writer committed ${this.where(bag.destination)} first`, { path: this.where(bag.destination) });
    }
    return { bagPath: this.where(bag.destination), payloadOxum: bag.payloadOxum, files: bag.files, existing: false };
  }

  /** Every file of a sealed bag with its size and SHA-256 (the payload's from its manifest, tag files' read). */
  private async describe(bag: SealedBag): Promise<CommittedFile[]> {
    const payload = new Map(bag.files.map((file) => [file.path, file]));
    const found: CommittedFile[] = [];
    const walk = async (dir: string, prefix: string): Promise<void> => {
      for (const entry of await readdir(dir, { withFileTypes: true })) {
        const path = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
        const full = join(dir, entry.name);
        if (entry.isDirectory()) await walk(full, path);
        else {
          const known = payload.get(path);
          found.push({ path, size: known?.size ?? (await lstat(full)).size, sha256: known?.sha256 ?? (await sha256Of(full)) });
        }
      }
    };
    await walk(bag.tempDir, '');
    return found.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }
}

/** Every file of the bag in the folder `bagDir` with its size and SHA-256, in code-unit order. */
async function describeFolder(bagDir: string): Promise<CommittedFile[]> {
  const found: CommittedFile[] = [];
  const walk = async (dir: string, prefix: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const path = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
      const full = join(dir, entry.name);
      if (entry.isDirectory()) await walk(full, path);
      else if (entry.isFile()) found.push({ path, size: (await lstat(full)).size, sha256: await sha256Of(full) });
      else throw new ArchiverError('ERR_ARCHIVE_DAMAGED', `${full} is neither a file nor a folder: a bag holds nothing else`, { path: full });
    }
  };
  await walk(bagDir, '');
  return found.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

function sameFiles(a: readonly CommittedFile[], b: readonly CommittedFile[]): boolean {
  return a.length === b.length && a.every((file, index) => file.path === b[index]!.path && file.size === b[index]!.size && file.sha256 === b[index]!.sha256);
}

/** The writer a claim record names, or undefined. */
function claimWriter(claim: Buffer | undefined): string | undefined {
  try {
    const writer = (JSON.parse(claim?.toString('utf8') ?? '') as { writer?: unknown }).writer;
    return typeof writer === 'string' ? writer : undefined;
  } catch {
    return undefined;
  }
}

async function sha256Of(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
