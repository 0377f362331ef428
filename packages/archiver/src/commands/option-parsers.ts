import { InvalidArgumentError } from 'commander';
import type { Compression } from '../oai/oai-client.js';

/**
 * The one parser of whole-number options (`--concurrency`, `--jobs`, `--harvest`): digits only,
 * at least 1; anything else is a usage error that says what was expected.
 */
export function wholeNumber(value: string): number {
  const number = Number(value);
  if (!/^\d+$/.test(value) || number < 1 || !Number.isSafeInteger(number)) throw new InvalidArgumentError('expected a whole number of at least 1');
  return number;
}

/** `--compression`: auto, always or never (see OaiClientOptions.compression). */
export function compressionMode(value: string): Compression {
  if (value === 'auto' || value === 'always' || value === 'never') return value;
  throw new InvalidArgumentError('expected auto, always or never');
}
