/** The reply audit records (DESIGN §7): one per reply event the dispatcher decided on. */
import type { Db } from "../db/store.ts";

export interface ReplyRow {
  id: string;
  org_id: string;
  received_at: number;
  event_id: string;
  event_source: string;
  event_type: string;
  channel_id: string | null;
  ingest_token_id: string | null;
  alert_id: string | null;
  outcome: string;
  reason: string;
}

export interface ReplyFilter {
  /** Matches outcomes that start with it. */
  outcomePrefix?: string;
  eventType?: string;
  channelId?: string;
  alertId?: string;
  from?: number;
  to?: number;
  /** Records older than this are past retention and never shown. */
  notBefore: number;
  /** The last record of the previous page: [received_at, id]. */
  before?: [number, string];
  limit: number;
}

export async function insertReply(db: Db, row: ReplyRow): Promise<void> {
  await db.insertInto("cloudevent_replies").values(row).execute();
}

/** Newest first; each filter is the leading column of an index after org_id. */
export function listReplies(db: Db, orgId: string, filter: ReplyFilter): Promise<ReplyRow[]> {
  let query = db.selectFrom("cloudevent_replies").selectAll().where("org_id", "=", orgId);
  if (filter.outcomePrefix !== undefined) {
    query = query
      .where("outcome", ">=", filter.outcomePrefix)
      .where("outcome", "<", `${filter.outcomePrefix}\uffff`);
  }
  if (filter.eventType !== undefined) query = query.where("event_type", "=", filter.eventType);
  if (filter.channelId !== undefined) query = query.where("channel_id", "=", filter.channelId);
  if (filter.alertId !== undefined) query = query.where("alert_id", "=", filter.alertId);
  const from = Math.max(filter.from ?? 0, filter.notBefore);
  query = query.where("received_at", ">=", from);
  if (filter.to !== undefined) query = query.where("received_at", "<", filter.to);
  if (filter.before) {
    const [at, id] = filter.before;
    query = query.where((eb) =>
      eb.or([eb("received_at", "<", at), eb.and([eb("received_at", "=", at), eb("id", "<", id)])]),
    );
  }
  return query
    .orderBy("received_at", "desc")
    .orderBy("id", "desc")
    .limit(filter.limit + 1)
    .execute();
}

/** Deletes an org's records received before `before`, at most `limit` at a time. */
export async function pruneReplies(db: Db, orgId: string, before: number, limit: number): Promise<number> {
  const result = await db
    .deleteFrom("cloudevent_replies")
    .where(
      "id",
      "in",
      db
        .selectFrom("cloudevent_replies")
        .select("id")
        .where("org_id", "=", orgId)
        .where("received_at", "<", before)
        .limit(limit),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
