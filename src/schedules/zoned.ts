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
  const z = Temporal.Instant.fromEpochMilliseconds(epochMs).toZonedDateTimeISO(zone);
  return {
    epochDay: Math.floor(Date.UTC(z.year, z.month - 1, z.day) / 86_400_000),
    minute: z.hour * 60 + z.minute,
  };
}

/** The instant of local `minute` on local `epochDay` in `zone`, by the gap and overlap rules. */
export function toInstant(zone: string, epochDay: number, minute: number): number {
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
