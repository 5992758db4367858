/** Properties of the rotation engine over random schedules and instants (fast-check). */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import {
  answerAt,
  finalTimeline,
  handoffsBetween,
  type LayerSpec,
  type OverrideSpec,
  onCallAt,
  type ScheduleSpec,
} from "../../src/schedules/rotation.ts";
import { toInstant, toLocal, weekday } from "../../src/schedules/zoned.ts";

const ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata"];
const BASE = Date.parse("2026-01-01T00:00:00Z");
const YEAR = 365 * 86_400_000;
const PEOPLE = ["ann", "bob", "cy", "dee", "eve"];

const instant = fc.integer({ min: BASE, max: BASE + YEAR });

const restriction = fc.record({
  days: fc.uniqueArray(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 7 }),
  start: fc.integer({ min: 0, max: 1439 }),
  end: fc.integer({ min: 0, max: 1439 }),
});

const layerSpec = (id: string) =>
  fc.record<LayerSpec>({
    id: fc.constant(id),
    rotation: fc.constantFrom("weekly", "daily"),
    startAt: instant,
    handoffMinute: fc.integer({ min: 0, max: 1439 }),
    handoffWeekday: fc.integer({ min: 1, max: 7 }),
    participants: fc.uniqueArray(fc.constantFrom(...PEOPLE), { minLength: 1, maxLength: 4 }),
    restrictions: fc.array(restriction, { maxLength: 2 }),
  });

const override = (order: number) =>
  fc.tuple(instant, fc.integer({ min: 60_000, max: 10 * 86_400_000 }), fc.constantFrom(...PEOPLE)).map(
    ([startAt, length, userId]): OverrideSpec => ({
      id: `o${order}`,
      userId,
      startAt,
      endAt: startAt + length,
      order,
    }),
  );

const schedule: fc.Arbitrary<ScheduleSpec> = fc.record({
  zone: fc.constantFrom(...ZONES),
  layers: fc
    .tuple(layerSpec("l1"), layerSpec("l2"), layerSpec("l3"))
    .chain((all) => fc.integer({ min: 1, max: 3 }).map((n) => all.slice(0, n))),
  overrides: fc
    .integer({ min: 0, max: 4 })
    .chain((n) =>
      n === 0
        ? fc.constant<OverrideSpec[]>([])
        : fc.tuple(...Array.from({ length: n }, (_, i) => override(i + 1))),
    ),
});

const RUNS = { numRuns: 300 };

describe("rotation properties", () => {
  test("counting handoffs by arithmetic agrees with walking every local day", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...ZONES),
        layerSpec("l"),
        fc.integer({ min: 0, max: 120 * 86_400_000 }),
        (zone, layer, span) => {
          const to = layer.startAt + span;
          let walked = 0;
          const last = toLocal(zone, to).epochDay + 1;
          for (let day = toLocal(zone, layer.startAt).epochDay - 1; day <= last; day++) {
            if (layer.rotation === "weekly" && weekday(day) !== layer.handoffWeekday) continue;
            const handoff = toInstant(zone, day, layer.handoffMinute);
            if (layer.startAt < handoff && handoff <= to) walked += 1;
          }
          expect(handoffsBetween(zone, layer, layer.startAt, to)).toBe(walked);
        },
      ),
      RUNS,
    );
  });

  test("until is after the instant and the answer is constant on [at, until)", () => {
    fc.assert(
      fc.property(
        schedule,
        instant,
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (spec, t, fraction) => {
          const result = onCallAt(spec, t);
          expect(result.until).toBeGreaterThan(t);
          for (const probe of [t, result.until - 1, t + Math.floor((result.until - t) * fraction)]) {
            expect(answerAt(spec, probe)).toEqual({ userId: result.userId, layer: result.layer });
          }
        },
      ),
      RUNS,
    );
  });

  test("on-call(t) equals the segment of final() that contains t", () => {
    fc.assert(
      fc.property(schedule, instant, fc.integer({ min: 0, max: 20 * 86_400_000 }), (spec, from, offset) => {
        const to = from + 21 * 86_400_000;
        const timeline = finalTimeline(spec, from, to);
        const t = from + offset;
        const segment = timeline.find((s) => s.start <= t && t < s.end);
        const answer = answerAt(spec, t);
        expect(segment && { userId: segment.userId, layer: segment.layer }).toEqual(answer);
        // Segments tile the interval with no gap and no overlap.
        expect(timeline[0]?.start).toBe(from);
        expect(timeline[timeline.length - 1]?.end).toBe(to);
        for (let i = 1; i < timeline.length; i++) expect(timeline[i]?.start).toBe(timeline[i - 1]?.end);
      }),
      { numRuns: 100 },
    );
  });

  test("inside an override the latest-created covering override's user is on call", () => {
    fc.assert(
      fc.property(schedule, fc.double({ min: 0, max: 0.999, noNaN: true }), (spec, fraction) => {
        fc.pre(spec.overrides.length > 0);
        const last = spec.overrides[spec.overrides.length - 1] as OverrideSpec;
        const t = last.startAt + Math.floor((last.endAt - last.startAt) * fraction);
        expect(answerAt(spec, t)).toEqual({ userId: last.userId, layer: "override" });
      }),
      RUNS,
    );
  });

  test("with many overlapping overrides, the latest-created one covering t wins (naive scan agrees)", () => {
    const crowded = fc.array(
      fc.tuple(fc.integer({ min: 0, max: 48 }), fc.integer({ min: 1, max: 24 }), fc.constantFrom(...PEOPLE)),
      { maxLength: 30 },
    );
    fc.assert(
      fc.property(crowded, fc.integer({ min: -2, max: 80 }), (raw, hour) => {
        const overrides = raw.map(
          ([start, length, userId], i): OverrideSpec => ({
            id: `o${i}`,
            userId,
            startAt: BASE + start * 3_600_000,
            endAt: BASE + (start + length) * 3_600_000,
            order: i,
          }),
        );
        const spec: ScheduleSpec = { zone: "UTC", layers: [], overrides };
        const t = BASE + hour * 3_600_000 + 1_800_000;
        const covering = overrides.filter((o) => o.startAt <= t && t < o.endAt);
        const naive = covering.length ? (covering[covering.length - 1] as OverrideSpec).userId : null;
        expect(answerAt(spec, t).userId).toBe(naive);
      }),
      RUNS,
    );
  });
});
