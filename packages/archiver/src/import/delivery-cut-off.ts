// `oaibag import --until DATE`: the delivery's cut-off, as the seed's mirror of the American
// Physical Society took its bulk out of band "until a specified date" and harvested updates
// "starting from that date". The delivery holds the source's changes up to the end of the unit
// DATE names (a day, a minute, a second: core/command-line-date.ts), so the first harvest after
// it asks from the first second after that unit. The watermark is kept to the second;
// planHarvest sends it at the granularity Identify gives (a day-granularity repository gets the
// day, which lists that day again: an overlap, never a gap).
import { formatDatestamp } from '@oaibag/oai-pmh';
import { oaiDateOf, parseCommandLineDate } from '../core/command-line-date.js';
import { ArchiverError } from '../core/errors.js';

export interface DeliveryCutOff {
  /** The cut-off as OAI-PMH writes dates (the import's `until`, bag-info.txt's Harvest-Until). */
  until: string;
  /** The source's watermark after the import: the first harvest's `from`, YYYY-MM-DDThh:mm:ssZ. */
  watermark: string;
}

/**
 * The cut-off `value` (the one command-line date grammar), or ERR_ARCHIVE_USAGE naming
 * `--until`: not a date, or after `now` (a delivery cannot hold changes not made yet, and a
 * watermark in the future would skip them).
 */
export function deliveryCutOff(value: string, now: Date = new Date()): DeliveryCutOff {
  const date = parseCommandLineDate(value, '--until');
  if (date.start > now.getTime()) {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `--until ${value} is in the future: the delivery's cut-off is when its copy was taken`);
  }
  // Datestamps are whole seconds: a cut-off inside a second (12:00:00.5) harvests from that second.
  return { until: oaiDateOf(date), watermark: formatDatestamp(Math.floor((date.end + 1) / 1000)) };
}

/** Whether `watermark` is later than `current` (none, or an earlier instant): a watermark never moves back. */
export function movesWatermark(current: string | null, watermark: string): boolean {
  return current === null || Date.parse(watermark) > Date.parse(current);
}
