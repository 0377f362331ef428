import { type Command, InvalidArgumentError, Option } from 'commander';
import { formatDuration, parseDuration } from '../core/duration.js';
import { ArchiverError } from '../core/errors.js';
import { DEFAULT_SOURCE_LIMITS, SOURCE_LIMIT_OPTIONS, type SourceLimits } from '../oai/source-limits.js';
import { byteSize, wholeNumber } from './option-parsers.js';

type Kind = 'size' | 'duration' | 'count';

/** How each limit is written on the command line, and what its help says. */
const LIMITS: ReadonlyArray<{ name: keyof SourceLimits; kind: Kind; help: string }> = [
  { name: 'datastreamBytes', kind: 'size', help: 'bytes of one datastream whose record promises no size (a promised size is itself the bound)' },
  { name: 'pageBytes', kind: 'size', help: 'decoded bytes of one OAI-PMH response' },
  { name: 'compressionRatio', kind: 'count', help: 'decoded bytes per byte received of a compressed response (past its first MiB)' },
  { name: 'pageRecords', kind: 'count', help: 'records of one page held before it ends and is stored' },
  { name: 'pageXmlBytes', kind: 'size', help: 'record XML of one page held before it ends and is stored' },
  { name: 'pageParts', kind: 'count', help: 'datastreams (payload parts) of one page' },
  { name: 'idleMs', kind: 'duration', help: 'time without a byte, waiting for headers or reading a body (retried)' },
  { name: 'pageDeadlineMs', kind: 'duration', help: 'time one OAI-PMH request may take in all' },
  { name: 'datastreamDeadlineMs', kind: 'duration', help: 'time one By-Reference datastream may take in all' },
  { name: 'emptyPages', kind: 'count', help: 'pages in a row without a record, each with a new resumption token' },
  { name: 'listPages', kind: 'count', help: 'pages of one list' },
  { name: 'tokenChars', kind: 'count', help: 'characters of one resumption token' },
];

function describeDefault(kind: Kind, value: number): string {
  if (kind === 'duration') return formatDuration(value);
  if (kind === 'size') {
    for (const [unit, bytes] of [
      ['G', 1024 ** 3],
      ['M', 1024 ** 2],
      ['K', 1024],
    ] as const) {
      if (value % bytes === 0) return `${value / bytes}${unit}`;
    }
  }
  return String(value);
}

function parserFor(kind: Kind, option: string): (value: string) => number {
  if (kind === 'size') return byteSize;
  if (kind === 'count') return wholeNumber;
  return (value: string) => {
    try {
      return parseDuration(value, option);
    } catch (error) {
      throw new InvalidArgumentError(error instanceof ArchiverError ? `${error.message} (write 90s, 30m, 6h)` : String(error));
    }
  };
}

/**
 * Adds the options of the limits on what a source controls (`--max-page-size 16G`,
 * `--idle-timeout 2m`, …) to `oaibag harvest` and `oaibag mirror`, each with its default shown.
 */
export function withSourceLimitOptions(command: Command): Command {
  for (const { name, kind, help } of LIMITS) {
    const flag = SOURCE_LIMIT_OPTIONS[name];
    const value = kind === 'size' ? '<SIZE>' : kind === 'duration' ? '<DURATION>' : '<N>';
    command.addOption(
      new Option(`${flag} ${value}`, `limit: ${help} (default ${describeDefault(kind, DEFAULT_SOURCE_LIMITS[name])})`).argParser(parserFor(kind, flag)),
    );
  }
  return command;
}

/** The limits given on the command line (commander's camel-cased option names), the others left to their defaults. */
export function sourceLimitsFromOptions(options: Record<string, unknown>): Partial<SourceLimits> {
  const limits: Partial<SourceLimits> = {};
  for (const { name } of LIMITS) {
    const key = SOURCE_LIMIT_OPTIONS[name].slice(2).replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());
    const value = options[key];
    if (typeof value === 'number') limits[name] = value;
  }
  return limits;
}
