import { OPTION_VALUES, type OptionValueRule } from '@oaibag/oai-pmh';
import { InvalidArgumentError } from 'commander';
import { checkHttpUrl, type HttpUrlRules } from '../core/http-url.js';
import type { Compression } from '../oai/oai-client.js';

/**
 * The one parser of whole-number options (`--concurrency`, `--jobs`, `--harvest`, `serve
 * --page-records`): digits only, at least 1; anything else is a usage error that says what was
 * expected. The rule and its wording are the repository's too (OPTION_VALUES in @oaibag/oai-pmh).
 */
export const wholeNumber = optionValue(OPTION_VALUES.count);

/** `--compression`: auto, always or never (see OaiClientOptions.compression). */
export function compressionMode(value: string): Compression {
  if (value === 'auto' || value === 'always' || value === 'never') return value;
  throw new InvalidArgumentError('expected auto, always or never');
}

/** A size in bytes (`--by-value-max 16M`): digits, with K, M or G. */
export const byteSize = optionValue(OPTION_VALUES.size);

/** A size a page is cut at (`serve --page-bytes`): as byteSize, but at least 1 byte. */
export const pageByteSize = optionValue(OPTION_VALUES.pageSize);

/** A TCP port: 0 (any free one) to 65535. */
export const portNumber = optionValue(OPTION_VALUES.port);

/**
 * The one parser of every argument and option that takes a URL (`harvest BASEURL`,
 * `serve --base-url`, `import --source`…): an absolute http(s) URL with a host and no
 * credentials, returned as given. Anything else is a usage error of one line naming `name` and
 * the value, thrown as an ArchiverError so that the command prints it as it prints every error
 * (exit 2) instead of commander's message and the help.
 */
export function httpUrl(name: string, rules: HttpUrlRules = {}): (value: string) => string {
  return (value) => checkHttpUrl(value, name, rules);
}

/** A commander parser of one shared rule: its value, or a usage error saying what was expected. */
function optionValue(rule: OptionValueRule): (value: string) => number {
  return (value) => {
    const number = rule.parse(value);
    if (number === null) throw new InvalidArgumentError(rule.expected);
    return number;
  };
}
