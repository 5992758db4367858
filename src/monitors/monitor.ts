/** Monitors as the API shows them, and the config each type takes. */
import { type Static, Type as T } from "@sinclair/typebox";
import { Name, Strict, Timestamp } from "../http/schema.ts";
import { iso } from "../time.ts";
import type { MonitorTable, MonitorType, Severity } from "./monitor.table.ts";

export const MONITOR_TYPES = ["event", "heartbeat", "http"] as const;
export const SEVERITIES = ["info", "warning", "critical"] as const;
export const SEVERITY_RANK: Record<Severity, number> = { info: 0, warning: 1, critical: 2 };

export const SeveritySchema = T.Union(SEVERITIES.map((s) => T.Literal(s)));

export const EventConfig = Strict({
  cloudevents_type: T.Optional(
    T.String({
      minLength: 1,
      maxLength: 200,
      description: "A glob on CloudEvent types that feed this monitor.",
    }),
  ),
});

export const HeartbeatConfig = Strict({
  interval_seconds: T.Optional(T.Integer({ minimum: 1, maximum: 30 * 86_400 })),
  cron: T.Optional(
    T.String({ minLength: 1, maxLength: 200, description: "When pings are expected (croner syntax)." }),
  ),
  time_zone: T.Optional(T.String({ minLength: 1, maxLength: 64, default: "UTC" })),
  grace_seconds: T.Optional(T.Integer({ minimum: 0, maximum: 86_400, default: 60 })),
});

export const HttpConfig = Strict({
  url: T.String({ pattern: "^https?://[^\\s]+$", maxLength: 2048 }),
  method: T.Optional(T.Union([T.Literal("GET"), T.Literal("HEAD"), T.Literal("POST")], { default: "GET" })),
  expected_status: T.Optional(T.Integer({ minimum: 100, maximum: 599, description: "Default: any 2xx." })),
  keyword: T.Optional(T.String({ minLength: 1, maxLength: 200, description: "Text the body must contain." })),
  timeout_ms: T.Optional(T.Integer({ minimum: 100, maximum: 60_000, default: 10_000 })),
  interval_seconds: T.Optional(T.Integer({ minimum: 1, maximum: 86_400, default: 60 })),
  failure_threshold: T.Optional(T.Integer({ minimum: 1, maximum: 100, default: 2 })),
  success_threshold: T.Optional(T.Integer({ minimum: 1, maximum: 100, default: 1 })),
});

export type HeartbeatSettings = Static<typeof HeartbeatConfig>;
export type HttpSettings = Static<typeof HttpConfig>;

const Labels = T.Record(T.String({ minLength: 1, maxLength: 100 }), T.String({ maxLength: 500 }), {
  maxProperties: 50,
});

export const MonitorInput = Strict({
  name: Name(),
  type: T.Union(MONITOR_TYPES.map((t) => T.Literal(t))),
  group_id: T.Optional(T.Union([T.String({ minLength: 1, maxLength: 100 }), T.Null()])),
  team_id: T.Optional(T.Union([T.String({ minLength: 1, maxLength: 64 }), T.Null()])),
  severity: T.Optional(SeveritySchema),
  escalation_policy_id: T.Optional(T.Union([T.String({ minLength: 1, maxLength: 64 }), T.Null()])),
  labels: T.Optional(Labels),
  freshness_seconds: T.Optional(T.Integer({ minimum: 0, maximum: 86_400 })),
  paused: T.Optional(T.Boolean()),
  config: T.Optional(T.Record(T.String(), T.Unknown(), { description: "Depends on type: see the docs." })),
});

export const MonitorPatch = Strict({
  name: T.Optional(Name()),
  group_id: T.Optional(T.Union([T.String({ minLength: 1, maxLength: 100 }), T.Null()])),
  team_id: T.Optional(T.Union([T.String({ minLength: 1, maxLength: 64 }), T.Null()])),
  severity: T.Optional(SeveritySchema),
  escalation_policy_id: T.Optional(T.Union([T.String({ minLength: 1, maxLength: 64 }), T.Null()])),
  labels: T.Optional(Labels),
  freshness_seconds: T.Optional(T.Integer({ minimum: 0, maximum: 86_400 })),
  paused: T.Optional(T.Boolean()),
  config: T.Optional(T.Record(T.String(), T.Unknown())),
});

export const Monitor = T.Object({
  id: T.String(),
  name: T.String(),
  type: T.String(),
  group_id: T.Union([T.String(), T.Null()]),
  team_id: T.Union([T.String(), T.Null()]),
  severity: T.String(),
  escalation_policy_id: T.Union([T.String(), T.Null()]),
  labels: T.Record(T.String(), T.String()),
  freshness_seconds: T.Integer(),
  paused: T.Boolean(),
  status: T.Union([T.Literal("up"), T.Literal("down")]),
  config: T.Record(T.String(), T.Unknown()),
  integration_key: T.Optional(T.String({ description: "Event monitors: the Events API routing key." })),
  ping_url: T.Optional(T.String({ description: "Heartbeat monitors: where to ping." })),
  created_at: Timestamp(),
  updated_at: Timestamp(),
});

export function toMonitor(row: MonitorTable, baseUrl: string) {
  return {
    id: row.id,
    name: row.name,
    type: row.type,
    group_id: row.group_id,
    team_id: row.team_id,
    severity: row.severity,
    escalation_policy_id: row.escalation_policy_id,
    labels: JSON.parse(row.labels) as Record<string, string>,
    freshness_seconds: row.freshness_seconds,
    paused: row.paused === 1,
    status: row.status,
    config: JSON.parse(row.config) as Record<string, unknown>,
    ...(row.type === "event" && row.token ? { integration_key: row.token } : {}),
    ...(row.type === "heartbeat" && row.token ? { ping_url: `${baseUrl}/ping/${row.token}` } : {}),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export function configSchemaOf(type: MonitorType) {
  return type === "event" ? EventConfig : type === "heartbeat" ? HeartbeatConfig : HttpConfig;
}
