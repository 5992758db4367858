/** Time in and out of the API: RFC 3339 in, UTC with milliseconds and `Z` out. */

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

/** Parses an RFC 3339 timestamp to epoch milliseconds, or returns null when it is not one. */
export function parseRfc3339(input: string): number | null {
  // A `+` in an unencoded query string arrives as a space; read a space before the offset as `+`.
  const value = input.replace(/ (\d{2}:\d{2})$/, "+$1");
  const m = RFC3339.exec(value);
  if (!m) return null;
  const [y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0] = m.slice(1, 7).map(Number);
  if (mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo) || h > 23 || mi > 59 || s > 60) return null;
  const ms = Date.parse(value.replace(" ", "T"));
  return Number.isNaN(ms) ? null : ms;
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

export function isoOrNull(ms: number | null | undefined): string | null {
  return ms == null ? null : new Date(ms).toISOString();
}

export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;

/** Parses a short duration such as `15m`, `2h`, `30s` or `7d` to milliseconds. */
export function parseDuration(input: string): number | null {
  const m = /^(\d+)(s|m|h|d)$/.exec(input.trim());
  if (!m) return null;
  const unit = { s: 1000, m: MINUTE, h: HOUR, d: DAY }[m[2] as "s" | "m" | "h" | "d"];
  return Number(m[1]) * unit;
}
