import { type Command, InvalidArgumentError, Option } from 'commander';
import { ArchiverError } from '../core/errors.js';
import { DEFAULT_OTHER_HOST_CONNECTIONS, DEFAULT_REPOSITORY_CONNECTIONS, MAX_CONNECTIONS, type Politeness, parseDelay } from '../oai/host-politeness.js';

/**
 * Adds `--delay DURATION` and `--max-connections N`, the politeness a harvest keeps towards each
 * host (oai/host-politeness.ts), to `oaibag harvest` and `oaibag mirror`.
 */
export function withPolitenessOptions(command: Command): Command {
  return command
    .addOption(
      new Option('--delay <DURATION>', 'politeness: time between the starts of two requests to one host, e.g. 300ms, 1s (default: none)').argParser(
        (value: string) => {
          try {
            return parseDelay(value, '--delay');
          } catch (error) {
            throw new InvalidArgumentError(error instanceof ArchiverError ? `${error.message} (write 0, 300ms, 1s, 2s500ms)` : String(error));
          }
        },
      ),
    )
    .addOption(
      new Option(
        '--max-connections <N>',
        `politeness: requests open at once to one host (default ${DEFAULT_REPOSITORY_CONNECTIONS} to the repository's, ${DEFAULT_OTHER_HOST_CONNECTIONS} to each other host)`,
      ).argParser((value: string) => {
        const count = Number(value);
        if (!/^\d+$/.test(value) || count < 1 || count > MAX_CONNECTIONS)
          throw new InvalidArgumentError(`expected a whole number from 1 to ${MAX_CONNECTIONS}`);
        return count;
      }),
    );
}

/** The politeness given on the command line; what was not given is left out (the default, or a mirror source's own). */
export function politenessFromOptions(options: { delay?: number; maxConnections?: number }): Partial<Politeness> {
  return {
    ...(options.delay !== undefined ? { delayMs: options.delay } : {}),
    ...(options.maxConnections !== undefined ? { maxConnections: options.maxConnections } : {}),
  };
}
