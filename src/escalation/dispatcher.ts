/**
 * Walks an alert's escalation (DESIGN §6 "Precise rules"): a step notifies all its targets (a
 * schedule resolves to whoever is on call now); a step that reaches nobody escalates at once;
 * a whole pass that reaches nobody goes to the org's default channels, so no alert is silent;
 * after the last step the policy starts again while `repeat` allows. Runs inside the caller's
 * transaction: timeline entries, deliveries and outbound events commit with the alert change.
 */
import type { Settings } from "../accounts/settings.ts";
import { findUser } from "../accounts/users.repository.ts";
import type { AlertTable } from "../alerts/alert.table.ts";
import { addTimeline } from "../alerts/alerts.repository.ts";
import type { Db, Store } from "../db/store.ts";
import { AppError } from "../errors.ts";
import { appendEvent, type OutboundEvent } from "../events/outbox.ts";
import type { NotificationChannelTable } from "../notifications/channel.table.ts";
import { findChannels } from "../notifications/channels.repository.ts";
import type { Deliverer } from "../notifications/deliverer.ts";
import { channelsNotifiedFor, enqueueDelivery } from "../notifications/deliveries.repository.ts";
import type { ScheduleService } from "../schedules/schedules.service.ts";
import type { PolicySnapshot, StoredStep } from "./policy.ts";

export interface DispatchInput {
  tx: Db;
  org: { id: string; slug: string; settings: Settings };
  alert: AlertTable;
  /** The event the notifications carry (fired or escalated). */
  event: OutboundEvent;
  now: number;
}

export interface DispatchResult {
  /** The step index notified last, or null without a policy. */
  step: number | null;
  pass: number;
  notifications: number;
  /** When to escalate next, or null when the escalation is over. */
  escalateAt: number | null;
}

export class Dispatcher {
  constructor(
    private readonly schedules: ScheduleService,
    private readonly store: Store,
    private readonly deliverer: Deliverer,
  ) {}

  /** Queues a delivery; the deliverer is woken once the transaction has committed. */
  private async queue(input: DispatchInput, channelId: string | null, userId: string | null): Promise<void> {
    await enqueueDelivery(input.tx, {
      orgId: input.org.id,
      channelId,
      userId,
      alertId: input.alert.id,
      eventId: input.event.id,
      now: input.now,
    });
    this.store.afterCommit(() => this.deliverer.kick());
  }

  /**
   * Sends an acknowledge or resolve to the channels that were paged about the alert, so a
   * chat room or webhook sees the end of what it saw begin. Users are not emailed again.
   */
  async followUp(input: DispatchInput): Promise<void> {
    const channelIds = await channelsNotifiedFor(input.tx, input.alert.id);
    for (const channel of await findChannels(input.tx, input.org.id, channelIds)) {
      if (channel.enabled === 1) await this.queue(input, channel.id, null);
    }
  }

  /** Notifies from step `start` of pass `pass` on, escalating at once past steps that reach nobody. */
  async run(
    input: DispatchInput,
    snapshot: PolicySnapshot | null,
    start: number,
    pass: number,
  ): Promise<DispatchResult> {
    if (!snapshot || snapshot.steps.length === 0) {
      const sent = await this.notifyDefaults(input, "no escalation policy");
      return { step: null, pass, notifications: sent, escalateAt: null };
    }
    let notifications = 0;
    let reachedInPass = 0;
    let index = start;
    for (;;) {
      const step = snapshot.steps[index] as StoredStep;
      const reached = await this.notifyStep(input, step, index);
      notifications += reached;
      reachedInPass += reached;
      const last = index === snapshot.steps.length - 1;
      if (reached > 0 || last) {
        if (last && reachedInPass === 0 && start === 0) {
          notifications += await this.notifyDefaults(input, "the whole policy reached nobody");
        }
        const more = !last || pass < snapshot.repeat;
        return {
          step: index,
          pass,
          notifications,
          escalateAt: more ? input.now + step.delay_seconds * 1000 : null,
        };
      }
      index += 1;
      await addTimeline(input.tx, input.alert.id, input.now, "escalated", {
        step: index + 1,
        reason: "nobody reached",
      });
    }
  }

