/** Incidents and their updates as the API shows them. */
import { Type as T } from "@sinclair/typebox";
import { Strict, Timestamp } from "../http/schema.ts";
import { iso, isoOrNull } from "../time.ts";
import type { IncidentTable, IncidentUpdateTable } from "./incident.table.ts";

export const INCIDENT_STATUSES = [
  "investigating",
  "identified",
  "monitoring",
  "resolved",
  "maintenance",
] as const;
export const SEVERITIES = ["critical", "major", "minor"] as const;

const StatusSchema = T.Union(INCIDENT_STATUSES.map((s) => T.Literal(s)));
const IdList = T.Array(T.String({ minLength: 1, maxLength: 64 }), { maxItems: 100 });
const Body = T.String({ minLength: 1, maxLength: 10_000, description: "Plain text; line breaks are kept." });

export const IncidentInput = Strict({
  title: T.String({ minLength: 1, maxLength: 300 }),
  severity: T.Union(
    [T.Literal("critical"), T.Literal("major"), T.Literal("minor"), T.Literal("maintenance")],
    {
      description: "maintenance only at creation (the status then defaults to maintenance).",
    },
  ),
  status: T.Optional(StatusSchema),
  started_at: T.Optional(Timestamp()),
  initial_update: T.Optional(Strict({ body: Body, public: T.Optional(T.Boolean()) })),
  monitor_ids: T.Optional(IdList),
  status_page_ids: T.Optional(IdList),
});

export const IncidentPatch = Strict({
  title: T.Optional(T.String({ minLength: 1, maxLength: 300 })),
  severity: T.Optional(T.Union(SEVERITIES.map((s) => T.Literal(s)))),
  status: T.Optional(StatusSchema),
  monitor_ids: T.Optional(IdList),
  status_page_ids: T.Optional(IdList),
});

export const UpdateInput = Strict({
  body: Body,
  status: T.Optional(StatusSchema),
  public: T.Optional(T.Boolean()),
});

export const UpdatePatch = Strict({ body: T.Optional(Body), public: T.Optional(T.Boolean()) });

export const Update = T.Object({
  id: T.String(),
  incident_id: T.String(),
  status: T.String(),
  body: T.String(),
  public: T.Boolean(),
  user_id: T.String(),
  user_email: T.Union([T.String(), T.Null()]),
  created_at: Timestamp(),
  edited_at: T.Union([Timestamp(), T.Null()]),
  edit_history: T.Array(
    T.Object({ body: T.String(), public: T.Boolean(), edited_at: Timestamp(), edited_by: T.String() }),
  ),
});

export const Incident = T.Object({
  id: T.String(),
  title: T.String(),
  status: T.String(),
  severity: T.String(),
  started_at: Timestamp(),
  resolved_at: T.Union([Timestamp(), T.Null()]),
  created_by: T.String(),
  created_at: Timestamp(),
  updated_at: Timestamp(),
  monitor_ids: T.Array(T.String()),
  status_page_ids: T.Array(T.String()),
});

export const IncidentWithUpdates = T.Composite([Incident, T.Object({ updates: T.Array(Update) })]);

export function toIncident(row: IncidentTable, monitorIds: string[], pageIds: string[]) {
  return {
    id: row.id,
    title: row.title,
    status: row.status,
    severity: row.severity,
    started_at: iso(row.started_at),
    resolved_at: isoOrNull(row.resolved_at),
    created_by: row.created_by,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    monitor_ids: monitorIds,
    status_page_ids: pageIds,
  };
}

export function toUpdate(row: IncidentUpdateTable, email: string | null) {
  return {
    id: row.id,
    incident_id: row.incident_id,
    status: row.status,
    body: row.body,
    public: row.public === 1,
    user_id: row.user_id,
    user_email: email,
    created_at: iso(row.created_at),
    edited_at: isoOrNull(row.edited_at),
    edit_history: JSON.parse(row.edit_history) as {
      body: string;
      public: boolean;
      edited_at: string;
      edited_by: string;
    }[],
  };
}
