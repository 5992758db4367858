import type { Generated } from "kysely";
import type { Severity } from "../monitors/monitor.table.ts";

export type AlertStatus = "firing" | "acknowledged" | "resolved";

export interface AlertTable {
  id: string;
  org_id: string;
  monitor_id: string;
  group_id: string | null;
  dedup_key: string;
  summary: string;
  reason: string;
  severity: Severity;
  /** info 0 < warning 1 < critical 2, for sorting. */
  severity_rank: number;
  status: AlertStatus;
  labels: string;
  fired_at: number;
  acknowledged_at: number | null;
  acknowledged_by: string | null;
  resolved_at: number | null;
  resolved_by: string | null;
  /** JSON of the escalation policy when the alert fired, or null for none. */
  policy_snapshot: string | null;
  current_escalation_step: number | null;
  escalation_pass: number;
  notification_count: number;
  escalate_at: number | null;
  auto_resolve_at: number | null;
  /** 1 while the source reports the problem (see the migration). */
  source_down: number;
}

export interface AlertTimelineTable {
  seq: Generated<number>;
  alert_id: string;
  at: number;
  type: string;
  data: string;
}
