// Sizes as both servers' commands take them (`--by-value-max 16M`).

const UNITS: Record<string, number> = { '': 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3 };

/** `16M` → 16777216, `512K`, `1G`, `1048576` (plain digits are bytes); null for anything else. */
export function byteSize(value: string): number | null {
  const match = /^(\d+)([KMG]?)i?B?$/i.exec(value.trim());
  const bytes = match ? Number(match[1]) * UNITS[match[2]!.toUpperCase()]! : Number.NaN;
  return Number.isSafeInteger(bytes) ? bytes : null;
}
