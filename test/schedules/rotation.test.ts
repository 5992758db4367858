/**
 * Hand-computed cases for the rotation engine. Each expectation is a literal, with a comment
 * deriving it from the rules of DESIGN §6.
 */
import { describe, expect, test } from "bun:test";
import {
  answerAt,
  finalTimeline,
  type LayerSpec,
  onCallAt,
  type ScheduleSpec,
} from "../../src/schedules/rotation.ts";

const at = (iso: string) => Date.parse(iso);
const MON = 1;
const SUN = 7;
const FRI = 5;

function layer(partial: Partial<LayerSpec> & Pick<LayerSpec, "startAt" | "participants">): LayerSpec {
  return {
    id: "primary",
    rotation: "weekly",
    handoffMinute: 9 * 60,
    handoffWeekday: MON,
    restrictions: [],
    ...partial,
  };
}

function who(spec: ScheduleSpec, iso: string): string | null {
  return answerAt(spec, at(iso)).userId;
}

describe("weekly rotation", () => {
  // Monday 2026-01-05 09:00 in Berlin (CET, UTC+1) is 08:00Z; handoffs every Monday 09:00 local.
  const spec: ScheduleSpec = {
    zone: "Europe/Berlin",
    layers: [layer({ startAt: at("2026-01-05T08:00:00Z"), participants: ["ann", "bob", "cy"] })],
    overrides: [],
  };

  test("k counts handoffs in (start_at, t]", () => {
    expect(who(spec, "2026-01-05T07:59:59Z")).toBeNull(); // before start_at: not on call
    expect(who(spec, "2026-01-05T08:00:00Z")).toBe("ann"); // k = 0: the start is not a handoff
    expect(who(spec, "2026-01-12T07:59:59Z")).toBe("ann"); // Mon 08:59:59 local, k = 0
    expect(who(spec, "2026-01-12T08:00:00Z")).toBe("bob"); // handoff instant belongs to the new shift, k = 1
    expect(who(spec, "2026-01-19T08:00:00Z")).toBe("cy"); // k = 2
    expect(who(spec, "2026-01-26T08:00:00Z")).toBe("ann"); // k = 3, 3 mod 3 = 0
  });

  test("until is the next handoff, or start_at before the layer starts", () => {
    expect(onCallAt(spec, at("2026-01-12T08:00:00Z")).until).toBe(at("2026-01-19T08:00:00Z"));
    expect(onCallAt(spec, at("2026-01-01T00:00:00Z"))).toEqual({
      userId: null,
      layer: null,
      until: at("2026-01-05T08:00:00Z"),
    });
  });

  test("a Monday 09:00 handoff stays at 09:00 local across spring-forward in Berlin", () => {
    // 2026-03-29 clocks go 02:00 CET -> 03:00 CEST. Mon 03-23 09:00 CET = 08:00Z, Mon 03-30 09:00 CEST = 07:00Z.
    const berlin: ScheduleSpec = {
      zone: "Europe/Berlin",
      layers: [layer({ startAt: at("2026-03-23T08:00:00Z"), participants: ["ann", "bob"] })],
      overrides: [],
    };
    expect(who(berlin, "2026-03-30T06:59:59Z")).toBe("ann");
    expect(who(berlin, "2026-03-30T07:00:00Z")).toBe("bob");
    expect(onCallAt(berlin, at("2026-03-23T08:00:00Z")).until).toBe(at("2026-03-30T07:00:00Z"));
  });

  test("a Sunday 02:30 handoff in New York's spring gap happens at 03:00 EDT", () => {
    // 2026-03-08 clocks go 02:00 EST -> 03:00 EDT, so 02:30 does not exist that day.
    // Sun 03-01 02:30 EST = 07:30Z; Sun 03-08: the first instant after the gap, 03:00 EDT = 07:00Z;
    // Sun 03-15 02:30 EDT = 06:30Z.
    const ny: ScheduleSpec = {
      zone: "America/New_York",
      layers: [
        layer({
          startAt: at("2026-03-01T07:30:00Z"),
          handoffWeekday: SUN,
          handoffMinute: 150,
          participants: ["ann", "bob", "cy"],
        }),
      ],
      overrides: [],
    };
    expect(who(ny, "2026-03-08T06:59:59Z")).toBe("ann");
    expect(who(ny, "2026-03-08T07:00:00Z")).toBe("bob");
    expect(who(ny, "2026-03-15T06:29:59Z")).toBe("bob");
    expect(who(ny, "2026-03-15T06:30:00Z")).toBe("cy");
  });
});

