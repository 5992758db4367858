/**
 * Alerts: firing from a source (deduplicated), acknowledging, resolving by hand or
 * automatically once the source is up again, the timed escalation, and listing. Every state
 * change writes its timeline entry and its outbound CloudEvent in the same transaction.
 */
import type { AccountsContext } from "../accounts/context.ts";
import { findOrgById } from "../accounts/orgs.repository.ts";
import { parseSettings, type Settings } from "../accounts/settings.ts";
import type { Db } from "../db/store.ts";
import { AppError, errors } from "../errors.ts";
import type { Dispatcher } from "../escalation/dispatcher.ts";
import { findPolicy } from "../escalation/policies.repository.ts";
import { type PolicySnapshot, snapshotOf } from "../escalation/policy.ts";
import { appendEvent, rewriteEventData } from "../events/outbox.ts";
import { toPage } from "../http/pagination.ts";
import { newId } from "../ids.ts";
import type { MonitorTable, Severity } from "../monitors/monitor.table.ts";
import { SEVERITY_RANK } from "../monitors/monitor.ts";
import { findMonitorById, openAlertIds } from "../monitors/monitors.repository.ts";
import { setMonitorStatus, setMonitorStatusById } from "../monitors/status.ts";
import type { AlertTable } from "./alert.table.ts";
import { toAlert, toTimelineEntry } from "./alert.ts";
import {
  type AlertFilter,
  addTimeline,
  dueAutoResolves,
  dueEscalations,
  findAlert,
  insertAlert,
  latestAlertFor,
  listAlerts,
  openAlertFor,
  timelineOf,
  updateAlert,
} from "./alerts.repository.ts";

export interface Trigger {
  dedupKey: string;
  summary: string;
  reason: string;
  severity: Severity;
  labels: Record<string, string>;
}

const DUE_BATCH = 50;

/** `monitor:<id>` resolves are the source's; anything else resolved by hand. */
function resolvedBySource(alert: AlertTable): boolean {
  return alert.resolved_by?.startsWith("monitor:") ?? false;
}

export class AlertService {
  constructor(
    private readonly ctx: AccountsContext,
    private readonly dispatcher: Dispatcher,
  ) {}

  private async orgOf(tx: Db, orgId: string): Promise<{ id: string; slug: string; settings: Settings }> {
    const org = await findOrgById(tx, orgId);
    if (!org) throw errors.notFound("Organization");
    return { id: org.id, slug: org.slug, settings: parseSettings(org.settings) };
  }

  /**
   * The source reports a problem. An open alert with the same dedup key absorbs it (and a
   * pending automatic resolve is called off); after a manual resolve, nothing new fires until
   * the source has reported the problem gone. Otherwise a new alert fires and step 1 is notified.
   * Runs in the caller's write unit (the Events API's, a batch's, a monitor going down).
   */
  async triggerIn(tx: Db, given: MonitorTable, input: Trigger, now: number): Promise<void> {
    // The row as it is now: the caller read it earlier (it may be gone), or an earlier alert of
    // the same webhook or batch changed its status meanwhile.
    const monitor = await findMonitorById(tx, given.id);
    if (!monitor) throw errors.notFound("Monitor");
    const open = await openAlertFor(tx, monitor.id, input.dedupKey);
    if (open) {
      if (open.source_down === 0 || open.auto_resolve_at !== null) {
        await updateAlert(tx, open.id, { source_down: 1, auto_resolve_at: null });
      }
      return;
    }
    const latest = await latestAlertFor(tx, monitor.id, input.dedupKey);
    if (latest && latest.source_down === 1 && !resolvedBySource(latest)) return;
    const org = await this.orgOf(tx, monitor.org_id);
    const policy = monitor.escalation_policy_id
      ? await findPolicy(tx, org.id, monitor.escalation_policy_id)
      : null;
    const snapshot: PolicySnapshot | null = policy ? snapshotOf(policy) : null;
    const row: AlertTable = {
      id: newId("alt"),
      org_id: org.id,
      monitor_id: monitor.id,
      group_id: monitor.group_id,
      dedup_key: input.dedupKey,
      summary: input.summary,
      reason: input.reason,
      severity: input.severity,
      severity_rank: SEVERITY_RANK[input.severity],
      status: "firing",
      labels: JSON.stringify(input.labels),
      fired_at: now,
      acknowledged_at: null,
      acknowledged_by: null,
      resolved_at: null,
      resolved_by: null,
      policy_snapshot: snapshot ? JSON.stringify(snapshot) : null,
      current_escalation_step: null,
      escalation_pass: 0,
      notification_count: 0,
      escalate_at: null,
      auto_resolve_at: null,
      source_down: 1,
    };
    await insertAlert(tx, row);
    await addTimeline(tx, row.id, now, "fired", { summary: row.summary, severity: row.severity });
    const event = await appendEvent(tx, {
      org,
      area: "alerts",
      resourceId: row.id,
      type: "run.service.alert.fired.v1",
      data: toAlert(row),
      time: now,
    });
    const result = await this.dispatcher.run({ tx, org, alert: row, event, now }, snapshot, 0, 0);
    const changes = {
      current_escalation_step: result.step,
      escalation_pass: result.pass,
      notification_count: result.notifications,
      escalate_at: result.escalateAt,
    };
    await updateAlert(tx, row.id, changes);
    await rewriteEventData(tx, row.org_id, event, toAlert({ ...row, ...changes }));
    await setMonitorStatus(tx, monitor, "down", now);
  }

