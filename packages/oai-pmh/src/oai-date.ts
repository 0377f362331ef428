/**
 * The two granularities of OAI-PMH's UTCdatetime (section 3.3): `YYYY-MM-DD` and
 * `YYYY-MM-DDThh:mm:ssZ`. This repository's granularity is seconds, so it takes both.
 */
export type OaiGranularity = 'day' | 'seconds';

/** A `from` or `until` argument turned into the inclusive bound it stands for. */
export interface ParsedOaiDate {
  /** Seconds since the epoch, UTC. */
  seconds: number;
  granularity: OaiGranularity;
}

/** 0001-01-01T00:00:00Z, the earliest instant a four-digit UTCdatetime can name. */
export const MIN_OAI_SECONDS = -62_135_596_800;
/** 9999-12-31T23:59:59Z, the latest instant a four-digit UTCdatetime can name. */
export const MAX_OAI_SECONDS = 253_402_300_799;

const SECONDS_PER_DAY = 86_400;

/**
 * A datestamp as responses carry it: `YYYY-MM-DDThh:mm:ssZ`, UTC, whole seconds (a
 * fraction is dropped, as the repository's granularity is the second). Throws a RangeError
 * for instants a four-digit year cannot express: the caller passed something that is not a
 * datestamp, and writing a malformed one would break every harvester downstream.
 */
export function formatDatestamp(seconds: number): string {
  const whole = Math.floor(seconds);
  if (!Number.isFinite(whole) || whole < MIN_OAI_SECONDS || whole > MAX_OAI_SECONDS) {
    throw new RangeError(`formatDatestamp: ${seconds} seconds is not an instant between the years 0001 and 9999`);
  }
  return `${new Date(whole * 1000).toISOString().slice(0, 19)}Z`;
}

// Exactly the two forms; `\d` without the `u` flag is ASCII digits only.
const DATE_FORM = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2}):(\d{2})Z)?$/;

/**
 * Parses a `from` or `until` argument, or returns null when it is not a legal UTCdatetime:
 * anything but the two exact forms (no lower-case `t`/`z`, offsets, fractions, spaces), or a
 * date that does not exist (February 30th, hour 24, second 60, year 0000). Range limits are
 * inclusive (section 2.7.1), so a day stands for its first second as a `from` and for its
 * last second (`T23:59:59Z`) as an `until`: `until=2024-05-01` includes all of May 1st.
 */
export function parseOaiDate(value: string, bound: 'from' | 'until'): ParsedOaiDate | null {
  if (typeof value !== 'string' || value.length > 20) return null;
  const match = DATE_FORM.exec(value);
  if (match === null) return null;
  const year = Number(match[1]);
  const month = Number(match[2]);
  const day = Number(match[3]);
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  const dayStart = daysFromCivil(year, month, day) * SECONDS_PER_DAY;
  if (match[4] === undefined) {
    return { seconds: bound === 'from' ? dayStart : dayStart + SECONDS_PER_DAY - 1, granularity: 'day' };
  }
  const hour = Number(match[4]);
  const minute = Number(match[5]);
  const second = Number(match[6]);
  // No leap seconds: datestamps are POSIX seconds, which have no 23:59:60.
  if (hour > 23 || minute > 59 || second > 59) return null;
  return { seconds: dayStart + hour * 3600 + minute * 60 + second, granularity: 'seconds' };
}

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeapYear(year) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/**
 * Days from 1970-01-01 to the given proleptic Gregorian date. Done by hand because
 * `Date.UTC` reads years 0–99 as 1900–1999, and year 0001 is legal here.
 */
function daysFromCivil(year: number, month: number, day: number): number {
  // Count years from March, so that the leap day is the last day of its year.
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}
