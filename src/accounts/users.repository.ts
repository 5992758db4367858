/** SQL for users and their team memberships. */
import type { Db } from "../db/store.ts";
import type { UserTable } from "./user.table.ts";

export function findUser(db: Db, orgId: string, id: string): Promise<UserTable | undefined> {
  return db
    .selectFrom("users")
    .selectAll()
    .where("org_id", "=", orgId)
    .where("id", "=", id)
    .executeTakeFirst();
}

export function findUserById(db: Db, id: string): Promise<UserTable | undefined> {
  return db.selectFrom("users").selectAll().where("id", "=", id).executeTakeFirst();
}

export function findUserByEmail(db: Db, orgId: string, email: string): Promise<UserTable | undefined> {
  return db
    .selectFrom("users")
    .selectAll()
    .where("org_id", "=", orgId)
    .where("email", "=", email)
    .executeTakeFirst();
}

export function findUsersByEmail(db: Db, email: string): Promise<UserTable[]> {
  return db.selectFrom("users").selectAll().where("email", "=", email).execute();
}

export function findUserByInviteHash(db: Db, hash: string): Promise<UserTable | undefined> {
  return db.selectFrom("users").selectAll().where("invite_token_hash", "=", hash).executeTakeFirst();
}

export function findUserByResetHash(db: Db, hash: string): Promise<UserTable | undefined> {
  return db.selectFrom("users").selectAll().where("reset_token_hash", "=", hash).executeTakeFirst();
}

export function findOwner(db: Db, orgId: string): Promise<UserTable | undefined> {
  return db
    .selectFrom("users")
    .selectAll()
    .where("org_id", "=", orgId)
    .where("role", "=", "owner")
    .executeTakeFirst();
}

export interface UserFilter {
  role?: string;
  status?: string;
  afterId?: string;
  limit: number;
}

export function listUsers(db: Db, orgId: string, filter: UserFilter): Promise<UserTable[]> {
  let query = db.selectFrom("users").selectAll().where("org_id", "=", orgId);
  if (filter.role) query = query.where("role", "=", filter.role as UserTable["role"]);
  if (filter.status) query = query.where("status", "=", filter.status as UserTable["status"]);
  if (filter.afterId) query = query.where("id", ">", filter.afterId);
  return query
    .orderBy("id")
    .limit(filter.limit + 1)
    .execute();
}

/** Which of `ids` name users of the org (with `excludeSuspended`, users who are not suspended). */
export async function existingUserIds(
  db: Db,
  orgId: string,
  ids: string[],
  options: { excludeSuspended?: boolean } = {},
): Promise<string[]> {
  if (ids.length === 0) return [];
  let query = db.selectFrom("users").select("id").where("org_id", "=", orgId).where("id", "in", ids);
  if (options.excludeSuspended) query = query.where("status", "!=", "suspended");
  const rows = await query.execute();
  return rows.map((r) => r.id);
}

export async function insertUser(db: Db, row: UserTable): Promise<void> {
  await db.insertInto("users").values(row).execute();
}

export async function updateUser(
  db: Db,
  id: string,
  changes: Partial<Omit<UserTable, "id" | "org_id">>,
): Promise<void> {
  await db.updateTable("users").set(changes).where("id", "=", id).execute();
}

export async function bumpSessionVersion(db: Db, id: string): Promise<void> {
  await db
    .updateTable("users")
    .set((eb) => ({ session_version: eb("session_version", "+", 1) }))
    .where("id", "=", id)
    .execute();
}

export async function deleteUser(db: Db, id: string): Promise<void> {
  await db.deleteFrom("users").where("id", "=", id).execute();
}

/** Team ids of each user, in one query for a whole page of users. */
export async function teamIdsByUser(db: Db, userIds: string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>(userIds.map((id) => [id, []]));
  if (userIds.length === 0) return out;
  const rows = await db
    .selectFrom("team_members")
    .select(["user_id", "team_id"])
    .where("user_id", "in", userIds)
    .orderBy("team_id")
    .execute();
  for (const row of rows) out.get(row.user_id)?.push(row.team_id);
  return out;
}

export async function setUserTeams(db: Db, userId: string, teamIds: string[]): Promise<void> {
  await db.deleteFrom("team_members").where("user_id", "=", userId).execute();
  if (teamIds.length > 0) {
    await db
      .insertInto("team_members")
      .values(teamIds.map((team_id) => ({ team_id, user_id: userId })))
      .execute();
  }
}

/** Emails of users by id (users that no longer exist are left out). */
export async function emailsOf(db: Db, userIds: string[]): Promise<Map<string, string>> {
  if (userIds.length === 0) return new Map();
  const rows = await db.selectFrom("users").select(["id", "email"]).where("id", "in", userIds).execute();
  return new Map(rows.map((r) => [r.id, r.email]));
}
