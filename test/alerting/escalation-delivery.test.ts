/**
 * Escalation and notification delivery through a real `svc serve` (DESIGN §6 "Precise rules",
 * notification channels; §7 outbound events): policies walked step by step with their delays and
 * repeat passes, webhooks received by a real HTTP receiver that checks the HMAC signature and
 * parses the structured CloudEvent, emails to on-call users through a real SMTP server, default
 * channels, the retry queue, and the timeline that records it all. Black-box: HTTP and SMTP only.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Client, TestServer } from "../support/harness.ts";
import { MailCatcher } from "../support/smtp.ts";
import { hmacHex, type Received, WebhookReceiver } from "./webhook-receiver.ts";

const SLOW = 30_000;
/** The retry tests wait for a backoff of 5 to 10 seconds. */
const RETRY = 45_000;
/** How late a timed notification may arrive: the scheduler ticks every second. */
const LATE_MS = 2_500;
const EVENT_ID = /^evt_[0-9a-z]{26}$/;
const DAY = 86_400_000;

let mail: MailCatcher;
let receiver: WebhookReceiver;
let server: TestServer;
let api: Client;
let anon: Client;

beforeAll(async () => {
  mail = await MailCatcher.start();
  receiver = WebhookReceiver.start();
  server = await TestServer.start({ env: mail.env });
  api = server.client();
  anon = api.as();
}, SLOW);
afterAll(async () => {
  await server.dispose();
  receiver.stop();
  await mail.close();
});

interface Channel {
  id: string;
  name: string;
  path: string;
}

let pathCount = 0;
/** A webhook channel pointing at a fresh path of the receiver, its generated secret registered. */
async function webhook(name: string, client = api): Promise<Channel> {
  pathCount += 1;
  const path = `/hook-${pathCount}`;
  const res = await client.post("/api/v1/notification-channels", {
    name,
    type: "webhook",
    config: { url: receiver.url(path) },
  });
  if (res.status !== 201) throw new Error(`create channel: ${res.status} ${res.text}`);
  expect(typeof res.body.secret).toBe("string");
  receiver.secret(path, res.body.secret);
  return { id: res.body.id, name, path };
}

async function channel(body: Record<string, unknown>, client = api): Promise<{ id: string; name: string }> {
  const res = await client.post("/api/v1/notification-channels", body);
  if (res.status !== 201) throw new Error(`create channel: ${res.status} ${res.text}`);
  return res.body;
}

type Target = { type: "user" | "schedule" | "channel"; id: string };
async function policy(
  steps: { delay_seconds: number; targets: Target[] }[],
  repeat = 0,
  client = api,
): Promise<string> {
  const res = await client.post("/api/v1/escalation-policies", {
    name: `Policy ${Math.random()}`,
    repeat,
    steps,
  });
  if (res.status !== 201) throw new Error(`create policy: ${res.status} ${res.text}`);
  return res.body.id;
}

const ch = (c: { id: string }): Target => ({ type: "channel", id: c.id });

/** A fresh event monitor (with the policy, if any) and one alert fired on it. */
async function fire(
  policyId: string | null,
  summary = "Database down",
  client = api,
): Promise<{ alert: any; monitorId: string }> {
  const monitor = await client.post("/api/v1/monitors", {
    name: `Monitor ${Math.random()}`,
    type: "event",
    escalation_policy_id: policyId,
  });
  if (monitor.status !== 201) throw new Error(`create monitor: ${monitor.status} ${monitor.text}`);
  const res = await anon.post("/api/v1/events", {
    routing_key: monitor.body.integration_key,
    event_action: "trigger",
    dedup_key: "k",
    payload: { summary, source: "db01", severity: "critical" },
  });
  if (res.status !== 202) throw new Error(`trigger: ${res.status} ${res.text}`);
  const list = await client.get(`/api/v1/alerts?monitor_id=${monitor.body.id}`);
  return { alert: list.body.data[0], monitorId: monitor.body.id };
}

async function getAlert(id: string, client = api): Promise<any> {
  const res = await client.get(`/api/v1/alerts/${id}`);
  expect(res.status).toBe(200);
  return res.body;
}

async function timeline(id: string, client = api): Promise<{ type: string; at: string; data: any }[]> {
  const res = await client.get(`/api/v1/alerts/${id}/timeline`);
  expect(res.status).toBe(200);
  return res.body.data;
}

