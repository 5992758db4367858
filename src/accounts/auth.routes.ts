/** `/api/v1/auth/*` and `/api/v1/api-keys`: sessions, sign-up, password reset, API keys. */
import { Type as T } from "@sinclair/typebox";
import { decodeCursor } from "../http/pagination.ts";
import { publicRoute, type RouteDef, reply, route } from "../http/route.ts";
import { Email, IdParams, ListOf, listQuery, Name, Strict, Timestamp } from "../http/schema.ts";
import type { Accounts } from "./accounts.ts";
import { ApiKey, ApiKeyWithSecret, ScopeSchema } from "./api-key.ts";
import { expiresAtFromApi } from "./api-keys.service.ts";
import { MAX_ADMIN_TOKEN_TTL_MS } from "./auth.service.ts";

const Password = T.String({ minLength: 12, maxLength: 256, description: "At least 12 characters." });
const Totp = T.String({ pattern: "^\\d{6}$", description: "The current 6-digit code." });
const TokenResponse = T.Object({ token: T.String(), expires_at: Timestamp() });

export function authRoutes(accounts: Accounts): RouteDef[] {
  const { auth, keys } = accounts;
  return [
    publicRoute({
      method: "POST",
      path: "/api/v1/auth/login",
      tag: "Auth",
      summary: "Log in with email, password and TOTP code; returns a session JWT",
      body: Strict({
        email: Email(),
        password: T.String({ minLength: 1, maxLength: 256 }),
        totp: Totp,
        org: T.Optional(
          T.String({ minLength: 1, description: "Org slug, needed only when the email is in several orgs." }),
        ),
      }),
      response: { status: 200, schema: TokenResponse },
      handler: async ({ body }) => reply.ok(await auth.login(body)),
    }),
    publicRoute({
      method: "POST",
      path: "/api/v1/auth/accept-invite",
      tag: "Auth",
      summary: "Set a password with an invite token; returns the TOTP secret to enrol",
      body: Strict({ token: T.String({ minLength: 1, maxLength: 200 }), password: Password }),
      response: { status: 200, schema: T.Object({ totp_secret: T.String(), otpauth_url: T.String() }) },
      handler: async ({ body }) => reply.ok(await auth.acceptInvite(body)),
    }),
    publicRoute({
      method: "POST",
      path: "/api/v1/auth/confirm-mfa",
      tag: "Auth",
      summary: "Confirm the authenticator with a first code; finishes sign-up and returns a session",
      body: Strict({ token: T.String({ minLength: 1, maxLength: 200 }), totp: Totp }),
      response: { status: 200, schema: TokenResponse },
      handler: async ({ body }) => reply.ok(await auth.confirmMfa(body)),
    }),
    publicRoute({
      method: "POST",
      path: "/api/v1/auth/reset-password",
      tag: "Auth",
      summary: "Choose a new password with a reset token; other sessions end",
      body: Strict({ token: T.String({ minLength: 1, maxLength: 200 }), password: Password }),
      response: { status: 204 },
      handler: async ({ body }) => {
        await auth.completeReset(body);
        return reply.noContent();
      },
    }),
    route(
      { scope: "admin", level: "admin" },
      {
        method: "POST",
        path: "/api/v1/auth/token",
        tag: "Auth",
        summary: "Mint an admin JWT with an admin-scope API key",
        body: Strict({
          ttl_seconds: T.Optional(T.Integer({ minimum: 60, maximum: MAX_ADMIN_TOKEN_TTL_MS / 1000 })),
        }),
        response: { status: 201, schema: TokenResponse },
        secretFields: ["token"],
        handler: async ({ principal, body }) =>
          reply.created(
            await auth.mintAdminToken(
              principal,
              body.ttl_seconds === undefined ? undefined : body.ttl_seconds * 1000,
            ),
          ),
      },
    ),
    route(
      { scope: "admin", level: "read" },
      {
        method: "GET",
        path: "/api/v1/api-keys",
        tag: "API keys",
        summary: "List API keys (admins see all, others their own)",
        query: Strict(listQuery),
        response: { status: 200, schema: ListOf(ApiKey) },
        handler: async ({ principal, query }) =>
          reply.ok(
            await keys.list(
              principal.orgId,
              principal,
              query.limit ?? 50,
              decodeCursor("api_keys", query.cursor),
            ),
          ),
      },
    ),
    route(
      { scope: "admin", level: "write" },
      {
        method: "POST",
        path: "/api/v1/api-keys",
        tag: "API keys",
        summary: "Create an API key (the secret is shown once)",
        body: Strict({
          name: Name(),
          scopes: T.Array(ScopeSchema, { minItems: 1, maxItems: 6 }),
          user_id: T.Optional(T.String({ minLength: 1 })),
          service: T.Optional(T.Boolean()),
          expires_at: T.Optional(
            T.Union([Timestamp(), T.Null()], { description: "Default 90 days ahead; null never expires." }),
          ),
          channel_id: T.Optional(
            T.Union([T.String({ minLength: 1 }), T.Null()], {
              description:
                "Bind the key to a cloudevents channel: it also consumes the events addressed to it.",
            }),
          ),
        }),
        response: { status: 201, schema: ApiKeyWithSecret },
        secretFields: ["secret"],
        handler: async ({ principal, body }) =>
          reply.created(
            await keys.create(principal.orgId, principal, {
              ...body,
              expires_at: expiresAtFromApi(body.expires_at),
            }),
          ),
      },
    ),
    route(
      { scope: "admin", level: "read" },
      {
        method: "GET",
        path: "/api/v1/api-keys/:id",
        tag: "API keys",
        summary: "Read an API key",
        params: IdParams,
        response: { status: 200, schema: ApiKey },
        handler: async ({ principal, params }) =>
          reply.ok(await keys.get(principal.orgId, principal, params.id)),
      },
    ),
    route(
      { scope: "admin", level: "write" },
      {
        method: "DELETE",
        path: "/api/v1/api-keys/:id",
        tag: "API keys",
        summary: "Revoke an API key (it stays listed with revoked_at)",
        params: IdParams,
        response: { status: 204 },
        handler: async ({ principal, params }) => {
          await keys.revoke(principal.orgId, principal, params.id);
          return reply.noContent();
        },
      },
    ),
  ];
}
