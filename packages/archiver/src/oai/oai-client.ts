import { pipeline, type Readable, Transform } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { createGunzip, createInflate } from 'node:zlib';
import { ArchiverError } from '../core/errors.js';
import { checkHttpUrl } from '../core/http-url.js';
import { shown } from '../core/remote-text.js';
import { onLocalNetwork } from './address-policy.js';
import { checkedPoliteness, connectionsFor, HostGates, type Politeness, type Release } from './host-politeness.js';
import { OriginPools, type ResolveHost } from './origin-pools.js';
import { DEFAULT_RETRY_POLICY, isRetryableStatus, parseRetryAfter, type RetryPolicy, retryDelayMs } from './retry-policy.js';
import { limitError, type SourceLimits, sourceLimits } from './source-limits.js';
import { Pool, undiciErrors } from './undici-pool.js';

export interface Credentials {
  user: string;
  password: string;
}

export interface OaiClientOptions {
  credentials?: Credentials;
  retry?: RetryPolicy;
  userAgent?: string;
  /** Called before each wait, to log it. */
  onRetry?: (info: { attempt: number; delayMs: number; reason: string }) => void;
  /**
   * A delay between the starts of two requests to one host, and a cap on the requests open to
   * one host at once (oai/host-politeness.ts); default: no delay, 4 to the repository's host
   * and 2 to each other host.
   */
  politeness?: Partial<Politeness> | undefined;
  /** Milliseconds without a byte before a response is given up (then retried); default `limits.idleMs`. */
  idleTimeoutMs?: number;
  /** Bounds on what the source controls (oai/source-limits.ts); the defaults where not given. */
  limits?: Partial<SourceLimits> | undefined;
  /**
   * Stops everything in progress (requests, bodies being read, waits between retries): the
   * pending call rejects with the signal's reason and nothing is retried.
   */
  signal?: AbortSignal;
  /**
   * Lets By-Reference URLs (and their redirects) lead to loopback, private, link-local and
   * other non-public addresses of a kind the repository is not on itself (`--allow-private-refs`).
   */
  allowPrivateRefs?: boolean;
  /**
   * The repository answered before (the catalog recorded its Identify). Until it has answered,
   * before or in this run, an OAI-PMH request whose host name does not resolve or whose
   * connection is refused fails at once (ERR_HARVEST_UNREACHABLE) instead of being retried for
   * minutes: that is a typo or a wrong port far more often than an outage, and retries are for
   * a source known to be there. Default false.
   */
  answeredBefore?: boolean;
  /** How host names of other origins are resolved (default: the system's resolver). */
  resolveHost?: ResolveHost;
  /**
   * Whether OAI-PMH responses are asked for compressed (`Accept-Encoding: gzip, deflate`):
   * `always`, `never`, or `auto` (the default): compressed unless the repository is on this
   * machine or its local network. A page of By-Value records is mostly base64, which gzip
   * shrinks by only a quarter for about 10 ms of CPU per MB on each side (measured,
   * docs/archiver.md); that pays off on a link slower than about 200 Mbit/s, not on a LAN.
   */
  compression?: Compression;
}

/** See OaiClientOptions.compression. */
export type Compression = 'auto' | 'always' | 'never';

const COMPRESSED = 'gzip, deflate';

/** A response whose status was 200, with its body decompressed. */
export interface OaiHttpResponse {
  body: Readable;
  headers: Record<string, string | string[] | undefined>;
}

/** A datastream's 200 response after its redirects: the body as sent, where it came from. */
export interface DatastreamResponse extends OaiHttpResponse {
  /** The URL the bytes came from (the `ref` itself, or the last redirect's target). */
  url: URL;
  /** Each redirect's target in order; empty when the `ref` answered itself. */
  redirects: string[];
}

/** Redirects followed from a By-Reference URL, as curl and browsers do. */
export const MAX_REDIRECTS = 10;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/**
 * HTTP for a harvest: one keep-alive undici Pool per repository, gzip/deflate accepted,
 * Basic credentials when given, and retries with backoff for network errors, 429 and 5xx
 * (honouring Retry-After). Retries cover getting a response; a body that fails half-way is
 * the caller's to ask for again (the page is re-requested with the same arguments).
 */
