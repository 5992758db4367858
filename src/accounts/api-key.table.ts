export interface ApiKeyTable {
  id: string;
  org_id: string;
  user_id: string | null;
  service: number;
  name: string;
  prefix: string;
  secret_hash: string;
  /** Comma-separated scopes. */
  scopes: string;
  expires_at: number | null;
  revoked_at: number | null;
  last_used_at: number | null;
  created_at: number;
  /** A cloudevents channel the key consumes for: it also gets the events addressed to it. */
  channel_id: string | null;
}
