/**
 * CloudEvents ingest (DESIGN §7): authenticates by ingest token or OIDC bearer JWT, applies the
 * plan gate and the org's rate, parses and validates the request, and appends the events to
 * the log in one group-committed transaction together with what they cause: reply decisions
 * and the alerts of event monitors whose type glob matches.
 */
import { bearerCredential } from "../accounts/auth.service.ts";
import type { AccountsContext } from "../accounts/context.ts";
import type { IngestCredentials } from "../accounts/ingest-credentials.ts";
import { findOrgBySlug } from "../accounts/orgs.repository.ts";
import { parseSettings } from "../accounts/settings.ts";
import type { AlertService } from "../alerts/alerts.service.ts";
import { severityOf } from "../alerts/events-api.ts";
import type { Db } from "../db/store.ts";
import { errors } from "../errors.ts";
import { insertInbound } from "../events/log.repository.ts";
import { readLimitedBytes } from "../http/route.ts";
import type { EventMonitor, EventMonitorIndex } from "../monitors/event-monitors.ts";
import { findMonitorById } from "../monitors/monitors.repository.ts";
import { type InboundEvent, isObject, parseIngest } from "./format.ts";
import type { OidcVerifier } from "./oidc.ts";
import { checkPlanGate } from "./plans.ts";
import { RateLimiter, rateLimited } from "./rate-limit.ts";
import { isReply, type ReplyDispatcher, type ReplyOrigin } from "./replies.ts";

export class IngestService {
  private readonly limiter = new RateLimiter();

  constructor(
    private readonly ctx: AccountsContext,
    private readonly replies: ReplyDispatcher,
    private readonly alerts: AlertService,
    private readonly oidc: OidcVerifier,
    private readonly credentials: IngestCredentials,
    private readonly eventMonitors: EventMonitorIndex,
  ) {}

  async ingest(token: string, request: Request): Promise<{ accepted: number }> {
    const origin = await this.authenticate(token, request.headers.get("authorization"));
    const { limits } = this.ctx.config;
    const body = await readLimitedBytes(request, limits.max_request_bytes);
    const events = parseIngest(request.headers, body, {
      batchMaxEvents: limits.batch_max_events,
      maxEventBytes: limits.max_event_bytes,
    });
    if (events.length === 0) return { accepted: 0 };
    const perSecond = limits.ingest_events_per_second;
    if (perSecond > 0) {
      const wait = this.limiter.take(`ingest:${origin.orgId}`, perSecond, 1000, events.length);
      if (wait > 0) throw rateLimited(wait, `At most ${perSecond} events a second for this organization.`);
    }
    const now = Date.now();
    await this.ctx.store.write(async (tx) => {
      const stored = insertInbound(this.ctx.store, origin.orgId, events, now);
      const fresh = events.filter((_, i) => stored[i]);
      let monitors: EventMonitor[] | null = null;
      for (const event of fresh) {
        if (isReply(event.type)) {
          await this.replies.decideIn(tx, origin, event, now);
          continue;
        }
        monitors ??= await this.eventMonitors.forOrg(tx, origin.orgId);
        for (const monitor of monitors) {
          if (monitor.matches.test(event.type)) await this.feed(tx, monitor.id, event, now);
        }
      }
    });
    return { accepted: events.length };
  }

  /**
   * `{token}` is an ingest token; with a bearer JWT it is the org slug and the JWT must be
   * valid for the org's OIDC issuer. Every failure is the same 401.
   */
  private async authenticate(token: string, authorization: string | null): Promise<ReplyOrigin> {
    const bearer = bearerCredential(authorization);
    if (authorization !== null) {
      if (!bearer) throw errors.unauthenticated();
      const org = await findOrgBySlug(this.ctx.store.read, token);
      const oidc = org ? parseSettings(org.settings).cloudevents.ingest.oidc : null;
      if (!org || !oidc) throw errors.unauthenticated();
      if (!(await this.oidc.verify(bearer, oidc.issuer, oidc.audiences))) throw errors.unauthenticated();
      checkPlanGate(this.ctx.config, org.plan);
      return { orgId: org.id, tokenId: null, channelId: null };
    }
    const credential = this.credentials.find(token);
    if (!credential) throw errors.unauthenticated();
    checkPlanGate(this.ctx.config, credential.plan);
    return { orgId: credential.org_id, tokenId: credential.id, channelId: credential.channel_id };
  }

  /**
   * An inbound event reported to an event monitor: `data.event_action` (or `data.status`)
   * resolve/resolved reports the source up, acknowledge acknowledges, anything else triggers.
   */
  private async feed(tx: Db, monitorId: string, event: InboundEvent, now: number): Promise<void> {
    // The current row: an earlier event of the same batch may have changed it (its status).
    const monitor = await findMonitorById(tx, monitorId);
    if (!monitor || monitor.paused === 1) return;
    const data = isObject(event.data) ? event.data : {};
    const dedupKey = text(data.dedup_key) ?? event.subject ?? event.type;
    const action = (text(data.event_action) ?? text(data.status) ?? "trigger").toLowerCase();
    if (action === "resolve" || action === "resolved") {
      await this.alerts.sourceUpIn(tx, monitor, dedupKey, now);
      return;
    }
    if (action === "acknowledge") {
      await this.alerts.sourceAcknowledgeIn(tx, monitor, dedupKey, now);
      return;
    }
    await this.alerts.triggerIn(
      tx,
      monitor,
      {
        dedupKey,
        summary: (text(data.summary) ?? event.type).slice(0, 1024),
        reason: `CloudEvent ${event.type} from ${event.source}`,
        severity: severityOf(text(data.severity), monitor.severity),
        labels: { source: event.source, type: event.type },
      },
      now,
    );
  }
}

function text(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}
