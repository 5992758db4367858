/** `/api/v1/schedules`: schedules, who is on call, the timeline, overrides and the iCal feed. */
import { Type as T } from "@sinclair/typebox";
import { errors } from "../errors.ts";
import { decodeCursor } from "../http/pagination.ts";
import { publicRoute, type RouteDef, reply, route } from "../http/route.ts";
import { IdParams, ListOf, listQuery, Strict, Timestamp } from "../http/schema.ts";
import { parseRfc3339 } from "../time.ts";
import {
  OnCallResult,
  Override,
  OverrideInput,
  Schedule,
  ScheduleInput,
  SchedulePatch,
  TimelineSegment,
} from "./schedule.ts";
import type { ScheduleService } from "./schedules.service.ts";

const tag = "Schedules";
const read = { scope: "schedules", level: "read" } as const;
const write = { scope: "schedules", level: "write" } as const;
const ICAL = "text/calendar; charset=utf-8";
const LATEST_INSTANT = Date.parse("9999-01-01T00:00:00Z");
const EARLIEST_INSTANT = Date.parse("0001-01-01T00:00:00Z");

function instant(value: string | undefined, field: string, fallback?: number): number {
  if (value === undefined) {
    if (fallback === undefined) throw errors.field(field, "is required");
    return fallback;
  }
  const ms = parseRfc3339(value);
  if (ms === null) throw errors.field(field, "must be an RFC 3339 timestamp");
  // Answers reach 90 days past the instant asked and must stay four-digit years.
  if (ms >= LATEST_INSTANT || ms < EARLIEST_INSTANT) {
    throw errors.field(field, "must be within the years 0001 to 9998");
  }
  return ms;
}

