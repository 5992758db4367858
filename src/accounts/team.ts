/** Teams: named groups of users; monitors, policies and schedules may belong to one. */
import { Type as T } from "@sinclair/typebox";
import { Timestamp } from "../http/schema.ts";
import { iso } from "../time.ts";
import type { TeamTable } from "./team.table.ts";

export const Team = T.Object({
  id: T.String(),
  name: T.String(),
  member_ids: T.Array(T.String()),
  created_at: Timestamp(),
});

export function toTeam(row: TeamTable, memberIds: string[]) {
  return { id: row.id, name: row.name, member_ids: memberIds, created_at: iso(row.created_at) };
}
