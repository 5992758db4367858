export interface IngestTokenTable {
  id: string;
  org_id: string;
  name: string;
  prefix: string;
  token_hash: string;
  channel_id: string | null;
  revoked_at: number | null;
  created_at: number;
}