export class OaiClient {
  readonly endpoint: URL;
  /** Requests sent, retries included (for the harvest summary). */
  requests = 0;
  private readonly pool: Pool;
  /** Pools for the other origins By-Reference URLs lead to. */
  private readonly others: OriginPools;
  private autoEncoding: Promise<string> | undefined;
  private readonly options: OaiClientOptions;
  readonly limits: SourceLimits;
  /** A request was given up while undici still waited for its response (see close()). */
  private abandonedRequests = false;
  /** The repository has answered (see OaiClientOptions.answeredBefore). */
  private answered: boolean;
  /** The politeness every request keeps (checked). */
  readonly politeness: Politeness;
  private readonly gates: HostGates;

  constructor(endpoint: string, options: OaiClientOptions = {}) {
    this.endpoint = new URL(checkHttpUrl(endpoint, 'the base URL'));
    this.answered = options.answeredBefore === true;
    this.options = options;
    this.limits = sourceLimits(options.limits);
    const idleMs = options.idleTimeoutMs ?? this.limits.idleMs;
    this.politeness = checkedPoliteness(options.politeness);
    this.gates = new HostGates(this.politeness, this.endpoint.hostname);
    this.pool = new Pool(this.endpoint.origin, {
      connections: this.repositoryConnections,
      bodyTimeout: idleMs,
      headersTimeout: idleMs,
    });
    this.others = new OriginPools({
      repository: this.endpoint,
      ...(options.allowPrivateRefs !== undefined ? { allowPrivate: options.allowPrivateRefs } : {}),
      idleTimeoutMs: idleMs,
      connections: connectionsFor(this.politeness, false),
      ...(options.resolveHost !== undefined ? { resolve: options.resolveHost } : {}),
    });
  }

  /** Requests open at once to the repository's host (see OaiClientOptions.politeness). */
  get repositoryConnections(): number {
    return connectionsFor(this.politeness, true);
  }

  /** GET of the endpoint with these OAI-PMH arguments. */
  oai(args: Record<string, string>): Promise<OaiHttpResponse> {
    const url = new URL(this.endpoint);
    for (const [name, value] of Object.entries(args)) url.searchParams.append(name, value);
    return this.get(url, args.verb ?? 'OAI-PMH request');
  }

  /**
   * An OAI-PMH response small enough to read whole (Identify, ListMetadataFormats), as text.
   * A body that breaks off (a reset, a bad gzip stream, or an OAI-PMH document without its end
   * tag) is asked for again like a failed request; after the retries, ERR_HARVEST_UNREACHABLE.
   */
  async oaiText(args: Record<string, string>, maxBytes: number): Promise<string> {
    const policy = this.options.retry ?? DEFAULT_RETRY_POLICY;
    const signal = this.options.signal;
    const what = `${args.verb ?? 'OAI-PMH request'} of ${this.endpoint.href}`;
    for (let attempt = 0; ; attempt++) {
      const response = await this.oai(args);
      let reason: string;
      try {
        const text = await readWhole(response.body, maxBytes, what);
        if (!brokeOff(text)) return text;
        reason = 'the response ended before </OAI-PMH>';
      } catch (error) {
        if (error instanceof ArchiverError) throw error;
        signal?.throwIfAborted();
        reason = isNetworkError(error) ? describeNetworkError(error) : (error as Error).message;
      }
      if (attempt >= policy.retries)
        throw new ArchiverError('ERR_HARVEST_UNREACHABLE', `${what} failed after ${attempt + 1} attempt${attempt === 0 ? '' : 's'}: ${reason}`);
      const delayMs = retryDelayMs(attempt + 1, policy);
      this.options.onRetry?.({ attempt: attempt + 1, delayMs, reason });
      await sleep(delayMs, undefined, signal ? { signal } : {});
    }
  }

  /** GET of a URL on the repository's origin (OAI-PMH requests), decompressed, with retries. */
  async get(url: URL, what: string, extraHeaders: Record<string, string> = {}): Promise<OaiHttpResponse> {
    if (url.origin !== this.endpoint.origin) {
      throw new ArchiverError('ERR_HARVEST_PROTOCOL', `${what} ${url.href} is not on the repository's origin ${this.endpoint.origin}`);
    }
    const headers = { ...this.headers(true), 'accept-encoding': await this.acceptEncoding(), ...extraHeaders };
    const response = await this.send(url, what, this.pool, headers, false, 'pageDeadlineMs');
    const received = { bytes: 0 };
    const body = decoded(response.body, response.headers, received, `${what} ${shown(url.href)}`);
    return { body: keepErrorForReader(this.boundedResponse(body, received, `${what} ${shown(url.href)}`)), headers: response.headers };
  }

