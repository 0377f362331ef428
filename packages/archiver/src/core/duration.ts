import { ArchiverError } from './errors.js';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * Milliseconds of a duration: a whole number and a unit, `ms`, `s`, `m`, `h` or `d`
 * (`300ms`, `90s`, `30m`, `6h`, `1d`), or several run together (`1h30m`, `1s500ms`). Refuses
 * zero and anything else, naming `what` (the option or config field) in the error.
 */
export function parseDuration(text: string, what = 'duration'): number {
  const trimmed = text.trim().toLowerCase();
  const parts = [...trimmed.matchAll(/(\d+)(ms|[smhd])/g)];
  const total = parts.reduce((sum, [, count, unit]) => sum + Number(count) * UNIT_MS[unit!]!, 0);
  if (parts.length === 0 || parts.map(([whole]) => whole).join('') !== trimmed || !Number.isSafeInteger(total) || total <= 0) {
    throw new ArchiverError('ERR_ARCHIVE_USAGE', `${what} ${JSON.stringify(text)} is not a duration`, {
      hint: 'write a whole number and a unit: 300ms, 90s, 30m, 6h, 1d (or 1h30m)',
    });
  }
  return total;
}

/** A duration for people: `6h`, `1h30m`, `45s`, `300ms`, `1s500ms`. */
export function formatDuration(ms: number): string {
  const millis = Math.round(ms) % 1000;
  let rest = Math.floor(Math.round(ms) / 1000);
  let text = '';
  for (const [unit, seconds] of [
    ['d', 86_400],
    ['h', 3_600],
    ['m', 60],
    ['s', 1],
  ] as const) {
    const count = Math.floor(rest / seconds);
    if (count > 0) text += `${count}${unit}`;
    rest -= count * seconds;
  }
  if (millis > 0) text += `${millis}ms`;
  return text || '0s';
}
