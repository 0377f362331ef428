// Connections to the other hosts a repository's By-Reference URLs lead to (a handle resolver,
// a CDN, a separate file server): one keep-alive pool per origin, a bounded number of them,
// each pinned to the addresses that were resolved and checked against the address policy,
// so that a DNS answer that changes between the check and the connection (DNS rebinding)
// cannot lead the harvester somewhere it refused to go.

import type { LookupAddress } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { ArchiverError } from '../core/errors.js';
import { type AddressKind, type AddressPolicy, addressKind, refusalOf } from './address-policy.js';
import { Pool } from './undici-pool.js';

/** Resolves a host name to its addresses (node's `dns.lookup` unless a test gives another). */
export type ResolveHost = (hostname: string) => Promise<LookupAddress[]>;

export interface OriginPoolsOptions {
  /** The repository's OAI-PMH endpoint: its addresses decide which non-public refs are its own. */
  repository: URL;
  /** `--allow-private-refs`: connect to any address. */
  allowPrivate?: boolean;
  /** Pools kept open at once; the least recently used is closed beyond it (default 16). */
  maxOrigins?: number;
  /** Connections per origin (default 2). */
  connections?: number;
  idleTimeoutMs?: number;
  resolve?: ResolveHost;
}

interface Entry {
  pool: Pool;
  addresses: LookupAddress[];
}

/**
 * The pools for origins other than the repository's. `pool(url)` resolves the URL's host once
 * per pool, refuses it when any of its addresses is one the policy does not allow
 * (ERR_HARVEST_REF_REFUSED, before any connection is made: a name that answers with both a
 * public and a private address is not to be trusted), and otherwise returns a pool that
 * connects only to those addresses.
 */
export class OriginPools {
  private readonly entries = new Map<string, Promise<Entry>>();
  private readonly closing: Array<Promise<void>> = [];
  private policy?: Promise<AddressPolicy>;
  private readonly resolve: ResolveHost;

  constructor(private readonly options: OriginPoolsOptions) {
    this.resolve = options.resolve ?? ((hostname) => dnsLookup(hostname, { all: true, verbatim: true }));
  }

  /** The pool for `url`'s origin, after its address was checked. */
  async pool(url: URL): Promise<Pool> {
    const origin = url.origin;
    let entry = this.entries.get(origin);
    if (entry) {
      // Most recently used last: the map's order is the eviction order.
      this.entries.delete(origin);
      this.entries.set(origin, entry);
    } else {
      entry = this.open(url);
      this.entries.set(origin, entry);
      entry.catch(() => this.entries.get(origin) === entry && this.entries.delete(origin));
      this.evict();
    }
    return (await entry).pool;
  }

  /** Closes every pool (requests in progress finish first unless `destroy`). */
  async close(destroy = false): Promise<void> {
    const entries = [...this.entries.values()];
    this.entries.clear();
    const opened = await Promise.allSettled(entries);
    for (const result of opened) {
      if (result.status === 'fulfilled') this.closing.push(destroy ? result.value.pool.destroy() : result.value.pool.close());
    }
    await Promise.allSettled(this.closing);
  }

  private evict(): void {
    const max = this.options.maxOrigins ?? 16;
    while (this.entries.size > max) {
      const [origin, oldest] = this.entries.entries().next().value as [string, Promise<Entry>];
      this.entries.delete(origin);
      // Requests already sent on it finish; a later one for that origin opens a new pool.
      this.closing.push(
        oldest.then(
          (entry) => entry.pool.close(),
          () => undefined,
        ),
      );
    }
  }

  private async open(url: URL): Promise<Entry> {
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const addresses = isIP(host) !== 0 ? [{ address: host, family: isIP(host) }] : await this.resolveOrFail(host, url);
    const policy = await this.addressPolicy();
    for (const { address } of addresses) {
      const refusal = refusalOf(address, policy);
      if (refusal === undefined) continue;
      throw new ArchiverError('ERR_HARVEST_REF_REFUSED', `${url.href} is refused: ${host === address ? refusal : `${host} resolves to ${refusal}`}`, {
        hint: 'if this repository may point at hosts on your own network, harvest with --allow-private-refs',
      });
    }
    // Node asks for all addresses (and tries them in turn) or for one; either way only these.
    const pinned = (_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void): void => {
      if (options.all) callback(null, addresses);
      else callback(null, addresses[0]!.address, addresses[0]!.family);
    };
    const timeout = this.options.idleTimeoutMs ?? 120_000;
    const pool = new Pool(url.origin, {
      connections: this.options.connections ?? 2,
      bodyTimeout: timeout,
      headersTimeout: timeout,
      connect: { lookup: pinned as never },
    });
    return { pool, addresses };
  }

  private async resolveOrFail(host: string, url: URL): Promise<LookupAddress[]> {
    try {
      const addresses = await this.resolve(host);
      if (addresses.length === 0) throw Object.assign(new Error('no address'), { code: 'ENOTFOUND' });
      return addresses;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      throw new ArchiverError('ERR_HARVEST_UNREACHABLE', `${url.href}: the host ${host} cannot be resolved${code ? ` (${code})` : ''}`, { cause: error });
    }
  }

  /** The kinds of address the repository's host has (resolved once, shared with the address policy). */
  async repositoryKinds(): Promise<ReadonlySet<AddressKind>> {
    return (await this.addressPolicy()).repositoryKinds;
  }

  /** The repository's own kinds of address, resolved once (a literal needs no DNS). */
  private addressPolicy(): Promise<AddressPolicy> {
    this.policy ??= (async () => {
      const allowPrivate = this.options.allowPrivate === true;
      const host = this.options.repository.hostname.replace(/^\[|\]$/g, '');
      const kinds = new Set<AddressKind>();
      if (isIP(host) !== 0) kinds.add(addressKind(host));
      else for (const { address } of await this.resolve(host).catch(() => [])) kinds.add(addressKind(address));
      return { repositoryKinds: kinds, allowPrivate };
    })();
    return this.policy;
  }
}