  /**
   * The decoded body, ended with ERR_HARVEST_LIMIT once it passes `pageBytes`, or decodes to
   * more than `compressionRatio` times what was received (past its first MiB): a compression
   * bomb stops within a MiB or so, whatever it would have grown to.
   */
  private boundedResponse(body: Readable, received: { bytes: number }, what: string): Readable {
    const limits = this.limits;
    let size = 0;
    const bounded = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        size += chunk.length;
        if (size > limits.pageBytes) return callback(limitError('pageBytes', limits, what, `more than ${limits.pageBytes} bytes`));
        if (received.bytes > 0 && size > 1024 * 1024 && size > limits.compressionRatio * received.bytes) {
          return callback(limitError('compressionRatio', limits, what, `${size} bytes decoded from ${received.bytes} received`));
        }
        callback(null, chunk);
      },
    });
    pipeline(body, bounded, () => undefined);
    return bounded;
  }

  /** What OAI-PMH requests accept (see OaiClientOptions.compression), decided once. */
  acceptEncoding(): Promise<string> {
    const mode = this.options.compression ?? 'auto';
    if (mode !== 'auto') return Promise.resolve(mode === 'always' ? COMPRESSED : 'identity');
    this.autoEncoding ??= this.others.repositoryKinds().then((kinds) => (onLocalNetwork(kinds) ? 'identity' : COMPRESSED));
    return this.autoEncoding;
  }

  /**
   * GET of a By-Reference datastream: redirects followed (301, 302, 303, 307, 308; at most
   * {@link MAX_REDIRECTS}, a loop refused), to any http(s) host whose address the policy allows
   * (see origin-pools.ts). Credentials go only to the repository's own origin, and only until a
   * redirect leaves it. The body is the bytes as sent (`Accept-Encoding: identity`, nothing
   * decoded): they are what the record's digest and Content-Length describe.
   */
  async getDatastream(ref: URL, what: string): Promise<DatastreamResponse> {
    const chain: URL[] = [ref];
    let trusted = true;
    for (let url = ref; ; ) {
      if (url.protocol !== 'http:' && url.protocol !== 'https:') {
        throw new ArchiverError(
          'ERR_HARVEST_REF_REFUSED',
          `${what}: ${describeChain(chain)} leads to a ${url.protocol.slice(0, -1)} URL; only http and https are followed`,
        );
      }
      const sameOrigin = url.origin === this.endpoint.origin;
      trusted &&= sameOrigin;
      const pool = sameOrigin ? this.pool : await this.others.pool(url);
      const response = await this.send(url, what, pool, { ...this.headers(trusted), 'accept-encoding': 'identity' }, true, 'datastreamDeadlineMs');
      if (response.statusCode === 200) {
        return { body: keepErrorForReader(response.body), headers: response.headers, url, redirects: chain.slice(1).map((hop) => hop.href) };
      }
      await response.body.dump();
      const location = firstHeader(response.headers.location);
      let next: URL;
      try {
        next = new URL(location ?? '', url);
        if (location === undefined) throw new Error('no Location');
      } catch {
        throw new ArchiverError('ERR_HARVEST_PROTOCOL', `${what} ${url.href} answered HTTP ${response.statusCode} without a usable Location`);
      }
      next.hash = '';
      if (chain.some((seen) => seen.href === next.href)) {
        throw new ArchiverError('ERR_HARVEST_REDIRECTS', `${what}: the redirects loop: ${describeChain([...chain, next])}`);
      }
      chain.push(next);
      if (chain.length - 1 > MAX_REDIRECTS) {
        throw new ArchiverError('ERR_HARVEST_REDIRECTS', `${what}: more than ${MAX_REDIRECTS} redirects: ${describeChain(chain)}`);
      }
      url = next;
    }
  }

  /**
   * One GET through `pool`, retried for network errors, 429 and 5xx; resolves with a 200 (or,
   * when `redirects` is true, a redirect status) and throws a coded error for anything else.
   */
  private async send(
    url: URL,
    what: string,
    pool: Pool,
    headers: Record<string, string>,
    redirects: boolean,
    deadline: 'pageDeadlineMs' | 'datastreamDeadlineMs',
  ): Promise<UndiciResponse> {
    const policy = this.options.retry ?? DEFAULT_RETRY_POLICY;
    const signal = this.options.signal;
    for (let attempt = 0; ; attempt++) {
      let reason: string;
      let retryAfter: string | undefined;
      signal?.throwIfAborted();
      const gate = this.gates.of(url);
      let release: Release | undefined;
      try {
        // Politeness first (its wait is not the request's): the host's delay and connection cap.
        release = await gate.enter(signal);
        this.requests++;
        // The signal is not handed to undici: a request given one read a 1 GiB body without
        // backpressure (1.4 GB RSS, 0.9 MB/s). We stop the wait and the body ourselves, and
        // so the request's deadline: a server trickling a byte now and then never trips the
        // idle timeout, only this.
        const stop = new AbortController();
        const late = limitError(deadline, this.limits, `${what} ${shown(url.href)}`, 'it did not end in time');
        const timer = setTimeout(() => stop.abort(late), this.limits[deadline]);
        timer.unref();
        const stopNow = (): void => stop.abort(signal?.reason);
        signal?.addEventListener('abort', stopNow, { once: true });
        const settle = (): void => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', stopNow);
          release?.();
        };
        const request = pool.request({ path: `${url.pathname}${url.search}`, method: 'GET', headers });
        let response: UndiciResponse;
        try {
          response = await untilAborted(request, stop.signal);
          if (pool === this.pool) this.answered = true;
        } catch (error) {
          settle();
          // Given up before its headers came (its deadline, or the harvest stopped): undici
          // still waits for them, up to the idle timeout, and close() would wait with it.
          if (stop.signal.aborted) this.abandonedRequests = true;
          throw error;
        }
        keepErrorForReader(response.body);
        if (response.statusCode === 200 || (redirects && REDIRECT_STATUSES.has(response.statusCode))) {
          destroyOnAbort(response.body, stop.signal);
          response.body.once('close', settle);
          return response;
        }
        reason = `HTTP ${response.statusCode}`;
        retryAfter = firstHeader(response.headers['retry-after']);
        // A Retry-After is the host's wish, not this request's: its other requests wait too,
        // from before this one's connection is given back.
        const asked = parseRetryAfter(retryAfter);
        if (asked !== undefined) gate.holdUntil(Date.now() + Math.min(asked, policy.maxDelayMs));
        await response.body.dump().finally(settle);
        if (!isRetryableStatus(response.statusCode)) {
          const status = response.statusCode;
          const location = REDIRECT_STATUSES.has(status) ? firstHeader(response.headers.location) : undefined;
          throw new ArchiverError(
            status === 401 || status === 403 ? 'ERR_HARVEST_UNREACHABLE' : 'ERR_HARVEST_PROTOCOL',
            `${what} ${shown(url.href)} answered HTTP ${status}${location !== undefined ? ` (to ${shown(location)})` : ''}`,
            { hint: this.hintFor(status, url, headers, location) },
          );
        }
      } catch (error) {
        release?.();
        if (error instanceof ArchiverError) throw error;
        signal?.throwIfAborted();
        if (!isNetworkError(error)) throw error;
        // Only OAI-PMH requests (get(), the one caller without redirects): an import's datastreams keep their retries.
        if (!redirects && !this.answered) throwIfNeverThere(error, `${what} ${shown(url.href)}`, url);
        reason = describeNetworkError(error);
      }
      if (attempt >= policy.retries) {
        throw new ArchiverError(
          'ERR_HARVEST_UNREACHABLE',
          `${what} ${shown(url.href)} failed after ${attempt + 1} attempt${attempt === 0 ? '' : 's'}: ${reason}`,
        );
      }
      const delayMs = retryDelayMs(attempt + 1, policy, retryAfter);
      this.options.onRetry?.({ attempt: attempt + 1, delayMs, reason: `${what} ${shown(url.href)}: ${reason}` });
      await sleep(delayMs, undefined, signal ? { signal } : {});
    }
  }

  /**
   * Closes the connections. After the signal aborted, or a request was given up at its
   * deadline before its headers came (a server trickling them), requests still waiting for a
   * response are abandoned (destroy) rather than awaited: a server holding one would hold the exit.
   */
  async close(): Promise<void> {
    const abandon = this.options.signal?.aborted === true || this.abandonedRequests;
    await Promise.all([abandon ? this.pool.destroy() : this.pool.close(), this.others.close(abandon)]);
  }

  /** What to do about a status that is not retried. */
  private hintFor(status: number, url: URL, sent: Record<string, string>, location: string | undefined): string | undefined {
    if (status === 401 && this.options.credentials && sent.authorization === undefined) {
      return `the harvest's credentials go only to the repository's origin ${this.endpoint.origin}, not to ${url.origin}`;
    }
    if (status === 401) return 'give --user and --password-file';
    // OAI-PMH requests are not redirected: the base URL is the repository's identity (and
    // where the credentials go), so the user names the new one.
    if (location !== undefined && URL.canParse(location, url.href))
      return `if the repository moved, harvest its new base URL (${new URL(location, url).href.replace(/\?.*$/, '')})`;
    return undefined;
  }

  /** The headers of every request; the credentials only when `withCredentials`. */
  private headers(withCredentials: boolean): Record<string, string> {
    const headers: Record<string, string> = {
      'accept-encoding': COMPRESSED,
      'user-agent': this.options.userAgent ?? 'oaibag',
    };
    const credentials = this.options.credentials;
    if (credentials && withCredentials) {
      headers.authorization = `Basic ${Buffer.from(`${credentials.user}:${credentials.password}`, 'utf8').toString('base64')}`;
    }
    return headers;
  }
}

