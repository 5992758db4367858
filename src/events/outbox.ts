/**
 * The outbound event log (transactional outbox, DESIGN §7): a change appends its CloudEvent in
 * the same transaction as the change, so nothing is emitted for a rolled-back change and
 * nothing is lost for a committed one. Notification deliveries and the CloudEvents consumers
 * read events from here.
 */
import type { Db } from "../db/store.ts";
import { newId } from "../ids.ts";
import { iso } from "../time.ts";

export type EventArea = "alerts" | "incidents" | "monitors";

export interface OutboundEvent {
  specversion: "1.0";
  id: string;
  source: string;
  type: string;
  subject: string;
  time: string;
  datacontenttype: "application/json";
  data: unknown;
}

export interface NewEvent {
  org: { id: string; slug: string };
  area: EventArea;
  /** The resource id: the event's subject and the last segment of its source. */
  resourceId: string;
  type: string;
  data: unknown;
  time: number;
  /** Addresses the event to a cloudevents channel: only keys bound to it receive it. */
  channelId?: string | null;
}

/** Appends the event in the caller's transaction and returns it as it will be delivered. */
export async function appendEvent(db: Db, input: NewEvent): Promise<OutboundEvent> {
  const event: OutboundEvent = {
    specversion: "1.0",
    id: newId("evt"),
    source: `/orgs/${input.org.slug}/${input.area}/${input.resourceId}`,
    type: input.type,
    subject: input.resourceId,
    time: iso(input.time),
    datacontenttype: "application/json",
    data: input.data,
  };
  await db
    .insertInto("events")
    .values({
      org_id: input.org.id,
      id: event.id,
      source: event.source,
      type: event.type,
      subject: event.subject,
      time: input.time,
      body: JSON.stringify(event),
      channel_id: input.channelId ?? null,
      created_at: input.time,
    })
    .execute();
  return event;
}

/** The stored structured-mode JSON of an event, as deliveries send it. */
export async function eventBody(db: Db, orgId: string, id: string): Promise<string | undefined> {
  const row = await db
    .selectFrom("events")
    .select("body")
    .where("org_id", "=", orgId)
    .where("id", "=", id)
    .executeTakeFirst();
  return row?.body;
}

/**
 * Replaces an event's data before its transaction commits: an alert's `fired` event is
 * appended before step 1 is dispatched (deliveries name it) and then carries the alert as
 * dispatch left it. Never used on a committed event. The org narrows the update to the
 * (org_id, id, source) index: by id alone it scanned the whole log.
 */
export async function rewriteEventData(
  db: Db,
  orgId: string,
  event: OutboundEvent,
  data: unknown,
): Promise<void> {
  await db
    .updateTable("events")
    .set({ body: JSON.stringify({ ...event, data }) })
    .where("org_id", "=", orgId)
    .where("id", "=", event.id)
    .execute();
}