async function deliveries(channelId: string, query = "", client = api): Promise<any[]> {
  const res = await client.get(`/api/v1/notification-channels/${channelId}/deliveries${query}`);
  expect(res.status).toBe(200);
  return res.body.data;
}

/**
 * A channel's deliveries once none is still on its first try: the receiver sees a request
 * a moment before svc records the answer, so reading right away could find it pending.
 */
async function settledDeliveries(channelId: string): Promise<any[]> {
  const deadline = Date.now() + 3_000;
  for (;;) {
    const rows = await deliveries(channelId);
    if (rows.every((d) => d.status !== "pending" || d.attempts > 0) || Date.now() > deadline) return rows;
    await Bun.sleep(20);
  }
}

/** Checks what every webhook request must be: signed, fresh, a structured CloudEvent of the alert. */
function expectWebhook(r: Received, type: string, alertId: string) {
  expect(r.signatureOk).toBe(true);
  expect(r.contentType?.split(";")[0]).toBe("application/cloudevents+json");
  expect(r.timestamp).toMatch(/^\d+$/);
  expect(Math.abs(Number(r.timestamp) * 1000 - r.at)).toBeLessThan(5_000);
  expect(r.json).toEqual({
    specversion: "1.0",
    id: r.json.id,
    source: `/orgs/${server.orgSlug}/alerts/${alertId}`,
    type,
    subject: alertId,
    time: r.json.time,
    datacontenttype: "application/json",
    data: r.json.data,
  });
  expect(r.json.id).toMatch(EVENT_ID);
  expect(r.json.data.id).toBe(alertId);
}

describe("the webhook signature", () => {
  test("verifies under the channel's secret and no other", async () => {
    const a = await webhook("Signature check");
    const { alert } = await fire(await policy([{ delay_seconds: 60, targets: [ch(a)] }]));
    const [r] = await receiver.waitFor((x) => x.path === a.path && x.json?.subject === alert.id);
    const got = r as Received;
    expectWebhook(got, "run.service.alert.fired.v1", alert.id);
    expect(got.signature).toMatch(/^[0-9a-f]{64}$/);
    expect(hmacHex("some-other-secret-entirely", got.timestamp as string, got.body)).not.toBe(got.signature);
    expect(hmacHex("x", got.timestamp as string, `${got.body} `)).not.toBe(got.signature);
  });
});

