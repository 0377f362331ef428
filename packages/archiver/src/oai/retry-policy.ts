/** How a harvest retries transient failures (network errors, 429, 5xx). */
export interface RetryPolicy {
  /** Attempts after the first one. */
  retries: number;
  /** Delay before the first retry, doubled each time (with up to 25% jitter). */
  baseDelayMs: number;
  /** No wait is longer than this, whatever Retry-After asks for. */
  maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { retries: 6, baseDelayMs: 1000, maxDelayMs: 5 * 60 * 1000 };

/** Statuses worth asking again: too many requests, and the server's own failures. */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || status === 408 || (status >= 500 && status <= 599 && status !== 501 && status !== 505);
}

/**
 * How long to wait before retry number `attempt` (1-based). A Retry-After header (seconds or
 * an HTTP date) is honoured, capped at the policy's maximum, so a misconfigured server cannot
 * stall a harvest for days; otherwise exponential backoff with jitter.
 */
export function retryDelayMs(attempt: number, policy: RetryPolicy, retryAfter?: string | undefined, now = Date.now(), random = Math.random): number {
  const asked = parseRetryAfter(retryAfter, now);
  if (asked !== undefined) return Math.min(asked, policy.maxDelayMs);
  const backoff = policy.baseDelayMs * 2 ** Math.max(0, attempt - 1);
  return Math.min(policy.maxDelayMs, Math.round(backoff * (1 + random() * 0.25)));
}

/** Retry-After: delta-seconds or an HTTP-date (RFC 9110 section 10.2.3); undefined if neither. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  if (Number.isNaN(date) || !/[A-Za-z]/.test(text)) return undefined;
  return Math.max(0, date - now);
}
