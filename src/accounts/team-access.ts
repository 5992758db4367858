/**
 * The team rules of DESIGN §6 for resources that carry an optional `team_id` (schedules,
 * monitors, escalation policies): a member may change only resources of their teams or of no
 * team; viewers only read; admins, owners and service keys change everything.
 */
import type { Db } from "../db/store.ts";
import { errors } from "../errors.ts";
import type { Principal } from "./access.ts";

/** 400 naming `field` unless `teamId` is null or a team of the org. */
export async function checkTeamExists(
  db: Db,
  orgId: string,
  teamId: string | null | undefined,
  field = "team_id",
) {
  if (teamId == null) return;
  const team = await db
    .selectFrom("teams")
    .select("id")
    .where("org_id", "=", orgId)
    .where("id", "=", teamId)
    .executeTakeFirst();
  if (!team) throw errors.field(field, "does not name a team of this organization");
}

/** 403 `forbidden_role` unless the principal may change a resource of each of `teamIds`. */
export async function checkTeamWrite(
  db: Db,
  principal: Principal,
  teamIds: (string | null)[],
): Promise<void> {
  if (principal.role !== "member" || principal.userId === null) return;
  const wanted = [...new Set(teamIds.filter((id): id is string => id !== null))];
  if (wanted.length === 0) return;
  const rows = await db
    .selectFrom("team_members")
    .select("team_id")
    .where("user_id", "=", principal.userId)
    .where("team_id", "in", wanted)
    .execute();
  if (rows.length !== wanted.length) {
    throw errors.forbiddenRole("A member may change only resources of their own teams or of no team.");
  }
}
