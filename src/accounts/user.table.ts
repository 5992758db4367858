import type { Role } from "./access.ts";

export type UserStatus = "invited" | "active" | "suspended";

export interface UserTable {
  id: string;
  org_id: string;
  email: string;
  name: string;
  role: Role;
  status: UserStatus;
  signed_up_at: number | null;
  password_hash: string | null;
  totp_secret: string | null;
  mfa_enabled: number;
  session_version: number;
  invite_token_hash: string | null;
  invite_expires_at: number | null;
  reset_token_hash: string | null;
  reset_expires_at: number | null;
  created_at: number;
  last_login_at: number | null;
}
