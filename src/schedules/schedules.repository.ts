/** SQL for schedules, their participants index and their overrides. */
import type { Db, Store } from "../db/store.ts";
import type { ScheduleOverrideTable, ScheduleTable } from "./schedule.table.ts";

export function findSchedule(db: Db, orgId: string, id: string): Promise<ScheduleTable | undefined> {
  return db
    .selectFrom("schedules")
    .selectAll()
    .where("org_id", "=", orgId)
    .where("id", "=", id)
    .executeTakeFirst();
}

export function findScheduleByFeedHash(db: Db, hash: string): Promise<ScheduleTable | undefined> {
  return db.selectFrom("schedules").selectAll().where("feed_token_hash", "=", hash).executeTakeFirst();
}

export function listSchedules(
  db: Db,
  orgId: string,
  filter: { teamId?: string; afterId?: string; limit: number },
): Promise<ScheduleTable[]> {
  let query = db.selectFrom("schedules").selectAll().where("org_id", "=", orgId);
  if (filter.teamId) query = query.where("team_id", "=", filter.teamId);
  if (filter.afterId) query = query.where("id", ">", filter.afterId);
  return query
    .orderBy("id")
    .limit(filter.limit + 1)
    .execute();
}

export async function insertSchedule(db: Db, row: ScheduleTable): Promise<void> {
  await db.insertInto("schedules").values(row).execute();
}

export async function updateSchedule(
  db: Db,
  id: string,
  changes: Partial<Omit<ScheduleTable, "id" | "org_id">>,
) {
  await db.updateTable("schedules").set(changes).where("id", "=", id).execute();
}

export async function deleteSchedule(db: Db, id: string): Promise<void> {
  await db.deleteFrom("schedules").where("id", "=", id).execute();
}

export async function setParticipants(db: Db, scheduleId: string, userIds: string[]): Promise<void> {
  await db.deleteFrom("schedule_participants").where("schedule_id", "=", scheduleId).execute();
  const unique = [...new Set(userIds)];
  if (unique.length > 0) {
    await db
      .insertInto("schedule_participants")
      .values(unique.map((user_id) => ({ schedule_id: scheduleId, user_id })))
      .execute();
  }
}

/** Schedules whose layers name the user, and overrides of the user that have not ended. */
export async function userReferences(db: Db, userId: string, now: number) {
  const schedules = await db
    .selectFrom("schedule_participants")
    .select("schedule_id")
    .where("user_id", "=", userId)
    .orderBy("schedule_id")
    .execute();
  const overrides = await db
    .selectFrom("schedule_overrides")
    .select("id")
    .where("user_id", "=", userId)
    .where("end_at", ">", now)
    .orderBy("id")
    .execute();
  return { schedule_ids: schedules.map((r) => r.schedule_id), override_ids: overrides.map((r) => r.id) };
}

/** Overrides of a schedule that end after `from`, oldest first (creation order). */
export function overridesEndingAfter(
  db: Db,
  scheduleId: string,
  from: number,
): Promise<ScheduleOverrideTable[]> {
  return db
    .selectFrom("schedule_overrides")
    .selectAll()
    .where("schedule_id", "=", scheduleId)
    .where("end_at", ">", from)
    .orderBy("id")
    .execute();
}

export function listOverrides(
  db: Db,
  scheduleId: string,
  filter: { endsAfter?: number; afterId?: string; limit: number },
): Promise<ScheduleOverrideTable[]> {
  let query = db.selectFrom("schedule_overrides").selectAll().where("schedule_id", "=", scheduleId);
  if (filter.endsAfter !== undefined) query = query.where("end_at", ">", filter.endsAfter);
  if (filter.afterId) query = query.where("id", ">", filter.afterId);
  return query
    .orderBy("id")
    .limit(filter.limit + 1)
    .execute();
}

export function findOverride(
  db: Db,
  scheduleId: string,
  id: string,
): Promise<ScheduleOverrideTable | undefined> {
  return db
    .selectFrom("schedule_overrides")
    .selectAll()
    .where("schedule_id", "=", scheduleId)
    .where("id", "=", id)
    .executeTakeFirst();
}

export async function insertOverride(db: Db, row: ScheduleOverrideTable): Promise<void> {
  await db.insertInto("schedule_overrides").values(row).execute();
}

export async function deleteOverride(db: Db, id: string): Promise<void> {
  await db.deleteFrom("schedule_overrides").where("id", "=", id).execute();
}

/** Marks a change to a schedule's overrides (its `updated_at` is about the schedule itself). */
export async function bumpScheduleVersion(db: Db, id: string): Promise<void> {
  await db
    .updateTable("schedules")
    .set((eb) => ({ version: eb("version", "+", 1) }))
    .where("id", "=", id)
    .execute();
}

/** The version of a schedule of the org, by one prepared statement (the on-call hot path). */
export function scheduleVersion(store: Store, orgId: string, id: string): number | undefined {
  const row = store.reader
    .query("SELECT version FROM schedules WHERE id = ? AND org_id = ?")
    .get(id, orgId) as {
    version: number;
  } | null;
  return row?.version;
}
