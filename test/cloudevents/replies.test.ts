/**
 * Reply events through a real `svc serve` (DESIGN §5, §7): `run.service.reply.alert.*` sent to
 * `POST /api/v1/cloudevents/ingest/{token}` (with the `cloudevents` SDK, structured, binary and
 * batch mode) are decided by the reply dispatcher in its fixed order — rate limit, validity,
 * trust, org, alert — each decision is exactly one record of the admin audit feed, and an
 * accepted reply changes the alert (timeline, outbound events) in the same transaction.
 * Black-box: HTTP and the admin CLI only.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { CloudEvent, HTTP } from "cloudevents";
import {
  type Client,
  type Response2,
  secondOrg,
  signUpUser,
  TestServer,
  totpNow,
} from "../support/harness.ts";

const SLOW = 30_000;
const CLAIMED = "run.service.reply.alert.claimed.v1";
const ESCALATED = "run.service.reply.alert.escalated.v1";
const RESOLVED = "run.service.reply.alert.resolved.v1";
const SNOOZED = "run.service.reply.alert.snoozed.v1";
const FEED = "/api/v1/admin/cloudevents/replies";
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const REPLY_ID = /^rpl_[0-9a-z]+$/;
const SOURCE = "/tests/replies";

interface Alert {
  id: string;
  status: string;
  acknowledged_by: string | null;
  resolved_by: string | null;
  current_escalation_step: number | null;
  [key: string]: unknown;
}

interface ReplyRecord {
  id: string;
  received_at: string;
  event_id: string;
  event_source: string;
  event_type: string;
  channel_id: string | null;
  ingest_token_id: string | null;
  alert_id: string | null;
  outcome: string;
  reason: string;
}

interface Speaker {
  token: string;
  tokenId: string;
  channelId: string | null;
}

/** A server, its owner's API key and an admin JWT for the feed. */
interface Env {
  server: TestServer;
  api: Client;
  jwt: string;
}

/** Takes the owner created by `svc admin init` through sign-up; returns their session JWT. */
async function finishOwnerSignUp(server: TestServer, email = "owner@acme.test"): Promise<string> {
  const link = await server.admin(["user", "invite-link", "--org", server.orgSlug, "--email", email]);
  const anon = server.client().as();
  const accepted = await anon.post("/api/v1/auth/accept-invite", {
    token: link.invite_token,
    password: "owner password 123",
  });
  if (accepted.status !== 200) throw new Error(`accept: ${accepted.text}`);
  const confirmed = await anon.post("/api/v1/auth/confirm-mfa", {
    token: link.invite_token,
    totp: totpNow(accepted.body.totp_secret),
  });
  if (confirmed.status !== 200) throw new Error(`confirm: ${confirmed.text}`);
  return confirmed.body.token;
}

async function channel(env: Env, trusted: boolean, name = `ce ${Math.random()}`): Promise<string> {
  const res = await env.api.post("/api/v1/notification-channels", {
    name,
    type: "cloudevents",
    config: {},
    trusted,
  });
  if (res.status !== 201) throw new Error(`create channel: ${res.status} ${res.text}`);
  expect(res.body.trusted).toBe(trusted);
  return res.body.id;
}

async function ingestToken(env: Env, channelId: string | null): Promise<Speaker> {
  const res = await env.api.post("/api/v1/org/ingest-tokens", {
    name: `token ${Math.random()}`,
    ...(channelId ? { channel_id: channelId } : {}),
  });
  if (res.status !== 201) throw new Error(`create ingest token: ${res.status} ${res.text}`);
  return { token: res.body.token, tokenId: res.body.id, channelId };
}

/** A fresh cloudevents channel (trusted or not) and an ingest token bound to it. */
async function speaker(env: Env, trusted = true): Promise<Speaker> {
  return ingestToken(env, await channel(env, trusted));
}

async function policy(env: Env, steps: number): Promise<string> {
  const targets = [];
  for (let i = 0; i < steps; i++) targets.push(await channel(env, false, `step ${i + 1} ${Math.random()}`));
  const res = await env.api.post("/api/v1/escalation-policies", {
    name: `Policy ${Math.random()}`,
    repeat: 0,
    steps: targets.map((id) => ({ delay_seconds: 3600, targets: [{ type: "channel", id }] })),
  });
  if (res.status !== 201) throw new Error(`create policy: ${res.status} ${res.text}`);
  return res.body.id;
}

/** A fresh event monitor (with the policy, if any) and one alert fired on it by the Events API. */
async function fire(env: Env, policyId: string | null = null, api = env.api): Promise<Alert> {
  const monitor = await api.post("/api/v1/monitors", {
    name: `Monitor ${Math.random()}`,
    type: "event",
    escalation_policy_id: policyId,
  });
  if (monitor.status !== 201) throw new Error(`create monitor: ${monitor.status} ${monitor.text}`);
  const res = await api.as().post("/api/v1/events", {
    routing_key: monitor.body.integration_key,
    event_action: "trigger",
    dedup_key: "k",
    payload: { summary: "Database down", source: "db01", severity: "critical" },
  });
  if (res.status !== 202) throw new Error(`trigger: ${res.status} ${res.text}`);
  const list = await api.get(`/api/v1/alerts?monitor_id=${monitor.body.id}`);
  expect(list.body.data).toHaveLength(1);
  return list.body.data[0];
}

async function getAlert(env: Env, id: string, api = env.api): Promise<Alert> {
  const res = await api.get(`/api/v1/alerts/${id}`);
  expect(res.status).toBe(200);
  return res.body;
}

async function timeline(env: Env, id: string, api = env.api): Promise<{ type: string; data: any }[]> {
  const res = await api.get(`/api/v1/alerts/${id}/timeline`);
  expect(res.status).toBe(200);
  return res.body.data;
}

type Mode = "structured" | "binary";

/** A reply CloudEvent built by the SDK (fresh id unless given). */
function replyEvent(
  type: string,
  data: unknown,
  extra: { id?: string; source?: string } = {},
): CloudEvent<unknown> {
  return new CloudEvent<unknown>({
    specversion: "1.0",
    id: extra.id ?? crypto.randomUUID(),
    source: extra.source ?? SOURCE,
    type,
    datacontenttype: "application/json",
    data,
  });
}

