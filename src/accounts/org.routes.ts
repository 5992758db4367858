/** `/api/v1/org`: the caller's organization, its settings, ownership transfer and ingest tokens. */
import { Type as T } from "@sinclair/typebox";
import type { Store } from "../db/store.ts";
import { AppError } from "../errors.ts";
import { decodeCursor } from "../http/pagination.ts";
import { type RouteDef, reply, route } from "../http/route.ts";
import { IdParams, ListOf, listQuery, Name, Strict } from "../http/schema.ts";
import type { Accounts } from "./accounts.ts";
import { IngestToken, IngestTokenWithSecret } from "./ingest-token.ts";
import { Organization } from "./org.ts";
import { findOrgById } from "./orgs.repository.ts";
import { SettingsDocument, SettingsSchema } from "./settings.ts";
import { User } from "./user.ts";

const tag = "Organization";

export function orgRoutes(accounts: Accounts, store: Store): RouteDef[] {
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
          return reply.ok(settings, { etag: etag(version) });
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
          const expected = await expectedVersion(store, principal.orgId, request.headers.get("if-match"));
          const { settings, version } = await accounts.orgs.putSettings(principal.orgId, body, expected);
          return reply.ok(settings, { etag: etag(version) });
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

function etag(version: number): string {
  return `"${version}"`;
}

/** The settings version an `If-Match` header expects; 412 at once when it is already stale. */
async function expectedVersion(store: Store, orgId: string, ifMatch: string | null): Promise<number | null> {
  if (ifMatch === null || ifMatch.trim() === "*") return null;
  const org = await findOrgById(store.read, orgId);
  const wanted = ifMatch.split(",").map((tag) => tag.trim().replace(/^W\//, ""));
  if (!org || !wanted.includes(etag(org.settings_version))) {
    throw new AppError("precondition_failed", "The settings changed since you read them; read them again.");
  }
  return org.settings_version;
}
