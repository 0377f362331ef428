// The one grammar of the dates a user gives on the command line (`harvest --from/--until`,
// `urls --from/--until`, `restore --as-of`, `audit --since/--until`), written down once in
// docs/archiver.md ("Dates on the command line"):
//
//   YYYY-MM-DD                                a UTC day
//   YYYY-MM-DDThh:mm[:ss[.fraction]]ZONE      an instant; ZONE is Z or ±hh:mm, and required
//
// The two OAI-PMH forms (YYYY-MM-DD, YYYY-MM-DDThh:mm:ssZ) are in it. A time without a zone is
// refused rather than guessed: an hour's error in `--as-of` restores another state silently.
import { ArchiverError } from './errors.js';

const DAY_MS = 86_400_000;
const GRAMMAR = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2}))?$/i;

/** A date from the command line: the first and the last millisecond of the unit it names. */
export interface CommandLineDate {
  /** Milliseconds since the epoch of the first instant named (a day's midnight UTC). */
  start: number;
  /** The last millisecond of the unit given: the day, the minute, the second, or the instant itself. */
  end: number;
  /** True for a day (`YYYY-MM-DD`). */
  day: boolean;
}

/** The date `value`, or undefined when it is not in the grammar or names no real day or time. */
export function readCommandLineDate(value: string): CommandLineDate | undefined {
  const match = GRAMMAR.exec(value.trim());
  if (!match) return undefined;
  const [, year, month, date, hour, minute, second, fraction, zone] = match;
  const [y, mo, d] = [Number(year), Number(month), Number(date)];
  const [h, mi, s] = [Number(hour ?? 0), Number(minute ?? 0), Number(second ?? 0)];
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59) return undefined;
  let start = Date.UTC(y, mo - 1, d, h, mi, s) + Math.floor(Number(`0${fraction ?? ''}`) * 1000);
  if (new Date(Date.UTC(y, mo - 1, d)).getUTCDate() !== d) return undefined; // 2024-02-30
  if (zone !== undefined && zone.toUpperCase() !== 'Z') {
    const [zh, zm] = [Number(zone.slice(1, 3)), Number(zone.slice(4, 6))];
    if (zh > 23 || zm > 59) return undefined;
    start -= (zone.startsWith('-') ? -1 : 1) * (zh * 3_600_000 + zm * 60_000);
  }
  const unit = hour === undefined ? DAY_MS : second === undefined ? 60_000 : fraction === undefined ? 1_000 : 1;
  return { start, end: start + unit - 1, day: hour === undefined };
}

/** The date of option `option`, or ERR_ARCHIVE_USAGE naming the option, the value and the grammar. */
export function parseCommandLineDate(value: string, option: string): CommandLineDate {
  const parsed = readCommandLineDate(value);
  if (parsed) return parsed;
  throw new ArchiverError(
    'ERR_ARCHIVE_USAGE',
    `${option} ${JSON.stringify(value)} is not a date (YYYY-MM-DD) or a date-time with a zone (YYYY-MM-DDThh:mm:ssZ)`,
    {
      hint: `for example ${option} 2024-01-31 or ${option} 2024-01-31T12:00:00Z (docs/archiver.md, "Dates on the command line")`,
    },
  );
}

/**
 * A command-line date as OAI-PMH sends it: the day as given, or the instant in UTC to the second
 * (`2024-01-31T13:00+01:00` is `2024-01-31T12:00:00Z`).
 */
export function oaiDateOf(date: CommandLineDate): string {
  const iso = new Date(date.start).toISOString();
  return date.day ? iso.slice(0, 10) : `${iso.slice(0, 19)}Z`;
}
