export interface TeamTable {
  id: string;
  org_id: string;
  name: string;
  created_at: number;
}

export interface TeamMemberTable {
  team_id: string;
  user_id: string;
}
