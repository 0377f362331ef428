import { OPTION_VALUES, type OptionValueRule } from '@oaibag/oai-pmh';
import { InvalidArgumentError } from 'commander';

// The command line's option values. Those `oaibag serve` takes too follow the shared rules of
// @oaibag/oai-pmh, so both servers accept the same values and refuse the others in the same words.

/** `--page-records`, `--page-identifiers`: a whole number of at least 1. */
export const parseCount = optionValue(OPTION_VALUES.count);

/** `--port`: 0 (any free one) to 65535. */
export const parsePort = optionValue(OPTION_VALUES.port);

/** `--by-value-max 16M`: a size in bytes (plain digits are bytes), 0 allowed. */
export const parseByteSize = optionValue(OPTION_VALUES.size);

/** `--page-bytes`: a size of at least 1 byte. */
export const parsePageBytes = optionValue(OPTION_VALUES.pageSize);

/** `--rescan SECONDS`: a whole number of at least 0 (0: never). */
export function parseSeconds(value: string): number {
  if (!/^\d+$/.test(value.trim())) throw new InvalidArgumentError('expected a whole number');
  const count = Number(value);
  if (!Number.isSafeInteger(count)) throw new InvalidArgumentError('the number is too large');
  return count;
}

/** A commander parser of one shared rule: its value, or a usage error saying what was expected. */
function optionValue(rule: OptionValueRule): (value: string) => number {
  return (value) => {
    const number = rule.parse(value);
    if (number === null) throw new InvalidArgumentError(rule.expected);
    return number;
  };
}
