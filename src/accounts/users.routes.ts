/** `/api/v1/users` and `/api/v1/teams`. */
import { Type as T } from "@sinclair/typebox";
import { decodeCursor } from "../http/pagination.ts";
import { type RouteDef, reply, route } from "../http/route.ts";
import { Email, IdParams, ListOf, listQuery, Name, Strict } from "../http/schema.ts";
import { ROLES } from "./access.ts";
import type { Accounts } from "./accounts.ts";
import { Team } from "./team.ts";
import { User } from "./user.ts";

const RoleSchema = T.Union(ROLES.map((r) => T.Literal(r)));
const StatusSchema = T.Union([T.Literal("invited"), T.Literal("active"), T.Literal("suspended")]);
const IdList = T.Array(T.String({ minLength: 1, maxLength: 64 }), { maxItems: 200 });

export function userRoutes(accounts: Accounts): RouteDef[] {
  const { users, teams } = accounts;
  return [
    route(
      { scope: "admin", level: "read" },
      {
        method: "GET",
        path: "/api/v1/users",
        tag: "Users",
        summary: "List users",
        query: Strict({ ...listQuery, role: T.Optional(RoleSchema), status: T.Optional(StatusSchema) }),
        response: { status: 200, schema: ListOf(User) },
        handler: async ({ principal, query }) =>
          reply.ok(
            await users.list(principal.orgId, {
              role: query.role,
              status: query.status,
              limit: query.limit ?? 50,
              cursor: decodeCursor("users", query.cursor),
            }),
          ),
      },
    ),
    route(
      { scope: "admin", level: "admin" },
      {
        method: "POST",
        path: "/api/v1/users",
        tag: "Users",
        summary: "Invite a user (an invite email goes through the outbox)",
        body: Strict({
          email: Email(),
          name: T.Optional(T.String({ maxLength: 200 })),
          role: RoleSchema,
          team_ids: T.Optional(IdList),
        }),
        response: { status: 201, schema: User },
        handler: async ({ principal, body }) => reply.created(await users.invite(principal.orgId, body)),
      },
    ),
    route(
      { scope: "admin", level: "read" },
      {
        method: "GET",
        path: "/api/v1/users/:id",
        tag: "Users",
        summary: "Read a user",
        params: IdParams,
        response: { status: 200, schema: User },
        handler: async ({ principal, params }) => reply.ok(await users.get(principal.orgId, params.id)),
      },
    ),
    route(
      { scope: "admin", level: "admin" },
      {
        method: "PATCH",
        path: "/api/v1/users/:id",
        tag: "Users",
        summary: "Change a user's name, role, status or teams",
        params: IdParams,
        body: Strict({
          name: T.Optional(T.String({ maxLength: 200 })),
          role: T.Optional(RoleSchema),
          status: T.Optional(StatusSchema),
          team_ids: T.Optional(IdList),
        }),
        response: { status: 200, schema: User },
        handler: async ({ principal, params, body }) =>
          reply.ok(await users.update(principal.orgId, params.id, body)),
      },
    ),
    route(
      { scope: "admin", level: "admin" },
      {
        method: "DELETE",
        path: "/api/v1/users/:id",
        tag: "Users",
        summary: "Delete a user (their API keys are revoked)",
        params: IdParams,
        response: { status: 204 },
        handler: async ({ principal, params }) => {
          await users.remove(principal.orgId, params.id);
          return reply.noContent();
        },
      },
    ),
    route(
      { scope: "admin", level: "write" },
      {
        method: "POST",
        path: "/api/v1/users/:id/reset-password",
        tag: "Users",
        summary: "Email the user a single-use password-reset link",
        params: IdParams,
        response: { status: 202, schema: T.Object({ status: T.Literal("accepted") }) },
        handler: async ({ principal, params }) => {
          await users.requestReset(principal.orgId, principal, params.id);
          return reply.accepted({ status: "accepted" });
        },
      },
    ),
    route(
      { scope: "admin", level: "read" },
      {
        method: "GET",
        path: "/api/v1/teams",
        tag: "Teams",
        summary: "List teams",
        query: Strict(listQuery),
        response: { status: 200, schema: ListOf(Team) },
        handler: async ({ principal, query }) =>
          reply.ok(await teams.list(principal.orgId, query.limit ?? 50, decodeCursor("teams", query.cursor))),
      },
    ),
    route(
      { scope: "admin", level: "admin" },
      {
        method: "POST",
        path: "/api/v1/teams",
        tag: "Teams",
        summary: "Create a team",
        body: Strict({ name: Name(), member_ids: T.Optional(IdList) }),
        response: { status: 201, schema: Team },
        handler: async ({ principal, body }) => reply.created(await teams.create(principal.orgId, body)),
      },
    ),
    route(
      { scope: "admin", level: "read" },
      {
        method: "GET",
        path: "/api/v1/teams/:id",
        tag: "Teams",
        summary: "Read a team",
        params: IdParams,
        response: { status: 200, schema: Team },
        handler: async ({ principal, params }) => reply.ok(await teams.get(principal.orgId, params.id)),
      },
    ),
    route(
      { scope: "admin", level: "admin" },
      {
        method: "PATCH",
        path: "/api/v1/teams/:id",
        tag: "Teams",
        summary: "Rename a team or replace its members",
        params: IdParams,
        body: Strict({ name: T.Optional(Name()), member_ids: T.Optional(IdList) }),
        response: { status: 200, schema: Team },
        handler: async ({ principal, params, body }) =>
          reply.ok(await teams.update(principal.orgId, params.id, body)),
      },
    ),
    route(
      { scope: "admin", level: "admin" },
      {
        method: "DELETE",
        path: "/api/v1/teams/:id",
        tag: "Teams",
        summary: "Delete a team",
        params: IdParams,
        response: { status: 204 },
        handler: async ({ principal, params }) => {
          await teams.remove(principal.orgId, params.id);
          return reply.noContent();
        },
      },
    ),
  ];
}