type UndiciResponse = Awaited<ReturnType<Pool['request']>>;

/** The response, or the signal's reason as soon as it aborts (a late response is discarded). */
function untilAborted(request: Promise<UndiciResponse>, signal: AbortSignal): Promise<UndiciResponse> {
  signal.throwIfAborted();
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      reject(signal.reason);
      void request.then(
        (late) => keepErrorForReader(late.body).destroy(),
        () => undefined,
      );
    };
    signal.addEventListener('abort', onAbort, { once: true });
    request.then(
      (response) => {
        signal.removeEventListener('abort', onAbort);
        resolve(response);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** Ends a body being read when the signal aborts, so its reader fails at once. */
function destroyOnAbort(body: Readable, signal: AbortSignal): void {
  const onAbort = (): void => void body.destroy(signal.reason as Error);
  signal.addEventListener('abort', onAbort, { once: true });
  body.once('close', () => signal.removeEventListener('abort', onAbort));
}

/**
 * A body may fail before anyone reads it: a prefetched page whose gzip stream breaks off while
 * the page before it is being committed, or a body destroyed unread (undici's destroy() of a
 * body not read to its end emits an abort error). An 'error' event nobody listens to ends the
 * process; with this listener the stream is destroyed with the error kept, and its reader gets
 * it on the first read (an errored stream rejects its iterator and fails a pipeline). Every
 * body gets it the moment its response arrives, before anything can destroy it.
 */
function keepErrorForReader(body: Readable): Readable {
  body.on('error', () => undefined);
  return body;
}

/** Resolves on 'drain', or on 'close' (destroyed while full: no 'drain' will ever come). */
function drainedOrClosed(stream: Transform): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      stream.off('drain', done);
      stream.off('close', done);
      resolve();
    };
    stream.on('drain', done);
    stream.on('close', done);
  });
}