  /**
   * The source reports the problem gone: the open alert resolves `freshness_seconds` later. Runs
   * in the caller's write unit.
   */
  async sourceUpIn(tx: Db, given: MonitorTable, dedupKey: string, now: number): Promise<void> {
    // The row as it is now (see triggerIn): its status decides whether the monitor comes up.
    const monitor = await findMonitorById(tx, given.id);
    if (!monitor) return;
    const latest = await latestAlertFor(tx, monitor.id, dedupKey);
    if (!latest) return;
    const changes: Partial<AlertTable> = { source_down: 0 };
    if (latest.status !== "resolved" && latest.auto_resolve_at === null) {
      changes.auto_resolve_at = now + monitor.freshness_seconds * 1000;
    }
    await updateAlert(tx, latest.id, changes);
    // Resolved by hand before the source came up: nothing will auto-resolve, so the monitor is up now.
    if (
      latest.status === "resolved" &&
      monitor.status === "down" &&
      (await openAlertIds(tx, monitor.id)).length === 0
    ) {
      await setMonitorStatus(tx, monitor, "up", now);
    }
  }

  async acknowledge(orgId: string, alertId: string, by: string, note: string | undefined) {
    const now = Date.now();
    return this.ctx.store.write(async (tx) => {
      const alert = await findAlert(tx, orgId, alertId);
      if (!alert) throw errors.notFound("Alert");
      if (alert.status === "resolved")
        throw new AppError("alert_resolved", "This alert is already resolved.");
      return this.acknowledgeIn(tx, alert, by, note, now);
    });
  }

  private async acknowledgeIn(tx: Db, alert: AlertTable, by: string, note: string | undefined, now: number) {
    if (alert.status !== "firing") return { ...toAlert(alert), already_acknowledged: true };
    const changes = {
      status: "acknowledged" as const,
      acknowledged_at: now,
      acknowledged_by: by,
      escalate_at: null,
    };
    await updateAlert(tx, alert.id, changes);
    await addTimeline(tx, alert.id, now, "acknowledged", { by, ...(note ? { note } : {}) });
    const view = toAlert({ ...alert, ...changes });
    await this.announce(tx, { ...alert, ...changes }, "run.service.alert.acknowledged.v1", view, now);
    return { ...view, already_acknowledged: false };
  }

  /** The source acknowledges its open alert for `dedupKey` (as `monitor:<id>`), if any. */
  async sourceAcknowledgeIn(tx: Db, monitor: MonitorTable, dedupKey: string, now: number) {
    const alert = await openAlertFor(tx, monitor.id, dedupKey);
    if (!alert) return null;
    return this.acknowledgeIn(tx, alert, `monitor:${monitor.id}`, undefined, now);
  }

  /**
   * An accepted reply from a trusted channel (DESIGN §7), in the dispatcher's transaction: its
   * `reply` timeline entry, then claimed acknowledges, escalated moves to the next step now,
   * resolved resolves. A reply that finds nothing to change (a resolved alert) changes nothing
   * but its timeline entry. Returns what it did, for the audit record.
   */
  async replyIn(
    tx: Db,
    alert: AlertTable,
    reply: {
      action: "claimed" | "escalated" | "resolved";
      eventType: string;
      channelId: string;
      by: string;
      note?: string;
    },
    now: number,
  ): Promise<string> {
    await addTimeline(tx, alert.id, now, "reply", {
      event_type: reply.eventType,
      channel_id: reply.channelId,
    });
    if (alert.status === "resolved") return "the alert was already resolved";
    if (reply.action === "claimed") {
      if (alert.status === "acknowledged") return "the alert was already acknowledged";
      await this.acknowledgeIn(tx, alert, reply.by, reply.note, now);
      return "acknowledged";
    }
    if (reply.action === "resolved") {
      await this.resolveIn(tx, alert, reply.by, reply.note, false, now);
      return "resolved";
    }
    if (alert.status !== "firing" || !alert.policy_snapshot || alert.escalate_at === null) {
      return "no further escalation step";
    }
    await this.escalateIn(tx, alert, now);
    return "escalated to the next step";
  }

  /** A resolve by hand (the API); the source's own resolves come through `autoResolveDue`. */
  async resolve(orgId: string, alertId: string, by: string, note: string | undefined) {
    const now = Date.now();
    return this.ctx.store.write(async (tx) => {
      const alert = await findAlert(tx, orgId, alertId);
      if (!alert) throw errors.notFound("Alert");
      return this.resolveIn(tx, alert, by, note, false, now);
    });
  }

