/** Alerts and their timelines as the API shows them. */
import { Type as T } from "@sinclair/typebox";
import type { Selectable } from "kysely";
import { Timestamp } from "../http/schema.ts";
import { iso, isoOrNull } from "../time.ts";
import type { AlertTable, AlertTimelineTable } from "./alert.table.ts";

export const ALERT_STATUSES = ["firing", "acknowledged", "resolved"] as const;

export const Alert = T.Object({
  id: T.String(),
  monitor_id: T.String(),
  group_id: T.Union([T.String(), T.Null()]),
  dedup_key: T.String(),
  summary: T.String(),
  reason: T.String(),
  severity: T.String(),
  status: T.Union(ALERT_STATUSES.map((s) => T.Literal(s))),
  labels: T.Record(T.String(), T.String()),
  fired_at: Timestamp(),
  acknowledged_at: T.Union([Timestamp(), T.Null()]),
  acknowledged_by: T.Union([T.String(), T.Null()]),
  resolved_at: T.Union([Timestamp(), T.Null()]),
  resolved_by: T.Union([T.String(), T.Null()]),
  escalation_policy_id: T.Union([T.String(), T.Null()]),
  current_escalation_step: T.Union([T.Integer({ description: "1-based step last notified." }), T.Null()]),
  notification_count: T.Integer(),
});

export const TimelineEntry = T.Object({
  type: T.String(),
  at: Timestamp(),
  data: T.Record(T.String(), T.Unknown()),
});

export function toAlert(row: AlertTable) {
  const policy = row.policy_snapshot ? (JSON.parse(row.policy_snapshot) as { id: string }) : null;
  return {
    id: row.id,
    monitor_id: row.monitor_id,
    group_id: row.group_id,
    dedup_key: row.dedup_key,
    summary: row.summary,
    reason: row.reason,
    severity: row.severity,
    status: row.status,
    labels: JSON.parse(row.labels) as Record<string, string>,
    fired_at: iso(row.fired_at),
    acknowledged_at: isoOrNull(row.acknowledged_at),
    acknowledged_by: row.acknowledged_by,
    resolved_at: isoOrNull(row.resolved_at),
    resolved_by: row.resolved_by,
    escalation_policy_id: policy?.id ?? null,
    current_escalation_step: row.current_escalation_step === null ? null : row.current_escalation_step + 1,
    notification_count: row.notification_count,
  };
}

export function toTimelineEntry(row: Selectable<AlertTimelineTable>) {
  return { type: row.type, at: iso(row.at), data: JSON.parse(row.data) as Record<string, unknown> };
}
