/**
 * Timers survive a crash (DESIGN §9: every timer is a row): `svc serve` is killed with SIGKILL
 * while an escalation, a delivery retry or an automatic resolve is pending, restarted on the same
 * data directory, and the pending work happens at its time, with no notification lost or doubled
 * (the receiver counts requests per CloudEvent id). Black-box: HTTP and signals only.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Client, TestServer } from "../support/harness.ts";
import { type Received, WebhookReceiver } from "./webhook-receiver.ts";

const SLOW = 45_000;

let receiver: WebhookReceiver;
let server: TestServer;
let secret: string;

beforeAll(async () => {
  receiver = WebhookReceiver.start();
  server = await TestServer.start();
  secret = server.init?.api_key.secret as string;
}, SLOW);
afterAll(async () => {
  await server.dispose();
  receiver.stop();
});

function api(): Client {
  return server.client(secret);
}

/** SIGKILL, then `svc serve` again on the same data directory; returns how long it was down. */
async function crashAndRestart(downForMs = 0): Promise<number> {
  const killedAt = Date.now();
  server.proc.kill("SIGKILL");
  expect(await server.proc.exited).not.toBe(0);
  if (downForMs > 0) await Bun.sleep(downForMs);
  server = await TestServer.start({ dataDir: server.dataDir, init: false });
  return Date.now() - killedAt;
}

let pathCount = 0;
async function webhook(name: string): Promise<{ id: string; path: string }> {
  pathCount += 1;
  const path = `/crash-${pathCount}`;
  const res = await api().post("/api/v1/notification-channels", {
    name,
    type: "webhook",
    config: { url: receiver.url(path) },
  });
  if (res.status !== 201) throw new Error(`create channel: ${res.status} ${res.text}`);
  receiver.secret(path, res.body.secret);
  return { id: res.body.id, path };
}

async function monitorWith(steps: { delay_seconds: number; channel: string }[], extra = {}) {
  const policy = await api().post("/api/v1/escalation-policies", {
    name: `Crash policy ${pathCount}`,
    steps: steps.map((s) => ({
      delay_seconds: s.delay_seconds,
      targets: [{ type: "channel", id: s.channel }],
    })),
  });
  if (policy.status !== 201) throw new Error(`create policy: ${policy.status} ${policy.text}`);
  const monitor = await api().post("/api/v1/monitors", {
    name: `Crash monitor ${pathCount}`,
    type: "event",
    escalation_policy_id: policy.body.id,
    ...extra,
  });
  if (monitor.status !== 201) throw new Error(`create monitor: ${monitor.status} ${monitor.text}`);
  return monitor.body as { id: string; integration_key: string };
}

async function fire(monitor: { id: string; integration_key: string }, dedupKey = "crash"): Promise<any> {
  const res = await api().post("/api/v1/events", {
    routing_key: monitor.integration_key,
    event_action: "trigger",
    dedup_key: dedupKey,
    payload: { summary: "Crash test", source: "box", severity: "critical" },
  });
  if (res.status !== 202) throw new Error(`trigger: ${res.status} ${res.text}`);
  const list = await api().get(`/api/v1/alerts?monitor_id=${monitor.id}`);
  return list.body.data[0];
}

async function deliveries(channelId: string): Promise<any[]> {
  const res = await api().get(`/api/v1/notification-channels/${channelId}/deliveries`);
  expect(res.status).toBe(200);
  return res.body.data;
}

/** Polls a channel's deliveries until `done` holds for them (or 8 s pass). */
async function deliveriesUntil(channelId: string, done: (rows: any[]) => boolean): Promise<any[]> {
  const deadline = Date.now() + 8_000;
  let rows = await deliveries(channelId);
  while (!done(rows) && Date.now() < deadline) {
    await Bun.sleep(50);
    rows = await deliveries(channelId);
  }
  return rows;
}

/** How many requests the receiver got per CloudEvent id, for the given paths. */
function perEventId(paths: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of receiver.received.filter((x) => paths.includes(x.path))) {
    counts[r.json.id] = (counts[r.json.id] ?? 0) + 1;
  }
  return counts;
}