  private async resolveIn(
    tx: Db,
    alert: AlertTable,
    by: string,
    note: string | undefined,
    auto: boolean,
    now: number,
  ) {
    if (alert.status === "resolved") return { ...toAlert(alert), already_resolved: true };
    const changes = {
      status: "resolved" as const,
      resolved_at: now,
      resolved_by: by,
      escalate_at: null,
      auto_resolve_at: null,
    };
    await updateAlert(tx, alert.id, changes);
    await addTimeline(tx, alert.id, now, "resolved", { by, auto, ...(note ? { note } : {}) });
    const view = toAlert({ ...alert, ...changes });
    await this.announce(tx, { ...alert, ...changes }, "run.service.alert.resolved.v1", view, now);
    return { ...view, already_resolved: false };
  }

  /** The change's event, also sent to the channels that were paged about the alert. */
  private async announce(tx: Db, alert: AlertTable, type: string, data: unknown, now: number) {
    const org = await this.orgOf(tx, alert.org_id);
    const event = await appendEvent(tx, { org, area: "alerts", resourceId: alert.id, type, data, time: now });
    await this.dispatcher.followUp({ tx, org, alert, event, now });
  }

  /** Scheduler job: escalations whose time has come move to the next step (or pass). */
  async escalateDue(now = Date.now()): Promise<void> {
    const due = await dueEscalations(this.ctx.store.read, now, DUE_BATCH);
    for (const candidate of due) {
      await this.ctx.store.write(async (tx) => {
        const alert = await findAlert(tx, candidate.org_id, candidate.id);
        if (!alert || alert.escalate_at === null || alert.escalate_at > now) return;
        if (alert.status !== "firing" || !alert.policy_snapshot) {
          await updateAlert(tx, alert.id, { escalate_at: null });
          return;
        }
        await this.escalateIn(tx, alert, now);
      });
    }
  }

  /** Moves a firing alert with a policy to its next step (or its next pass) now. */
  private async escalateIn(tx: Db, alert: AlertTable, now: number): Promise<void> {
    const snapshot = JSON.parse(alert.policy_snapshot ?? "null") as PolicySnapshot;
    let step = (alert.current_escalation_step ?? -1) + 1;
    let pass = alert.escalation_pass;
    if (step >= snapshot.steps.length) {
      step = 0;
      pass += 1;
    }
    const org = await this.orgOf(tx, alert.org_id);
    await addTimeline(tx, alert.id, now, "escalated", { step: step + 1, pass: pass + 1 });
    const event = await appendEvent(tx, {
      org,
      area: "alerts",
      resourceId: alert.id,
      type: "run.service.alert.escalated.v1",
      data: toAlert({ ...alert, current_escalation_step: step }),
      time: now,
    });
    const result = await this.dispatcher.run({ tx, org, alert, event, now }, snapshot, step, pass);
    const changes = {
      current_escalation_step: result.step,
      escalation_pass: result.pass,
      notification_count: alert.notification_count + result.notifications,
      escalate_at: result.escalateAt,
    };
    await updateAlert(tx, alert.id, changes);
    await rewriteEventData(tx, alert.org_id, event, toAlert({ ...alert, ...changes }));
  }

  /** Scheduler job: alerts whose source came up and stayed up for `freshness_seconds` resolve. */
  async autoResolveDue(now = Date.now()): Promise<void> {
    const due = await dueAutoResolves(this.ctx.store.read, now, DUE_BATCH);
    for (const candidate of due) {
      await this.ctx.store.write(async (tx) => {
        const alert = await findAlert(tx, candidate.org_id, candidate.id);
        if (!alert || alert.auto_resolve_at === null || alert.auto_resolve_at > now) return;
        await this.resolveIn(tx, alert, `monitor:${alert.monitor_id}`, undefined, true, now);
        if ((await openAlertIds(tx, alert.monitor_id)).length === 0) {
          await setMonitorStatusById(tx, alert.monitor_id, "up", now);
        }
      });
    }
  }

  async list(orgId: string, filter: Omit<AlertFilter, "after">, cursor: (string | number)[] | null) {
    const rows = await listAlerts(this.ctx.store.read, orgId, { ...filter, after: cursor ?? undefined });
    const position = (r: AlertTable) =>
      filter.sort === "severity" || filter.sort === "-severity"
        ? [r.severity_rank, r.fired_at, r.id]
        : [r.fired_at, r.id];
    return toPage(rows, filter.limit, `alerts:${filter.sort}`, position, toAlert);
  }

  async get(orgId: string, id: string) {
    const alert = await findAlert(this.ctx.store.read, orgId, id);
    if (!alert) throw errors.notFound("Alert");
    return toAlert(alert);
  }

  async timeline(orgId: string, id: string) {
    const db = this.ctx.store.read;
    const alert = await findAlert(db, orgId, id);
    if (!alert) throw errors.notFound("Alert");
    return (await timelineOf(db, id)).map(toTimelineEntry);
  }
}
