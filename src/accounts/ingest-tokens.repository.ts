/** SQL for ingest tokens. */
import type { Db } from "../db/store.ts";
import type { IngestTokenTable } from "./ingest-token.table.ts";

export async function insertIngestTokenRow(db: Db, row: IngestTokenTable): Promise<void> {
  await db.insertInto("ingest_tokens").values(row).execute();
}

export function listIngestTokens(db: Db, orgId: string, beforeId: string | undefined, limit: number) {
  let query = db.selectFrom("ingest_tokens").selectAll().where("org_id", "=", orgId);
  if (beforeId) query = query.where("id", "<", beforeId);
  return query
    .orderBy("id", "desc")
    .limit(limit + 1)
    .execute();
}

export function findIngestToken(db: Db, orgId: string, id: string) {
  return db
    .selectFrom("ingest_tokens")
    .selectAll()
    .where("org_id", "=", orgId)
    .where("id", "=", id)
    .executeTakeFirst();
}

export async function revokeIngestToken(db: Db, id: string, now: number): Promise<void> {
  await db
    .updateTable("ingest_tokens")
    .set({ revoked_at: now })
    .where("id", "=", id)
    .where("revoked_at", "is", null)
    .execute();
}

/** Live ingest tokens bound to a channel. */
export async function tokensBoundTo(db: Db, channelId: string): Promise<string[]> {
  const rows = await db
    .selectFrom("ingest_tokens")
    .select("id")
    .where("channel_id", "=", channelId)
    .where("revoked_at", "is", null)
    .orderBy("id")
    .execute();
  return rows.map((r) => r.id);
}