/** Sends one SDK event to the ingest endpoint in structured or binary mode. */
async function post(env: Env, token: string, event: CloudEvent<unknown>, mode: Mode = "structured") {
  const message = mode === "structured" ? HTTP.structured(event) : HTTP.binary(event);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(message.headers)) {
    if (value !== undefined) headers[name] = String(value);
  }
  const res = await fetch(`${env.server.base}/api/v1/cloudevents/ingest/${token}`, {
    method: "POST",
    headers,
    body: message.body as string,
  });
  return { status: res.status, body: (await res.json()) as any };
}

/** Sends a reply and expects ingest to take it (202 accepted 1); returns the event sent. */
async function reply(
  env: Env,
  from: Speaker | string,
  type: string,
  data: unknown,
  options: { mode?: Mode; id?: string; source?: string } = {},
): Promise<CloudEvent<unknown>> {
  const event = replyEvent(type, data, options);
  const res = await post(env, typeof from === "string" ? from : from.token, event, options.mode);
  expect(res).toEqual({ status: 202, body: { accepted: 1 } });
  return event;
}

/** Sends several events as one batch. */
async function batch(env: Env, token: string, events: unknown[]): Promise<Response2> {
  return env.api.as().post(`/api/v1/cloudevents/ingest/${token}`, JSON.stringify(events), {
    "content-type": "application/cloudevents-batch+json",
  });
}

function data(alertId: string, extra: Record<string, unknown> = {}) {
  return { alert_id: alertId, outbound_event_id: `evt_${crypto.randomUUID()}`, ...extra };
}

