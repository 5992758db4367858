export interface ScheduleTable {
  id: string;
  org_id: string;
  name: string;
  description: string;
  time_zone: string;
  team_id: string | null;
  /** JSON array of StoredLayer. */
  layers: string;
  feed_token_hash: string | null;
  version: number;
  created_at: number;
  updated_at: number;
}

export interface ScheduleParticipantTable {
  schedule_id: string;
  user_id: string;
}

export interface ScheduleOverrideTable {
  id: string;
  org_id: string;
  schedule_id: string;
  user_id: string;
  start_at: number;
  end_at: number;
  reason: string;
  created_by: string;
  created_at: number;
}
