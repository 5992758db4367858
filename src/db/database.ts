/** The database as Kysely sees it, composed from each feature's table types. */
import type { ApiKeyTable } from "../accounts/api-key.table.ts";
import type { IngestTokenTable } from "../accounts/ingest-token.table.ts";
import type { OrgTable } from "../accounts/org.table.ts";
import type { TeamMemberTable, TeamTable } from "../accounts/team.table.ts";
import type { UserTable } from "../accounts/user.table.ts";
import type { AlertTable, AlertTimelineTable } from "../alerts/alert.table.ts";
import type { ConsumerRow } from "../cloudevents/consumers.repository.ts";
import type { ReplyRow } from "../cloudevents/replies.repository.ts";
import type { EscalationPolicyTable, EscalationPolicyTargetTable } from "../escalation/policy.table.ts";
import type { EventHorizonTable, EventTable } from "../events/event.table.ts";
import type { IdempotencyRecordTable } from "../http/idempotency.table.ts";
import type {
  IncidentMonitorTable,
  IncidentStatusPageTable,
  IncidentTable,
  IncidentUpdateTable,
} from "../incidents/incident.table.ts";
import type { EmailOutboxTable } from "../mail/email.table.ts";
import type { MonitorTable } from "../monitors/monitor.table.ts";
import type { NotificationChannelTable, NotificationDeliveryTable } from "../notifications/channel.table.ts";
import type {
  ScheduleOverrideTable,
  ScheduleParticipantTable,
  ScheduleTable,
} from "../schedules/schedule.table.ts";
import type { StatusPageTable } from "../status-pages/status-page.table.ts";

export interface Database {
  orgs: OrgTable;
  users: UserTable;
  teams: TeamTable;
  team_members: TeamMemberTable;
  api_keys: ApiKeyTable;
  ingest_tokens: IngestTokenTable;
  email_outbox: EmailOutboxTable;
  idempotency_records: IdempotencyRecordTable;
  schedules: ScheduleTable;
  schedule_participants: ScheduleParticipantTable;
  schedule_overrides: ScheduleOverrideTable;
  notification_channels: NotificationChannelTable;
  notification_deliveries: NotificationDeliveryTable;
  escalation_policies: EscalationPolicyTable;
  escalation_policy_targets: EscalationPolicyTargetTable;
  monitors: MonitorTable;
  alerts: AlertTable;
  alert_timeline: AlertTimelineTable;
  events: EventTable;
  event_horizons: EventHorizonTable;
  event_consumers: ConsumerRow;
  cloudevent_replies: ReplyRow;
  status_pages: StatusPageTable;
  incidents: IncidentTable;
  incident_monitors: IncidentMonitorTable;
  incident_status_pages: IncidentStatusPageTable;
  incident_updates: IncidentUpdateTable;
}
