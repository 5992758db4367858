/**
 * The rotation engine: who is on call in a schedule at an instant, until when, and the merged
 * timeline over an interval. Pure: no I/O, no clock; every rule of DESIGN §6 lives here.
 *
 * - Layers are evaluated top to bottom; the first layer on call at the instant wins.
 * - A layer is on call from its `startAt`; the participant on duty is participants[k mod n],
 *   k = the number of handoff instants in (startAt, t].
 * - Handoffs and restriction windows are wall-clock times in the schedule's zone (see zoned.ts
 *   for the DST gap and overlap rules); windows are half-open [start, end).
 * - A layer with restrictions is on call only inside one of its windows; a window whose end is
 *   not after its start wraps past midnight and belongs to the day it starts.
 * - An override covering the instant wins over every layer; where overrides overlap, the one
 *   created last wins.
 */
import { toInstant, toLocal, weekday } from "./zoned.ts";

export const HORIZON_MS = 90 * 86_400_000;
export const OVERRIDE_LAYER = "override";

export interface Restriction {
  /** ISO weekdays the window starts on: 1 = Monday … 7 = Sunday. */
  days: readonly number[];
  /** Minutes after local midnight. */
  start: number;
  /** Minutes after local midnight; not after `start` means the window ends the next day. */
  end: number;
}

export interface LayerSpec {
  id: string;
  rotation: "weekly" | "daily";
  startAt: number;
  /** Local minute of day of the handoff. */
  handoffMinute: number;
  /** ISO weekday of a weekly handoff; ignored for daily layers. */
  handoffWeekday: number;
  participants: readonly string[];
  restrictions: readonly Restriction[];
}

export interface OverrideSpec {
  id: string;
  userId: string;
  startAt: number;
  endAt: number;
  /** Creation order: a larger value was created later and wins where overrides overlap. */
  order: number;
}

export interface ScheduleSpec {
  zone: string;
  layers: readonly LayerSpec[];
  overrides: readonly OverrideSpec[];
}

export interface Answer {
  userId: string | null;
  /** The id of the layer on call, `"override"`, or null when nobody is on call. */
  layer: string | null;
}

export interface OnCall extends Answer {
  /** The next instant the answer can change, at most HORIZON_MS after the instant asked. */
  until: number;
}

export interface Segment extends Answer {
  start: number;
  end: number;
}

/** Who is on call at `t`, and until when the answer holds. */
export function onCallAt(spec: ScheduleSpec, t: number): OnCall {
  const answer = answerAt(spec, t);
  const horizon = t + HORIZON_MS;
  let cursor = t;
  for (;;) {
    const next = nextBoundary(spec, cursor);
    if (next === null || next >= horizon) return { ...answer, until: horizon };
    const then = answerAt(spec, next);
    if (then.userId !== answer.userId || then.layer !== answer.layer) return { ...answer, until: next };
    cursor = next;
  }
}

/** The merged on-call timeline over [from, to): adjacent equal answers are one segment. */
export function finalTimeline(spec: ScheduleSpec, from: number, to: number): Segment[] {
  const segments: Segment[] = [];
  let t = from;
  while (t < to) {
    const current = onCallAt(spec, t);
    const end = Math.min(current.until, to);
    segments.push({ userId: current.userId, layer: current.layer, start: t, end });
    t = end;
  }
  return segments;
}

/** The answer at `t` alone, without `until`. */
export function answerAt(spec: ScheduleSpec, t: number): Answer {
  const override = coveringOverride(spec.overrides, t);
  if (override) return { userId: override.userId, layer: OVERRIDE_LAYER };
  for (const layer of spec.layers) {
    if (!layerOnCall(spec.zone, layer, t)) continue;
    const k = handoffsBetween(spec.zone, layer, layer.startAt, t);
    return { userId: layer.participants[k % layer.participants.length] ?? null, layer: layer.id };
  }
  return { userId: null, layer: null };
}

/**
 * Overrides flattened once per overrides array into elementary intervals, each with the
 * override that wins there (the last created among those covering it), so that lookups and the
 * next boundary are binary searches instead of scans.
 */
interface OverrideIndex {
  /** Sorted, distinct instants where the winning override may change. */
  edges: number[];
  /** winners[i] holds on [edges[i], edges[i + 1]); null where no override covers. */
  winners: (OverrideSpec | null)[];
}

const overrideIndexes = new WeakMap<readonly OverrideSpec[], OverrideIndex>();

function overrideIndex(overrides: readonly OverrideSpec[]): OverrideIndex {
  const known = overrideIndexes.get(overrides);
  if (known) return known;
  const edges = [...new Set(overrides.flatMap((o) => [o.startAt, o.endAt]))].sort((a, b) => a - b);
  const byStart = [...overrides].sort((a, b) => a.startAt - b.startAt);
  const active: OverrideSpec[] = [];
  const winners: (OverrideSpec | null)[] = [];
  let next = 0;
  for (const edge of edges) {
    while (next < byStart.length && (byStart[next] as OverrideSpec).startAt <= edge)
      active.push(byStart[next++] as OverrideSpec);
    for (let i = active.length - 1; i >= 0; i--)
      if ((active[i] as OverrideSpec).endAt <= edge) active.splice(i, 1);
    let winner: OverrideSpec | null = null;
    for (const o of active) if (winner === null || o.order > winner.order) winner = o;
    winners.push(winner);
  }
  const index = { edges, winners };
  overrideIndexes.set(overrides, index);
  return index;
}

