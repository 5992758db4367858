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
