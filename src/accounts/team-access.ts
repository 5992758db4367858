/**
 * The team rules of DESIGN §6 for resources that carry an optional `team_id` (schedules,
 * monitors, escalation policies): a member may change only resources of their teams or of no
 * team; viewers only read; admins, owners and service keys change everything. Also the check
 * that ids in a request name teams of the org.
 */
import type { Db } from "../db/store.ts";
import { errors } from "../errors.ts";
import { firstUnknownId } from "../ids.ts";
import type { Principal } from "./access.ts";
import { existingTeamIds, teamIdsOfMember } from "./teams.repository.ts";

const NOT_A_TEAM = "does not name a team of this organization";

/** 400 naming `field` unless `teamId` is null or a team of the org. */
export async function checkTeamExists(
  db: Db,
  orgId: string,
  teamId: string | null | undefined,
  field = "team_id",
) {
  if (teamId == null) return;
  const found = await existingTeamIds(db, orgId, [teamId]);
  if (found.length === 0) throw errors.field(field, NOT_A_TEAM);
}

/** 400 naming `<field>.<index>` for the first of `teamIds` that is not a team of the org. */
export async function checkTeamIds(db: Db, orgId: string, teamIds: string[], field = "team_ids") {
  const index = await firstUnknownId(teamIds, (unique) => existingTeamIds(db, orgId, unique));
  if (index !== -1) throw errors.field(`${field}.${index}`, NOT_A_TEAM);
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
  const memberOf = await teamIdsOfMember(db, principal.userId, wanted);
  if (memberOf.length !== wanted.length) {
    throw errors.forbiddenRole("A member may change only resources of their own teams or of no team.");
  }
}
