/** SQL for notification channels. */
import type { Db } from "../db/store.ts";
import type { NotificationChannelTable } from "./channel.table.ts";

export function findChannel(
  db: Db,
  orgId: string,
  id: string,
): Promise<NotificationChannelTable | undefined> {
  return db
    .selectFrom("notification_channels")
    .selectAll()
    .where("org_id", "=", orgId)
    .where("id", "=", id)
    .executeTakeFirst();
}

export function findChannels(db: Db, orgId: string, ids: string[]): Promise<NotificationChannelTable[]> {
  if (ids.length === 0) return Promise.resolve([]);
  return db
    .selectFrom("notification_channels")
    .selectAll()
    .where("org_id", "=", orgId)
    .where("id", "in", ids)
    .execute();
}

export function listChannels(db: Db, orgId: string, afterId: string | undefined, limit: number) {
  let query = db.selectFrom("notification_channels").selectAll().where("org_id", "=", orgId);
  if (afterId) query = query.where("id", ">", afterId);
  return query
    .orderBy("id")
    .limit(limit + 1)
    .execute();
}

export async function insertChannel(db: Db, row: NotificationChannelTable): Promise<void> {
  await db.insertInto("notification_channels").values(row).execute();
}

export async function updateChannel(
  db: Db,
  id: string,
  changes: Partial<Omit<NotificationChannelTable, "id" | "org_id" | "type">>,
): Promise<void> {
  await db.updateTable("notification_channels").set(changes).where("id", "=", id).execute();
}

/** Ids of the live API keys or ingest tokens bound to a channel. */
export async function liveCredentialsBoundTo(
  db: Db,
  table: "api_keys" | "ingest_tokens",
  channelId: string,
): Promise<string[]> {
  const rows = await db
    .selectFrom(table)
    .select("id")
    .where("channel_id", "=", channelId)
    .where("revoked_at", "is", null)
    .orderBy("id")
    .execute();
  return rows.map((r) => r.id);
}

export async function deleteChannel(db: Db, id: string): Promise<void> {
  await db.deleteFrom("notification_channels").where("id", "=", id).execute();
}
