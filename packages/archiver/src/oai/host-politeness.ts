// Politeness per host (issue 25): how gently a harvest treats each host it sends requests to.
// Repositories ask for it in their own ways (DOAJ: one request a second; Dataverse: a sleep per
// client; PANGAEA: HTTP 429 after some sixty records); harvesters answer with a delay between
// requests (metha's -delay) and a cap on the connections they open. Here both are per host
// name, for every request to it: OAI-PMH pages, By-Reference datastreams, their redirects, and
// the retries of each.
import { setTimeout as sleep } from 'node:timers/promises';
import { parseDuration } from '../core/duration.js';
import { ArchiverError } from '../core/errors.js';

export interface Politeness {
  /** Milliseconds between the starts of two requests to one host (0: none). */
  delayMs: number;
  /**
   * Requests open to one host at once: a request holds its connection from its start until its
   * response body is read or dropped. Undefined: 4 to the repository's host, 2 to each other
   * host (as before there was an option).
   */
  maxConnections?: number;
}

/** Requests open at once to the repository's host when the user sets no cap. */
export const DEFAULT_REPOSITORY_CONNECTIONS = 4;
/** Requests open at once to each other host (By-Reference datastreams elsewhere) when the user sets no cap. */
export const DEFAULT_OTHER_HOST_CONNECTIONS = 2;
/** Bounds on what the user may ask for: beyond them a setting is a typo, not politeness. */
export const MAX_DELAY_MS = 3_600_000;
export const MAX_CONNECTIONS = 64;

/** The politeness given (option or mirror configuration), checked; `what` names where it came from in an error. */
export function checkedPoliteness(given: Partial<Politeness> | undefined, what = ''): Politeness {
  const delayMs = given?.delayMs ?? 0;
  if (!Number.isSafeInteger(delayMs) || delayMs < 0 || delayMs > MAX_DELAY_MS) {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `${what}--delay must be between 0 and 1h, not ${delayMs} ms`);
  }
  const maxConnections = given?.maxConnections;
  if (maxConnections !== undefined && (!Number.isSafeInteger(maxConnections) || maxConnections < 1 || maxConnections > MAX_CONNECTIONS)) {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `${what}--max-connections must be a whole number from 1 to ${MAX_CONNECTIONS}, not ${maxConnections}`);
  }
  return { delayMs, ...(maxConnections !== undefined ? { maxConnections } : {}) };
}

/** A delay as written on the command line or in a mirror configuration: a duration (`300ms`, `1s`, `2s500ms`), or `0` for none. */
export function parseDelay(text: string, what: string): number {
  if (text.trim() === '0') return 0;
  const delayMs = parseDuration(text, what);
  if (delayMs > MAX_DELAY_MS) throw new ArchiverError('ERR_ARCHIVE_USAGE', `${what} ${JSON.stringify(text)} is longer than 1h`);
  return delayMs;
}

/** Requests open at once to a host: the user's cap, or the default for the repository's host or another. */
export function connectionsFor(politeness: Politeness, repositoryHost: boolean): number {
  return politeness.maxConnections ?? (repositoryHost ? DEFAULT_REPOSITORY_CONNECTIONS : DEFAULT_OTHER_HOST_CONNECTIONS);
}

/** Ends one request's hold on its host (idempotent). */
export type Release = () => void;

/**
 * One host's turnstile: requests enter in the order they asked, each once fewer than
 * `maxConnections` are open and `delayMs` after the previous one started (or later, when a
 * Retry-After asked the whole host to wait).
 */
export class HostGate {
  private open = 0;
  /** No request starts before this (epoch ms). */
  private nextStartAt = 0;
  /** Resolves when the request before in line has entered (or given up). */
  private line: Promise<void> = Promise.resolve();
  private onRelease: (() => void) | undefined;

  constructor(
    readonly delayMs: number,
    readonly maxConnections: number,
  ) {}

  /** Waits for this request's turn; the returned function ends its hold. Rejects with the signal's reason when it aborts. */
  async enter(signal?: AbortSignal): Promise<Release> {
    const before = this.line;
    let entered!: () => void;
    this.line = new Promise((resolve) => (entered = resolve));
    try {
      await untilAborted(before, signal);
      for (;;) {
        if (this.open >= this.maxConnections) {
          await untilAborted(new Promise<void>((resolve) => (this.onRelease = resolve)), signal);
          continue;
        }
        const wait = this.nextStartAt - Date.now();
        if (wait <= 0) break;
        await sleep(wait, undefined, signal ? { signal } : {});
      }
      this.open++;
      this.nextStartAt = Math.max(this.nextStartAt, Date.now() + this.delayMs);
    } finally {
      // The next in line goes on once this one is in, or once it no longer waits (aborted);
      // one that aborted while an earlier one still waits keeps the order behind that one.
      void before.then(entered);
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.open--;
      const wake = this.onRelease;
      this.onRelease = undefined;
      wake?.();
    };
  }

  /** No request holds it and none has to wait for it: forgetting it loses nothing. */
  get idle(): boolean {
    return this.open === 0 && this.nextStartAt <= Date.now();
  }

  /** The host asked to be left alone until `at` (epoch ms, a Retry-After): no request to it starts before. */
  holdUntil(at: number): void {
    this.nextStartAt = Math.max(this.nextStartAt, at);
  }
}

/** Gates kept before the idle ones are forgotten: a source's refs may name any number of hosts. */
const MAX_GATES = 256;

/** One {@link HostGate} per host name, all with the same politeness. */
export class HostGates {
  private readonly gates = new Map<string, HostGate>();

  constructor(
    readonly politeness: Politeness,
    private readonly repositoryHost: string,
  ) {}

  /** The gate of `url`'s host (http and https, and every port of a host, share one). */
  of(url: URL): HostGate {
    const host = url.hostname;
    let gate = this.gates.get(host);
    if (!gate) {
      if (this.gates.size >= MAX_GATES) for (const [name, old] of this.gates) if (old.idle) this.gates.delete(name);
      gate = new HostGate(this.politeness.delayMs, connectionsFor(this.politeness, host === this.repositoryHost));
      this.gates.set(host, gate);
    }
    return gate;
  }
}

/** `promise`, or the signal's reason as soon as it aborts. */
function untilAborted(promise: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return promise;
  signal.throwIfAborted();
  return new Promise((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    void promise.then(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    });
  });
}