describe("daily rotation", () => {
  test("a 02:30 handoff on Berlin's spring-forward day happens at 03:00 CEST", () => {
    // Handoffs: 03-28 02:30 CET = 01:30Z (k=1), 03-29 02:30 missing -> 03:00 CEST = 01:00Z (k=2),
    // 03-30 02:30 CEST = 00:30Z (k=3).
    const spec: ScheduleSpec = {
      zone: "Europe/Berlin",
      layers: [
        layer({
          rotation: "daily",
          handoffMinute: 150,
          startAt: at("2026-03-27T01:30:00Z"),
          participants: ["ann", "bob"],
        }),
      ],
      overrides: [],
    };
    expect(who(spec, "2026-03-28T01:29:59Z")).toBe("ann");
    expect(who(spec, "2026-03-28T01:30:00Z")).toBe("bob");
    expect(who(spec, "2026-03-29T00:59:59Z")).toBe("bob");
    expect(who(spec, "2026-03-29T01:00:00Z")).toBe("ann");
    expect(onCallAt(spec, at("2026-03-28T01:30:00Z")).until).toBe(at("2026-03-29T01:00:00Z"));
    expect(who(spec, "2026-03-30T00:30:00Z")).toBe("bob");
  });

  test("a 02:30 handoff on Berlin's fall-back day happens at the first 02:30 only", () => {
    // 2026-10-25 03:00 CEST -> 02:00 CET: 02:30 happens at 00:30Z (CEST) and again at 01:30Z (CET).
    // Handoffs: 10-24 00:30Z (k=1), 10-25 00:30Z (k=2, first occurrence), 10-26 02:30 CET = 01:30Z (k=3).
    const spec: ScheduleSpec = {
      zone: "Europe/Berlin",
      layers: [
        layer({
          rotation: "daily",
          handoffMinute: 150,
          startAt: at("2026-10-23T00:30:00Z"),
          participants: ["ann", "bob"],
        }),
      ],
      overrides: [],
    };
    expect(who(spec, "2026-10-25T00:29:59Z")).toBe("bob");
    expect(who(spec, "2026-10-25T00:30:00Z")).toBe("ann");
    expect(who(spec, "2026-10-25T01:45:00Z")).toBe("ann"); // the second 02:30 is no handoff
    expect(onCallAt(spec, at("2026-10-25T00:30:00Z")).until).toBe(at("2026-10-26T01:30:00Z"));
    expect(who(spec, "2026-10-26T01:30:00Z")).toBe("bob");
  });

  test("a 01:30 handoff on New York's fall-back day happens at the first 01:30", () => {
    // 2026-11-01 02:00 EDT -> 01:00 EST: 01:30 is 05:30Z (EDT) then 06:30Z (EST).
    // Handoffs: 10-31 05:30Z (k=1), 11-01 05:30Z (k=2), 11-02 01:30 EST = 06:30Z (k=3).
    const spec: ScheduleSpec = {
      zone: "America/New_York",
      layers: [
        layer({
          rotation: "daily",
          handoffMinute: 90,
          startAt: at("2026-10-30T05:30:00Z"),
          participants: ["ann", "bob"],
        }),
      ],
      overrides: [],
    };
    expect(who(spec, "2026-11-01T05:29:59Z")).toBe("bob");
    expect(who(spec, "2026-11-01T05:30:00Z")).toBe("ann");
    expect(who(spec, "2026-11-01T06:30:00Z")).toBe("ann");
    expect(who(spec, "2026-11-02T06:29:59Z")).toBe("ann");
    expect(who(spec, "2026-11-02T06:30:00Z")).toBe("bob");
  });
});

describe("restrictions", () => {
  // Business hours Mon-Fri 09:00-17:00 Berlin (CET in January: 08:00Z-16:00Z) over a catch-all layer.
  const spec: ScheduleSpec = {
    zone: "Europe/Berlin",
    layers: [
      layer({
        id: "business",
        startAt: at("2026-01-05T08:00:00Z"),
        participants: ["ann"],
        restrictions: [{ days: [1, 2, 3, 4, 5], start: 9 * 60, end: 17 * 60 }],
      }),
      layer({ id: "catch-all", startAt: at("2026-01-05T08:00:00Z"), participants: ["zed"] }),
    ],
    overrides: [],
  };

  test("inside the window the restricted layer wins; outside it is skipped", () => {
    expect(answerAt(spec, at("2026-01-07T09:00:00Z"))).toEqual({ userId: "ann", layer: "business" }); // Wed 10:00
    expect(who(spec, "2026-01-07T07:59:59Z")).toBe("zed"); // Wed 08:59:59
    expect(who(spec, "2026-01-07T08:00:00Z")).toBe("ann"); // Wed 09:00: window start is inside
    expect(who(spec, "2026-01-07T16:00:00Z")).toBe("zed"); // Wed 17:00: window end is outside
    expect(who(spec, "2026-01-10T09:00:00Z")).toBe("zed"); // Saturday
    expect(onCallAt(spec, at("2026-01-07T09:00:00Z")).until).toBe(at("2026-01-07T16:00:00Z"));
  });

  test("a window past midnight belongs to the day it starts", () => {
    // fri 22:00-06:00 covers Friday 22:00 to Saturday 06:00 (CET: 21:00Z to 05:00Z).
    const night: ScheduleSpec = {
      ...spec,
      layers: [
        layer({
          id: "night",
          startAt: at("2026-01-05T08:00:00Z"),
          participants: ["ann"],
          restrictions: [{ days: [FRI], start: 22 * 60, end: 6 * 60 }],
        }),
        layer({ id: "catch-all", startAt: at("2026-01-05T08:00:00Z"), participants: ["zed"] }),
      ],
    };
    expect(who(night, "2026-01-09T20:59:59Z")).toBe("zed"); // Fri 21:59:59
    expect(who(night, "2026-01-09T21:00:00Z")).toBe("ann"); // Fri 22:00
    expect(who(night, "2026-01-10T04:59:59Z")).toBe("ann"); // Sat 05:59:59, still Friday's window
    expect(who(night, "2026-01-10T05:00:00Z")).toBe("zed"); // Sat 06:00
    expect(who(night, "2026-01-10T22:00:00Z")).toBe("zed"); // Sat 23:00: Saturday has no window
    expect(who(night, "2026-01-08T22:00:00Z")).toBe("zed"); // Thu 23:00
  });

  test("nobody is on call when every layer is restricted away", () => {
    const only: ScheduleSpec = { ...spec, layers: [spec.layers[0] as LayerSpec] };
    expect(onCallAt(only, at("2026-01-10T09:00:00Z"))).toEqual({
      userId: null,
      layer: null,
      until: at("2026-01-12T08:00:00Z"), // Monday 09:00 local, the next window start
    });
  });
});

