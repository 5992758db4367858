/** The API key as the API shows it (the secret only in the create response). */
import { Type as T } from "@sinclair/typebox";
import { Timestamp } from "../http/schema.ts";
import { iso, isoOrNull } from "../time.ts";
import { SCOPES, type Scope } from "./access.ts";
import type { ApiKeyTable } from "./api-key.table.ts";

export const ScopeSchema = T.Union(SCOPES.map((s) => T.Literal(s)));

export const ApiKey = T.Object({
  id: T.String(),
  name: T.String(),
  prefix: T.String({ description: "The first 12 characters of the secret, to recognise it." }),
  scopes: T.Array(ScopeSchema),
  user_id: T.Union([T.String(), T.Null()]),
  service: T.Boolean(),
  channel_id: T.Union([T.String(), T.Null()], {
    description: "A cloudevents channel: the key also receives the events addressed to it.",
  }),
  expires_at: T.Union([Timestamp(), T.Null()]),
  revoked_at: T.Union([Timestamp(), T.Null()]),
  last_used_at: T.Union([Timestamp(), T.Null()]),
  created_at: Timestamp(),
});

export const ApiKeyWithSecret = T.Composite([
  ApiKey,
  T.Object({ secret: T.String({ description: "Shown once." }) }),
]);

export function parseScopes(value: string): Scope[] {
  return value.split(",").filter(Boolean) as Scope[];
}

export function toApiKey(row: ApiKeyTable) {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    scopes: parseScopes(row.scopes),
    user_id: row.user_id,
    service: row.service === 1,
    channel_id: row.channel_id,
    expires_at: isoOrNull(row.expires_at),
    revoked_at: isoOrNull(row.revoked_at),
    last_used_at: isoOrNull(row.last_used_at),
    created_at: iso(row.created_at),
  };
}