/** Every page of the feed for `query`, following next_cursor. */
async function feedAll(env: Env, query = "", limit = 200): Promise<ReplyRecord[]> {
  const client = env.server.client(env.jwt);
  const out: ReplyRecord[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 1000; page++) {
    const sep = query ? "&" : "";
    const url: string = `${FEED}?${query}${sep}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
    const res = await client.get(url);
    expect(res.status).toBe(200);
    out.push(...res.body.data);
    expect(res.body.has_more).toBe(res.body.next_cursor !== null);
    cursor = res.body.next_cursor;
    if (!cursor) return out;
  }
  throw new Error("feed did not end");
}

/** The audit records of one reply event (by its source and id). */
async function recordsOf(env: Env, event: { id: string; source: string }): Promise<ReplyRecord[]> {
  return (await feedAll(env)).filter((r) => r.event_id === event.id && r.event_source === event.source);
}

/** The one audit record of a reply event. */
async function recordOf(env: Env, event: { id: string; source: string }): Promise<ReplyRecord> {
  const records = await recordsOf(env, event);
  expect(records).toHaveLength(1);
  return records[0] as ReplyRecord;
}

async function outcomeOf(env: Env, event: { id: string; source: string }): Promise<string> {
  return (await recordOf(env, event)).outcome;
}

/** Outbound events of `type` about `alertId`, from the owner key's poll feed. */
async function polled(env: Env, type: string, alertId: string): Promise<any[]> {
  const res = await env.api.get(`/api/v1/cloudevents/poll?filter=${type}&wait=0&limit=1000`);
  expect(res.status).toBe(200);
  return res.body.data.filter((e: { subject?: string }) => e.subject === alertId);
}

/** The parts of an alert a reply may change. */
function state(alert: Alert) {
  return {
    status: alert.status,
    acknowledged_by: alert.acknowledged_by,
    resolved_by: alert.resolved_by,
    current_escalation_step: alert.current_escalation_step,
  };
}

let env: Env;
/** A second org on the same server, with a firing alert. */
let other: { api: Client; alert: Alert; slug: string };

beforeAll(async () => {
  const server = await TestServer.start({ env: { SVC_LIMITS_POLL_PER_MINUTE: "10000" } });
  await finishOwnerSignUp(server);
  const minted = await server.admin(["token", "--org", server.orgSlug, "--user", "owner@acme.test"]);
  env = { server, api: server.client(), jwt: minted.token };
  const created = await secondOrg(server);
  const otherApi = server.client(created.key);
  other = { api: otherApi, slug: created.slug, alert: await fire(env, null, otherApi) };
}, SLOW);
afterAll(() => env.server.dispose());

describe("accepted replies (a token bound to a trusted cloudevents channel)", () => {
  test(
    "claimed: the channel reads the notification and claims it; the alert is acknowledged by the channel",
    async () => {
      const channelId = await channel(env, true);
      const from = await ingestToken(env, channelId);
      const res = await env.api.post("/api/v1/escalation-policies", {
        name: "claim policy",
        repeat: 0,
        steps: [{ delay_seconds: 600, targets: [{ type: "channel", id: channelId }] }],
      });
      expect(res.status).toBe(201);
      const alert = await fire(env, res.body.id);
      expect(alert.status).toBe("firing");

      // The channel's consumer (a key bound to it) sees the notification addressed to it.
      const key = await env.api.post("/api/v1/api-keys", {
        name: "channel consumer",
        scopes: ["events"],
        service: true,
        channel_id: channelId,
      });
      expect(key.status).toBe(201);
      const notified = await env.server
        .client(key.body.secret)
        .get("/api/v1/cloudevents/poll?filter=run.service.alert.notified.v1&wait=0");
      expect(notified.status).toBe(200);
      const mine = notified.body.data.filter((e: any) => e.subject === alert.id);
      expect(mine).toHaveLength(1);
      expect(mine[0].channelid).toBe(channelId);

      const before = Date.now();
      const sent = await reply(env, from, CLAIMED, {
        alert_id: alert.id,
        outbound_event_id: mine[0].id,
        note: "on it",
      });
      const after = await getAlert(env, alert.id);
      expect(after.status).toBe("acknowledged");
      expect(after.acknowledged_by).toBe(`channel:${channelId}`);
      expect(Date.parse(after.acknowledged_at as string)).toBeGreaterThanOrEqual(before - 5);

      const entries = await timeline(env, alert.id);
      const replies = entries.filter((e) => e.type === "reply");
      expect(replies.map((e) => e.data)).toEqual([{ event_type: CLAIMED, channel_id: channelId }]);
      const acks = entries.filter((e) => e.type === "acknowledged");
      expect(acks.map((e) => e.data)).toEqual([{ by: `channel:${channelId}`, note: "on it" }]);

      const record = await recordOf(env, sent);
      expect(record).toEqual({
        id: expect.stringMatching(REPLY_ID),
        received_at: expect.stringMatching(TIMESTAMP),
        event_id: sent.id,
        event_source: SOURCE,
        event_type: CLAIMED,
        channel_id: channelId,
        ingest_token_id: from.tokenId,
        alert_id: alert.id,
        outcome: "accepted",
        reason: expect.any(String),
      });

      const acked = await polled(env, "run.service.alert.acknowledged.v1", alert.id);
      expect(acked).toHaveLength(1);
      expect(acked[0]).toMatchObject({
        specversion: "1.0",
        type: "run.service.alert.acknowledged.v1",
        source: `/orgs/${env.server.orgSlug}/alerts/${alert.id}`,
        subject: alert.id,
        data: { id: alert.id, status: "acknowledged", acknowledged_by: `channel:${channelId}` },
      });
    },
    SLOW,
  );

  test(
    "claimed with data.user_id naming an active user of the org: acknowledged_by is that user",
    async () => {
      const from = await speaker(env);
      const member = await signUpUser(env.server, `claimer-${Math.random()}@acme.test`, "member");
      const alert = await fire(env);
      await reply(env, from, CLAIMED, data(alert.id, { user_id: member.user.id }), { mode: "binary" });
      const after = await getAlert(env, alert.id);
      expect(state(after)).toMatchObject({ status: "acknowledged", acknowledged_by: member.user.id });
      const acks = (await timeline(env, alert.id)).filter((e) => e.type === "acknowledged");
      expect(acks.map((e) => e.data.by)).toEqual([member.user.id]);
    },
    SLOW,
  );

  test(
    "claimed with a user_id that is not an active user of the org: acknowledged_by is the channel",
    async () => {
      const from = await speaker(env);
      const invited = await env.api.post("/api/v1/users", {
        email: `invited-${Math.random()}@acme.test`,
        role: "member",
      });
      expect(invited.status).toBe(201);
      const otherUsers = await other.api.get("/api/v1/users");
      const otherOwner = otherUsers.body.data[0].id as string;
      for (const userId of [invited.body.id, otherOwner, "usr_doesnotexist"]) {
        const alert = await fire(env);
        const sent = await reply(env, from, CLAIMED, data(alert.id, { user_id: userId }));
        expect(await outcomeOf(env, sent)).toBe("accepted");
        const after = await getAlert(env, alert.id);
        expect(state(after)).toMatchObject({
          status: "acknowledged",
          acknowledged_by: `channel:${from.channelId}`,
        });
      }
    },
    SLOW,
  );

  test(
    "escalated: a firing alert with a two-step policy moves to step 2 now",
    async () => {
      const from = await speaker(env);
      const alert = await fire(env, await policy(env, 2));
      expect(alert.current_escalation_step).toBe(1);
      const sent = await reply(env, from, ESCALATED, data(alert.id), { mode: "binary" });
      expect(await outcomeOf(env, sent)).toBe("accepted");

      const after = await getAlert(env, alert.id);
      expect(state(after)).toEqual({
        status: "firing",
        acknowledged_by: null,
        resolved_by: null,
        current_escalation_step: 2,
      });
      const entries = await timeline(env, alert.id);
      expect(entries.filter((e) => e.type === "reply").map((e) => e.data)).toEqual([
        { event_type: ESCALATED, channel_id: from.channelId },
      ]);
      expect(entries.filter((e) => e.type === "escalated").map((e) => e.data)).toEqual([
        { step: 2, pass: 1 },
      ]);
      const escalated = await polled(env, "run.service.alert.escalated.v1", alert.id);
      expect(escalated).toHaveLength(1);
      expect(escalated[0].data.current_escalation_step).toBe(2);

      // Past the last step (repeat 0) there is nowhere to go: accepted, nothing changes.
      const again = await reply(env, from, ESCALATED, data(alert.id));
      expect(await outcomeOf(env, again)).toBe("accepted");
      expect((await getAlert(env, alert.id)).current_escalation_step).toBe(2);
      const later = await timeline(env, alert.id);
      expect(later.filter((e) => e.type === "escalated")).toHaveLength(1);
      expect(later.filter((e) => e.type === "reply")).toHaveLength(2);
    },
    SLOW,
  );

  test(
    "escalated on an acknowledged alert does not escalate it",
    async () => {
      const from = await speaker(env);
      const alert = await fire(env, await policy(env, 2));
      expect((await env.api.post(`/api/v1/alerts/${alert.id}/ack`, {})).status).toBe(200);
      const sent = await reply(env, from, ESCALATED, data(alert.id));
      expect(await outcomeOf(env, sent)).toBe("accepted");
      const after = await getAlert(env, alert.id);
      expect([after.status, after.current_escalation_step]).toEqual(["acknowledged", 1]);
    },
    SLOW,
  );

  test(
    "resolved: the alert resolves, by the channel; an outbound resolved event is written",
    async () => {
      const from = await speaker(env);
      const alert = await fire(env);
      const sent = await reply(env, from, RESOLVED, data(alert.id, { note: "fixed it" }));
      expect(await outcomeOf(env, sent)).toBe("accepted");
      const after = await getAlert(env, alert.id);
      expect(state(after)).toMatchObject({ status: "resolved", resolved_by: `channel:${from.channelId}` });
      const entries = await timeline(env, alert.id);
      expect(entries.filter((e) => e.type === "resolved").map((e) => e.data)).toEqual([
        { by: `channel:${from.channelId}`, auto: false, note: "fixed it" },
      ]);
      const resolved = await polled(env, "run.service.alert.resolved.v1", alert.id);
      expect(resolved).toHaveLength(1);
      expect(resolved[0].data).toMatchObject({ id: alert.id, status: "resolved" });

      // A claim after the resolve is accepted but changes nothing.
      const late = await reply(env, from, CLAIMED, data(alert.id));
      expect(await outcomeOf(env, late)).toBe("accepted");
      expect(state(await getAlert(env, alert.id))).toEqual(state(after));
      expect(await polled(env, "run.service.alert.acknowledged.v1", alert.id)).toEqual([]);
    },
    SLOW,
  );

  test(
    "data.channel_id equal to the token's own channel is accepted",
    async () => {
      const from = await speaker(env);
      const alert = await fire(env);
      const sent = await reply(env, from, CLAIMED, data(alert.id, { channel_id: from.channelId }));
      expect(await outcomeOf(env, sent)).toBe("accepted");
      expect((await getAlert(env, alert.id)).status).toBe("acknowledged");
    },
    SLOW,
  );
});

describe("rejected replies change nothing", () => {
  /** Sends `type` for `alert` and expects `outcome`, with the alert and its timeline untouched. */
  async function expectRejected(
    from: Speaker | string,
    type: string,
    payload: unknown,
    outcome: string,
    alert: Alert,
    api = env.api,
  ): Promise<ReplyRecord> {
    const before = await getAlert(env, alert.id, api);
    const entriesBefore = await timeline(env, alert.id, api);
    const sent = await reply(env, from, type, payload);
    const record = await recordOf(env, sent);
    expect(record.outcome).toBe(outcome);
    expect(record.reason.length).toBeGreaterThan(0);
    expect(state(await getAlert(env, alert.id, api))).toEqual(state(before));
    expect(await timeline(env, alert.id, api)).toEqual(entriesBefore);
    return record;
  }

  test(
    "trust_required: an org-wide ingest token",
    async () => {
      const orgWide = await ingestToken(env, null);
      const alert = await fire(env);
      for (const type of [CLAIMED, ESCALATED, RESOLVED]) {
        const record = await expectRejected(orgWide, type, data(alert.id), "rejected:trust_required", alert);
        expect(record).toMatchObject({
          channel_id: null,
          ingest_token_id: orgWide.tokenId,
          alert_id: alert.id,
          event_type: type,
        });
      }
      // The token `svc admin init` made is org-wide too.
      await expectRejected(
        env.server.init?.ingest_token.token as string,
        CLAIMED,
        data(alert.id),
        "rejected:trust_required",
        alert,
      );
    },
    SLOW,
  );

  test(
    "trust_required: a channel that is not trusted, or disabled, or no longer trusted",
    async () => {
      const untrusted = await speaker(env, false);
      const alert = await fire(env);
      const record = await expectRejected(
        untrusted,
        RESOLVED,
        data(alert.id),
        "rejected:trust_required",
        alert,
      );
      expect(record.channel_id).toBe(untrusted.channelId);

      const trusted = await speaker(env, true);
      const id = trusted.channelId as string;
      expect((await env.api.patch(`/api/v1/notification-channels/${id}`, { enabled: false })).status).toBe(
        200,
      );
      await expectRejected(trusted, CLAIMED, data(alert.id), "rejected:trust_required", alert);
      expect((await env.api.patch(`/api/v1/notification-channels/${id}`, { enabled: true })).status).toBe(
        200,
      );
      expect((await env.api.patch(`/api/v1/notification-channels/${id}`, { trusted: false })).status).toBe(
        200,
      );
      await expectRejected(trusted, CLAIMED, data(alert.id), "rejected:trust_required", alert);
      // Trusted again: the very same token's replies change alerts.
      expect((await env.api.patch(`/api/v1/notification-channels/${id}`, { trusted: true })).status).toBe(
        200,
      );
      const sent = await reply(env, trusted, CLAIMED, data(alert.id));
      expect(await outcomeOf(env, sent)).toBe("accepted");
    },
    SLOW,
  );

  test(
    "trust_required: data.channel_id naming another channel, even a trusted one",
    async () => {
      const from = await speaker(env, true);
      const otherTrusted = await channel(env, true);
      const otherUntrusted = await channel(env, false);
      const alert = await fire(env);
      for (const named of [otherTrusted, otherUntrusted, "chn_doesnotexist"]) {
        const record = await expectRejected(
          from,
          CLAIMED,
          data(alert.id, { channel_id: named }),
          "rejected:trust_required",
          alert,
        );
        // The record names the channel the reply came through, not the one it named.
        expect(record.channel_id).toBe(from.channelId);
      }
      // An untrusted channel's token naming a trusted channel does not borrow its trust.
      const untrusted = await speaker(env, false);
      await expectRejected(
        untrusted,
        CLAIMED,
        data(alert.id, { channel_id: from.channelId }),
        "rejected:trust_required",
        alert,
      );
      // An org-wide token naming a trusted channel does not speak for it.
      await expectRejected(
        await ingestToken(env, null),
        RESOLVED,
        data(alert.id, { channel_id: from.channelId }),
        "rejected:trust_required",
        alert,
      );
    },
    SLOW,
  );

  test(
    "invalid_reply: data without alert_id or outbound_event_id, data not an object, fields of the wrong type",
    async () => {
      const from = await speaker(env);
      const alert = await fire(env);
      // The record keeps the alert_id the reply named when it is a readable string (unchecked: "").
      const cases: [unknown, string | null | undefined][] = [
        [{ outbound_event_id: "evt_1" }, null],
        [{ alert_id: alert.id }, alert.id],
        [{ alert_id: "", outbound_event_id: "evt_1" }, undefined],
        [{ alert_id: 42, outbound_event_id: "evt_1" }, null],
        [{ alert_id: alert.id, outbound_event_id: "evt_1", user_id: 7 }, alert.id],
        [{ alert_id: alert.id, outbound_event_id: "evt_1", channel_id: "" }, alert.id],
        [{ alert_id: alert.id, outbound_event_id: "evt_1", note: { text: "x" } }, alert.id],
        ["not an object", null],
        [[alert.id], null],
        [42, null],
        [null, null],
      ];
      for (const [payload, alertId] of cases) {
        const record = await expectRejected(from, CLAIMED, payload, "rejected:invalid_reply", alert);
        if (alertId !== undefined) expect(record.alert_id).toBe(alertId);
      }
    },
    SLOW,
  );

  test(
    "invalid_reply: a reply without data, and binary mode with a non-JSON body",
    async () => {
      const from = await speaker(env);
      const alert = await fire(env);
      const noData = new CloudEvent<unknown>({ id: crypto.randomUUID(), source: SOURCE, type: CLAIMED });
      expect(await post(env, from.token, noData)).toEqual({ status: 202, body: { accepted: 1 } });
      expect(await outcomeOf(env, noData)).toBe("rejected:invalid_reply");

      const id = crypto.randomUUID();
      const text = await env.api
        .as()
        .post(`/api/v1/cloudevents/ingest/${from.token}`, `alert_id=${alert.id}`, {
          "content-type": "text/plain",
          "ce-specversion": "1.0",
          "ce-id": id,
          "ce-source": SOURCE,
          "ce-type": RESOLVED,
        });
      expect(text.status).toBe(202);
      expect(await outcomeOf(env, { id, source: SOURCE })).toBe("rejected:invalid_reply");
      expect((await getAlert(env, alert.id)).status).toBe("firing");
    },
    SLOW,
  );

  test(
    "invalid_reply: an unknown reply type, e.g. snoozed",
    async () => {
      const from = await speaker(env);
      const alert = await fire(env);
      for (const type of [
        SNOOZED,
        "run.service.reply.alert.claimed.v2",
        "run.service.reply.incident.resolved.v1",
      ]) {
        const record = await expectRejected(from, type, data(alert.id), "rejected:invalid_reply", alert);
        expect(record).toMatchObject({ event_type: type, alert_id: alert.id });
      }
    },
    SLOW,
  );

  test(
    "org_mismatch: an alert of another org, through a trusted channel",
    async () => {
      const from = await speaker(env);
      const record = await expectRejected(
        from,
        RESOLVED,
        data(other.alert.id),
        "rejected:org_mismatch",
        other.alert,
        other.api,
      );
      expect(record.alert_id).toBe(other.alert.id);
      expect((await getAlert(env, other.alert.id, other.api)).status).toBe("firing");
      // The other org's own feed does not show this org's replies.
      const otherOwnerKey = await env.server.admin([
        "key",
        "create",
        "--org",
        other.slug,
        "--name",
        "feed",
        "--scopes",
        "admin",
        "--service",
      ]);
      const jwt = await env.server.client(otherOwnerKey.secret).post("/api/v1/auth/token", {});
      expect(jwt.status).toBe(201);
      const otherFeed = await env.server.client(jwt.body.token).get(`${FEED}?limit=200`);
      expect(otherFeed.status).toBe(200);
      expect(otherFeed.body.data).toEqual([]);
    },
    SLOW,
  );

  test(
    "unknown_alert: an alert id that does not exist",
    async () => {
      const from = await speaker(env);
      for (const alertId of ["alt_00000000000000000000000000", "nonsense"]) {
        const sent = await reply(env, from, CLAIMED, data(alertId));
        const record = await recordOf(env, sent);
        expect(record).toMatchObject({ outcome: "rejected:unknown_alert", alert_id: alertId });
      }
    },
    SLOW,
  );

  test(
    "a revoked ingest token is 401 and its replies are not recorded",
    async () => {
      const from = await speaker(env);
      const alert = await fire(env);
      expect((await env.api.delete(`/api/v1/org/ingest-tokens/${from.tokenId}`)).status).toBe(204);
      const event = replyEvent(CLAIMED, data(alert.id));
      const res = await post(env, from.token, event);
      expect([res.status, res.body.error.code]).toEqual([401, "unauthenticated"]);
      expect(await recordsOf(env, event)).toEqual([]);
      expect((await getAlert(env, alert.id)).status).toBe("firing");
    },
    SLOW,
  );

  test(
    "decision order: invalid before trust, trust before org and alert",
    async () => {
      const untrusted = await speaker(env, false);
      const orgWide = await ingestToken(env, null);
      const trusted = await speaker(env, true);
      const alert = await fire(env);
      // Invalid from an untrusted channel or an org-wide token: invalid_reply.
      for (const from of [untrusted, orgWide]) {
        await expectRejected(from, CLAIMED, { outbound_event_id: "x" }, "rejected:invalid_reply", alert);
        await expectRejected(from, SNOOZED, data(alert.id), "rejected:invalid_reply", alert);
      }
      // Untrusted (any way) for another org's alert or a missing one: trust_required.
      for (const alertId of [other.alert.id, "alt_00000000000000000000000000"]) {
        for (const from of [untrusted, orgWide]) {
          const sent = await reply(env, from, RESOLVED, data(alertId));
          expect(await outcomeOf(env, sent)).toBe("rejected:trust_required");
        }
        const mismatch = await reply(
          env,
          trusted,
          RESOLVED,
          data(alertId, { channel_id: untrusted.channelId }),
        );
        expect(await outcomeOf(env, mismatch)).toBe("rejected:trust_required");
      }
      expect((await getAlert(env, other.alert.id, other.api)).status).toBe("firing");
    },
    SLOW,
  );
});

describe("duplicates and one record per reply", () => {
  test(
    "re-sending the same reply (same source and id) makes no second record and no second change",
    async () => {
      const from = await speaker(env);
      const alert = await fire(env, await policy(env, 3));
      const first = await reply(env, from, ESCALATED, data(alert.id));
      expect((await getAlert(env, alert.id)).current_escalation_step).toBe(2);
      // The same event again: structured, binary, in a batch, and through another token of the org.
      await reply(env, from, ESCALATED, first.data, { id: first.id });
      await reply(env, from, ESCALATED, first.data, { id: first.id, mode: "binary" });
      const res = await batch(env, from.token, [first.toJSON()]);
      expect([res.status, res.body]).toEqual([202, { accepted: 1 }]);
      await reply(env, await speaker(env), ESCALATED, first.data, { id: first.id });

      expect((await getAlert(env, alert.id)).current_escalation_step).toBe(2);
      const entries = await timeline(env, alert.id);
      expect(entries.filter((e) => e.type === "reply")).toHaveLength(1);
      expect(entries.filter((e) => e.type === "escalated")).toHaveLength(1);
      expect(await recordsOf(env, first)).toHaveLength(1);
      expect(await polled(env, "run.service.alert.escalated.v1", alert.id)).toHaveLength(1);

      // The same id from another source is another event: a second decision, a second step.
      const otherSource = await reply(env, from, ESCALATED, first.data, {
        id: first.id,
        source: "/elsewhere",
      });
      expect(await outcomeOf(env, otherSource)).toBe("accepted");
      expect((await getAlert(env, alert.id)).current_escalation_step).toBe(3);
      expect(await recordsOf(env, first)).toHaveLength(1);
    },
    SLOW,
  );

  test(
    "a rejected reply re-sent is still one record",
    async () => {
      const orgWide = await ingestToken(env, null);
      const alert = await fire(env);
      const sent = await reply(env, orgWide, CLAIMED, data(alert.id));
      await reply(env, orgWide, CLAIMED, sent.data, { id: sent.id });
      await reply(env, orgWide, CLAIMED, sent.data, { id: sent.id, mode: "binary" });
      const records = await recordsOf(env, sent);
      expect(records.map((r) => r.outcome)).toEqual(["rejected:trust_required"]);
    },
    SLOW,
  );

  test(
    "a batch of replies: one record per event, decided in order, a duplicate inside the batch once",
    async () => {
      const from = await speaker(env);
      const alert = await fire(env);
      const events = [
        replyEvent(CLAIMED, data(alert.id)),
        replyEvent(SNOOZED, data(alert.id)),
        replyEvent(CLAIMED, data(other.alert.id)),
        replyEvent(CLAIMED, data("alt_00000000000000000000000000")),
        replyEvent(CLAIMED, data(alert.id, { channel_id: "chn_other" })),
        replyEvent(RESOLVED, data(alert.id)),
      ];
      const duplicate = events[0] as CloudEvent<unknown>;
      const res = await batch(env, from.token, [...events.map((e) => e.toJSON()), duplicate.toJSON()]);
      expect([res.status, res.body]).toEqual([202, { accepted: 7 }]);
      const outcomes = [];
      for (const event of events) outcomes.push(await outcomeOf(env, event));
      expect(outcomes).toEqual([
        "accepted",
        "rejected:invalid_reply",
        "rejected:org_mismatch",
        "rejected:unknown_alert",
        "rejected:trust_required",
        "accepted",
      ]);
      const after = await getAlert(env, alert.id);
      expect(state(after)).toMatchObject({
        status: "resolved",
        acknowledged_by: `channel:${from.channelId}`,
        resolved_by: `channel:${from.channelId}`,
      });
      const types = (await timeline(env, alert.id)).map((e) => e.type);
      expect(types.filter((t) => t === "reply")).toHaveLength(2);
      expect(types.filter((t) => t === "acknowledged")).toHaveLength(1);
      expect(types.filter((t) => t === "resolved")).toHaveLength(1);
    },
    SLOW,
  );

  test(
    "a batch with a bad event is refused whole: no record for any of its replies",
    async () => {
      const from = await speaker(env);
      const alert = await fire(env);
      const good = replyEvent(CLAIMED, data(alert.id));
      const res = await batch(env, from.token, [
        good.toJSON(),
        { specversion: "1.0", id: "x", type: CLAIMED },
      ]);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("malformed_cloudevent");
      expect(await recordsOf(env, good)).toEqual([]);
      expect((await getAlert(env, alert.id)).status).toBe("firing");
    },
    SLOW,
  );

  test(
    "20 concurrent claims of one alert: 20 records, one acknowledge, 20 reply entries",
    async () => {
      const from = await speaker(env);
      const alert = await fire(env);
      const events = Array.from({ length: 20 }, () => replyEvent(CLAIMED, data(alert.id)));
      const results = await Promise.all(
        events.map((e, i) => post(env, from.token, e, i % 2 ? "binary" : "structured")),
      );
      expect(results.every((r) => r.status === 202 && r.body.accepted === 1)).toBe(true);
      const records = (await feedAll(env, `alert_id=${alert.id}`)).filter((r) => r.event_source === SOURCE);
      expect(records).toHaveLength(20);
      expect(new Set(records.map((r) => r.event_id))).toEqual(new Set(events.map((e) => e.id)));
      expect(records.every((r) => r.outcome === "accepted")).toBe(true);
      const types = (await timeline(env, alert.id)).map((e) => e.type);
      expect(types.filter((t) => t === "reply")).toHaveLength(20);
      expect(types.filter((t) => t === "acknowledged")).toHaveLength(1);
      expect(await polled(env, "run.service.alert.acknowledged.v1", alert.id)).toHaveLength(1);
    },
    SLOW,
  );

  test(
    "non-reply events make no audit record",
    async () => {
      const before = (await feedAll(env)).length;
      const token = env.server.init?.ingest_token.token as string;
      const plain = new CloudEvent({
        source: SOURCE,
        type: "com.example.not.a.reply",
        data: { alert_id: "x" },
      });
      expect(await post(env, token, plain)).toEqual({ status: 202, body: { accepted: 1 } });
      const near = new CloudEvent({ source: SOURCE, type: "run.service.replyx.alert.claimed.v1", data: {} });
      expect(await post(env, token, near)).toEqual({ status: 202, body: { accepted: 1 } });
      expect((await feedAll(env)).length).toBe(before);
    },
    SLOW,
  );
});

describe("the audit feed", () => {
  let feedChannel: Speaker;
  let feedAlert: Alert;
  /** The replies sent for these tests, oldest first. */
  const sent: CloudEvent<unknown>[] = [];
  const idOf = (i: number): string => (sent[i] as CloudEvent<unknown>).id;

  beforeAll(async () => {
    feedChannel = await speaker(env);
    feedAlert = await fire(env);
    const orgWide = await ingestToken(env, null);
    sent.push(await reply(env, feedChannel, SNOOZED, data(feedAlert.id)));
    sent.push(await reply(env, orgWide, CLAIMED, data(feedAlert.id)));
    sent.push(await reply(env, feedChannel, ESCALATED, data(feedAlert.id)));
    sent.push(await reply(env, feedChannel, CLAIMED, data(feedAlert.id)));
    sent.push(await reply(env, feedChannel, RESOLVED, data("alt_00000000000000000000000000")));
    sent.push(await reply(env, feedChannel, RESOLVED, data(feedAlert.id)));
  }, SLOW);

  test(
    "only an admin JWT is a credential for it: API keys 401, a member's or viewer's session 403",
    async () => {
      const c = env.server.client.bind(env.server);
      const serviceAdmin = await env.api.post("/api/v1/api-keys", {
        name: "svc admin",
        scopes: ["admin"],
        service: true,
      });
      expect(serviceAdmin.status).toBe(201);
      const eventsKey = await env.api.post("/api/v1/api-keys", {
        name: "events",
        scopes: ["events"],
        service: true,
      });
      expect(eventsKey.status).toBe(201);
      for (const credential of [
        env.server.init?.api_key.secret as string,
        serviceAdmin.body.secret,
        eventsKey.body.secret,
        env.server.init?.ingest_token.token as string,
        "not-a-jwt",
        `${env.jwt.slice(0, -4)}AAAA`,
      ]) {
        const res = await c(credential).get(FEED);
        expect(res.status).toBe(401);
        expect(res.body.error.code).toBe("unauthenticated");
      }
      const anonymous = await env.api.as().get(FEED);
      expect([anonymous.status, anonymous.body.error.code]).toEqual([401, "unauthenticated"]);

      const member = await signUpUser(env.server, `feed-member-${Math.random()}@acme.test`, "member");
      const viewer = await signUpUser(env.server, `feed-viewer-${Math.random()}@acme.test`, "viewer");
      for (const token of [member.token, viewer.token]) {
        const res = await c(token).get(FEED);
        expect(res.status).toBe(403);
        expect(res.body.error.code).toBe("forbidden_role");
      }

      // Admin JWTs: `svc admin token`, /auth/token with an admin key, an admin's own session.
      const minted = await env.api.post("/api/v1/auth/token", {});
      expect(minted.status).toBe(201);
      const serviceMinted = await c(serviceAdmin.body.secret).post("/api/v1/auth/token", {});
      expect(serviceMinted.status).toBe(201);
      const adminUser = await signUpUser(env.server, `feed-admin-${Math.random()}@acme.test`, "admin");
      for (const token of [env.jwt, minted.body.token, serviceMinted.body.token, adminUser.token]) {
        const res = await c(token).get(`${FEED}?alert_id=${feedAlert.id}`);
        expect(res.status).toBe(200);
        expect(res.body.data.map((r: ReplyRecord) => r.event_id)).toEqual(
          [0, 1, 2, 3, 5].map(idOf).reverse(),
        );
      }
      // An events-only key cannot mint an admin JWT.
      expect((await c(eventsKey.body.secret).post("/api/v1/auth/token", {})).status).toBe(403);
    },
    SLOW,
  );

  test(
    "newest first, and the records of the feed alert are what was decided",
    async () => {
      const records = await feedAll(env, `alert_id=${feedAlert.id}`);
      expect(records.map((r) => [r.event_id, r.outcome])).toEqual(
        [
          [idOf(0), "rejected:invalid_reply"],
          [idOf(1), "rejected:trust_required"],
          [idOf(2), "accepted"],
          [idOf(3), "accepted"],
          [idOf(5), "accepted"],
        ].reverse(),
      );
      const all = await feedAll(env);
      for (let i = 1; i < all.length; i++) {
        const [prev, cur] = [all[i - 1] as ReplyRecord, all[i] as ReplyRecord];
        const order = prev.received_at.localeCompare(cur.received_at) || prev.id.localeCompare(cur.id);
        expect(order).toBeGreaterThan(0);
      }
    },
    SLOW,
  );

  test(
    "filters: outcome (prefix, rejected:*), event_type, channel_id, alert_id, and combined",
    async () => {
      const all = await feedAll(env);
      expect(all.length).toBeGreaterThan(20);
      const check = async (query: string, keep: (r: ReplyRecord) => boolean) => {
        const got = await feedAll(env, query);
        expect(got.map((r) => r.id)).toEqual(all.filter(keep).map((r) => r.id));
        return got;
      };
      expect((await check("outcome=accepted", (r) => r.outcome === "accepted")).length).toBeGreaterThan(0);
      const rejected = await check("outcome=rejected:*", (r) => r.outcome.startsWith("rejected:"));
      expect(new Set(rejected.map((r) => r.outcome))).toEqual(
        new Set([
          "rejected:trust_required",
          "rejected:invalid_reply",
          "rejected:org_mismatch",
          "rejected:unknown_alert",
        ]),
      );
      await check("outcome=rejected:", (r) => r.outcome.startsWith("rejected:"));
      await check("outcome=rejected", (r) => r.outcome.startsWith("rejected"));
      await check("outcome=rejected:trust", (r) => r.outcome === "rejected:trust_required");
      await check("outcome=rejected:unknown_alert", (r) => r.outcome === "rejected:unknown_alert");
      expect(await feedAll(env, "outcome=accept:")).toEqual([]);
      await check(`event_type=${ESCALATED}`, (r) => r.event_type === ESCALATED);
      await check(`event_type=${SNOOZED}`, (r) => r.event_type === SNOOZED);
      // event_type is exact, not a prefix.
      expect(await feedAll(env, "event_type=run.service.reply.alert")).toEqual([]);
      const byChannel = await check(
        `channel_id=${feedChannel.channelId}`,
        (r) => r.channel_id === feedChannel.channelId,
      );
      expect(byChannel.map((r) => r.event_id)).toEqual([0, 2, 3, 4, 5].map(idOf).reverse());
      await check(`alert_id=${other.alert.id}`, (r) => r.alert_id === other.alert.id);
      const combined = await check(
        `channel_id=${feedChannel.channelId}&outcome=accepted&event_type=${CLAIMED}`,
        (r) => r.channel_id === feedChannel.channelId && r.outcome === "accepted" && r.event_type === CLAIMED,
      );
      expect(combined.map((r) => r.event_id)).toEqual([idOf(3)]);
    },
    SLOW,
  );

  test(
    "filters: from (inclusive) and to (exclusive), with Z or an offset",
    async () => {
      const records = await feedAll(env, `channel_id=${feedChannel.channelId}`);
      const all = await feedAll(env);
      const middle = records[2] as ReplyRecord;
      const at = middle.received_at;
      const inWindow = (from?: string, to?: string) => (r: ReplyRecord) =>
        (from === undefined || r.received_at >= from) && (to === undefined || r.received_at < to);
      const fromGot = await feedAll(env, `from=${at}`);
      expect(fromGot.map((r) => r.id)).toEqual(all.filter(inWindow(at)).map((r) => r.id));
      expect(fromGot.map((r) => r.id)).toContain(middle.id);
      const toGot = await feedAll(env, `to=${at}`);
      expect(toGot.map((r) => r.id)).toEqual(all.filter(inWindow(undefined, at)).map((r) => r.id));
      expect(toGot.map((r) => r.id)).not.toContain(middle.id);
      const exact = await feedAll(env, `from=${at}&to=${new Date(Date.parse(at) + 1).toISOString()}`);
      expect(exact.map((r) => r.id)).toContain(middle.id);
      expect(exact.every((r) => r.received_at === at)).toBe(true);
      // The same instant written with an offset.
      const local = new Date(Date.parse(at) + 2 * 3_600_000).toISOString().replace("Z", "+02:00");
      const withOffset = await feedAll(env, `from=${encodeURIComponent(local)}`);
      expect(withOffset.map((r) => r.id)).toEqual(fromGot.map((r) => r.id));
      // An unencoded `+` arrives as a space, which is read as `+`.
      const unencoded = await feedAll(env, `from=${local}`);
      expect(unencoded.map((r) => r.id)).toEqual(fromGot.map((r) => r.id));
      expect(await feedAll(env, `from=${new Date(Date.now() + 60_000).toISOString()}`)).toEqual([]);
      expect(await feedAll(env, "to=2000-01-01T00:00:00Z")).toEqual([]);
    },
    SLOW,
  );

  test(
    "cursor pagination with limit: pages join up to the whole list, no record twice",
    async () => {
      const all = await feedAll(env);
      for (const limit of [1, 2, 7]) {
        const paged = await feedAll(env, "", limit);
        expect(paged.map((r) => r.id)).toEqual(all.map((r) => r.id));
      }
      const filtered = await feedAll(env, "outcome=rejected:*");
      expect((await feedAll(env, "outcome=rejected:*", 3)).map((r) => r.id)).toEqual(
        filtered.map((r) => r.id),
      );
      const client = env.server.client(env.jwt);
      const first = await client.get(`${FEED}?limit=2`);
      expect(first.body.data).toHaveLength(2);
      expect(first.body.has_more).toBe(true);
      expect(typeof first.body.next_cursor).toBe("string");
      const last = await client.get(`${FEED}?limit=200`);
      expect(last.body).toMatchObject({ has_more: false, next_cursor: null });
    },
    SLOW,
  );

  test(
    "a bad or foreign cursor, and a bad limit or filter, are 400",
    async () => {
      const client = env.server.client(env.jwt);
      const alerts = await env.api.get("/api/v1/alerts?limit=1");
      expect(typeof alerts.body.next_cursor).toBe("string");
      const poll = await env.api.get("/api/v1/cloudevents/poll?wait=0&limit=1");
      for (const cursor of ["garbage", "!!!", alerts.body.next_cursor, poll.body.next_cursor]) {
        const res = await client.get(`${FEED}?cursor=${encodeURIComponent(cursor)}`);
        expect([res.status, res.body?.error?.code, cursor]).toEqual([400, "invalid_cursor", cursor]);
      }
      for (const query of ["limit=0", "limit=201", "limit=x", "from=yesterday", "to=2024-01-01", "bogus=1"]) {
        const res = await client.get(`${FEED}?${query}`);
        expect([res.status, query]).toEqual([400, query]);
        expect(res.body.error.code).toBe("validation_failed");
      }
    },
    SLOW,
  );

  test(
    "a cursor of this feed whose position is mangled is 400, not a silently empty page",
    async () => {
      const client = env.server.client(env.jwt);
      const real = await client.get(`${FEED}?limit=1`);
      expect(real.body.has_more).toBe(true);
      const [list, at, id] = JSON.parse(Buffer.from(real.body.next_cursor, "base64url").toString());
      expect([typeof list, typeof at, typeof id]).toEqual(["string", "number", "string"]);
      for (const position of [["oops"], ["yesterday", id], [at, null]]) {
        const forged = Buffer.from(JSON.stringify([list, ...position])).toString("base64url");
        const res = await client.get(`${FEED}?cursor=${forged}`);
        expect([res.status, res.body?.error?.code, position]).toEqual([400, "invalid_cursor", position]);
      }
    },
    SLOW,
  );
});

describe("rate limit (limits.replies_per_minute = 2)", () => {
  let limited: Env;

  beforeAll(async () => {
    const server = await TestServer.start({ env: { SVC_LIMITS_REPLIES_PER_MINUTE: "2" } });
    const api = server.client();
    const key = await api.post("/api/v1/api-keys", { name: "feed", scopes: ["admin"], service: true });
    const minted = await server.client(key.body.secret).post("/api/v1/auth/token", {});
    if (minted.status !== 201) throw new Error(`mint: ${minted.text}`);
    limited = { server, api, jwt: minted.body.token };
  }, SLOW);
  afterAll(() => limited.server.dispose());

  test(
    "the third reply of a channel in a minute is rate_limited and changes nothing; even an invalid one",
    async () => {
      const from = await speaker(limited);
      const alert = await fire(limited);
      const first = await reply(limited, from, CLAIMED, data(alert.id));
      const second = await reply(limited, from, CLAIMED, data("alt_00000000000000000000000000"));
      const third = await reply(limited, from, RESOLVED, data(alert.id));
      const invalid = await reply(limited, from, SNOOZED, { nothing: true });
      const outcomes = [];
      for (const event of [first, second, third, invalid]) outcomes.push(await outcomeOf(limited, event));
      expect(outcomes).toEqual([
        "accepted",
        "rejected:unknown_alert",
        "rejected:rate_limited",
        "rejected:rate_limited",
      ]);
      const record = await recordOf(limited, third);
      expect(record).toMatchObject({ channel_id: from.channelId, alert_id: alert.id });
      const after = await getAlert(limited, alert.id);
      expect(after.status).toBe("acknowledged");
      expect((await timeline(limited, alert.id)).filter((e) => e.type === "reply")).toHaveLength(1);

      // Another channel, and an org-wide token, have budgets of their own.
      const otherChannel = await speaker(limited);
      const resolved = await reply(limited, otherChannel, RESOLVED, data(alert.id));
      expect(await outcomeOf(limited, resolved)).toBe("accepted");
      expect((await getAlert(limited, alert.id)).status).toBe("resolved");
    },
    SLOW,
  );

  test(
    "an org-wide token is limited too (rate_limited before trust_required)",
    async () => {
      const orgWide = await ingestToken(limited, null);
      const alert = await fire(limited);
      const outcomes = [];
      for (let i = 0; i < 3; i++) {
        outcomes.push(await outcomeOf(limited, await reply(limited, orgWide, CLAIMED, data(alert.id))));
      }
      expect(outcomes).toEqual([
        "rejected:trust_required",
        "rejected:trust_required",
        "rejected:rate_limited",
      ]);
    },
    SLOW,
  );

  test(
    "two tokens bound to one channel share its budget",
    async () => {
      const channelId = await channel(limited, true);
      const a = await ingestToken(limited, channelId);
      const b = await ingestToken(limited, channelId);
      const alert = await fire(limited);
      const outcomes = [];
      for (const from of [a, b, a]) {
        outcomes.push(await outcomeOf(limited, await reply(limited, from, CLAIMED, data(alert.id))));
      }
      expect(outcomes).toEqual(["accepted", "accepted", "rejected:rate_limited"]);
    },
    SLOW,
  );

  test(
    "re-sent duplicates are not decided again, so they do not spend the budget",
    async () => {
      const from = await speaker(limited);
      const alert = await fire(limited, await policy(limited, 3));
      const first = await reply(limited, from, ESCALATED, data(alert.id));
      for (let i = 0; i < 3; i++) await reply(limited, from, ESCALATED, first.data, { id: first.id });
      const second = await reply(limited, from, ESCALATED, data(alert.id));
      expect(await outcomeOf(limited, first)).toBe("accepted");
      expect(await outcomeOf(limited, second)).toBe("accepted");
      expect((await getAlert(limited, alert.id)).current_escalation_step).toBe(3);
      const third = await reply(limited, from, CLAIMED, data(alert.id));
      expect(await outcomeOf(limited, third)).toBe("rejected:rate_limited");
    },
    SLOW,
  );
});
