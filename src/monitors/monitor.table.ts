export type MonitorType = "event" | "heartbeat" | "http";
export type Severity = "info" | "warning" | "critical";

export interface MonitorTable {
  id: string;
  org_id: string;
  name: string;
  type: MonitorType;
  group_id: string | null;
  team_id: string | null;
  severity: Severity;
  escalation_policy_id: string | null;
  /** JSON object of string labels. */
  labels: string;
  freshness_seconds: number;
  paused: number;
  status: "up" | "down";
  /** JSON: the type's settings. */
  config: string;
  /** An event monitor's integration key or a heartbeat monitor's ping token. */
  token: string | null;
  /** A heartbeat's deadline or an HTTP monitor's next check. */
  due_at: number | null;
  consecutive_failures: number;
  consecutive_successes: number;
  last_checked_at: number | null;
  created_at: number;
  updated_at: number;
}
