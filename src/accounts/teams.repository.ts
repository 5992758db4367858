/** SQL for teams and their members. */
import type { Db } from "../db/store.ts";
import type { TeamTable } from "./team.table.ts";

export function findTeam(db: Db, orgId: string, id: string) {
  return db
    .selectFrom("teams")
    .selectAll()
    .where("org_id", "=", orgId)
    .where("id", "=", id)
    .executeTakeFirst();
}

export function findTeamByName(db: Db, orgId: string, name: string) {
  return db
    .selectFrom("teams")
    .selectAll()
    .where("org_id", "=", orgId)
    .where("name", "=", name)
    .executeTakeFirst();
}

export function listTeams(db: Db, orgId: string, afterId: string | undefined, limit: number) {
  let query = db.selectFrom("teams").selectAll().where("org_id", "=", orgId);
  if (afterId) query = query.where("id", ">", afterId);
  return query
    .orderBy("id")
    .limit(limit + 1)
    .execute();
}

export async function existingTeamIds(db: Db, orgId: string, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom("teams")
    .select("id")
    .where("org_id", "=", orgId)
    .where("id", "in", ids)
    .execute();
  return rows.map((r) => r.id);
}

/** Which of `teamIds` the user is a member of. */
export async function teamIdsOfMember(db: Db, userId: string, teamIds: string[]): Promise<string[]> {
  if (teamIds.length === 0) return [];
  const rows = await db
    .selectFrom("team_members")
    .select("team_id")
    .where("user_id", "=", userId)
    .where("team_id", "in", teamIds)
    .execute();
  return rows.map((r) => r.team_id);
}

export async function memberIdsByTeam(db: Db, teamIds: string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>(teamIds.map((id) => [id, []]));
  if (teamIds.length === 0) return out;
  const rows = await db
    .selectFrom("team_members")
    .select(["team_id", "user_id"])
    .where("team_id", "in", teamIds)
    .orderBy("user_id")
    .execute();
  for (const row of rows) out.get(row.team_id)?.push(row.user_id);
  return out;
}

export async function insertTeam(db: Db, row: TeamTable): Promise<void> {
  await db.insertInto("teams").values(row).execute();
}

export async function renameTeam(db: Db, id: string, name: string): Promise<void> {
  await db.updateTable("teams").set({ name }).where("id", "=", id).execute();
}

export async function setTeamMembers(db: Db, teamId: string, userIds: string[]): Promise<void> {
  await db.deleteFrom("team_members").where("team_id", "=", teamId).execute();
  if (userIds.length > 0) {
    await db
      .insertInto("team_members")
      .values(userIds.map((user_id) => ({ team_id: teamId, user_id })))
      .execute();
  }
}

export async function deleteTeam(db: Db, id: string): Promise<void> {
  await db.deleteFrom("teams").where("id", "=", id).execute();
}
