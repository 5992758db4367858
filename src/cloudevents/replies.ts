/**
 * The reply dispatcher and its audit feed (DESIGN §7). A reply speaks for the channel its
 * ingest token is bound to, never for a channel it merely names; the decision follows a fixed
 * order and every decision is exactly one audit record, written in the ingest transaction
 * together with the alert change an accepted reply makes.
 */
import type { AccountsContext } from "../accounts/context.ts";
import { findUser } from "../accounts/users.repository.ts";
import { findAlertInAnyOrg } from "../alerts/alerts.repository.ts";
import type { AlertService } from "../alerts/alerts.service.ts";
import type { Db } from "../db/store.ts";
import { newId } from "../ids.ts";
import { findChannel } from "../notifications/channels.repository.ts";
import { DAY, iso } from "../time.ts";
import type { InboundEvent } from "./format.ts";
import { RateLimiter } from "./rate-limit.ts";
import {
  insertReply,
  listReplies,
  pruneReplies,
  type ReplyFilter,
  type ReplyRow,
} from "./replies.repository.ts";

export const REPLY_TYPE_PREFIX = "run.service.reply.";

const ACTIONS = {
  "run.service.reply.alert.claimed.v1": "claimed",
  "run.service.reply.alert.escalated.v1": "escalated",
  "run.service.reply.alert.resolved.v1": "resolved",
} as const;

type ReplyType = keyof typeof ACTIONS;

/** Who sent a batch: its ingest token (and the channel that token is bound to), or OIDC. */
export interface ReplyOrigin {
  orgId: string;
  tokenId: string | null;
  channelId: string | null;
}

interface ReplyData {
  alert_id: string;
  outbound_event_id: string;
  channel_id?: string;
  note?: string;
  user_id?: string;
}

const MAX_ID = 64;
const MAX_NOTE = 2000;
const PRUNE_CHUNK = 2000;

export function isReply(type: string): boolean {
  return type.startsWith(REPLY_TYPE_PREFIX);
}

export class ReplyDispatcher {
  private readonly limiter = new RateLimiter();

  constructor(
    private readonly ctx: AccountsContext,
    private readonly alerts: AlertService,
  ) {}

  /** Decides one reply inside the ingest transaction and records the decision. */
  async decideIn(tx: Db, origin: ReplyOrigin, event: InboundEvent, now: number): Promise<void> {
    const data = replyData(event.data);
    const decision = await this.decision(tx, origin, event, data, now);
    await insertReply(tx, {
      id: newId("rpl"),
      org_id: origin.orgId,
      received_at: now,
      event_id: event.id,
      event_source: event.source,
      event_type: event.type,
      channel_id: origin.channelId,
      ingest_token_id: origin.tokenId,
      alert_id: data?.alert_id ?? alertIdOf(event.data),
      outcome: decision.outcome,
      reason: decision.reason,
    });
  }

  private async decision(
    tx: Db,
    origin: ReplyOrigin,
    event: InboundEvent,
    data: ReplyData | null,
    now: number,
  ): Promise<{ outcome: string; reason: string }> {
    const perMinute = this.ctx.config.limits.replies_per_minute;
    const speaker = origin.channelId
      ? `channel:${origin.channelId}`
      : origin.tokenId
        ? `token:${origin.tokenId}`
        : `oidc:${origin.orgId}`;
    if (this.limiter.take(speaker, perMinute, 60_000, 1, now) > 0) {
      return {
        outcome: "rejected:rate_limited",
        reason: `More than ${perMinute} replies a minute from ${speaker}.`,
      };
    }
    const action = ACTIONS[event.type as ReplyType];
    if (!action) return { outcome: "rejected:invalid_reply", reason: `${event.type} is not a reply type.` };
    if (!data) {
      return {
        outcome: "rejected:invalid_reply",
        reason:
          "data must be an object with alert_id and outbound_event_id (and optionally channel_id, note, user_id).",
      };
    }
    const trust = await this.trustProblem(tx, origin, data);
    if (trust) return { outcome: "rejected:trust_required", reason: trust };
    const channelId = origin.channelId as string;
    const alert = await findAlertInAnyOrg(tx, data.alert_id);
    if (alert && alert.org_id !== origin.orgId) {
      return { outcome: "rejected:org_mismatch", reason: "The alert belongs to another organization." };
    }
    if (!alert) return { outcome: "rejected:unknown_alert", reason: "There is no alert with this alert_id." };
    const user = data.user_id ? await findUser(tx, origin.orgId, data.user_id) : undefined;
    const by = user?.status === "active" ? user.id : `channel:${channelId}`;
    const effect = await this.alerts.replyIn(
      tx,
      alert,
      { action, eventType: event.type, channelId, by, note: data.note },
      now,
    );
    return { outcome: "accepted", reason: effect };
  }