  /** Notifies every target of a step; returns how many were reached. */
  private async notifyStep(input: DispatchInput, step: StoredStep, index: number): Promise<number> {
    const { tx, org, alert, now } = input;
    let reached = 0;
    const channels = new Map(
      (
        await findChannels(
          tx,
          org.id,
          step.targets.filter((t) => t.type === "channel").map((t) => t.id),
        )
      ).map((c) => [c.id, c]),
    );
    for (const target of step.targets) {
      if (target.type === "channel") {
        const channel = channels.get(target.id);
        if (!channel) {
          await addTimeline(tx, alert.id, now, "target_skipped", {
            step: index + 1,
            target,
            reason: "deleted",
          });
          continue;
        }
        reached += await this.notifyChannel(input, channel, index);
        continue;
      }
      let userId = target.id;
      let scheduleId: string | null = null;
      if (target.type === "schedule") {
        scheduleId = target.id;
        const onCall = await this.schedules.onCall(org.id, target.id, now).catch((error: unknown) => {
          if (error instanceof AppError && error.code === "not_found") return null;
          throw error;
        });
        if (!onCall) {
          await addTimeline(tx, alert.id, now, "target_skipped", {
            step: index + 1,
            target,
            reason: "deleted",
          });
          continue;
        }
        if (!onCall.user_id) {
          await addTimeline(tx, alert.id, now, "target_skipped", {
            step: index + 1,
            target,
            reason: "nobody on call",
          });
          continue;
        }
        userId = onCall.user_id;
      }
      const user = await findUser(tx, org.id, userId);
      if (!user || user.status === "suspended") {
        await addTimeline(tx, alert.id, now, "target_skipped", {
          step: index + 1,
          target,
          reason: user ? "suspended" : "deleted",
        });
        continue;
      }
      await this.queue(input, null, user.id);
      await addTimeline(tx, alert.id, now, "notification_sent", {
        step: index + 1,
        channel: "email",
        user_id: user.id,
        user_email: user.email,
        ...(scheduleId ? { schedule_id: scheduleId } : {}),
      });
      reached += 1;
    }
    return reached;
  }

  private async notifyChannel(input: DispatchInput, channel: NotificationChannelTable, index: number | null) {
    const { tx, org, alert, now } = input;
    const step = index === null ? {} : { step: index + 1 };
    if (channel.enabled !== 1) {
      await addTimeline(tx, alert.id, now, "target_skipped", {
        ...step,
        target: { type: "channel", id: channel.id },
        reason: "disabled",
      });
      return 0;
    }
    if (channel.type === "cloudevents") {
      // A consumer identity: the notification is an event addressed to the channel.
      await appendEvent(tx, {
        org,
        area: "alerts",
        resourceId: alert.id,
        type: "run.service.alert.notified.v1",
        data: input.event.data,
        time: now,
        channelId: channel.id,
      });
    } else {
      await this.queue(input, channel.id, null);
    }
    await addTimeline(tx, alert.id, now, "notification_sent", {
      ...step,
      channel: channel.name,
      channel_id: channel.id,
    });
    return 1;
  }

  /** The org's default channels, for alerts nothing else reached. */
  private async notifyDefaults(input: DispatchInput, reason: string): Promise<number> {
    const ids = input.org.settings.notifications.default_channel_ids;
    const channels = await findChannels(input.tx, input.org.id, ids);
    let sent = 0;
    for (const channel of channels) sent += await this.notifyChannel(input, channel, null);
    if (sent === 0) {
      await addTimeline(input.tx, input.alert.id, input.now, "nobody_notified", { reason });
    }
    return sent;
  }
}
