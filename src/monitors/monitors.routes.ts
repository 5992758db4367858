/** `/api/v1/monitors` (scope monitors). */
import { Type as T } from "@sinclair/typebox";
import { decodeCursor } from "../http/pagination.ts";
import { type RouteDef, reply, route } from "../http/route.ts";
import { IdParams, ListOf, listQuery, Strict } from "../http/schema.ts";
import { MONITOR_TYPES, Monitor, MonitorInput, MonitorPatch } from "./monitor.ts";
import type { MonitorService } from "./monitors.service.ts";

const tag = "Monitors";
const read = { scope: "monitors", level: "read" } as const;
const write = { scope: "monitors", level: "write" } as const;

export function monitorRoutes(monitors: MonitorService): RouteDef[] {
  return [
    route(read, {
      method: "GET",
      path: "/api/v1/monitors",
      tag,
      summary: "List monitors",
      query: Strict({
        ...listQuery,
        type: T.Optional(T.Union(MONITOR_TYPES.map((t) => T.Literal(t)))),
        team_id: T.Optional(T.String({ minLength: 1 })),
        group_id: T.Optional(T.String({ minLength: 1 })),
      }),
      response: { status: 200, schema: ListOf(Monitor) },
      handler: async ({ principal, query }) =>
        reply.ok(
          await monitors.list(principal.orgId, {
            type: query.type,
            team_id: query.team_id,
            group_id: query.group_id,
            limit: query.limit ?? 50,
            cursor: decodeCursor("monitors", query.cursor),
          }),
        ),
    }),
    route(write, {
      method: "POST",
      path: "/api/v1/monitors",
      tag,
      summary: "Create a monitor (event monitors get an integration_key, heartbeat monitors a ping_url)",
      body: MonitorInput,
      response: { status: 201, schema: Monitor },
      handler: async ({ principal, body }) =>
        reply.created(await monitors.create(principal.orgId, principal, body)),
    }),
    route(read, {
      method: "GET",
      path: "/api/v1/monitors/:id",
      tag,
      summary: "Read a monitor",
      params: IdParams,
      response: { status: 200, schema: Monitor },
      handler: async ({ principal, params }) => reply.ok(await monitors.get(principal.orgId, params.id)),
    }),
    route(write, {
      method: "PATCH",
      path: "/api/v1/monitors/:id",
      tag,
      summary: "Change a monitor (config is replaced whole; the type cannot change)",
      params: IdParams,
      body: MonitorPatch,
      response: { status: 200, schema: Monitor },
      handler: async ({ principal, params, body }) =>
        reply.ok(await monitors.update(principal.orgId, principal, params.id, body)),
    }),
    route(write, {
      method: "DELETE",
      path: "/api/v1/monitors/:id",
      tag,
      summary: "Delete a monitor without open alerts (its resolved alerts go with it)",
      params: IdParams,
      response: { status: 204 },
      handler: async ({ principal, params }) => {
        await monitors.remove(principal.orgId, principal, params.id);
        return reply.noContent();
      },
    }),
  ];
}
