/** SQL for notification deliveries: the persistent queue the delivery worker drains. */
import type { Db } from "../db/store.ts";
import { newId } from "../ids.ts";

export interface NewDelivery {
  orgId: string;
  channelId: string | null;
  userId: string | null;
  alertId: string | null;
  eventId: string;
  now: number;
}

export async function enqueueDelivery(db: Db, d: NewDelivery): Promise<void> {
  await db
    .insertInto("notification_deliveries")
    .values({
      id: newId("dlv"),
      org_id: d.orgId,
      channel_id: d.channelId,
      user_id: d.userId,
      alert_id: d.alertId,
      event_id: d.eventId,
      status: "pending",
      attempts: 0,
      next_attempt_at: d.now,
      last_error: null,
      last_status: null,
      created_at: d.now,
      sent_at: null,
    })
    .execute();
}

/** Claims due deliveries by pushing their next attempt out (a lease): a crash retries them later. */
export async function claimDueDeliveries(db: Db, now: number, leaseUntil: number, limit: number) {
  const rows = await db
    .selectFrom("notification_deliveries")
    .selectAll()
    .where("status", "=", "pending")
    .where("next_attempt_at", "<=", now)
    .orderBy("next_attempt_at")
    .limit(limit)
    .execute();
  if (rows.length > 0) {
    await db
      .updateTable("notification_deliveries")
      .set({ next_attempt_at: leaseUntil })
      .where(
        "id",
        "in",
        rows.map((r) => r.id),
      )
      .execute();
  }
  return rows;
}

export async function markDelivered(db: Db, id: string, now: number, status: number | null): Promise<void> {
  await db
    .updateTable("notification_deliveries")
    .set((eb) => ({
      status: "sent",
      // The successful attempt counts too: a delivery sent at once shows 1.
      attempts: eb("attempts", "+", 1),
      sent_at: now,
      last_status: status,
      last_error: null,
    }))
    .where("id", "=", id)
    .execute();
}

export async function markAttemptFailed(
  db: Db,
  id: string,
  attempts: number,
  retryAt: number | null,
  error: string,
  status: number | null,
): Promise<void> {
  await db
    .updateTable("notification_deliveries")
    .set({
      attempts,
      last_error: error.slice(0, 500),
      last_status: status,
      ...(retryAt === null ? { status: "dead" as const } : { next_attempt_at: retryAt }),
    })
    .where("id", "=", id)
    .execute();
}

export function listDeliveries(
  db: Db,
  channelId: string,
  filter: { status?: "pending" | "sent" | "dead"; beforeId?: string; limit: number },
) {
  let query = db.selectFrom("notification_deliveries").selectAll().where("channel_id", "=", channelId);
  if (filter.status) query = query.where("status", "=", filter.status);
  if (filter.beforeId) query = query.where("id", "<", filter.beforeId);
  return query
    .orderBy("id", "desc")
    .limit(filter.limit + 1)
    .execute();
}

/** The channels an alert's notifications went to, for the follow-ups of its acknowledge and resolve. */
export async function channelsNotifiedFor(db: Db, alertId: string): Promise<string[]> {
  const rows = await db
    .selectFrom("notification_deliveries")
    .select("channel_id")
    .distinct()
    .where("alert_id", "=", alertId)
    .where("channel_id", "is not", null)
    .execute();
  return rows.map((r) => r.channel_id as string);
}

/** Deliveries by status, for the queue-depth gauge. */
export async function deliveryCounts(db: Db): Promise<{ status: string; n: number }[]> {
  const rows = await db
    .selectFrom("notification_deliveries")
    .select(["status", (eb) => eb.fn.countAll<number>().as("n")])
    .where("status", "in", ["pending", "dead"])
    .groupBy("status")
    .execute();
  return rows.map((r) => ({ status: r.status, n: Number(r.n) }));
}
