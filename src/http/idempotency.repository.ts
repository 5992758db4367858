/** SQL for stored Idempotency-Key replies. */
import type { Db } from "../db/store.ts";
import type { IdempotencyRecordTable } from "./idempotency.table.ts";

/** The record of `principal` and `key` created after `createdAfter`, if any. */
export function findIdempotencyRecord(
  db: Db,
  principal: string,
  key: string,
  createdAfter: number,
): Promise<IdempotencyRecordTable | undefined> {
  return db
    .selectFrom("idempotency_records")
    .selectAll()
    .where("principal", "=", principal)
    .where("idempotency_key", "=", key)
    .where("created_at", ">", createdAfter)
    .executeTakeFirst();
}

/** Inserts the record, or replaces the one of the same principal and key. */
export async function upsertIdempotencyRecord(db: Db, row: IdempotencyRecordTable): Promise<void> {
  await db
    .insertInto("idempotency_records")
    .values(row)
    .onConflict((oc) =>
      oc.columns(["principal", "idempotency_key"]).doUpdateSet((eb) => ({
        request_hash: eb.ref("excluded.request_hash"),
        status: eb.ref("excluded.status"),
        body: eb.ref("excluded.body"),
        created_at: eb.ref("excluded.created_at"),
      })),
    )
    .execute();
}

/** Deletes records created at or before `createdAtOrBefore`; returns how many. */
export async function deleteIdempotencyRecords(db: Db, createdAtOrBefore: number): Promise<number> {
  const result = await db
    .deleteFrom("idempotency_records")
    .where("created_at", "<=", createdAtOrBefore)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
