import { type Command, InvalidArgumentError } from 'commander';
import { formatDuration, parseDuration } from '../core/duration.js';
import { ArchiverError } from '../core/errors.js';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from '../oai/retry-policy.js';

/** At most this many retries of one request may be asked for: a bound, whatever the option says. */
export const MAX_RETRIES = 100;

/**
 * `--retries N` and `--max-retry-wait DURATION` of `harvest` and `mirror`: how often a request that
 * failed for a reason that may pass (a network error, 429, 5xx) is tried again, and the longest
 * wait between two tries (Retry-After included).
 */
export function withRetryOptions(command: Command): Command {
  return command
    .option(
      '--retries <N>',
      `tries after the first of a request that failed for a reason that may pass (default ${DEFAULT_RETRY_POLICY.retries}, at most ${MAX_RETRIES})`,
      retries,
    )
    .option(
      '--max-retry-wait <DURATION>',
      `the longest wait before a retry, Retry-After included (default ${formatDuration(DEFAULT_RETRY_POLICY.maxDelayMs)})`,
      (value: string) => {
        try {
          return parseDuration(value, '--max-retry-wait');
        } catch (error) {
          throw new InvalidArgumentError(error instanceof ArchiverError ? error.message : String(error));
        }
      },
    );
}

function retries(value: string): number {
  const number = Number(value);
  if (!/^\d+$/.test(value) || number > MAX_RETRIES) throw new InvalidArgumentError(`expected a whole number from 0 to ${MAX_RETRIES}`);
  return number;
}

/** The retry policy the options ask for, or undefined for the default. */
export function retryPolicyFromOptions(options: { retries?: number; maxRetryWait?: number }): RetryPolicy | undefined {
  if (options.retries === undefined && options.maxRetryWait === undefined) return undefined;
  return {
    ...DEFAULT_RETRY_POLICY,
    ...(options.retries !== undefined ? { retries: options.retries } : {}),
    ...(options.maxRetryWait !== undefined
      ? { maxDelayMs: options.maxRetryWait, baseDelayMs: Math.min(DEFAULT_RETRY_POLICY.baseDelayMs, options.maxRetryWait) }
      : {}),
  };
}

/** `{ retry }` for HarvestOptions and MirrorOptions when the options ask for one, else `{}`. */
export function retryFromOptions(options: { retries?: number; maxRetryWait?: number }): { retry?: RetryPolicy } {
  const retry = retryPolicyFromOptions(options);
  return retry ? { retry } : {};
}
