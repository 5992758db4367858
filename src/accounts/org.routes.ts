/** `/api/v1/org`: the caller's organization, its settings, ownership transfer and ingest tokens. */
import { Type as T } from "@sinclair/typebox";
import { decodeCursor } from "../http/pagination.ts";
import { type RouteDef, reply, route } from "../http/route.ts";
import { IdParams, ListOf, listQuery, Name, Strict } from "../http/schema.ts";
import type { Accounts } from "./accounts.ts";
import { IngestToken, IngestTokenWithSecret } from "./ingest-token.ts";
import { Organization } from "./org.ts";
import { settingsEtag } from "./orgs.service.ts";
import { SettingsDocument, SettingsSchema } from "./settings.ts";
import { User } from "./user.ts";

const tag = "Organization";

export function orgRoutes(accounts: Accounts): RouteDef[] {
  return [
    route(
      { scope: null, level: "read" },
      {
        method: "GET",
        path: "/api/v1/org",
        tag,
        summary: "The caller's organization",
        response: { status: 200, schema: Organization },
        handler: async ({ principal }) => reply.ok(await accounts.orgs.get(principal.orgId)),
      },
    ),
    route(
      { scope: "admin", level: "admin" },
      {
        method: "PATCH",
        path: "/api/v1/org",
        tag,
        summary: "Rename the organization (slug and plan are immutable here)",
        body: Strict({
          name: T.Optional(Name()),
          slug: T.Optional(T.Unknown({ description: "Immutable: rejected with immutable_field." })),
          plan: T.Optional(T.Unknown({ description: "Immutable: rejected with immutable_field." })),
        }),
        response: { status: 200, schema: Organization },
        handler: async ({ principal, body }) => reply.ok(await accounts.orgs.update(principal.orgId, body)),
      },
    ),
    route(
      { scope: "admin", level: "read" },
      {
        method: "GET",
        path: "/api/v1/org/settings",
        tag,
        summary: "The settings document (with an ETag)",
        response: { status: 200, schema: SettingsDocument },
        handler: async ({ principal }) => {
          const { settings, version } = await accounts.orgs.settings(principal.orgId);
          return reply.ok(settings, { etag: settingsEtag(version) });
        },
      },
    ),
    route(
      { scope: "admin", level: "admin" },
      {
        method: "PUT",
        path: "/api/v1/org/settings",
        tag,
        summary: "Replace the settings document; sections left out return to their defaults",
        body: SettingsSchema,
        response: { status: 200, schema: SettingsDocument },
        handler: async ({ principal, body, request }) => {
          const { settings, version } = await accounts.orgs.putSettings(
            principal.orgId,
            body,
            request.headers.get("if-match"),
          );
          return reply.ok(settings, { etag: settingsEtag(version) });
        },
      },
    ),
    route(
      { scope: "admin", level: "owner" },
      {
        method: "POST",
        path: "/api/v1/org/transfer-ownership",
        tag,
        summary: "Make another active member the owner; the previous owner becomes an admin",
        body: Strict({ user_id: T.String({ minLength: 1 }) }),
        response: { status: 200, schema: T.Object({ previous_owner: User, new_owner: User }) },
        handler: async ({ principal, body }) =>
          reply.ok(await accounts.orgs.transferOwnership(principal.orgId, principal.userId, body.user_id)),
      },
    ),
    route(
      { scope: "admin", level: "admin" },
      {
        method: "GET",
        path: "/api/v1/org/ingest-tokens",
        tag,
        summary: "List ingest tokens (metadata only)",
        query: Strict(listQuery),
        response: { status: 200, schema: ListOf(IngestToken) },
        handler: async ({ principal, query }) => {
          const cursor = decodeCursor("ingest_tokens", query.cursor);
          return reply.ok(await accounts.ingestTokens.list(principal.orgId, query.limit ?? 50, cursor));
        },
      },
    ),
    route(
      { scope: "admin", level: "admin" },
      {
        method: "POST",
        path: "/api/v1/org/ingest-tokens",
        tag,
        summary: "Create an ingest token (the token is shown once)",
        body: Strict({
          name: Name(),
          channel_id: T.Optional(T.Union([T.String({ minLength: 1 }), T.Null()])),
        }),
        response: { status: 201, schema: IngestTokenWithSecret },
        secretFields: ["token"],
        handler: async ({ principal, body }) => {
          return reply.created(await accounts.ingestTokens.create(principal.orgId, body));
        },
      },
    ),
    route(
      { scope: "admin", level: "admin" },
      {
        method: "DELETE",
        path: "/api/v1/org/ingest-tokens/:id",
        tag,
        summary: "Revoke an ingest token",
        params: IdParams,
        response: { status: 204 },
        handler: async ({ principal, params }) => {
          await accounts.ingestTokens.revoke(principal.orgId, params.id);
          return reply.noContent();
        },
      },
    ),
  ];
}
