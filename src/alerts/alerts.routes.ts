/** `/api/v1/alerts` (scope alerts) and the Events API `POST /api/v1/events`. */
import { Type as T } from "@sinclair/typebox";
import type { Config } from "../config.ts";
import { errors } from "../errors.ts";
import { decodeCursor } from "../http/pagination.ts";
import { publicRoute, type RouteDef, readJsonLoose, reply, route } from "../http/route.ts";
import { IdParams, ListOf, listQuery, Strict, Timestamp } from "../http/schema.ts";
import { SEVERITIES } from "../monitors/monitor.ts";
import { parseRfc3339 } from "../time.ts";
import type { AlertStatus } from "./alert.table.ts";
import { ALERT_STATUSES, Alert, TimelineEntry } from "./alert.ts";
import type { AlertSort } from "./alerts.repository.ts";
import type { AlertService } from "./alerts.service.ts";
import { type EventsApi, PagerDutyEvent } from "./events-api.ts";

const tag = "Alerts";
const read = { scope: "alerts", level: "read" } as const;
const write = { scope: "alerts", level: "write" } as const;
const SORTS = ["fired_at", "-fired_at", "severity", "-severity"] as const;

/** A comma list whose every item is one of `allowed`: 400 naming `field` otherwise. */
function commaList<V extends string>(
  value: string | undefined,
  allowed: readonly V[],
  field: string,
): V[] | undefined {
  if (value === undefined) return undefined;
  const items = value.split(",").map((s) => s.trim());
  const bad = items.find((s) => !(allowed as readonly string[]).includes(s));
  if (bad !== undefined) throw errors.field(field, `must be a comma list of ${allowed.join(", ")}`);
  return items as V[];
}

const Note = Strict({ note: T.Optional(T.String({ maxLength: 2000 })) });

export function alertRoutes(alerts: AlertService, eventsApi: EventsApi, config: Config): RouteDef[] {
  return [
    route(read, {
      method: "GET",
      path: "/api/v1/alerts",
      tag,
      summary: "List alerts, newest first by default",
      query: Strict({
        ...listQuery,
        status: T.Optional(T.String({ description: "Comma list of firing, acknowledged, resolved." })),
        severity: T.Optional(T.String({ description: "Comma list of info, warning, critical." })),
        monitor_id: T.Optional(T.String({ minLength: 1 })),
        group_id: T.Optional(T.String({ minLength: 1 })),
        from: T.Optional(Timestamp({ description: "fired_at at or after" })),
        to: T.Optional(Timestamp({ description: "fired_at before" })),
        q: T.Optional(T.String({ minLength: 1, maxLength: 200, description: "Text in summary or reason." })),
        sort: T.Optional(
          T.Union(
            SORTS.map((s) => T.Literal(s)),
            { default: "-fired_at" },
          ),
        ),
      }),
      response: { status: 200, schema: ListOf(Alert) },
      handler: async ({ principal, query }) => {
        const sort = (query.sort ?? "-fired_at") as AlertSort;
        return reply.ok(
          await alerts.list(
            principal.orgId,
            {
              statuses: commaList<AlertStatus>(query.status, ALERT_STATUSES, "status"),
              severities: commaList(query.severity, SEVERITIES, "severity"),
              monitorId: query.monitor_id,
              groupId: query.group_id,
              from: query.from === undefined ? undefined : (parseRfc3339(query.from) as number),
              to: query.to === undefined ? undefined : (parseRfc3339(query.to) as number),
              q: query.q,
              sort,
              limit: query.limit ?? 50,
            },
            decodeCursor(`alerts:${sort}`, query.cursor),
          ),
        );
      },
    }),
    route(read, {
      method: "GET",
      path: "/api/v1/alerts/:id",
      tag,
      summary: "Read an alert",
      params: IdParams,
      response: { status: 200, schema: Alert },
      handler: async ({ principal, params }) => reply.ok(await alerts.get(principal.orgId, params.id)),
    }),
    route(write, {
      method: "POST",
      path: "/api/v1/alerts/:id/ack",
      tag,
      summary: "Acknowledge: escalation stops (409 alert_resolved for a resolved alert)",
      params: IdParams,
      body: Note,
      response: {
        status: 200,
        schema: T.Composite([Alert, T.Object({ already_acknowledged: T.Boolean() })]),
      },
      handler: async ({ principal, params, body }) =>
        reply.ok(await alerts.acknowledge(principal.orgId, params.id, principal.actor, body.note)),
    }),
    route(write, {
      method: "POST",
      path: "/api/v1/alerts/:id/resolve",
      tag,
      summary: "Resolve by hand (resolving twice is not an error); the source never undoes it",
      params: IdParams,
      body: Note,
      response: { status: 200, schema: T.Composite([Alert, T.Object({ already_resolved: T.Boolean() })]) },
      handler: async ({ principal, params, body }) =>
        reply.ok(await alerts.resolve(principal.orgId, params.id, principal.actor, body.note)),
    }),
    route(read, {
      method: "GET",
      path: "/api/v1/alerts/:id/timeline",
      tag,
      summary: "What happened to the alert, oldest first",
      params: IdParams,
      response: { status: 200, schema: T.Object({ data: T.Array(TimelineEntry) }) },
      handler: async ({ principal, params }) =>
        reply.ok({ data: await alerts.timeline(principal.orgId, params.id) }),
    }),
    publicRoute({
      method: "POST",
      path: "/api/v1/events",
      tag: "Events API",
      summary: "PagerDuty Events API v2: trigger, acknowledge or resolve (authenticated by routing_key)",
      response: {
        status: 202,
        schema: T.Object({ status: T.String(), message: T.String(), dedup_key: T.String() }),
      },
      requestSchema: PagerDutyEvent,
      handler: async ({ request }) => {
        const body = await readJsonLoose(request, config.limits.max_request_bytes);
        const answer = await eventsApi.handle(body === undefined ? null : body);
        return { status: answer.status, body: answer.body };
      },
    }),
  ];
}