/** The index of the last edge at or before `t`, or -1. */
function edgeAtOrBefore(edges: number[], t: number): number {
  let lo = 0;
  let hi = edges.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if ((edges[mid] as number) <= t) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

function coveringOverride(overrides: readonly OverrideSpec[], t: number): OverrideSpec | null {
  if (overrides.length === 0) return null;
  const index = overrideIndex(overrides);
  const i = edgeAtOrBefore(index.edges, t);
  return i === -1 ? null : (index.winners[i] ?? null);
}

function nextOverrideEdge(overrides: readonly OverrideSpec[], t: number): number | null {
  if (overrides.length === 0) return null;
  const { edges } = overrideIndex(overrides);
  return edges[edgeAtOrBefore(edges, t) + 1] ?? null;
}

function layerOnCall(zone: string, layer: LayerSpec, t: number): boolean {
  if (t < layer.startAt || layer.participants.length === 0) return false;
  if (layer.restrictions.length === 0) return true;
  const today = toLocal(zone, t).epochDay;
  for (const r of layer.restrictions) {
    // A window that started yesterday may still be open today.
    for (const day of [today - 1, today]) {
      if (!r.days.includes(weekday(day))) continue;
      const [start, end] = windowOn(zone, r, day);
      if (start <= t && t < end) return true;
    }
  }
  return false;
}

/** The instants [start, end) of restriction `r`'s window that starts on local `day`. */
function windowOn(zone: string, r: Restriction, day: number): [number, number] {
  const start = toInstant(zone, day, r.start);
  const end = r.end > r.start ? toInstant(zone, day, r.end) : toInstant(zone, day + 1, r.end);
  return [start, end];
}

function isHandoffDay(layer: LayerSpec, day: number): boolean {
  return layer.rotation === "daily" || weekday(day) === layer.handoffWeekday;
}

/** Handoff days in [a, b] (local epoch days), by arithmetic. */
function handoffDaysIn(layer: LayerSpec, a: number, b: number): number {
  if (b < a) return 0;
  if (layer.rotation === "daily") return b - a + 1;
  const first = a + ((layer.handoffWeekday - weekday(a) + 7) % 7);
  return first > b ? 0 : Math.floor((b - first) / 7) + 1;
}

/**
 * The number of handoff instants in (from, to]. Days strictly between the two local dates
 * count by arithmetic; the days at both ends (and one beyond, for DST overlaps around
 * midnight) are checked against the exact instants.
 */
export function handoffsBetween(zone: string, layer: LayerSpec, from: number, to: number): number {
  if (to <= from) return 0;
  const a = toLocal(zone, from).epochDay;
  const b = toLocal(zone, to).epochDay;
  if (b - a >= 3) {
    let count = handoffDaysIn(layer, a + 2, b - 2);
    for (const day of [a - 1, a, a + 1, b - 1, b, b + 1]) count += exactHandoff(zone, layer, day, from, to);
    return count;
  }
  let count = 0;
  for (let day = a - 1; day <= b + 1; day++) count += exactHandoff(zone, layer, day, from, to);
  return count;
}

function exactHandoff(zone: string, layer: LayerSpec, day: number, from: number, to: number): number {
  if (!isHandoffDay(layer, day)) return 0;
  const at = toInstant(zone, day, layer.handoffMinute);
  return from < at && at <= to ? 1 : 0;
}

/** The first instant after `t` where some input of the answer changes, or null. */
function nextBoundary(spec: ScheduleSpec, t: number): number | null {
  let best: number | null = null;
  const consider = (candidate: number) => {
    if (candidate > t && (best === null || candidate < best)) best = candidate;
  };
  const overrideEdge = nextOverrideEdge(spec.overrides, t);
  if (overrideEdge !== null) consider(overrideEdge);
  for (const layer of spec.layers) {
    if (layer.participants.length === 0) continue;
    consider(layer.startAt);
    consider(nextHandoff(spec.zone, layer, Math.max(t, layer.startAt)));
    for (const r of layer.restrictions) {
      const today = toLocal(spec.zone, t).epochDay;
      for (let day = today - 1; day <= today + 7; day++) {
        if (!r.days.includes(weekday(day))) continue;
        const [start, end] = windowOn(spec.zone, r, day);
        consider(start);
        consider(end);
      }
    }
  }
  return best;
}

/** The first handoff instant strictly after `t`. */
function nextHandoff(zone: string, layer: LayerSpec, t: number): number {
  const today = toLocal(zone, t).epochDay;
  for (let day = today - 1; day <= today + 8; day++) {
    if (!isHandoffDay(layer, day)) continue;
    const at = toInstant(zone, day, layer.handoffMinute);
    if (at > t) return at;
  }
  throw new Error(`layer ${layer.id} has no handoff within 8 days`);
}