/** The body decoded as its Content-Encoding says; `received` counts the bytes as sent. */
function decoded(body: Readable, headers: Record<string, string | string[] | undefined>, received: { bytes: number }, what: string): Readable {
  const header = headers['content-encoding'];
  const encoding = (Array.isArray(header) ? header.join(',') : (header ?? '')).trim().toLowerCase();
  if (encoding === '' || encoding === 'identity') return body;
  // 1 MiB output chunks: with zlib's default 16 KiB, reading a large By-Value page spent most
  // of its time joining small buffers (32 MiB record: 14 s with 16 KiB chunks, 2.7 s with 1 MiB).
  const options = { chunkSize: 1 << 20 };
  const inflater = encoding === 'gzip' || encoding === 'x-gzip' ? createGunzip(options) : encoding === 'deflate' ? createInflate(options) : null;
  if (!inflater) {
    body.destroy();
    throw new ArchiverError('ERR_HARVEST_PROTOCOL', `${what} has a Content-Encoding this harvester cannot read: ${shown(encoding, 40)}`);
  }
  pumpInto(body, inflater, received);
  return inflater;
}

/**
 * Feeds `body` into `inflater`, one chunk at a time, waiting for 'drain'. Not `pipe()`: an
 * undici body piped into zlib kept arriving while a slow reader (a disk under write-back
 * pressure) held the inflated side back, and a 1 GiB record grew the harvester to 1.4 GB.
 */
