/** Server-kept consumer positions (DESIGN §7): the cursor names a consumer and a position. */
import type { Db } from "../db/store.ts";

export interface ConsumerRow {
  id: string;
  org_id: string;
  key_id: string;
  position: number;
  created_at: number;
  updated_at: number;
}

export function findConsumer(db: Db, id: string): Promise<ConsumerRow | undefined> {
  return db.selectFrom("event_consumers").selectAll().where("id", "=", id).executeTakeFirst();
}

export async function insertConsumer(db: Db, row: ConsumerRow): Promise<void> {
  await db.insertInto("event_consumers").values(row).execute();
}

export async function moveConsumer(db: Db, id: string, position: number, now: number): Promise<void> {
  await db.updateTable("event_consumers").set({ position, updated_at: now }).where("id", "=", id).execute();
}

/** Forgets consumers nobody used since `before`: their cursors are past retention anyway. */
export async function pruneConsumers(db: Db, before: number): Promise<number> {
  const result = await db.deleteFrom("event_consumers").where("updated_at", "<", before).executeTakeFirst();
  return Number(result.numDeletedRows);
}
