// One bag on object storage as `oaibag verify` checks it (in a verify worker): BagIt, read
// through the store (aip/stored-bag-source.ts: the files the commit record lists), and the
// store's objects against the commit record: every committed file is an object of the size the
// record gives, no object under the bag's name is missing from the record, and every file read
// has the SHA-256 the record gives (each file is hashed once, as the verifier reads it). In
// fast mode payload files are not read: their objects' sizes are still compared.
import { createHash } from 'node:crypto';
import type { StoredFile } from '../aip/aip-storage.js';
import { S3Storage } from '../aip/s3-storage.js';
import { storedBagSource } from '../aip/stored-bag-source.js';
import type { StoreLocation } from '../archive/archive-locations.js';
import type { BagSource } from '../bag/bag-source.js';
import { type BagReport, type BagTally, verifyBagSource } from '../bag/bag-verifier.js';

/** A problem of a bag on object storage that BagIt does not see: its objects against its commit record. */
export interface CommitProblem {
  kind: 'missing' | 'size' | 'checksum' | 'unexpected';
  path: string;
  expected?: string;
  found?: string;
  message: string;
}

export interface StoredBagCheck {
  report: BagReport;
  /** The size of each of `payloads` as an object on the store, or null when there is none. */
  sizes: Array<number | null>;
  commitProblems: CommitProblem[];
}

/** The stores this thread opened, by location: one client each, kept for the thread's life. */
const opened = new Map<string, Promise<S3Storage>>();

function storeAt(location: StoreLocation): Promise<S3Storage> {
  const key = JSON.stringify([location.url, location.endpoint ?? null, location.region ?? null]);
  let store = opened.get(key);
  if (store === undefined) {
    store = S3Storage.openForReading(location);
    opened.set(key, store);
    store.catch(() => opened.delete(key));
  }
  return store;
}

export async function verifyStoredBag(
  location: StoreLocation,
  bagPath: string,
  options: { fast: boolean; tally: BagTally; payloads: readonly string[] },
): Promise<StoredBagCheck> {
  const store = await storeAt(location);
  const record = await store.commitOf(bagPath);
  if (record === undefined) throw Object.assign(new Error(`no bag committed at ${store.where(bagPath)}`), { code: 'ENOENT' });
  const objects = new Map<string, StoredFile>();
  for await (const object of store.objectsOf(bagPath)) objects.set(object.path, object);

  const read = new Map<string, string>();
  const report = await verifyBagSource(hashing(storedBagSource({ storage: store, bagPath }), read), { fast: options.fast, tally: options.tally });

  const problems: CommitProblem[] = [];
  const reported = new Set(report.problems.filter((problem) => problem.kind === 'checksum' || problem.kind === 'tag').map((problem) => problem.path));
  const committed = new Set<string>();
  for (const file of record.files) {
    committed.add(file.path);
    const object = objects.get(file.path);
    if (object === undefined) {
      problems.push({ kind: 'missing', path: file.path, message: `${file.path} is in the commit record but not on the store` });
    } else if (object.size !== file.size) {
      problems.push({
        kind: 'size',
        path: file.path,
        expected: String(file.size),
        found: String(object.size),
        message: `${file.path} is ${object.size} bytes on the store, the commit record gives ${file.size}`,
      });
    } else {
      const found = read.get(file.path);
      if (found !== undefined && found !== file.sha256 && !reported.has(file.path)) {
        problems.push({
          kind: 'checksum',
          path: file.path,
          expected: file.sha256,
          found,
          message: `${file.path} does not match the SHA-256 its commit record gives`,
        });
      }
    }
  }
  for (const path of objects.keys()) {
    if (!committed.has(path)) problems.push({ kind: 'unexpected', path, message: `${path} is on the store under the bag's name but not in its commit record` });
  }
  const sizes = options.payloads.map((path) => (committed.has(path) ? (objects.get(path)?.size ?? null) : null));
  return { report, sizes, commitProblems: problems };
}

/** The source, with the SHA-256 of every file read to its end noted in `read`. */
function hashing(source: BagSource, read: Map<string, string>): BagSource {
  return {
    list: () => source.list(),
    open(path: string): AsyncIterable<Uint8Array> {
      return (async function* () {
        const hash = createHash('sha256');
        for await (const chunk of source.open(path)) {
          hash.update(chunk);
          yield chunk;
        }
        read.set(path, hash.digest('hex'));
      })();
    },
  };
}
