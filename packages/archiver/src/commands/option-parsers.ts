import { InvalidArgumentError } from 'commander';

/**
 * The one parser of whole-number options (`--concurrency`, `--jobs`, `--harvest`): digits only,
 * at least 1; anything else is a usage error that says what was expected.
 */
export function wholeNumber(value: string): number {
  const number = Number(value);
  if (!/^\d+$/.test(value) || number < 1 || !Number.isSafeInteger(number)) throw new InvalidArgumentError('expected a whole number of at least 1');
  return number;
}
