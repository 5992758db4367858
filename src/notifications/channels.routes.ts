/** `/api/v1/notification-channels` (scope admin). */
import { Type as T } from "@sinclair/typebox";
import { decodeCursor } from "../http/pagination.ts";
import { type RouteDef, reply, route } from "../http/route.ts";
import { IdParams, ListOf, listQuery, Strict } from "../http/schema.ts";
import { Channel, ChannelInput, ChannelPatch, ChannelWithSecret, Delivery } from "./channel.ts";
import type { ChannelService } from "./channels.service.ts";

const tag = "Notification channels";
const read = { scope: "admin", level: "read" } as const;
const write = { scope: "admin", level: "admin" } as const;

export function channelRoutes(channels: ChannelService): RouteDef[] {
  return [
    route(read, {
      method: "GET",
      path: "/api/v1/notification-channels",
      tag,
      summary: "List notification channels",
      query: Strict(listQuery),
      response: { status: 200, schema: ListOf(Channel) },
      handler: async ({ principal, query }) =>
        reply.ok(
          await channels.list(principal.orgId, query.limit ?? 50, decodeCursor("channels", query.cursor)),
        ),
    }),
    route(write, {
      method: "POST",
      path: "/api/v1/notification-channels",
      tag,
      summary: "Create a channel (a webhook's generated signing secret is shown once)",
      body: ChannelInput,
      response: { status: 201, schema: ChannelWithSecret },
      secretFields: ["secret"],
      handler: async ({ principal, body }) => reply.created(await channels.create(principal.orgId, body)),
    }),
    route(read, {
      method: "GET",
      path: "/api/v1/notification-channels/:id",
      tag,
      summary: "Read a channel",
      params: IdParams,
      response: { status: 200, schema: Channel },
      handler: async ({ principal, params }) => reply.ok(await channels.get(principal.orgId, params.id)),
    }),
    route(read, {
      method: "GET",
      path: "/api/v1/notification-channels/:id/deliveries",
      tag,
      summary: "A channel's deliveries, newest first (status=dead lists the dead letters)",
      params: IdParams,
      query: Strict({
        ...listQuery,
        status: T.Optional(T.Union([T.Literal("pending"), T.Literal("sent"), T.Literal("dead")])),
      }),
      response: { status: 200, schema: ListOf(Delivery) },
      handler: async ({ principal, params, query }) =>
        reply.ok(
          await channels.deliveries(principal.orgId, params.id, {
            status: query.status,
            limit: query.limit ?? 50,
            cursor: decodeCursor(`deliveries:${params.id}`, query.cursor),
          }),
        ),
    }),
    route(write, {
      method: "PATCH",
      path: "/api/v1/notification-channels/:id",
      tag,
      summary: "Change a channel's name, config (replaced whole), trusted or enabled",
      params: IdParams,
      body: ChannelPatch,
      response: { status: 200, schema: Channel },
      handler: async ({ principal, params, body }) =>
        reply.ok(await channels.update(principal.orgId, params.id, body)),
    }),
    route(write, {
      method: "DELETE",
      path: "/api/v1/notification-channels/:id",
      tag,
      summary: "Delete a channel no policy, setting or live key or token names (409 conflict otherwise)",
      params: IdParams,
      response: { status: 204 },
      handler: async ({ principal, params }) => {
        await channels.remove(principal.orgId, params.id);
        return reply.noContent();
      },
    }),
  ];
}