function pumpInto(body: Readable, inflater: Transform, received: { bytes: number }): void {
  inflater.once('close', () => body.destroy());
  void (async () => {
    try {
      for await (const chunk of body as AsyncIterable<Buffer>) {
        if (inflater.destroyed) return;
        received.bytes += chunk.length;
        if (!inflater.write(chunk)) await drainedOrClosed(inflater);
      }
      inflater.end();
    } catch (error) {
      inflater.destroy(error as Error);
    }
  })();
}

/** The whole body as UTF-8 text; over `maxBytes` it is not an answer we expect (ERR_HARVEST_NOT_OAI). */
async function readWhole(body: Readable, maxBytes: number, what: string): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      body.destroy();
      throw new ArchiverError('ERR_HARVEST_NOT_OAI', `${what} is larger than ${maxBytes} bytes`);
    }
    parts.push(chunk);
  }
  return Buffer.concat(parts).toString('utf8');
}

/** An OAI-PMH document that began and did not end: the connection broke off. */
function brokeOff(text: string): boolean {
  return /<(?:[A-Za-z_][\w.-]*:)?OAI-PMH[\s>]/.test(text) && !/<\/(?:[A-Za-z_][\w.-]*:)?OAI-PMH\s*>\s*$/.test(text);
}

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** A redirect chain for a message: `a -> b -> c`, each URL cut at 200 characters. */
function describeChain(chain: readonly URL[]): string {
  return chain.map((url) => (url.href.length > 200 ? `${url.href.slice(0, 200)}…` : url.href)).join(' -> ');
}

function isNetworkError(error: unknown): boolean {
  if (error instanceof undiciErrors.UndiciError) return true;
  const code = (error as NodeJS.ErrnoException).code;
  return typeof code === 'string' && /^(E[A-Z]+|UND_ERR_[A-Z_]+)$/.test(code);
}

/**
 * A repository that never answered, whose host name does not resolve or whose port refuses
 * the connection: ERR_HARVEST_UNREACHABLE at once, with what to check (see
 * OaiClientOptions.answeredBefore). Other network errors (timeouts, resets) are retried.
 */
function throwIfNeverThere(error: unknown, what: string, url: URL): void {
  const code = networkErrorCode(error);
  const hint = 'check the base URL; a source that never answered is not retried, one that answered before is';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_FAIL' || code === 'EAI_NONAME') {
    throw new ArchiverError('ERR_HARVEST_UNREACHABLE', `${what}: the host name ${shown(url.hostname, 100)} does not resolve (${code})`, { hint, cause: error });
  }
  if (code === 'ECONNREFUSED') {
    throw new ArchiverError('ERR_HARVEST_UNREACHABLE', `${what}: ${shown(url.host, 100)} refused the connection (${code})`, {
      hint: 'check the port in the base URL and that the repository is running; a source that never answered is not retried',
      cause: error,
    });
  }
}

/** The error's system code (ENOTFOUND…), on it or on its cause (undici wraps some). */
function networkErrorCode(error: unknown): string | undefined {
  for (let current = error, depth = 0; current instanceof Error && depth < 4; current = current.cause, depth++) {
    const code = (current as NodeJS.ErrnoException).code;
    if (typeof code === 'string' && /^E[A-Z_]+$/.test(code)) return code;
  }
  return undefined;
}

function describeNetworkError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  return `${(error as Error).message}${code ? ` (${code})` : ''}`;
}
