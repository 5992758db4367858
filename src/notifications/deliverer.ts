/**
 * Sends queued notification deliveries: webhooks get the structured CloudEvent, signed;
 * Slack a short text; email channels and users an email through the outbox. Each due delivery
 * is leased before sending, retried with exponential backoff and jitter, and dead-lettered
 * after MAX_ATTEMPTS (visible at GET /notification-channels/{id}/deliveries).
 */
import { createHmac } from "node:crypto";
import type { AccountsContext } from "../accounts/context.ts";
import { findUserById } from "../accounts/users.repository.ts";
import type { Db } from "../db/store.ts";
import { eventBody, type OutboundEvent } from "../events/outbox.ts";
import { type Email, enqueueEmail } from "../mail/outbox.ts";
import { MINUTE } from "../time.ts";
import type { NotificationChannelTable, NotificationDeliveryTable } from "./channel.table.ts";
import { findChannel } from "./channels.repository.ts";
import { claimDueDeliveries, markAttemptFailed, markDelivered } from "./deliveries.repository.ts";
import { notificationEmail, notificationText } from "./messages.ts";

export const MAX_ATTEMPTS = 8;
const LEASE_MS = 2 * MINUTE;
const BATCH = 50;

/** The `svc-signature` of a webhook body: hex HMAC-SHA256 of `timestamp + "." + body`. */
export function signWebhook(secret: string, timestamp: string, body: string): string {
  return createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex");
}

/** Exponential backoff with full jitter: about 10 s, 20 s, 40 s, … capped at 30 minutes. */
function backoff(attempts: number): number {
  const ceiling = Math.min(30 * MINUTE, 10_000 * 2 ** (attempts - 1));
  return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
}

class DeliveryFailure extends Error {
  constructor(
    message: string,
    readonly status: number | null,
  ) {
    super(message);
  }
}

export class Deliverer {
  private running: Promise<void> | null = null;
  /** Sends under way, waited for at shutdown. */
  private readonly sending = new Map<string, Promise<void>>();
  private again = false;

  constructor(private readonly ctx: AccountsContext) {}

  /** Resolves once the sends under way have finished and been recorded (for shutdown). */
  async idle(): Promise<void> {
    await this.running;
    await Promise.all(this.sending.values());
  }

  /**
   * Sends what is due now instead of at the next tick: called once a transaction that queued
   * deliveries has committed, so a page goes out in milliseconds. Calls while a run is under
   * way are folded into one more run.
   */
  kick(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.deliverDue()
      .catch((error: unknown) => this.ctx.log.error("delivery run failed", { error: String(error) }))
      .finally(() => {
        this.running = null;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** Scheduler job: sends what is due, concurrently. */
  async deliverDue(now = Date.now()): Promise<void> {
    const due = await this.ctx.store.write((tx) => claimDueDeliveries(tx, now, now + LEASE_MS, BATCH));
    // Each send runs on its own (the lease keeps others off it): a receiver that never answers
    // must not hold up the pages behind it.
    for (const delivery of due) {
      this.sending.set(
        delivery.id,
        this.deliver(delivery).finally(() => this.sending.delete(delivery.id)),
      );
    }
  }

  private async deliver(delivery: NotificationDeliveryTable): Promise<void> {
    const db = this.ctx.store.read;
    try {
      const body = await eventBody(db, delivery.org_id, delivery.event_id);
      if (!body) throw new DeliveryFailure("the event is no longer stored", null);
      const outcome = await this.send(db, delivery, body);
      // Emails are queued in the same transaction that marks the delivery done: never twice.
      await this.ctx.store.write(async (tx) => {
        for (const email of outcome.emails) await enqueueEmail(tx, email);
        await markDelivered(tx, delivery.id, Date.now(), outcome.status);
      });
    } catch (error) {
      const attempts = delivery.attempts + 1;
      const retryAt = attempts >= MAX_ATTEMPTS ? null : Date.now() + backoff(attempts);
      const message = error instanceof Error ? error.message : String(error);
      const status = error instanceof DeliveryFailure ? error.status : null;
      await this.ctx.store.write((tx) =>
        markAttemptFailed(tx, delivery.id, attempts, retryAt, message, status),
      );
      this.ctx.log.warn(retryAt === null ? "delivery dead-lettered" : "delivery will be retried", {
        delivery_id: delivery.id,
        channel_id: delivery.channel_id,
        attempts,
        error: message,
      });
    }
  }

  /** Sends one delivery: an HTTP status for webhooks and Slack, or the emails to queue. */
  private async send(
    db: Db,
    delivery: NotificationDeliveryTable,
    body: string,
  ): Promise<{ status: number | null; emails: Email[] }> {
    const event = JSON.parse(body) as OutboundEvent;
    const emailsTo = (to: string[]) => ({
      status: null,
      emails: to.map((address) =>
        notificationEmail(delivery.org_id, address, event, this.ctx.config.base_url),
      ),
    });
    if (delivery.channel_id === null) {
      const user = delivery.user_id ? await findUserById(db, delivery.user_id) : undefined;
      if (!user) throw new DeliveryFailure("the user no longer exists", null);
      return emailsTo([user.email]);
    }
    const channel = await findChannel(db, delivery.org_id, delivery.channel_id);
    if (!channel) throw new DeliveryFailure("the channel no longer exists", null);
    const config = JSON.parse(channel.config) as Record<string, unknown>;
    switch (channel.type) {
      case "webhook": {
        const status = await this.post(
          config.url as string,
          body,
          webhookHeaders(channel, body),
          config.timeout_ms as number,
        );
        return { status, emails: [] };
      }
      case "slack": {
        const text = JSON.stringify({ text: notificationText(event, this.ctx.config.base_url) });
        const status = await this.post(
          config.webhook_url as string,
          text,
          { "content-type": "application/json" },
          10_000,
        );
        return { status, emails: [] };
      }
      case "email":
        return emailsTo(config.to as string[]);
      case "cloudevents":
        throw new DeliveryFailure("cloudevents channels are notified by events, not deliveries", null);
    }
  }

  private async post(
    url: string,
    body: string,
    headers: Record<string, string>,
    timeoutMs: number,
  ): Promise<number> {
    let response: Response;
    try {
      response = await fetch(url, { method: "POST", body, headers, signal: AbortSignal.timeout(timeoutMs) });
    } catch (error) {
      throw new DeliveryFailure(
        `request failed: ${error instanceof Error ? error.message : String(error)}`,
        null,
      );
    }
    await response.arrayBuffer().catch(() => undefined);
    if (!response.ok) throw new DeliveryFailure(`the receiver answered ${response.status}`, response.status);
    return response.status;
  }
}

function webhookHeaders(channel: NotificationChannelTable, body: string): Record<string, string> {
  const timestamp = String(Math.floor(Date.now() / 1000));
  return {
    "content-type": "application/cloudevents+json; charset=utf-8",
    "svc-timestamp": timestamp,
    "svc-signature": signWebhook(channel.secret ?? "", timestamp, body),
  };
}
