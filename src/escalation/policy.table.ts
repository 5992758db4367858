export interface EscalationPolicyTable {
  id: string;
  org_id: string;
  name: string;
  team_id: string | null;
  repeat: number;
  /** JSON array of StoredStep. */
  steps: string;
  created_at: number;
  updated_at: number;
}

export interface EscalationPolicyTargetTable {
  policy_id: string;
  target_type: "user" | "schedule" | "channel";
  target_id: string;
}
