import { byteSize as parseSize } from '@oaibag/oai-pmh';
import { InvalidArgumentError } from 'commander';
import { checkHttpUrl, type HttpUrlRules } from '../core/http-url.js';
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

/** A size in bytes (`--by-value-max 16M`): digits, with K, M or G. */
export function byteSize(value: string): number {
  const bytes = parseSize(value);
  if (bytes === null) throw new InvalidArgumentError('expected a size in bytes, like 1048576, 512K, 16M or 1G');
  return bytes;
}

/** A TCP port: 0 (any free one) to 65535. */
export function portNumber(value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value) || port > 65535) throw new InvalidArgumentError('expected a port number from 0 to 65535');
  return port;
}

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
