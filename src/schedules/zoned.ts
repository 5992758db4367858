/**
 * Wall-clock time in an IANA zone, with the DST rules of DESIGN §6: a local time inside a
 * spring-forward gap happens at the first instant after the gap; a local time that occurs twice
 * (autumn) happens at its first occurrence. Local dates are counted as epoch days (days since
 * 1970-01-01 in the local calendar) so that rotation arithmetic is plain integer math.
 */

export const MINUTES_PER_DAY = 24 * 60;

export interface LocalTime {
  /** Days since 1970-01-01 in the zone's calendar. */
  epochDay: number;
  /** Minutes since local midnight, 0..1439. */
  minute: number;
}

/** ISO weekday of an epoch day: 1 = Monday … 7 = Sunday (1970-01-01 was a Thursday). */
export function weekday(epochDay: number): number {
  return ((((epochDay + 3) % 7) + 7) % 7) + 1;
}

/** The local calendar date and minute of an instant in `zone`. */
export function toLocal(zone: string, epochMs: number): LocalTime {
  const local = epochMs + offsetAt(zone, epochMs);
  const epochDay = Math.floor(local / 86_400_000);
  return { epochDay, minute: Math.floor((local - epochDay * 86_400_000) / 60_000) };
}

/**
 * UTC offsets per zone and 15-minute bucket of UTC time. A bucket whose two ends have the same
 * offset has it throughout (zones change offset at most once in 15 minutes); a bucket holding
 * a transition is marked and always computed exactly.
 */
const offsetCache = new Map<string, Map<number, number>>();
const BUCKET_MS = 15 * 60_000;
const OFFSET_CACHE_LIMIT = 100_000;

function offsetAt(zone: string, epochMs: number): number {
  let cache = offsetCache.get(zone);
  if (!cache) {
    cache = new Map();
    offsetCache.set(zone, cache);
  }
  const bucket = Math.floor(epochMs / BUCKET_MS);
  const known = cache.get(bucket);
  if (known !== undefined) return Number.isNaN(known) ? exactOffset(zone, epochMs) : known;
  if (cache.size >= OFFSET_CACHE_LIMIT) cache.clear();
  const first = exactOffset(zone, bucket * BUCKET_MS);
  const last = exactOffset(zone, bucket * BUCKET_MS + BUCKET_MS - 1);
  cache.set(bucket, first === last ? first : Number.NaN);
  return first === last ? first : exactOffset(zone, epochMs);
}

function exactOffset(zone: string, epochMs: number): number {
  return (
    Temporal.Instant.fromEpochMilliseconds(epochMs).toZonedDateTimeISO(zone).offsetNanoseconds / 1_000_000
  );
}

/**
 * Local-to-instant results per zone, keyed by `epochDay * 1440 + minute`. The engine asks for
 * the same handoff and window edges again and again; a zone's rules do not change while the
 * process runs, so the answers can be kept (the map is emptied when it grows large).
 */
const instantCache = new Map<string, Map<number, number>>();
const INSTANT_CACHE_LIMIT = 100_000;

/** The instant of local `minute` on local `epochDay` in `zone`, by the gap and overlap rules. */
export function toInstant(zone: string, epochDay: number, minute: number): number {
  let cache = instantCache.get(zone);
  if (!cache) {
    cache = new Map();
    instantCache.set(zone, cache);
  }
  const key = epochDay * MINUTES_PER_DAY + minute;
  const known = cache.get(key);
  if (known !== undefined) return known;
  if (cache.size >= INSTANT_CACHE_LIMIT) cache.clear();
  const value = computeInstant(zone, epochDay, minute);
  cache.set(key, value);
  return value;
}

function computeInstant(zone: string, epochDay: number, minute: number): number {
  const date = new Date(epochDay * 86_400_000);
  const local = new Temporal.PlainDateTime(
    date.getUTCFullYear(),
    date.getUTCMonth() + 1,
    date.getUTCDate(),
    Math.floor(minute / 60),
    minute % 60,
  );
  const zoned = local.toZonedDateTime(zone, { disambiguation: "earlier" });
  if (zoned.hour * 60 + zoned.minute === minute && zoned.day === local.day) return zoned.epochMilliseconds;
  // The local time does not exist (spring gap): the first instant after the gap.
  const transition = zoned.getTimeZoneTransition("next");
  return transition ? transition.epochMilliseconds : zoned.epochMilliseconds;
}

export function isValidZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en", { timeZone: zone });
    return zone.length > 0;
  } catch {
    return false;
  }
}