  /** Why the reply may not change alerts, or null when its channel is trusted. */
  private async trustProblem(tx: Db, origin: ReplyOrigin, data: ReplyData): Promise<string | null> {
    if (!origin.channelId) {
      return "Replies must come through an ingest token bound to a trusted cloudevents channel.";
    }
    if (data.channel_id !== undefined && data.channel_id !== origin.channelId) {
      return "data.channel_id does not match the channel of the ingest token.";
    }
    const channel = await findChannel(tx, origin.orgId, origin.channelId);
    if (channel?.trusted !== 1 || channel.enabled !== 1) {
      return "The ingest token's channel is not trusted (or is disabled).";
    }
    return null;
  }

  /** The audit feed: newest first, within the plan's retention. */
  async list(
    orgId: string,
    retentionDays: number,
    filter: Omit<ReplyFilter, "notBefore">,
  ): Promise<{
    data: ReturnType<typeof toReplyRecord>[];
    next_cursor: [number, string] | null;
    has_more: boolean;
  }> {
    const rows = await listReplies(this.ctx.store.read, orgId, {
      ...filter,
      notBefore: Date.now() - retentionDays * DAY,
    });
    const hasMore = rows.length > filter.limit;
    const page = hasMore ? rows.slice(0, filter.limit) : rows;
    const last = page[page.length - 1];
    return {
      data: page.map(toReplyRecord),
      next_cursor: hasMore && last ? [last.received_at, last.id] : null,
      has_more: hasMore,
    };
  }

  /** Retention: removes an org's records older than `days`, a chunk per transaction. */
  async prune(orgId: string, days: number, now: number): Promise<void> {
    const before = now - days * DAY;
    for (;;) {
      const removed = await this.ctx.store.write((tx) => pruneReplies(tx, orgId, before, PRUNE_CHUNK));
      if (removed < PRUNE_CHUNK) return;
    }
  }
}

export function toReplyRecord(row: ReplyRow) {
  return {
    id: row.id,
    received_at: iso(row.received_at),
    event_id: row.event_id,
    event_source: row.event_source,
    event_type: row.event_type,
    channel_id: row.channel_id,
    ingest_token_id: row.ingest_token_id,
    alert_id: row.alert_id,
    outcome: row.outcome,
    reason: row.reason,
  };
}

function isShortString(value: unknown, max: number): value is string {
  return typeof value === "string" && value.length > 0 && value.length <= max;
}

/** The reply's data when it has the required shape, else null (`rejected:invalid_reply`). */
function replyData(data: unknown): ReplyData | null {
  if (typeof data !== "object" || data === null || Array.isArray(data)) return null;
  const d = data as Record<string, unknown>;
  if (!isShortString(d.alert_id, MAX_ID) || !isShortString(d.outbound_event_id, 256)) return null;
  if (d.channel_id !== undefined && !isShortString(d.channel_id, MAX_ID)) return null;
  if (d.user_id !== undefined && !isShortString(d.user_id, MAX_ID)) return null;
  if (d.note !== undefined && (typeof d.note !== "string" || d.note.length > MAX_NOTE)) return null;
  return {
    alert_id: d.alert_id,
    outbound_event_id: d.outbound_event_id,
    channel_id: d.channel_id as string | undefined,
    note: (d.note as string | undefined) || undefined,
    user_id: d.user_id as string | undefined,
  };
}

/** For the audit record of an invalid reply: the alert it named, when it named one readably. */
function alertIdOf(data: unknown): string | null {
  const value = (data as { alert_id?: unknown } | null)?.alert_id;
  return typeof value === "string" && value !== "" && value.length <= MAX_ID ? value : null;
}