describe("escalation through a policy", () => {
  test(
    "step 1 on A, after 1 s step 2 on B, then the repeat pass A and B again, then nothing",
    async () => {
      const a = await webhook("Pager A");
      const b = await webhook("Pager B");
      const policyId = await policy(
        [
          { delay_seconds: 1, targets: [ch(a)] },
          { delay_seconds: 1, targets: [ch(b)] },
        ],
        1,
      );
      const { alert } = await fire(policyId);
      const firedAt = Date.parse(alert.fired_at);
      const mine = (r: Received) => (r.path === a.path || r.path === b.path) && r.json?.subject === alert.id;
      const got = await receiver.waitFor(mine, 4, 15_000);
      // Past the last step of the last pass: nothing more arrives.
      await Bun.sleep(2_500);
      expect(receiver.received.filter(mine)).toHaveLength(4);

      expect(got.map((r) => [r.path, r.json.type])).toEqual([
        [a.path, "run.service.alert.fired.v1"],
        [b.path, "run.service.alert.escalated.v1"],
        [a.path, "run.service.alert.escalated.v1"],
        [b.path, "run.service.alert.escalated.v1"],
      ]);
      for (const r of got) expectWebhook(r, r.json.type, alert.id);
      expect(new Set(got.map((r) => r.json.id)).size).toBe(4);
      // The escalated events say which step they escalate to.
      expect(got.slice(1).map((r) => r.json.data.current_escalation_step)).toEqual([2, 1, 2]);
      expect(got.map((r) => r.json.data.status)).toEqual(["firing", "firing", "firing", "firing"]);

      // Timing: step 1 at once, each next one delay_seconds (1 s) after the previous.
      expect(got[0]?.at).toBeLessThan(firedAt + LATE_MS);
      expect(got[0]?.json.time).toBe(alert.fired_at);
      for (let i = 1; i < got.length; i++) {
        const gap = (got[i] as Received).at - (got[i - 1] as Received).at;
        expect({ i, early: gap < 1_000 - 100, late: gap > 1_000 + LATE_MS }).toEqual({
          i,
          early: false,
          late: false,
        });
        // The event's time is when the escalation happened, at or after it was due.
        const due = Date.parse((got[i - 1] as Received).json.time) + 1_000;
        expect(Date.parse((got[i] as Received).json.time)).toBeGreaterThanOrEqual(due);
      }

      const after = await getAlert(alert.id);
      expect({
        status: after.status,
        escalation_policy_id: after.escalation_policy_id,
        current_escalation_step: after.current_escalation_step,
        notification_count: after.notification_count,
      }).toEqual({
        status: "firing",
        escalation_policy_id: policyId,
        current_escalation_step: 2,
        notification_count: 4,
      });

      const times = got.map((r) => r.json.time as string) as [string, string, string, string];
      expect(await timeline(alert.id)).toEqual([
        { type: "fired", at: alert.fired_at, data: { summary: "Database down", severity: "critical" } },
        { type: "notification_sent", at: times[0], data: { step: 1, channel: "Pager A", channel_id: a.id } },
        { type: "escalated", at: times[1], data: { step: 2, pass: 1 } },
        { type: "notification_sent", at: times[1], data: { step: 2, channel: "Pager B", channel_id: b.id } },
        { type: "escalated", at: times[2], data: { step: 1, pass: 2 } },
        { type: "notification_sent", at: times[2], data: { step: 1, channel: "Pager A", channel_id: a.id } },
        { type: "escalated", at: times[3], data: { step: 2, pass: 2 } },
        { type: "notification_sent", at: times[3], data: { step: 2, channel: "Pager B", channel_id: b.id } },
      ]);

      // Each notification is one delivery row, sent on its first attempt.
      for (const [c, events] of [
        [a, [got[2], got[0]]],
        [b, [got[3], got[1]]],
      ] as const) {
        const rows = await settledDeliveries(c.id);
        expect(rows.map((d) => d.event_id)).toEqual(events.map((r) => (r as Received).json.id));
        for (const d of rows) {
          expect(d).toEqual({
            id: d.id,
            channel_id: c.id,
            alert_id: alert.id,
            event_id: d.event_id,
            status: "sent",
            attempts: 1,
            next_attempt_at: null,
            last_status: 200,
            last_error: null,
            created_at: d.created_at,
            sent_at: d.sent_at,
          });
          expect(Date.parse(d.sent_at)).toBeGreaterThanOrEqual(Date.parse(d.created_at));
        }
      }
    },
    SLOW,
  );

  test(
    "an acknowledge stops the escalation: the paged channel hears of the ack, step 2 never fires",
    async () => {
      const a = await webhook("Ack A");
      const b = await webhook("Ack B");
      const { alert } = await fire(
        await policy([
          { delay_seconds: 1, targets: [ch(a)] },
          { delay_seconds: 1, targets: [ch(b)] },
        ]),
      );
      await receiver.waitFor((r) => r.path === a.path && r.json?.subject === alert.id);
      const ack = await api.post(`/api/v1/alerts/${alert.id}/ack`, {});
      expect(ack.status).toBe(200);
      await Bun.sleep(3_000);
      expect(receiver.for(a.path, alert.id).map((r) => r.json?.type)).toEqual([
        "run.service.alert.fired.v1",
        "run.service.alert.acknowledged.v1",
      ]);
      expect(receiver.for(b.path, alert.id)).toHaveLength(0);
      // The fired event carries the alert as step 1 left it.
      const fired = receiver.for(a.path, alert.id)[0]?.json?.data as Record<string, unknown>;
      expect([fired.current_escalation_step, fired.notification_count]).toEqual([1, 1]);
      const after = await getAlert(alert.id);
      expect([after.status, after.current_escalation_step, after.notification_count]).toEqual([
        "acknowledged",
        1,
        1,
      ]);
      expect((await timeline(alert.id)).map((e) => e.type)).toEqual([
        "fired",
        "notification_sent",
        "acknowledged",
      ]);
    },
    SLOW,
  );

  test(
    "a resolve stops the escalation too",
    async () => {
      const a = await webhook("Resolve A");
      const b = await webhook("Resolve B");
      const { alert } = await fire(
        await policy([
          { delay_seconds: 1, targets: [ch(a)] },
          { delay_seconds: 1, targets: [ch(b)] },
        ]),
      );
      await receiver.waitFor((r) => r.path === a.path && r.json?.subject === alert.id);
      expect((await api.post(`/api/v1/alerts/${alert.id}/resolve`, {})).status).toBe(200);
      await Bun.sleep(3_000);
      expect(receiver.for(b.path, alert.id)).toHaveLength(0);
      expect((await timeline(alert.id)).map((e) => e.type)).toEqual([
        "fired",
        "notification_sent",
        "resolved",
      ]);
    },
    SLOW,
  );

  test(
    "a step notifies all its targets; without repeat the escalation ends after the last step",
    async () => {
      const a = await webhook("Fan A");
      const b = await webhook("Fan B");
      const c = await webhook("Fan C");
      const { alert } = await fire(
        await policy([
          { delay_seconds: 1, targets: [ch(a), ch(b)] },
          { delay_seconds: 1, targets: [ch(c)] },
        ]),
      );
      await receiver.waitFor((r) => r.path === c.path && r.json?.subject === alert.id, 1, 8_000);
      await Bun.sleep(2_500);
      expect([a, b, c].map((x) => receiver.for(x.path, alert.id).map((r) => r.json.type))).toEqual([
        ["run.service.alert.fired.v1"],
        ["run.service.alert.fired.v1"],
        ["run.service.alert.escalated.v1"],
      ]);
      // Both targets of step 1 carry the same event.
      expect(receiver.for(a.path, alert.id)[0]?.json.id).toBe(receiver.for(b.path, alert.id)[0]?.json.id);
      const after = await getAlert(alert.id);
      expect([after.current_escalation_step, after.notification_count]).toEqual([2, 3]);
      expect((await timeline(alert.id)).map((e) => [e.type, e.data.step, e.data.channel])).toEqual([
        ["fired", undefined, undefined],
        ["notification_sent", 1, "Fan A"],
        ["notification_sent", 1, "Fan B"],
        ["escalated", 2, undefined],
        ["notification_sent", 2, "Fan C"],
      ]);
    },
    SLOW,
  );

  test(
    "a running escalation keeps its policy snapshot; a channel deleted since is skipped with a note",
    async () => {
      const a = await webhook("Snap A");
      const gone = await webhook("Snap gone");
      const policyId = await policy([
        { delay_seconds: 2, targets: [ch(a)] },
        { delay_seconds: 1, targets: [ch(gone)] },
      ]);
      const { alert } = await fire(policyId);
      await receiver.waitFor((r) => r.path === a.path && r.json?.subject === alert.id);
      // Edit the policy (step 2 now goes to A) and delete the channel it named.
      const patched = await api.patch(`/api/v1/escalation-policies/${policyId}`, {
        steps: [
          { delay_seconds: 60, targets: [ch(a)] },
          { delay_seconds: 60, targets: [ch(a)] },
        ],
      });
      expect(patched.status).toBe(200);
      expect((await api.delete(`/api/v1/notification-channels/${gone.id}`)).status).toBe(204);
      // The snapshot still escalates 2 s after step 1, to the deleted channel: skipped.
      const deadline = Date.now() + 8_000;
      let entries = await timeline(alert.id);
      while (!entries.some((e) => e.type === "target_skipped") && Date.now() < deadline) {
        await Bun.sleep(100);
        entries = await timeline(alert.id);
      }
      expect(entries.map((e) => [e.type, e.data])).toEqual([
        ["fired", { summary: "Database down", severity: "critical" }],
        ["notification_sent", { step: 1, channel: "Snap A", channel_id: a.id }],
        ["escalated", { step: 2, pass: 1 }],
        ["target_skipped", { step: 2, target: { type: "channel", id: gone.id }, reason: "deleted" }],
      ]);
      const skippedAt = Date.parse(entries[3]?.at as string);
      expect(skippedAt).toBeGreaterThanOrEqual(Date.parse(alert.fired_at) + 2_000);
      expect(skippedAt).toBeLessThan(Date.parse(alert.fired_at) + 2_000 + LATE_MS);
      await Bun.sleep(1_500);
      // Step 2 of the edited policy (A again) was never used.
      expect(receiver.for(a.path, alert.id)).toHaveLength(1);
      expect(receiver.for(gone.path, alert.id)).toHaveLength(0);
      const after = await getAlert(alert.id);
      expect([after.current_escalation_step, after.notification_count]).toEqual([2, 1]);
    },
    SLOW,
  );

  test(
    "a disabled channel is skipped with a note and the step escalates at once",
    async () => {
      const off = await webhook("Disabled pager");
      expect((await api.patch(`/api/v1/notification-channels/${off.id}`, { enabled: false })).status).toBe(
        200,
      );
      const b = await webhook("Backup pager");
      const { alert } = await fire(
        await policy([
          { delay_seconds: 60, targets: [ch(off)] },
          { delay_seconds: 60, targets: [ch(b)] },
        ]),
      );
      const [r] = await receiver.waitFor((x) => x.path === b.path && x.json?.subject === alert.id);
      expect((r as Received).at).toBeLessThan(Date.parse(alert.fired_at) + LATE_MS);
      expect(receiver.for(off.path, alert.id)).toHaveLength(0);
      const entries = await timeline(alert.id);
      expect(entries.map((e) => e.type)).toEqual([
        "fired",
        "target_skipped",
        "escalated",
        "notification_sent",
      ]);
      expect(entries[1]?.data).toEqual({
        step: 1,
        target: { type: "channel", id: off.id },
        reason: "disabled",
      });
      expect(entries[2]?.data).toEqual({ step: 2, reason: "nobody reached" });
      expect(entries[3]?.data).toEqual({ step: 2, channel: "Backup pager", channel_id: b.id });
    },
    SLOW,
  );
});

