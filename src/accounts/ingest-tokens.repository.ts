/** SQL for ingest tokens. */
import type { Db, Store } from "../db/store.ts";
import type { IngestTokenTable } from "./ingest-token.table.ts";
import type { Plan } from "./org.ts";

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

export interface IngestCredential {
  id: string;
  org_id: string;
  channel_id: string | null;
  plan: Plan;
}

/**
 * The live token with this hash and its org's plan, in one prepared statement: every ingest
 * request runs it.
 */
export function findLiveTokenByHash(store: Store, hash: string): IngestCredential | null {
  return store.reader
    .query(
      `SELECT t.id, t.org_id, t.channel_id, o.plan FROM ingest_tokens t JOIN orgs o ON o.id = t.org_id
       WHERE t.token_hash = ? AND t.revoked_at IS NULL`,
    )
    .get(hash) as IngestCredential | null;
}
