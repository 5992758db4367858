/**
 * Schedules as the API shows them, and the translation between their API form (`"mon 09:00"`,
 * `"22:00"`, RFC 3339) and the rotation engine's form (weekdays, minutes, epoch ms).
 */
import { Type as T } from "@sinclair/typebox";
import { errors } from "../errors.ts";
import { Name, Strict, Timestamp } from "../http/schema.ts";
import { iso, parseRfc3339 } from "../time.ts";
import type { LayerSpec, OverrideSpec, Restriction } from "./rotation.ts";
import type { ScheduleOverrideTable, ScheduleTable } from "./schedule.table.ts";
import { toLocal } from "./zoned.ts";

export const DAY_NAMES = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"] as const;
const DayName = T.Union(DAY_NAMES.map((d) => T.Literal(d)));
const Clock = T.String({ pattern: "^([01]\\d|2[0-3]):[0-5]\\d$", description: "HH:MM, 24-hour local time." });

const RestrictionSchema = Strict({
  days: T.Array(DayName, {
    minItems: 1,
    maxItems: 7,
    uniqueItems: true,
    description: "Days the window starts on.",
  }),
  start: Clock,
  end: T.String({
    pattern: "^([01]\\d|2[0-3]):[0-5]\\d$",
    description: "HH:MM; not after start means the window ends the next day (equal: 24 hours).",
  }),
});

export const LayerInput = Strict({
  name: T.Optional(Name(100)),
  rotation: T.Union([T.Literal("weekly"), T.Literal("daily")]),
  start_at: Timestamp({ description: "When the layer starts; participants[0] is on call first." }),
  handoff_time: T.Optional(
    T.Union([T.String({ maxLength: 9 }), T.Null()], {
      description: "Weekly: 'mon 09:00'. Daily: 'HH:MM', or omitted for start_at's local time of day.",
    }),
  ),
  participants: T.Array(T.String({ minLength: 1, maxLength: 64 }), { minItems: 1, maxItems: 100 }),
  restrictions: T.Optional(T.Array(RestrictionSchema, { maxItems: 14 })),
});

export const ScheduleInput = Strict({
  name: Name(),
  description: T.Optional(T.String({ maxLength: 2000 })),
  time_zone: T.String({ minLength: 1, maxLength: 64, description: "An IANA time zone, e.g. Europe/Berlin." }),
  team_id: T.Optional(T.Union([T.String({ minLength: 1, maxLength: 64 }), T.Null()])),
  layers: T.Array(LayerInput, { maxItems: 10, description: "Top to bottom: the first layer on call wins." }),
});

export const SchedulePatch = Strict({
  name: T.Optional(Name()),
  description: T.Optional(T.String({ maxLength: 2000 })),
  time_zone: T.Optional(T.String({ minLength: 1, maxLength: 64 })),
  team_id: T.Optional(T.Union([T.String({ minLength: 1, maxLength: 64 }), T.Null()])),
  layers: T.Optional(T.Array(LayerInput, { maxItems: 10 })),
});

const LayerOut = T.Object({
  name: T.String(),
  rotation: T.String(),
  start_at: Timestamp(),
  handoff_time: T.Union([T.String(), T.Null()]),
  participants: T.Array(T.String()),
  restrictions: T.Array(T.Object({ days: T.Array(T.String()), start: T.String(), end: T.String() })),
});

export const Schedule = T.Object({
  id: T.String(),
  name: T.String(),
  description: T.String(),
  time_zone: T.String(),
  team_id: T.Union([T.String(), T.Null()]),
  layers: T.Array(LayerOut),
  created_at: Timestamp(),
  updated_at: Timestamp(),
});

export const OnCallResult = T.Object({
  schedule_id: T.String(),
  at: Timestamp(),
  user_id: T.Union([T.String(), T.Null()]),
  user_email: T.Union([T.String(), T.Null()]),
  layer: T.Union([T.String(), T.Null()], { description: "The layer's name, 'override', or null." }),
  until: Timestamp(),
});

export const TimelineSegment = T.Object({
  user_id: T.Union([T.String(), T.Null()]),
  user_email: T.Union([T.String(), T.Null()]),
  layer: T.Union([T.String(), T.Null()]),
  start: Timestamp(),
  end: Timestamp(),
});

export const Override = T.Object({
  id: T.String(),
  schedule_id: T.String(),
  user_id: T.String(),
  start_at: Timestamp(),
  end_at: Timestamp(),
  reason: T.String(),
  created_by: T.String(),
  created_at: Timestamp(),
});

export const OverrideInput = Strict({
  user_id: T.String({ minLength: 1, maxLength: 64 }),
  start_at: Timestamp(),
  end_at: Timestamp({ description: "The first instant no longer covered." }),
  reason: T.Optional(T.String({ maxLength: 500 })),
});