describe("users and schedules", () => {
  let onCallId: string;
  let onCallSchedule: string;
  let emptySchedule: string;

  beforeAll(async () => {
    const user = await api.post("/api/v1/users", { email: "oncall@acme.test", role: "member" });
    expect(user.status).toBe(201);
    onCallId = user.body.id;
    const schedule = await api.post("/api/v1/schedules", {
      name: "Primary",
      time_zone: "UTC",
      layers: [
        {
          rotation: "daily",
          start_at: new Date(Date.now() - 7 * DAY).toISOString(),
          participants: [onCallId],
        },
      ],
    });
    expect(schedule.status).toBe(201);
    onCallSchedule = schedule.body.id;
    // A layer that starts next week: nobody is on call now.
    const empty = await api.post("/api/v1/schedules", {
      name: "Not yet",
      time_zone: "UTC",
      layers: [
        {
          rotation: "daily",
          start_at: new Date(Date.now() + 7 * DAY).toISOString(),
          participants: [onCallId],
        },
      ],
    });
    expect(empty.status).toBe(201);
    emptySchedule = empty.body.id;
    const onCall = await api.get(`/api/v1/schedules/${emptySchedule}/on-call`);
    expect(onCall.body.data.user_id).toBeNull();
  }, SLOW);

  test(
    "a schedule target emails whoever is on call; an email channel emails its addresses",
    async () => {
      const emailChannel = await channel({
        name: "Ops mail",
        type: "email",
        config: { to: ["ops@acme.test"] },
      });
      const { alert } = await fire(
        await policy([
          {
            delay_seconds: 60,
            targets: [{ type: "schedule", id: onCallSchedule }, ch(emailChannel)],
          },
        ]),
        "Payments API down",
      );
      const subject = "[svc] FIRING: Payments API down";
      const toUser = await mail.waitFor((m) => m.to.includes("oncall@acme.test") && m.subject === subject);
      const toOps = await mail.waitFor((m) => m.to.includes("ops@acme.test") && m.subject === subject);
      for (const m of [toUser, toOps]) {
        expect(m.text).toContain("FIRING: Payments API down");
        expect(m.text).toContain("Severity: critical");
        expect(m.text).toContain("Reason: db01");
        expect(m.text).toContain(`Alert: ${alert.id}`);
        expect(m.text).toContain(`${server.base}/api/v1/alerts/${alert.id}`);
        expect(m.html).toContain(`${server.base}/api/v1/alerts/${alert.id}`);
      }
      expect(
        mail.messages
          .filter((m) => m.subject === subject)
          .map((m) => m.to.join(","))
          .sort(),
      ).toEqual(["oncall@acme.test", "ops@acme.test"]);
      const entries = await timeline(alert.id);
      expect(entries.map((e) => [e.type, e.data])).toEqual([
        ["fired", { summary: "Payments API down", severity: "critical" }],
        [
          "notification_sent",
          {
            step: 1,
            channel: "email",
            user_id: onCallId,
            user_email: "oncall@acme.test",
            schedule_id: onCallSchedule,
          },
        ],
        ["notification_sent", { step: 1, channel: "Ops mail", channel_id: emailChannel.id }],
      ]);
      const after = await getAlert(alert.id);
      expect([after.current_escalation_step, after.notification_count]).toEqual([1, 2]);
      // The email channel's delivery is sent once its email is queued.
      const rows = await settledDeliveries(emailChannel.id);
      expect(rows.map((d) => [d.alert_id, d.status])).toEqual([[alert.id, "sent"]]);
    },
    SLOW,
  );

  test(
    "a user target gets an email",
    async () => {
      const { alert } = await fire(
        await policy([{ delay_seconds: 60, targets: [{ type: "user", id: onCallId }] }]),
        "Direct page",
      );
      await mail.waitFor(
        (m) => m.to.includes("oncall@acme.test") && m.subject === "[svc] FIRING: Direct page",
      );
      const entries = await timeline(alert.id);
      expect(entries[1]).toEqual({
        type: "notification_sent",
        at: alert.fired_at,
        data: { step: 1, channel: "email", user_id: onCallId, user_email: "oncall@acme.test" },
      });
    },
    SLOW,
  );

  test(
    "a schedule with nobody on call is skipped and the next step is notified at once",
    async () => {
      const a = await webhook("After empty schedule");
      const { alert } = await fire(
        await policy([
          { delay_seconds: 60, targets: [{ type: "schedule", id: emptySchedule }] },
          { delay_seconds: 60, targets: [ch(a)] },
        ]),
      );
      const [r] = await receiver.waitFor((x) => x.path === a.path && x.json?.subject === alert.id);
      const got = r as Received;
      expect(got.at).toBeLessThan(Date.parse(alert.fired_at) + LATE_MS);
      expectWebhook(got, "run.service.alert.fired.v1", alert.id);
      expect(await timeline(alert.id)).toEqual([
        { type: "fired", at: alert.fired_at, data: { summary: "Database down", severity: "critical" } },
        {
          type: "target_skipped",
          at: alert.fired_at,
          data: { step: 1, target: { type: "schedule", id: emptySchedule }, reason: "nobody on call" },
        },
        { type: "escalated", at: alert.fired_at, data: { step: 2, reason: "nobody reached" } },
        {
          type: "notification_sent",
          at: alert.fired_at,
          data: { step: 2, channel: "After empty schedule", channel_id: a.id },
        },
      ]);
      const after = await getAlert(alert.id);
      expect([after.current_escalation_step, after.notification_count]).toEqual([2, 1]);
    },
    SLOW,
  );
});

