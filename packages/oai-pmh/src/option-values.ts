// The values of the options both servers take (`--port`, `--page-records`, `--page-bytes`…):
// one rule and one wording each, so that `oaibag serve` and `oaibag-repository` accept the same
// values and refuse the others with the same words. Each command turns a null into its usage error.

import { byteSize } from './byte-size.js';

/** How one kind of option value is read: the number, or null; and what a refusal says. */
export interface OptionValueRule {
  parse(value: string): number | null;
  /** The refusal, as the command prints it after the option and the value. */
  expected: string;
}

function wholeNumberAtLeast(minimum: number, maximum = Number.MAX_SAFE_INTEGER): (value: string) => number | null {
  return (value) => {
    if (!/^\d+$/.test(value)) return null;
    const number = Number(value);
    return Number.isSafeInteger(number) && number >= minimum && number <= maximum ? number : null;
  };
}

export const OPTION_VALUES = {
  /**
   * A count of things a page or a run holds (`--page-records`, `--page-identifiers`, `--jobs`):
   * 0 is refused: a list of pages of 0 records would never end.
   */
  count: { parse: wholeNumberAtLeast(1), expected: 'expected a whole number of at least 1' },
  /** A TCP port; 0 asks for any free one. */
  port: { parse: wholeNumberAtLeast(0, 65535), expected: 'expected a port number from 0 to 65535' },
  /** A size in bytes where 0 has a meaning (`--by-value-max 0`: By-Reference only). */
  size: { parse: byteSize, expected: 'expected a size in bytes, like 1048576, 512K, 16M or 1G' },
  /** A size a page is cut at (`--page-bytes`): 0 is refused, as for a count. */
  pageSize: {
    parse: (value) => {
      const bytes = byteSize(value);
      return bytes !== null && bytes >= 1 ? bytes : null;
    },
    expected: 'expected a size of at least 1 byte, like 1048576, 512K, 16M or 1G',
  },
} as const satisfies Record<string, OptionValueRule>;