describe("overrides", () => {
  const base = layer({ startAt: at("2026-01-05T08:00:00Z"), participants: ["ann"] });
  const spec: ScheduleSpec = {
    zone: "Europe/Berlin",
    layers: [base],
    overrides: [
      {
        id: "o1",
        userId: "bob",
        startAt: at("2026-01-07T10:00:00Z"),
        endAt: at("2026-01-07T12:00:00Z"),
        order: 1,
      },
      {
        id: "o2",
        userId: "cy",
        startAt: at("2026-01-07T11:00:00Z"),
        endAt: at("2026-01-07T13:00:00Z"),
        order: 2,
      },
    ],
  };

  test("an override wins inside [start_at, end_at); the last created wins where they overlap", () => {
    expect(who(spec, "2026-01-07T09:59:59Z")).toBe("ann");
    expect(answerAt(spec, at("2026-01-07T10:00:00Z"))).toEqual({ userId: "bob", layer: "override" });
    expect(who(spec, "2026-01-07T11:00:00Z")).toBe("cy"); // o2 created later
    expect(who(spec, "2026-01-07T12:30:00Z")).toBe("cy");
    expect(who(spec, "2026-01-07T13:00:00Z")).toBe("ann"); // end_at is the first uncovered instant
    expect(onCallAt(spec, at("2026-01-07T10:00:00Z")).until).toBe(at("2026-01-07T11:00:00Z"));
  });

  test("an override of the person already on call still reports layer override", () => {
    const same: ScheduleSpec = {
      ...spec,
      overrides: [
        {
          id: "o",
          userId: "ann",
          startAt: at("2026-01-07T10:00:00Z"),
          endAt: at("2026-01-07T11:00:00Z"),
          order: 1,
        },
      ],
    };
    expect(onCallAt(same, at("2026-01-07T09:00:00Z")).until).toBe(at("2026-01-07T10:00:00Z"));
    expect(answerAt(same, at("2026-01-07T10:30:00Z"))).toEqual({ userId: "ann", layer: "override" });
  });
});

describe("final timeline", () => {
  test("merges into segments that tile the interval", () => {
    const spec: ScheduleSpec = {
      zone: "UTC",
      layers: [
        layer({
          rotation: "daily",
          handoffMinute: 0,
          startAt: at("2026-01-01T00:00:00Z"),
          participants: ["ann", "bob"],
        }),
      ],
      overrides: [
        {
          id: "o",
          userId: "cy",
          startAt: at("2026-01-02T06:00:00Z"),
          endAt: at("2026-01-02T18:00:00Z"),
          order: 1,
        },
      ],
    };
    const timeline = finalTimeline(spec, at("2026-01-01T12:00:00Z"), at("2026-01-03T12:00:00Z"));
    expect(
      timeline.map((s) => [
        s.userId,
        s.layer,
        new Date(s.start).toISOString(),
        new Date(s.end).toISOString(),
      ]),
    ).toEqual([
      ["ann", "primary", "2026-01-01T12:00:00.000Z", "2026-01-02T00:00:00.000Z"],
      ["bob", "primary", "2026-01-02T00:00:00.000Z", "2026-01-02T06:00:00.000Z"],
      ["cy", "override", "2026-01-02T06:00:00.000Z", "2026-01-02T18:00:00.000Z"],
      ["bob", "primary", "2026-01-02T18:00:00.000Z", "2026-01-03T00:00:00.000Z"],
      ["ann", "primary", "2026-01-03T00:00:00.000Z", "2026-01-03T12:00:00.000Z"],
    ]);
  });
});
