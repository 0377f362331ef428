// The 14-digit timestamps of replay URLs (`/replay/20261120140301/http://…`), as the Wayback
// Machine and pywb spell them: UTC, year to second. A shorter timestamp (4 to 13 digits) stands
// for the end of the period it names (`2026` is the archive as of the end of 2026), so that it
// never asks for a capture later than the reader meant.

/** The timestamp of an ISO 8601 instant, to the second. */
export function timestamp14(iso: string): string {
  return iso.slice(0, 19).replace(/[-:T]/g, '');
}

/**
 * The last ISO 8601 instant a timestamp covers (`…T14:03:01.999Z`), for comparison with the
 * catalog's `stored_at`; undefined when it is not 4 to 14 digits of a real date.
 */
export function instantOf(timestamp: string): string | undefined {
  if (!/^\d{4,14}$/.test(timestamp)) return undefined;
  const year = Number(timestamp.slice(0, 4));
  const part = (from: number, fallback: number): number => (timestamp.length >= from + 2 ? Number(timestamp.slice(from, from + 2)) : fallback);
  const month = part(4, 12);
  const lastDay = new Date(Date.UTC(year, month, 0)).getUTCDate();
  const fields = [month, part(6, lastDay), part(8, 23), part(10, 59), part(12, 59)];
  const [mo, d, h, mi, s] = fields as [number, number, number, number, number];
  if (timestamp.length % 2 !== 0 || mo < 1 || mo > 12 || d < 1 || d > lastDay || h > 23 || mi > 59 || s > 59) return undefined;
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${String(year).padStart(4, '0')}-${pad(mo)}-${pad(d)}T${pad(h)}:${pad(mi)}:${pad(s)}.999Z`;
}

/** A timestamp for people: `2026-11-20 14:03:01 UTC`. */
export function readableInstant(iso: string): string {
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
}