/** A layer as stored in `schedules.layers`. */
export interface StoredLayer {
  name: string;
  rotation: "weekly" | "daily";
  start_at: number;
  /** null for a daily layer that hands off at start_at's local time of day. */
  handoff_time: string | null;
  participants: string[];
  restrictions: { days: string[]; start: string; end: string }[];
}

type LayerIn = {
  name?: string;
  rotation: "weekly" | "daily";
  start_at: string;
  handoff_time?: string | null;
  participants: string[];
  restrictions?: { days: string[]; start: string; end: string }[];
};

/** Checks the parts TypeBox cannot (handoff shape, unique names) and normalizes each layer. */
export function normalizeLayers(layers: LayerIn[]): StoredLayer[] {
  const names = new Set<string>();
  return layers.map((layer, i) => {
    const path = `layers.${i}`;
    const name = (layer.name ?? `Layer ${i + 1}`).trim();
    if (!name) throw errors.field(`${path}.name`, "must not be empty");
    if (name === "override") throw errors.field(`${path}.name`, "'override' is reserved for overrides");
    if (names.has(name)) throw errors.field(`${path}.name`, "must be unique within the schedule");
    names.add(name);
    const startAt = parseRfc3339(layer.start_at) as number;
    let handoff: string | null = layer.handoff_time ?? null;
    if (layer.rotation === "weekly") {
      const m =
        handoff === null ? null : /^(mon|tue|wed|thu|fri|sat|sun) ([01]\d|2[0-3]):([0-5]\d)$/i.exec(handoff);
      if (!m)
        throw errors.field(
          `${path}.handoff_time`,
          "must be a day and time such as 'mon 09:00' for a weekly layer",
        );
    } else if (handoff !== null && !/^([01]\d|2[0-3]):[0-5]\d$/.test(handoff)) {
      throw errors.field(`${path}.handoff_time`, "must be HH:MM for a daily layer (or omitted)");
    }
    if (handoff !== null) handoff = handoff.toLowerCase();
    return {
      name,
      rotation: layer.rotation,
      start_at: startAt,
      handoff_time: handoff,
      participants: layer.participants,
      restrictions: (layer.restrictions ?? []).map((r) => ({
        days: [...r.days],
        start: r.start,
        end: r.end,
      })),
    };
  });
}

function clockMinutes(clock: string): number {
  const [h, m] = clock.split(":").map(Number);
  return (h ?? 0) * 60 + (m ?? 0);
}

/** The engine's view of a stored layer in `zone`. */
export function toLayerSpec(layer: StoredLayer, zone: string): LayerSpec {
  let handoffMinute: number;
  let handoffWeekday = 1;
  if (layer.rotation === "weekly" && layer.handoff_time) {
    const [day, clock] = layer.handoff_time.split(" ");
    handoffWeekday = DAY_NAMES.indexOf(day as (typeof DAY_NAMES)[number]) + 1;
    handoffMinute = clockMinutes(clock ?? "00:00");
  } else if (layer.handoff_time) {
    handoffMinute = clockMinutes(layer.handoff_time);
  } else {
    handoffMinute = toLocal(zone, layer.start_at).minute;
  }
  const restrictions: Restriction[] = layer.restrictions.map((r) => ({
    days: r.days.map((d) => DAY_NAMES.indexOf(d as (typeof DAY_NAMES)[number]) + 1),
    start: clockMinutes(r.start),
    end: clockMinutes(r.end),
  }));
  return {
    id: layer.name,
    rotation: layer.rotation,
    startAt: layer.start_at,
    handoffMinute,
    handoffWeekday,
    participants: layer.participants,
    restrictions,
  };
}

export function toOverrideSpec(row: ScheduleOverrideTable, order: number): OverrideSpec {
  return { id: row.id, userId: row.user_id, startAt: row.start_at, endAt: row.end_at, order };
}

export function parseLayers(row: ScheduleTable): StoredLayer[] {
  return JSON.parse(row.layers) as StoredLayer[];
}

export function toSchedule(row: ScheduleTable) {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    time_zone: row.time_zone,
    team_id: row.team_id,
    layers: parseLayers(row).map((l) => ({ ...l, start_at: iso(l.start_at) })),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export function toOverride(row: ScheduleOverrideTable) {
  return {
    id: row.id,
    schedule_id: row.schedule_id,
    user_id: row.user_id,
    start_at: iso(row.start_at),
    end_at: iso(row.end_at),
    reason: row.reason,
    created_by: row.created_by,
    created_at: iso(row.created_at),
  };
}