describe("default channels", () => {
  /** A separate org, so its default channels touch no other test. */
  let client: Client;
  let slug: string;
  let fallback: Channel;
  let emptySchedule: string;

  beforeAll(async () => {
    slug = `defaults-${Math.random().toString(36).slice(2, 8)}`;
    const org = await server.admin([
      "org",
      "create",
      "--name",
      "Defaults",
      "--slug",
      slug,
      "--owner-email",
      "owner@defaults.test",
    ]);
    client = api.as(org.api_key.secret);
    fallback = await webhook("Fallback", client);
    const settings = await client.get("/api/v1/org/settings");
    expect(settings.status).toBe(200);
    const put = await client.put("/api/v1/org/settings", {
      ...settings.body,
      notifications: { ...settings.body.notifications, default_channel_ids: [fallback.id] },
    });
    expect(put.status).toBe(200);
    expect(put.body.notifications.default_channel_ids).toEqual([fallback.id]);
    const empty = await client.post("/api/v1/schedules", {
      name: "Nobody",
      time_zone: "UTC",
      layers: [
        {
          rotation: "daily",
          start_at: new Date(Date.now() + 7 * DAY).toISOString(),
          participants: [org.owner.id],
        },
      ],
    });
    expect(empty.status).toBe(201);
    emptySchedule = empty.body.id;
  }, SLOW);

  function expectFallback(r: Received, alertId: string) {
    expect(r.signatureOk).toBe(true);
    expect(r.json.type).toBe("run.service.alert.fired.v1");
    expect(r.json.source).toBe(`/orgs/${slug}/alerts/${alertId}`);
    expect(r.json.subject).toBe(alertId);
  }

  test(
    "a monitor without a policy notifies the default channels",
    async () => {
      const { alert } = await fire(null, "No policy here", client);
      const [r] = await receiver.waitFor((x) => x.path === fallback.path && x.json?.subject === alert.id);
      expectFallback(r as Received, alert.id);
      expect(await timeline(alert.id, client)).toEqual([
        { type: "fired", at: alert.fired_at, data: { summary: "No policy here", severity: "critical" } },
        {
          type: "notification_sent",
          at: alert.fired_at,
          data: { channel: "Fallback", channel_id: fallback.id },
        },
      ]);
      const after = await getAlert(alert.id, client);
      expect([after.escalation_policy_id, after.current_escalation_step, after.notification_count]).toEqual([
        null,
        null,
        1,
      ]);
    },
    SLOW,
  );

  test(
    "a pass that reaches nobody goes to the default channels",
    async () => {
      const policyId = await policy(
        [{ delay_seconds: 60, targets: [{ type: "schedule", id: emptySchedule }] }],
        0,
        client,
      );
      const { alert } = await fire(policyId, "Nobody home", client);
      const [r] = await receiver.waitFor((x) => x.path === fallback.path && x.json?.subject === alert.id);
      expectFallback(r as Received, alert.id);
      expect((await timeline(alert.id, client)).map((e) => [e.type, e.data])).toEqual([
        ["fired", { summary: "Nobody home", severity: "critical" }],
        [
          "target_skipped",
          { step: 1, target: { type: "schedule", id: emptySchedule }, reason: "nobody on call" },
        ],
        ["notification_sent", { channel: "Fallback", channel_id: fallback.id }],
      ]);
      const after = await getAlert(alert.id, client);
      expect([after.current_escalation_step, after.notification_count]).toEqual([1, 1]);
      await Bun.sleep(1_500);
      expect(receiver.for(fallback.path, alert.id)).toHaveLength(1);
    },
    SLOW,
  );

  test(
    "without default channels, the timeline says nobody was notified",
    async () => {
      const { alert } = await fire(null);
      expect((await timeline(alert.id)).map((e) => [e.type, e.data])).toEqual([
        ["fired", { summary: "Database down", severity: "critical" }],
        ["nobody_notified", { reason: "no escalation policy" }],
      ]);
      expect((await getAlert(alert.id)).notification_count).toBe(0);
    },
    SLOW,
  );
});