describe("a crash while work is pending", () => {
  test(
    "an escalation due 3 s after firing still escalates at its time after kill -9 and restart",
    async () => {
      const a = await webhook("Crash A");
      const b = await webhook("Crash B");
      const monitor = await monitorWith([
        { delay_seconds: 3, channel: a.id },
        { delay_seconds: 60, channel: b.id },
      ]);
      const alert = await fire(monitor);
      const firedAt = Date.parse(alert.fired_at);
      await receiver.waitFor((r) => r.path === a.path && r.json?.subject === alert.id);
      // Step 1's delivery is committed as sent before the crash.
      const sent = await deliveriesUntil(a.id, (rows) => rows[0]?.status === "sent");
      expect(sent.map((d) => d.status)).toEqual(["sent"]);

      const downFor = await crashAndRestart();
      expect(downFor).toBeLessThan(2_500);

      const [r] = await receiver.waitFor((x) => x.path === b.path && x.json?.subject === alert.id, 1, 10_000);
      const got = r as Received;
      expect(got.json.type).toBe("run.service.alert.escalated.v1");
      expect(got.signatureOk).toBe(true);
      expect(got.at).toBeGreaterThanOrEqual(firedAt + 3_000);
      expect(got.at).toBeLessThanOrEqual(firedAt + 3_000 + 2_000);

      // Nothing more comes, and every notification arrived exactly once.
      await Bun.sleep(2_000);
      const counts = perEventId([a.path, b.path]);
      expect(Object.values(counts)).toEqual([1, 1]);
      expect(receiver.for(a.path, alert.id).map((x) => x.json.type)).toEqual(["run.service.alert.fired.v1"]);
      expect(receiver.for(b.path, alert.id).map((x) => x.json.type)).toEqual([
        "run.service.alert.escalated.v1",
      ]);

      const after = (await api().get(`/api/v1/alerts/${alert.id}`)).body;
      expect([after.status, after.current_escalation_step, after.notification_count]).toEqual([
        "firing",
        2,
        2,
      ]);
      const timeline = (await api().get(`/api/v1/alerts/${alert.id}/timeline`)).body.data;
      expect(timeline.map((e: { type: string }) => e.type)).toEqual([
        "fired",
        "notification_sent",
        "escalated",
        "notification_sent",
      ]);
      expect(timeline[2].data).toEqual({ step: 2, pass: 1 });
      expect((await deliveries(b.id)).map((d) => [d.status, d.attempts, d.event_id])).toEqual([
        ["sent", 1, got.json.id],
      ]);
    },
    SLOW,
  );

  test(
    "an escalation that fell due while the server was down happens once, right after the restart",
    async () => {
      const a = await webhook("Late A");
      const b = await webhook("Late B");
      const monitor = await monitorWith([
        { delay_seconds: 1, channel: a.id },
        { delay_seconds: 60, channel: b.id },
      ]);
      const alert = await fire(monitor);
      await receiver.waitFor((r) => r.path === a.path && r.json?.subject === alert.id);
      await deliveriesUntil(a.id, (rows) => rows[0]?.status === "sent");
      // Down for 2.5 s: the escalation is due meanwhile.
      await crashAndRestart(2_500);
      const restartedAt = Date.now();
      const [r] = await receiver.waitFor((x) => x.path === b.path && x.json?.subject === alert.id, 1, 10_000);
      expect((r as Received).at).toBeLessThan(restartedAt + 2_000);
      await Bun.sleep(2_000);
      expect(Object.values(perEventId([a.path, b.path]))).toEqual([1, 1]);
    },
    SLOW,
  );

  test(
    "a delivery retry pending at the crash is sent after the restart, once",
    async () => {
      const flaky = await webhook("Crash flaky");
      receiver.answer(flaky.path, 500, 200);
      const monitor = await monitorWith([{ delay_seconds: 600, channel: flaky.id }]);
      const alert = await fire(monitor);
      const [first] = await receiver.waitFor((x) => x.path === flaky.path);
      const pending = await deliveriesUntil(flaky.id, (rows) => rows[0]?.attempts === 1);
      expect(pending.map((d) => [d.status, d.attempts, d.last_status])).toEqual([["pending", 1, 500]]);
      const retryAt = Date.parse(pending[0].next_attempt_at);

      await crashAndRestart();

      const [, second] = await receiver.waitFor((x) => x.path === flaky.path, 2, 20_000);
      const retried = second as Received;
      expect(retried.at).toBeGreaterThanOrEqual(retryAt - 100);
      expect(retried.at).toBeLessThan(retryAt + 2_500);
      expect(retried.json.id).toBe((first as Received).json.id);
      expect(retried.json.subject).toBe(alert.id);
      const done = await deliveriesUntil(flaky.id, (rows) => rows[0]?.status === "sent");
      expect(done.map((d) => [d.status, d.attempts, d.last_status, d.last_error])).toEqual([
        ["sent", 2, 200, null],
      ]);
      await Bun.sleep(1_500);
      expect(receiver.for(flaky.path)).toHaveLength(2);
    },
    SLOW,
  );

  test(
    "an automatic resolve pending at the crash happens after the restart",
    async () => {
      const quiet = await webhook("Crash quiet");
      const monitor = await monitorWith([{ delay_seconds: 600, channel: quiet.id }], {
        freshness_seconds: 3,
      });
      const alert = await fire(monitor, "auto");
      const up = await api().post("/api/v1/events", {
        routing_key: monitor.integration_key,
        event_action: "resolve",
        dedup_key: "auto",
      });
      expect(up.status).toBe(202);
      const upAt = Date.now();
      await crashAndRestart();
      const deadline = Date.now() + 8_000;
      let after = (await api().get(`/api/v1/alerts/${alert.id}`)).body;
      while (after.status !== "resolved" && Date.now() < deadline) {
        await Bun.sleep(100);
        after = (await api().get(`/api/v1/alerts/${alert.id}`)).body;
      }
      expect([after.status, after.resolved_by]).toEqual(["resolved", `monitor:${monitor.id}`]);
      expect(Date.parse(after.resolved_at)).toBeGreaterThanOrEqual(upAt + 3_000 - 100);
      expect(Date.parse(after.resolved_at)).toBeLessThan(upAt + 3_000 + 2_500);
      expect((await api().get(`/api/v1/monitors/${monitor.id}`)).body.status).toBe("up");
    },
    SLOW,
  );
});
