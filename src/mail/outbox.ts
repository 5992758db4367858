/**
 * The persistent email outbox. Messages are written in the same transaction as the change that
 * causes them; the delivery job sends them over SMTP with retries. Bodies can hold single-use
 * links, so they are cleared once sent and never logged.
 */
import type { Db } from "../db/store.ts";
import { newId } from "../ids.ts";
import type { EmailOutboxTable } from "./email.table.ts";

export interface Email {
  orgId: string | null;
  to: string;
  subject: string;
  text: string;
  html: string;
}

export async function enqueueEmail(db: Db, email: Email, now = Date.now()): Promise<string> {
  const id = newId("eml");
  await db
    .insertInto("email_outbox")
    .values({
      id,
      org_id: email.orgId,
      recipient: email.to,
      subject: email.subject,
      text_body: email.text,
      html_body: email.html,
      status: "pending",
      attempts: 0,
      next_attempt_at: now,
      last_error: null,
      created_at: now,
      sent_at: null,
    })
    .execute();
  return id;
}

export function dueEmails(db: Db, now: number, limit: number): Promise<EmailOutboxTable[]> {
  return db
    .selectFrom("email_outbox")
    .selectAll()
    .where("status", "=", "pending")
    .where("next_attempt_at", "<=", now)
    .orderBy("next_attempt_at")
    .limit(limit)
    .execute();
}

/** Pushes the next attempt of these messages out to `until`, so that a crash mid-send retries them. */
export async function leaseEmails(db: Db, ids: string[], until: number): Promise<void> {
  if (ids.length === 0) return;
  await db.updateTable("email_outbox").set({ next_attempt_at: until }).where("id", "in", ids).execute();
}

export async function markSent(db: Db, id: string, now: number): Promise<void> {
  await db
    .updateTable("email_outbox")
    .set({ status: "sent", sent_at: now, text_body: null, html_body: null, last_error: null })
    .where("id", "=", id)
    .execute();
}

export async function markFailed(
  db: Db,
  id: string,
  attempts: number,
  nextAttemptAt: number | null,
  error: string,
): Promise<void> {
  await db
    .updateTable("email_outbox")
    .set({
      attempts,
      last_error: error.slice(0, 500),
      ...(nextAttemptAt === null ? { status: "dead" as const } : { next_attempt_at: nextAttemptAt }),
    })
    .where("id", "=", id)
    .execute();
}

export async function pendingEmailCount(db: Db): Promise<number> {
  const row = await db
    .selectFrom("email_outbox")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("status", "=", "pending")
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
