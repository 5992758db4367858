/**
 * The org settings document (DESIGN §6). It is read and written whole; a section left out of a
 * PUT returns to its defaults. It never holds a secret.
 */
import { type Static, Type as T } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { Strict } from "../http/schema.ts";

const IdList = T.Array(T.String({ minLength: 1, maxLength: 64 }), { maxItems: 50, default: [] });
const Url = T.String({ pattern: "^https?://[^\\s]+$", maxLength: 2048 });

export const SettingsSchema = Strict({
  notifications: T.Optional(
    Strict({ default_channel_ids: T.Optional(IdList), incident_channel_ids: T.Optional(IdList) }),
  ),
  retention: T.Optional(
    Strict({
      alerts_days: T.Optional(
        T.Union([T.Integer({ minimum: 1, maximum: 36500 }), T.Null()], { default: null }),
      ),
      events_days: T.Optional(
        T.Union([T.Integer({ minimum: 1, maximum: 36500 }), T.Null()], { default: null }),
      ),
    }),
  ),
  sso: T.Optional(
    Strict({
      oidc: T.Optional(
        T.Union(
          [
            Strict({
              issuer: Url,
              client_id: T.String({ minLength: 1, maxLength: 256 }),
              allowed_domains: T.Optional(
                T.Array(T.String({ minLength: 1, maxLength: 253 }), { default: [] }),
              ),
            }),
            T.Null(),
          ],
          { default: null },
        ),
      ),
    }),
  ),
  cloudevents: T.Optional(
    Strict({
      ingest: T.Optional(
        Strict({
          oidc: T.Optional(
            T.Union(
              [
                Strict({
                  issuer: Url,
                  audiences: T.Array(T.String({ minLength: 1, maxLength: 256 }), { minItems: 1 }),
                }),
                T.Null(),
              ],
              { default: null },
            ),
          ),
        }),
      ),
      source: T.Optional(
        Strict({
          mode: T.Optional(
            T.Union([T.Literal("auto"), T.Literal("stream"), T.Literal("poll")], { default: "auto" }),
          ),
          poll_interval_seconds: T.Optional(T.Integer({ minimum: 1, maximum: 3600, default: 5 })),
          stream_heartbeat_seconds: T.Optional(T.Integer({ minimum: 1, maximum: 300, default: 20 })),
          refresh_after_seconds: T.Optional(T.Integer({ minimum: 10, maximum: 86400, default: 300 })),
        }),
      ),
    }),
  ),
});

export type SettingsInput = Static<typeof SettingsSchema>;

export interface Settings {
  notifications: { default_channel_ids: string[]; incident_channel_ids: string[] };
  retention: { alerts_days: number | null; events_days: number | null };
  sso: { oidc: { issuer: string; client_id: string; allowed_domains: string[] } | null };
  cloudevents: {
    ingest: { oidc: { issuer: string; audiences: string[] } | null };
    source: {
      mode: "auto" | "stream" | "poll";
      poll_interval_seconds: number;
      stream_heartbeat_seconds: number;
      refresh_after_seconds: number;
    };
  };
}

/** The settings document as stored on the org row, with defaults filled in. */
export function parseSettings(stored: string): Settings {
  return withDefaults(JSON.parse(stored) as SettingsInput);
}

/** Fills every left-out section and field with its default. */
export function withDefaults(input: SettingsInput): Settings {
  const filled = {
    notifications: { ...input.notifications },
    retention: { ...input.retention },
    sso: { ...input.sso },
    cloudevents: { ingest: { ...input.cloudevents?.ingest }, source: { ...input.cloudevents?.source } },
  };
  return Value.Default(SettingsSchema, filled) as Settings;
}

export const SettingsDocument = T.Object({
  notifications: T.Object({
    default_channel_ids: T.Array(T.String()),
    incident_channel_ids: T.Array(T.String()),
  }),
  retention: T.Object({
    alerts_days: T.Union([T.Integer(), T.Null()]),
    events_days: T.Union([T.Integer(), T.Null()]),
  }),
  sso: T.Object({
    oidc: T.Union([
      T.Object({ issuer: T.String(), client_id: T.String(), allowed_domains: T.Array(T.String()) }),
      T.Null(),
    ]),
  }),
  cloudevents: T.Object({
    ingest: T.Object({
      oidc: T.Union([T.Object({ issuer: T.String(), audiences: T.Array(T.String()) }), T.Null()]),
    }),
    source: T.Object({
      mode: T.String(),
      poll_interval_seconds: T.Integer(),
      stream_heartbeat_seconds: T.Integer(),
      refresh_after_seconds: T.Integer(),
    }),
  }),
});

/**
 * An org's retention in days: its own setting may only shorten the server's, also when the
 * server's was lowered after the org saved it. 0 keeps for ever (alerts only).
 */
export function retentionDays(orgDays: number | null, serverDays: number): number {
  if (orgDays === null) return serverDays;
  return serverDays > 0 ? Math.min(orgDays, serverDays) : orgDays;
}