export function scheduleRoutes(schedules: ScheduleService): RouteDef[] {
  return [
    route(read, {
      method: "GET",
      path: "/api/v1/schedules",
      tag,
      summary: "List schedules",
      query: Strict({ ...listQuery, team_id: T.Optional(T.String({ minLength: 1 })) }),
      response: { status: 200, schema: ListOf(Schedule) },
      handler: async ({ principal, query }) =>
        reply.ok(
          await schedules.list(principal.orgId, {
            team_id: query.team_id,
            limit: query.limit ?? 50,
            cursor: decodeCursor("schedules", query.cursor),
          }),
        ),
    }),
    route(write, {
      method: "POST",
      path: "/api/v1/schedules",
      tag,
      summary: "Create a schedule",
      body: ScheduleInput,
      response: { status: 201, schema: Schedule },
      handler: async ({ principal, body }) =>
        reply.created(await schedules.create(principal.orgId, principal, body)),
    }),
    route(read, {
      method: "GET",
      path: "/api/v1/schedules/:id",
      tag,
      summary: "Read a schedule",
      params: IdParams,
      response: { status: 200, schema: Schedule },
      handler: async ({ principal, params }) => reply.ok(await schedules.get(principal.orgId, params.id)),
    }),
    route(write, {
      method: "PATCH",
      path: "/api/v1/schedules/:id",
      tag,
      summary: "Change a schedule's name, description, zone, team or layers (layers are replaced whole)",
      params: IdParams,
      body: SchedulePatch,
      response: { status: 200, schema: Schedule },
      handler: async ({ principal, params, body }) =>
        reply.ok(await schedules.update(principal.orgId, principal, params.id, body)),
    }),
    route(write, {
      method: "DELETE",
      path: "/api/v1/schedules/:id",
      tag,
      summary: "Delete a schedule and its overrides",
      params: IdParams,
      response: { status: 204 },
      handler: async ({ principal, params }) => {
        await schedules.remove(principal.orgId, principal, params.id);
        return reply.noContent();
      },
    }),
    route(read, {
      method: "GET",
      path: "/api/v1/schedules/:id/on-call",
      tag,
      summary: "Who is on call at `at` (default now) and until when",
      params: IdParams,
      query: Strict({ at: T.Optional(Timestamp()) }),
      response: { status: 200, schema: T.Object({ data: OnCallResult }) },
      handler: async ({ principal, params, query }) =>
        reply.ok({
          data: await schedules.onCall(principal.orgId, params.id, instant(query.at, "at", Date.now())),
        }),
    }),
    route(read, {
      method: "GET",
      path: "/api/v1/schedules/:id/timeline",
      tag,
      summary: "The final schedule over [from, to), at most 90 days",
      params: IdParams,
      query: Strict({ from: Timestamp(), to: Timestamp() }),
      response: { status: 200, schema: T.Object({ data: T.Array(TimelineSegment) }) },
      handler: async ({ principal, params, query }) =>
        reply.ok({
          data: await schedules.timeline(
            principal.orgId,
            params.id,
            instant(query.from, "from"),
            instant(query.to, "to"),
          ),
        }),
    }),
    route(read, {
      method: "GET",
      path: "/api/v1/schedules/:id/overrides",
      tag,
      summary: "List overrides (active=true: those not yet ended)",
      params: IdParams,
      query: Strict({ ...listQuery, active: T.Optional(T.Boolean()) }),
      response: { status: 200, schema: ListOf(Override) },
      handler: async ({ principal, params, query }) =>
        reply.ok(
          await schedules.listOverrides(principal.orgId, params.id, {
            active: query.active,
            limit: query.limit ?? 50,
            cursor: decodeCursor(`overrides:${params.id}`, query.cursor),
          }),
        ),
    }),
    route(write, {
      method: "POST",
      path: "/api/v1/schedules/:id/overrides",
      tag,
      summary: "Put someone on call for [start_at, end_at); the last created wins where overrides overlap",
      params: IdParams,
      body: OverrideInput,
      response: { status: 201, schema: Override },
      handler: async ({ principal, params, body }) =>
        reply.created(
          await schedules.createOverride(principal.orgId, principal, params.id, {
            user_id: body.user_id,
            start_at: instant(body.start_at, "start_at"),
            end_at: instant(body.end_at, "end_at"),
            reason: body.reason,
          }),
        ),
    }),
    route(write, {
      method: "DELETE",
      path: "/api/v1/schedules/:id/overrides/:override_id",
      tag,
      summary: "Delete an override that has not ended (409 override_ended otherwise)",
      params: Strict({
        id: T.String({ minLength: 1, maxLength: 64 }),
        override_id: T.String({ minLength: 1, maxLength: 64 }),
      }),
      response: { status: 204 },
      handler: async ({ principal, params }) => {
        await schedules.deleteOverride(principal.orgId, principal, params.id, params.override_id);
        return reply.noContent();
      },
    }),
    route(read, {
      method: "GET",
      path: "/api/v1/schedules/:id/ical",
      tag,
      summary: "iCalendar feed of the final schedule for the next 60 days",
      params: IdParams,
      response: { status: 200, description: "text/calendar" },
      handler: async ({ principal, params }) =>
        reply.text(ICAL, await schedules.ical(principal.orgId, params.id)),
    }),
    route(write, {
      method: "POST",
      path: "/api/v1/schedules/:id/feed-token",
      tag,
      summary: "A new secret calendar feed URL (shown once; the previous one stops working)",
      params: IdParams,
      response: { status: 201, schema: T.Object({ token: T.String(), url: T.String() }) },
      secretFields: ["token", "url"],
      handler: async ({ principal, params }) =>
        reply.created(await schedules.rotateFeedToken(principal.orgId, principal, params.id)),
    }),
    publicRoute({
      method: "GET",
      path: "/feeds/:token",
      tag,
      summary: "A schedule's iCalendar feed by its secret feed token (for calendar apps)",
      params: Strict({ token: T.String({ minLength: 1, maxLength: 200 }) }),
      response: { status: 200, description: "text/calendar" },
      handler: async ({ params }) =>
        reply.text(ICAL, await schedules.icalByFeedToken(params.token.replace(/\.ics$/, "")), {
          "cache-control": "private, max-age=60",
        }),
    }),
  ];
}