describe("channel types", () => {
  test(
    "a cloudevents channel target writes no delivery row but a notification_sent entry",
    async () => {
      const consumer = await channel({ name: "Consumer", type: "cloudevents", config: {} });
      const a = await webhook("Alongside");
      const { alert } = await fire(await policy([{ delay_seconds: 60, targets: [ch(consumer), ch(a)] }]));
      await receiver.waitFor((x) => x.path === a.path && x.json?.subject === alert.id);
      expect(await deliveries(consumer.id)).toEqual([]);
      expect((await settledDeliveries(a.id)).map((d) => d.status)).toEqual(["sent"]);
      expect((await timeline(alert.id)).map((e) => [e.type, e.data])).toEqual([
        ["fired", { summary: "Database down", severity: "critical" }],
        ["notification_sent", { step: 1, channel: "Consumer", channel_id: consumer.id }],
        ["notification_sent", { step: 1, channel: "Alongside", channel_id: a.id }],
      ]);
      expect((await getAlert(alert.id)).notification_count).toBe(2);
    },
    SLOW,
  );

  test(
    "a slack channel gets a short text with a link",
    async () => {
      const path = "/slack-incoming";
      const slack = await channel({
        name: "Slack",
        type: "slack",
        config: { webhook_url: receiver.url(path) },
      });
      const { alert } = await fire(
        await policy([{ delay_seconds: 60, targets: [ch(slack)] }]),
        "Queue stuck",
      );
      const [r] = await receiver.waitFor((x) => x.path === path);
      const got = r as Received;
      expect(got.contentType?.split(";")[0]).toBe("application/json");
      expect(got.json).toEqual({
        text: `[FIRING] critical: Queue stuck — <${server.base}/api/v1/alerts/${alert.id}|${alert.id}>`,
      });
      expect((await settledDeliveries(slack.id)).map((d) => [d.status, d.last_status])).toEqual([
        ["sent", 200],
      ]);
    },
    SLOW,
  );
});

