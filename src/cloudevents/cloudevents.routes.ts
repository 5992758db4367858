/**
 * The CloudEvents plane over HTTP (DESIGN §7): ingest, poll, stream, the Knative source config
 * and the reply audit feed.
 */
import { Type as T } from "@sinclair/typebox";
import type { AccountsContext } from "../accounts/context.ts";
import { errors } from "../errors.ts";
import { decodeCursor, encodeCursor } from "../http/pagination.ts";
import { JSON_TYPE, publicRoute, type RouteDef, reply, route } from "../http/route.ts";
import { ListOf, listQuery, Strict, Timestamp } from "../http/schema.ts";
import { parseRfc3339 } from "../time.ts";
import type { ConsumerService } from "./consumers.ts";
import type { IngestService } from "./ingest.ts";
import { gatedOrg, planeLimits } from "./plans.ts";
import type { ReplyDispatcher } from "./replies.ts";

const tag = "CloudEvents";
const consume = { scope: "events", level: "read", credential: "api_key" } as const;
const feedAccess = { scope: "admin", level: "admin", credential: "session" } as const;

const StructuredEvent = T.Object(
  {
    specversion: T.Literal("1.0"),
    id: T.String({ minLength: 1 }),
    source: T.String({ minLength: 1 }),
    type: T.String({ minLength: 1 }),
    subject: T.Optional(T.String()),
    time: T.Optional(Timestamp()),
    datacontenttype: T.Optional(T.String()),
    dataschema: T.Optional(T.String()),
    data: T.Optional(T.Unknown()),
    data_base64: T.Optional(T.String()),
  },
  {
    additionalProperties: true,
    description: "A CloudEvent in structured mode; extension attributes are lower-case [a-z0-9]+ names.",
  },
);

const Cursor = T.String({ minLength: 1, maxLength: 512 });
const Filter = T.String({
  maxLength: 1024,
  description: "Comma-separated globs on the event type (`*` any run of characters, `?` one).",
});
const From = T.Literal("now", {
  description: "Without a cursor: start at the newest event, not the oldest.",
});

const ReplyRecord = T.Object({
  id: T.String(),
  received_at: Timestamp(),
  event_id: T.String(),
  event_source: T.String(),
  event_type: T.String(),
  channel_id: T.Union([T.String(), T.Null()]),
  ingest_token_id: T.Union([T.String(), T.Null()]),
  alert_id: T.Union([T.String(), T.Null()]),
  outcome: T.String({ description: "accepted, or rejected:<reason>" }),
  reason: T.String(),
});

const REPLIES_CURSOR = "cloudevent_replies";

export function cloudEventRoutes(
  ctx: AccountsContext,
  ingest: IngestService,
  consumers: ConsumerService,
  replies: ReplyDispatcher,
): RouteDef[] {
  return [
    publicRoute({
      method: "POST",
      path: "/api/v1/cloudevents/ingest/:token",
      tag,
      summary:
        "Ingest CloudEvents: binary, structured or batch mode (an ingest token, or the org slug with an OIDC bearer JWT)",
      params: Strict({ token: T.String({ minLength: 1 }) }),
      requestSchema: T.Union([StructuredEvent, T.Array(StructuredEvent, { maxItems: 256 })]),
      response: { status: 202, schema: T.Object({ accepted: T.Integer() }) },
      handler: async ({ params, request }) => reply.accepted(await ingest.ingest(params.token, request)),
    }),
    route(consume, {
      method: "GET",
      path: "/api/v1/cloudevents/poll",
      tag,
      summary: "Long-poll the event log from a cursor (returns as soon as events match)",
      query: Strict({
        filter: T.Optional(Filter),
        cursor: T.Optional(Cursor),
        from: T.Optional(From),
        limit: T.Optional(T.Integer({ minimum: 1, maximum: 1000, default: 100 })),
        wait: T.Optional(
          T.Integer({ minimum: 0, maximum: 30, default: 30, description: "Seconds to wait." }),
        ),
      }),
      response: {
        status: 200,
        schema: T.Object({
          data: T.Array(StructuredEvent),
          next_cursor: T.String({ description: "Always set: the position to poll from next." }),
          has_more: T.Boolean(),
        }),
      },
      handler: async ({ principal, query }) =>
        reply.text(
          JSON_TYPE,
          await consumers.poll(principal, { ...query, limit: query.limit ?? 100, wait: query.wait ?? 30 }),
        ),
    }),
    route(consume, {
      method: "GET",
      path: "/api/v1/cloudevents/stream",
      tag,
      summary: "Server-Sent Events from a cursor (or Last-Event-ID): one structured event per `data:` line",
      query: Strict({ filter: T.Optional(Filter), cursor: T.Optional(Cursor), from: T.Optional(From) }),
      response: { status: 200, description: "text/event-stream" },
      handler: async ({ principal, query, request }) => ({
        status: 200,
        response: await consumers.stream(principal, query, request.headers.get("last-event-id")),
      }),
    }),
    route(consume, {
      method: "GET",
      path: "/api/v1/knative/source-config",
      tag,
      summary: "How a connector should consume: mode, poll interval, stream heartbeat, refresh",
      response: {
        status: 200,
        schema: T.Object({
          mode: T.Union([T.Literal("auto"), T.Literal("stream"), T.Literal("poll")]),
          poll_interval_seconds: T.Integer(),
          stream_heartbeat_seconds: T.Integer(),
          refresh_after_seconds: T.Integer(),
        }),
      },
      handler: async ({ principal }) => reply.ok(await consumers.sourceConfig(principal)),
    }),
    route(feedAccess, {
      method: "GET",
      path: "/api/v1/admin/cloudevents/replies",
      tag,
      summary: "The reply audit feed, newest first (admin JWT only)",
      query: Strict({
        ...listQuery,
        outcome: T.Optional(
          T.String({ minLength: 1, maxLength: 64, description: "A prefix; `rejected:*` = every rejection." }),
        ),
        event_type: T.Optional(T.String({ minLength: 1, maxLength: 256 })),
        channel_id: T.Optional(T.String({ minLength: 1, maxLength: 64 })),
        alert_id: T.Optional(T.String({ minLength: 1, maxLength: 64 })),
        from: T.Optional(Timestamp({ description: "received at or after" })),
        to: T.Optional(Timestamp({ description: "received before" })),
      }),
      response: { status: 200, schema: ListOf(ReplyRecord) },
      handler: async ({ principal, query }) => {
        const org = await gatedOrg(ctx, principal.orgId);
        const before = decodeCursor(REPLIES_CURSOR, query.cursor);
        if (
          before &&
          (before.length !== 2 || typeof before[0] !== "number" || typeof before[1] !== "string")
        ) {
          throw errors.invalidCursor();
        }
        const page = await replies.list(org.id, planeLimits(ctx.config, org.plan).repliesRetentionDays, {
          outcomePrefix: query.outcome?.replace(/\*+$/, ""),
          eventType: query.event_type,
          channelId: query.channel_id,
          alertId: query.alert_id,
          from: query.from === undefined ? undefined : (parseRfc3339(query.from) as number),
          to: query.to === undefined ? undefined : (parseRfc3339(query.to) as number),
          before: before ? [before[0] as number, before[1] as string] : undefined,
          limit: query.limit ?? 50,
        });
        return reply.ok({
          ...page,
          next_cursor: page.next_cursor ? encodeCursor(REPLIES_CURSOR, page.next_cursor) : null,
        });
      },
    }),
  ];
}
