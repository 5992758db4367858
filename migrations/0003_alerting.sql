-- The alerting pipeline: notification channels, escalation policies, monitors, alerts with
-- their timelines, notification deliveries, and the outbound event log (transactional outbox).
-- Every timer is a column of a row (a due time) that the scheduler claims.

CREATE TABLE notification_channels (
  id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL REFERENCES orgs(id),
  name TEXT NOT NULL,
  type TEXT NOT NULL CHECK (type IN ('webhook', 'email', 'slack', 'cloudevents')),
  -- JSON without secrets; a webhook's signing secret is in `secret`, never returned after create.
  config TEXT NOT NULL,
  secret TEXT,
  trusted INTEGER NOT NULL DEFAULT 0,
  enabled INTEGER NOT NULL DEFAULT 1,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX notification_channels_org ON notification_channels (org_id, id);

CREATE TABLE escalation_policies (
  id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL REFERENCES orgs(id),
  name TEXT NOT NULL,
  team_id TEXT REFERENCES teams(id) ON DELETE SET NULL,
  repeat INTEGER NOT NULL DEFAULT 0,
  -- JSON array of steps: [{ id, delay_seconds, targets: [{ type, id }] }]
  steps TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX escalation_policies_org ON escalation_policies (org_id, id);

-- Who a policy names, for schedule_in_use and user_in_use.
CREATE TABLE escalation_policy_targets (
  policy_id TEXT NOT NULL REFERENCES escalation_policies(id) ON DELETE CASCADE,
  target_type TEXT NOT NULL CHECK (target_type IN ('user', 'schedule', 'channel')),
  target_id TEXT NOT NULL,
  PRIMARY KEY (policy_id, target_type, target_id)
);
CREATE INDEX escalation_policy_targets_target ON escalation_policy_targets (target_type, target_id);

CREATE TABLE monitors (
  id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL REFERENCES orgs(id),
  name TEXT NOT NULL,
  type TEXT NOT NULL CHECK (type IN ('event', 'heartbeat', 'http')),
  group_id TEXT,
  team_id TEXT REFERENCES teams(id) ON DELETE SET NULL,
  severity TEXT NOT NULL CHECK (severity IN ('info', 'warning', 'critical')),
  escalation_policy_id TEXT REFERENCES escalation_policies(id),
  labels TEXT NOT NULL DEFAULT '{}',
  freshness_seconds INTEGER NOT NULL DEFAULT 60,
  paused INTEGER NOT NULL DEFAULT 0,
  status TEXT NOT NULL CHECK (status IN ('up', 'down')),
  config TEXT NOT NULL,
  -- The routing credential: an event monitor's integration key or a heartbeat's ping token.
  token TEXT UNIQUE,
  -- Timers: a heartbeat's deadline, an HTTP monitor's next check.
  due_at INTEGER,
  consecutive_failures INTEGER NOT NULL DEFAULT 0,
  consecutive_successes INTEGER NOT NULL DEFAULT 0,
  last_checked_at INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX monitors_org ON monitors (org_id, id);
CREATE INDEX monitors_due ON monitors (due_at) WHERE due_at IS NOT NULL AND paused = 0;
CREATE INDEX monitors_policy ON monitors (escalation_policy_id);

CREATE TABLE alerts (
  id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL REFERENCES orgs(id),
  monitor_id TEXT NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
  group_id TEXT,
  dedup_key TEXT NOT NULL,
  summary TEXT NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  severity TEXT NOT NULL CHECK (severity IN ('info', 'warning', 'critical')),
  severity_rank INTEGER NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('firing', 'acknowledged', 'resolved')),
  labels TEXT NOT NULL DEFAULT '{}',
  fired_at INTEGER NOT NULL,
  acknowledged_at INTEGER,
  acknowledged_by TEXT,
  resolved_at INTEGER,
  resolved_by TEXT,
  -- The policy as it was when the alert fired; later edits do not change a running escalation.
  policy_snapshot TEXT,
  current_escalation_step INTEGER,
  escalation_pass INTEGER NOT NULL DEFAULT 0,
  notification_count INTEGER NOT NULL DEFAULT 0,
  -- Timers: the next escalation, and the automatic resolve after the source came up.
  escalate_at INTEGER,
  auto_resolve_at INTEGER,
  -- 1 while the source reports the problem: after a manual resolve, triggers with the same
  -- dedup key fire no new alert until the source has reported it up.
  source_down INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX alerts_org_fired ON alerts (org_id, fired_at DESC, id);
CREATE INDEX alerts_org_status_fired ON alerts (org_id, status, fired_at DESC, id);
CREATE INDEX alerts_org_severity_fired ON alerts (org_id, severity_rank, fired_at DESC, id);
CREATE INDEX alerts_org_severity_desc_fired ON alerts (org_id, severity_rank DESC, fired_at DESC, id);
CREATE INDEX alerts_org_monitor_fired ON alerts (org_id, monitor_id, fired_at DESC, id);
CREATE INDEX alerts_org_group_fired ON alerts (org_id, group_id, fired_at DESC, id);
CREATE UNIQUE INDEX alerts_open_dedup ON alerts (monitor_id, dedup_key) WHERE status != 'resolved';
CREATE INDEX alerts_monitor_dedup ON alerts (monitor_id, dedup_key, fired_at DESC, id DESC);
CREATE INDEX alerts_escalate_due ON alerts (escalate_at) WHERE escalate_at IS NOT NULL;
CREATE INDEX alerts_auto_resolve_due ON alerts (auto_resolve_at) WHERE auto_resolve_at IS NOT NULL;

CREATE TABLE alert_timeline (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  alert_id TEXT NOT NULL REFERENCES alerts(id) ON DELETE CASCADE,
  at INTEGER NOT NULL,
  type TEXT NOT NULL,
  data TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX alert_timeline_alert ON alert_timeline (alert_id, seq);

CREATE TABLE notification_deliveries (
  id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL REFERENCES orgs(id),
  channel_id TEXT REFERENCES notification_channels(id) ON DELETE CASCADE,
  -- A user notified by email directly (a policy step's user or schedule target).
  user_id TEXT,
  alert_id TEXT,
  event_id TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'sent', 'dead')),
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL,
  last_error TEXT,
  last_status INTEGER,
  created_at INTEGER NOT NULL,
  sent_at INTEGER
);
CREATE INDEX notification_deliveries_due ON notification_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX notification_deliveries_channel ON notification_deliveries (channel_id, id);
CREATE INDEX notification_deliveries_alert ON notification_deliveries (alert_id);

-- The outbound event log: every state change writes its CloudEvent here in the same
-- transaction as the change. `seq` orders events in commit order for consumers.
CREATE TABLE events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  org_id TEXT NOT NULL REFERENCES orgs(id),
  id TEXT NOT NULL,
  source TEXT NOT NULL,
  type TEXT NOT NULL,
  subject TEXT,
  time INTEGER NOT NULL,
  -- The structured-mode JSON of the event.
  body TEXT NOT NULL,
  -- Set for events addressed to a cloudevents channel (only keys bound to it see them).
  channel_id TEXT,
  created_at INTEGER NOT NULL
);
CREATE INDEX events_org_seq ON events (org_id, seq);
CREATE INDEX events_created ON events (created_at);
CREATE INDEX events_org_id ON events (org_id, id);
