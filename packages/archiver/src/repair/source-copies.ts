// The source's current copy of a payload, the last thing `oaibag repair` tries: the By-Reference
// URL the catalog recorded for those bytes (table `fetches`), fetched as a harvest fetches it —
// the same OaiClient, so the same address policy (no private address the repository is not on
// itself, unless allowed), redirects bounded, the same limits and deadlines — and used only when
// its size and digests are the recorded ones (place-payload.ts). A By-Value payload came inside
// its record and has no URL: it is not fetched again (that would be a harvest's work).
import type { Catalog } from '../catalog/catalog.js';
import { sourceCopiesOf } from '../catalog/repair-queries.js';
import { OaiClient } from '../oai/oai-client.js';
import type { RetryPolicy } from '../oai/retry-policy.js';
import type { SourceLimits } from '../oai/source-limits.js';
import { type ByteOffer, reasonOf } from './byte-offer.js';

export interface SourceCopyOptions {
  retry?: RetryPolicy;
  limits?: Partial<SourceLimits>;
  /** As a harvest's `--allow-private-refs`. */
  allowPrivateRefs?: boolean;
  signal?: AbortSignal;
}

/** A short retry policy: a repair is run by hand or after a verify, not through a night of outages. */
export const REPAIR_RETRY_POLICY: RetryPolicy = { retries: 2, baseDelayMs: 1000, maxDelayMs: 10_000 };

/** Offers of the sources' copies; one client per source, closed by {@link SourceCopies.close}. */
export class SourceCopies {
  private readonly clients = new Map<string, OaiClient>();

  constructor(
    private readonly catalog: Catalog,
    private readonly options: SourceCopyOptions = {},
  ) {}

  /** Offers of the bytes with this sha-256 and size: each By-Reference URL recorded for them, newest first. */
  offers(sha256: string, size: number): ByteOffer[] {
    return sourceCopiesOf(this.catalog, sha256).map(({ baseUrl, ref }) => ({
      origin: `source ${ref}`,
      open: async () => {
        let url: URL;
        try {
          url = new URL(ref);
        } catch {
          return { why: 'not a URL' };
        }
        try {
          const response = await this.client(baseUrl).getDatastream(url, 'the source copy');
          const length = response.headers['content-length'];
          if (typeof length === 'string' && /^\d+$/.test(length) && Number(length) !== size) {
            response.body.destroy();
            return { why: `Content-Length ${length}, the catalog records ${size}` };
          }
          return { bytes: response.body };
        } catch (error) {
          this.options.signal?.throwIfAborted();
          return { why: reasonOf(error) };
        }
      },
    }));
  }

  async close(): Promise<void> {
    await Promise.all([...this.clients.values()].map((client) => client.close()));
  }

  private client(baseUrl: string): OaiClient {
    let client = this.clients.get(baseUrl);
    if (client === undefined) {
      client = new OaiClient(baseUrl, {
        retry: this.options.retry ?? REPAIR_RETRY_POLICY,
        ...(this.options.limits !== undefined ? { limits: this.options.limits } : {}),
        ...(this.options.allowPrivateRefs !== undefined ? { allowPrivateRefs: this.options.allowPrivateRefs } : {}),
        ...(this.options.signal !== undefined ? { signal: this.options.signal } : {}),
      });
      this.clients.set(baseUrl, client);
    }
    return client;
  }
}
