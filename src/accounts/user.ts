/** The User as the API shows it. */
import { Type as T } from "@sinclair/typebox";
import { Timestamp } from "../http/schema.ts";
import { newId } from "../ids.ts";
import { iso, isoOrNull } from "../time.ts";
import { ROLES, type Role } from "./access.ts";
import type { UserTable } from "./user.table.ts";

export const User = T.Object({
  id: T.String(),
  email: T.String(),
  name: T.String(),
  role: T.Union(ROLES.map((r) => T.Literal(r))),
  status: T.Union([T.Literal("invited"), T.Literal("active"), T.Literal("suspended")]),
  team_ids: T.Array(T.String()),
  mfa_enabled: T.Boolean(),
  created_at: Timestamp(),
  last_login_at: T.Union([Timestamp(), T.Null()]),
});

export function toUser(row: UserTable, teamIds: string[]) {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    role: row.role,
    status: row.status,
    team_ids: teamIds,
    mfa_enabled: row.mfa_enabled === 1,
    created_at: iso(row.created_at),
    last_login_at: isoOrNull(row.last_login_at),
  };
}

/** The row of a newly invited user: no password, no MFA, no link yet (the invite issues one). */
export function newUserRow(input: {
  orgId: string;
  email: string;
  name: string;
  role: Role;
  now: number;
}): UserTable {
  return {
    id: newId("usr"),
    org_id: input.orgId,
    email: input.email,
    name: input.name,
    role: input.role,
    status: "invited",
    signed_up_at: null,
    password_hash: null,
    totp_secret: null,
    mfa_enabled: 0,
    session_version: 1,
    invite_token_hash: null,
    invite_expires_at: null,
    reset_token_hash: null,
    reset_expires_at: null,
    created_at: input.now,
    last_login_at: null,
  };
}

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}
