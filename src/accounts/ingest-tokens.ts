/** Ingest tokens: the credential of the CloudEvents ingest endpoint, optionally bound to a channel. */
import { Type as T } from "@sinclair/typebox";
import type { Db } from "../db/store.ts";
import { errors } from "../errors.ts";
import { Timestamp } from "../http/schema.ts";
import { newId } from "../ids.ts";
import { iso, isoOrNull } from "../time.ts";
import type { IngestTokenTable } from "./ingest-token.table.ts";
import { newIngestToken } from "./secrets.ts";

export const IngestToken = T.Object({
  id: T.String(),
  name: T.String(),
  prefix: T.String(),
  channel_id: T.Union([T.String(), T.Null()]),
  created_at: Timestamp(),
  revoked_at: T.Union([Timestamp(), T.Null()]),
});

export const IngestTokenWithSecret = T.Composite([
  IngestToken,
  T.Object({ token: T.String({ description: "Shown once." }) }),
]);

export function toIngestToken(row: IngestTokenTable) {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    channel_id: row.channel_id,
    created_at: iso(row.created_at),
    revoked_at: isoOrNull(row.revoked_at),
  };
}

/** Creates a token inside the caller's transaction; the clear token is returned once. */
export async function insertIngestToken(
  db: Db,
  org: { id: string; slug: string },
  input: { name: string; channel_id?: string | null },
  now = Date.now(),
) {
  if (input.channel_id) {
    // Notification channels arrive with the alerting pipeline; until then no id can match.
    throw errors.field("channel_id", "does not name a cloudevents channel of this organization");
  }
  const secret = newIngestToken(org.slug);
  const row: IngestTokenTable = {
    id: newId("tok"),
    org_id: org.id,
    name: input.name,
    prefix: secret.prefix,
    token_hash: secret.hash,
    channel_id: null,
    revoked_at: null,
    created_at: now,
  };
  await db.insertInto("ingest_tokens").values(row).execute();
  return { ...toIngestToken(row), token: secret.token };
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