describe("retries", () => {
  test(
    "a receiver answering 500 then 200: the delivery is retried and ends sent",
    async () => {
      const flaky = await webhook("Flaky");
      receiver.answer(flaky.path, 500, 200);
      const { alert } = await fire(await policy([{ delay_seconds: 600, targets: [ch(flaky)] }]));
      const [first] = await receiver.waitFor((x) => x.path === flaky.path);
      let rows = await deliveries(flaky.id);
      const deadline = Date.now() + 5_000;
      while (rows[0]?.attempts !== 1 && Date.now() < deadline) {
        await Bun.sleep(50);
        rows = await deliveries(flaky.id);
      }
      expect(rows).toHaveLength(1);
      const pending = rows[0];
      expect(pending).toEqual({
        id: pending.id,
        channel_id: flaky.id,
        alert_id: alert.id,
        event_id: (first as Received).json.id,
        status: "pending",
        attempts: 1,
        next_attempt_at: pending.next_attempt_at,
        last_status: 500,
        last_error: "the receiver answered 500",
        created_at: pending.created_at,
        sent_at: null,
      });
      // Backoff of about 10 s with jitter: between 5 and 10 s after the failure.
      const retryAt = Date.parse(pending.next_attempt_at);
      expect(retryAt).toBeGreaterThanOrEqual((first as Received).at + 4_000);
      expect(retryAt).toBeLessThanOrEqual((first as Received).at + 11_000);

      const [, second] = await receiver.waitFor((x) => x.path === flaky.path, 2, 20_000);
      const retried = second as Received;
      expect(retried.at).toBeGreaterThanOrEqual(retryAt - 100);
      expect(retried.at).toBeLessThan(retryAt + LATE_MS);
      expect(retried.signatureOk).toBe(true);
      expect(retried.json.id).toBe((first as Received).json.id);
      expect(retried.body).toBe((first as Received).body);

      rows = await deliveries(flaky.id);
      const deadline2 = Date.now() + 5_000;
      while (rows[0]?.status !== "sent" && Date.now() < deadline2) {
        await Bun.sleep(50);
        rows = await deliveries(flaky.id);
      }
      expect(rows[0]).toEqual({
        ...pending,
        status: "sent",
        attempts: 2,
        next_attempt_at: null,
        last_status: 200,
        last_error: null,
        sent_at: rows[0].sent_at,
      });
      expect(receiver.for(flaky.path)).toHaveLength(2);
      expect(await deliveries(flaky.id, "?status=sent")).toEqual(rows);
      expect(await deliveries(flaky.id, "?status=pending")).toEqual([]);
    },
    RETRY,
  );

  test(
    "a receiver answering 500 always: the delivery stays pending with the failure recorded",
    async () => {
      const down = await webhook("Always down");
      receiver.answer(down.path, 500);
      const { alert } = await fire(await policy([{ delay_seconds: 600, targets: [ch(down)] }]));
      await receiver.waitFor((x) => x.path === down.path);
      let rows = await deliveries(down.id);
      const deadline = Date.now() + 5_000;
      while (rows[0]?.attempts !== 1 && Date.now() < deadline) {
        await Bun.sleep(50);
        rows = await deliveries(down.id);
      }
      expect(rows).toHaveLength(1);
      expect(rows[0]).toEqual({
        id: rows[0].id,
        channel_id: down.id,
        alert_id: alert.id,
        event_id: rows[0].event_id,
        status: "pending",
        attempts: 1,
        next_attempt_at: rows[0].next_attempt_at,
        last_status: 500,
        last_error: "the receiver answered 500",
        created_at: rows[0].created_at,
        sent_at: null,
      });
      expect(Date.parse(rows[0].next_attempt_at)).toBeGreaterThan(Date.now());
      expect(await deliveries(down.id, "?status=pending")).toEqual(rows);
      expect(await deliveries(down.id, "?status=dead")).toEqual([]);
      expect(await deliveries(down.id, "?status=sent")).toEqual([]);
      expectErrorShape(await api.get(`/api/v1/notification-channels/${down.id}/deliveries?status=failed`));
    },
    SLOW,
  );

  test(
    "an unreachable receiver records the network error with no status",
    async () => {
      // A port nothing listens on: bind one, then close it.
      const probe = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
      const port = probe.port;
      probe.stop(true);
      const res = await api.post("/api/v1/notification-channels", {
        name: "Nowhere",
        type: "webhook",
        config: { url: `http://127.0.0.1:${port}/hook`, timeout_ms: 1000 },
      });
      expect(res.status).toBe(201);
      await fire(await policy([{ delay_seconds: 600, targets: [{ type: "channel", id: res.body.id }] }]));
      let rows = await deliveries(res.body.id);
      const deadline = Date.now() + 8_000;
      while (rows[0]?.attempts !== 1 && Date.now() < deadline) {
        await Bun.sleep(50);
        rows = await deliveries(res.body.id);
      }
      expect(rows.map((d) => [d.status, d.attempts, d.last_status])).toEqual([["pending", 1, null]]);
      expect(rows[0].last_error).toMatch(/^request failed: /);
    },
    SLOW,
  );
});

function expectErrorShape(res: { status: number; body: any }) {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({
    status: 400,
    code: "validation_failed",
  });
}
