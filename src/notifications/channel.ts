/** Notification channels as the API shows them, and the config each type takes. */
import { Type as T } from "@sinclair/typebox";
import { Email, Name, Strict, Timestamp } from "../http/schema.ts";
import { iso, isoOrNull } from "../time.ts";
import type { ChannelType, NotificationChannelTable, NotificationDeliveryTable } from "./channel.table.ts";

export const CHANNEL_TYPES = ["webhook", "email", "slack", "cloudevents"] as const;

const HttpUrl = T.String({ pattern: "^https?://[^\\s]+$", maxLength: 2048 });

export const WebhookConfig = Strict({
  url: HttpUrl,
  secret: T.Optional(T.String({ minLength: 16, maxLength: 256, description: "Generated when omitted." })),
  timeout_ms: T.Optional(T.Integer({ minimum: 100, maximum: 30_000, default: 5000 })),
});
export const SlackConfig = Strict({ webhook_url: HttpUrl });
export const EmailConfig = Strict({ to: T.Array(Email(), { minItems: 1, maxItems: 50 }) });
export const CloudEventsConfig = Strict({});

const configSchemas = {
  webhook: WebhookConfig,
  slack: SlackConfig,
  email: EmailConfig,
  cloudevents: CloudEventsConfig,
} as const;

export const ChannelInput = Strict({
  name: Name(),
  type: T.Union(CHANNEL_TYPES.map((t) => T.Literal(t))),
  config: T.Record(T.String(), T.Unknown(), { description: "Depends on type: see the docs." }),
  trusted: T.Optional(T.Boolean({ default: false })),
  enabled: T.Optional(T.Boolean({ default: true })),
});

export const ChannelPatch = Strict({
  name: T.Optional(Name()),
  config: T.Optional(T.Record(T.String(), T.Unknown())),
  trusted: T.Optional(T.Boolean()),
  enabled: T.Optional(T.Boolean()),
});

export const Channel = T.Object({
  id: T.String(),
  name: T.String(),
  type: T.String(),
  config: T.Record(T.String(), T.Unknown(), { description: "Without the webhook secret." }),
  trusted: T.Boolean(),
  enabled: T.Boolean(),
  created_at: Timestamp(),
  updated_at: Timestamp(),
});

export const ChannelWithSecret = T.Composite([
  Channel,
  T.Object({ secret: T.Optional(T.String({ description: "A webhook's signing secret, shown once." })) }),
]);

export function toChannel(row: NotificationChannelTable) {
  return {
    id: row.id,
    name: row.name,
    type: row.type,
    config: JSON.parse(row.config) as Record<string, unknown>,
    trusted: row.trusted === 1,
    enabled: row.enabled === 1,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** The checker for a type's config; errors name `config.<field>`. */
export function configSchema(type: ChannelType) {
  return configSchemas[type];
}

export const Delivery = T.Object({
  id: T.String(),
  channel_id: T.String(),
  alert_id: T.Union([T.String(), T.Null()]),
  event_id: T.String(),
  status: T.Union([T.Literal("pending"), T.Literal("sent"), T.Literal("dead")]),
  attempts: T.Integer(),
  next_attempt_at: T.Union([Timestamp(), T.Null()], { description: "null once sent or dead" }),
  last_status: T.Union([T.Integer(), T.Null()]),
  last_error: T.Union([T.String(), T.Null()]),
  created_at: Timestamp(),
  sent_at: T.Union([Timestamp(), T.Null()]),
});

export function toDelivery(row: NotificationDeliveryTable) {
  return {
    id: row.id,
    channel_id: row.channel_id as string,
    alert_id: row.alert_id,
    event_id: row.event_id,
    status: row.status,
    attempts: row.attempts,
    next_attempt_at: row.status === "pending" ? iso(row.next_attempt_at) : null,
    last_status: row.last_status,
    last_error: row.last_error,
    created_at: iso(row.created_at),
    sent_at: isoOrNull(row.sent_at),
  };
}
