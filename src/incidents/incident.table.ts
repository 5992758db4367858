export type IncidentStatus = "investigating" | "identified" | "monitoring" | "resolved" | "maintenance";
export type IncidentSeverity = "critical" | "major" | "minor" | "maintenance";

export interface IncidentTable {
  id: string;
  org_id: string;
  title: string;
  status: IncidentStatus;
  severity: IncidentSeverity;
  started_at: number;
  resolved_at: number | null;
  created_by: string;
  created_at: number;
  updated_at: number;
}

export interface IncidentMonitorTable {
  incident_id: string;
  monitor_id: string;
}

export interface IncidentStatusPageTable {
  incident_id: string;
  status_page_id: string;
}

export interface IncidentUpdateTable {
  id: string;
  incident_id: string;
  status: string;
  body: string;
  public: number;
  user_id: string;
  /** JSON array of earlier versions. */
  edit_history: string;
  edited_at: number | null;
  created_at: number;
}
