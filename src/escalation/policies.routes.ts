/** `/api/v1/escalation-policies` (scope alerts). */
import { Type as T } from "@sinclair/typebox";
import { decodeCursor } from "../http/pagination.ts";
import { type RouteDef, reply, route } from "../http/route.ts";
import { IdParams, ListOf, listQuery, Strict } from "../http/schema.ts";
import type { PolicyService } from "./policies.service.ts";
import { Policy, PolicyInput, PolicyPatch } from "./policy.ts";

const tag = "Escalation policies";
const read = { scope: "alerts", level: "read" } as const;
const write = { scope: "alerts", level: "write" } as const;

export function policyRoutes(policies: PolicyService): RouteDef[] {
  return [
    route(read, {
      method: "GET",
      path: "/api/v1/escalation-policies",
      tag,
      summary: "List escalation policies",
      query: Strict({ ...listQuery, team_id: T.Optional(T.String({ minLength: 1 })) }),
      response: { status: 200, schema: ListOf(Policy) },
      handler: async ({ principal, query }) =>
        reply.ok(
          await policies.list(principal.orgId, {
            team_id: query.team_id,
            limit: query.limit ?? 50,
            cursor: decodeCursor("policies", query.cursor),
          }),
        ),
    }),
    route(write, {
      method: "POST",
      path: "/api/v1/escalation-policies",
      tag,
      summary: "Create an escalation policy",
      body: PolicyInput,
      response: { status: 201, schema: Policy },
      handler: async ({ principal, body }) =>
        reply.created(await policies.create(principal.orgId, principal, body)),
    }),
    route(read, {
      method: "GET",
      path: "/api/v1/escalation-policies/:id",
      tag,
      summary: "Read an escalation policy",
      params: IdParams,
      response: { status: 200, schema: Policy },
      handler: async ({ principal, params }) => reply.ok(await policies.get(principal.orgId, params.id)),
    }),
    route(write, {
      method: "PATCH",
      path: "/api/v1/escalation-policies/:id",
      tag,
      summary: "Change a policy's name, team, repeat or steps (steps are replaced whole)",
      params: IdParams,
      body: PolicyPatch,
      response: { status: 200, schema: Policy },
      handler: async ({ principal, params, body }) =>
        reply.ok(await policies.update(principal.orgId, principal, params.id, body)),
    }),
    route(write, {
      method: "DELETE",
      path: "/api/v1/escalation-policies/:id",
      tag,
      summary: "Delete a policy no monitor uses (409 conflict otherwise)",
      params: IdParams,
      response: { status: 204 },
      handler: async ({ principal, params }) => {
        await policies.remove(principal.orgId, principal, params.id);
        return reply.noContent();
      },
    }),
  ];
}
