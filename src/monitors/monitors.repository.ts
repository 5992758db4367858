/** SQL for monitors. */
import type { Db } from "../db/store.ts";
import type { MonitorTable } from "./monitor.table.ts";

export function findMonitor(db: Db, orgId: string, id: string): Promise<MonitorTable | undefined> {
  return db
    .selectFrom("monitors")
    .selectAll()
    .where("org_id", "=", orgId)
    .where("id", "=", id)
    .executeTakeFirst();
}

export function listMonitors(
  db: Db,
  orgId: string,
  filter: { type?: string; teamId?: string; groupId?: string; afterId?: string; limit: number },
) {
  let query = db.selectFrom("monitors").selectAll().where("org_id", "=", orgId);
  if (filter.type) query = query.where("type", "=", filter.type as MonitorTable["type"]);
  if (filter.teamId) query = query.where("team_id", "=", filter.teamId);
  if (filter.groupId) query = query.where("group_id", "=", filter.groupId);
  if (filter.afterId) query = query.where("id", ">", filter.afterId);
  return query
    .orderBy("id")
    .limit(filter.limit + 1)
    .execute();
}

export async function insertMonitor(db: Db, row: MonitorTable): Promise<void> {
  await db.insertInto("monitors").values(row).execute();
}

export async function updateMonitor(
  db: Db,
  id: string,
  changes: Partial<Omit<MonitorTable, "id" | "org_id" | "type">>,
): Promise<void> {
  await db.updateTable("monitors").set(changes).where("id", "=", id).execute();
}

export async function deleteMonitor(db: Db, id: string): Promise<void> {
  await db.deleteFrom("monitors").where("id", "=", id).execute();
}

export async function openAlertIds(db: Db, monitorId: string): Promise<string[]> {
  const rows = await db
    .selectFrom("alerts")
    .select("id")
    .where("monitor_id", "=", monitorId)
    .where("status", "!=", "resolved")
    .orderBy("id")
    .execute();
  return rows.map((r) => r.id);
}

export async function policyExists(db: Db, orgId: string, id: string): Promise<boolean> {
  const row = await db
    .selectFrom("escalation_policies")
    .select("id")
    .where("org_id", "=", orgId)
    .where("id", "=", id)
    .executeTakeFirst();
  return row !== undefined;
}

export function findMonitorByToken(db: Db, token: string): Promise<MonitorTable | undefined> {
  return db.selectFrom("monitors").selectAll().where("token", "=", token).executeTakeFirst();
}

export function findMonitorById(db: Db, id: string): Promise<MonitorTable | undefined> {
  return db.selectFrom("monitors").selectAll().where("id", "=", id).executeTakeFirst();
}

/** An org's unpaused event monitors, which inbound CloudEvents may feed. */
export function activeEventMonitors(db: Db, orgId: string): Promise<MonitorTable[]> {
  return db
    .selectFrom("monitors")
    .selectAll()
    .where("org_id", "=", orgId)
    .where("type", "=", "event")
    .where("paused", "=", 0)
    .execute();
}

/** Unpaused monitors of a type whose timer is due. */
export function dueMonitors(
  db: Db,
  type: "heartbeat" | "http",
  now: number,
  limit: number,
): Promise<MonitorTable[]> {
  return db
    .selectFrom("monitors")
    .selectAll()
    .where("due_at", "<=", now)
    .where("paused", "=", 0)
    .where("type", "=", type)
    .orderBy("due_at")
    .limit(limit)
    .execute();
}
