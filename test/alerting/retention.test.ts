/**
 * Alert retention (DESIGN §2 `retention.alerts_days`, 0 = keep; an org's setting may only
 * shorten the server's). Time passing is simulated on a stopped server: the alerts' `fired_at`
 * and `resolved_at` are moved back in the SQLite file, then `svc serve` restarts on the same data
 * dir with a server-wide limit, and its retention job runs on the first scheduler tick. Alerts
 * are fired and resolved through the Events API and the alerts API; deliveries go to a real
 * webhook receiver.
 */
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { retentionDays } from "../../src/accounts/settings.ts";
import { type Client, secondOrg, TestServer } from "../support/harness.ts";

const SLOW = 60_000;
const DAY = 86_400_000;

let before: TestServer;
let server: TestServer;
let api: Client;
let otherApi: Client;
let receiver: ReturnType<typeof Bun.serve>;
let channelId: string;
/** Alert ids by name, as fired before the restart. */
const alerts = {} as Record<
  "sourceOld" | "manualOld" | "openOld" | "sourceRecent" | "pendingOld" | "other40" | "other70",
  string
>;
const monitors: Record<string, { id: string; integration_key: string }> = {};

async function createMonitor(client: Client, extra: Record<string, unknown> = {}) {
  const res = await client.post("/api/v1/monitors", {
    name: `Monitor ${Math.random().toString(36).slice(2, 8)}`,
    type: "event",
    freshness_seconds: 0,
    ...extra,
  });
  if (res.status !== 201) throw new Error(`create monitor: ${res.status} ${res.text}`);
  return res.body as { id: string; integration_key: string };
}

async function eventsApi(
  client: Client,
  routingKey: string,
  action: "trigger" | "resolve",
  dedupKey: string,
) {
  const res = await client.as().post("/api/v1/events", {
    routing_key: routingKey,
    event_action: action,
    dedup_key: dedupKey,
    payload: { summary: `Alert ${dedupKey}`, source: "host", severity: "critical" },
  });
  if (res.status !== 202) throw new Error(`${action}: ${res.status} ${res.text}`);
}

async function alertsFor(client: Client, monitorId: string, dedupKey: string): Promise<any[]> {
  const res = await client.get(`/api/v1/alerts?monitor_id=${monitorId}&limit=200`);
  expect(res.status).toBe(200);
  return res.body.data.filter((a: { dedup_key: string }) => a.dedup_key === dedupKey);
}

async function eventually<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(100);
  }
}

/** Fires an alert for `dedupKey` and returns its id. */
async function fire(client: Client, monitor: { id: string; integration_key: string }, dedupKey: string) {
  await eventsApi(client, monitor.integration_key, "trigger", dedupKey);
  const [alert] = await alertsFor(client, monitor.id, dedupKey);
  return alert.id as string;
}

/** The source reports the problem gone; the alert resolves itself (freshness 0) on the next tick. */
async function resolveBySource(
  client: Client,
  monitor: { id: string; integration_key: string },
  key: string,
) {
  await eventsApi(client, monitor.integration_key, "resolve", key);
  await eventually(`${key} resolved by its source`, async () => {
    const [alert] = await alertsFor(client, monitor.id, key);
    return alert.status === "resolved" ? true : undefined;
  });
}

function onDisk<T>(dataDir: string, fn: (db: Database) => T): T {
  const db = new Database(join(dataDir, "svc.db"));
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

function rowsOf(dataDir: string, table: "alert_timeline" | "notification_deliveries", alertId: string) {
  return onDisk(
    dataDir,
    (db) =>
      (db.prepare(`SELECT count(*) AS n FROM ${table} WHERE alert_id = ?`).get(alertId) as { n: number }).n,
  );
}

beforeAll(async () => {
  receiver = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("ok") });
  before = await TestServer.start();
  const beforeApi = before.client();
  const other = await secondOrg(before);
  const beforeOther = beforeApi.as(other.key);

  // The first org keeps alerts 30 days; the other has no setting of its own.
  const settings = await beforeApi.put("/api/v1/org/settings", { retention: { alerts_days: 30 } });
  expect(settings.status).toBe(200);
  const channel = await beforeApi.post("/api/v1/notification-channels", {
    name: "Hook",
    type: "webhook",
    config: { url: `http://127.0.0.1:${receiver.port}/hook` },
  });
  expect(channel.status).toBe(201);
  channelId = channel.body.id;
  const policy = await beforeApi.post("/api/v1/escalation-policies", {
    name: "Hook policy",
    repeat: 0,
    steps: [{ delay_seconds: 60, targets: [{ type: "channel", id: channelId }] }],
  });
  expect(policy.status).toBe(201);
  monitors.a = await createMonitor(beforeApi, { escalation_policy_id: policy.body.id });
  monitors.b = await createMonitor(beforeOther);
  // Pages to a webhook nobody listens on: its notifications stay pending, retried later.
  const deadEnd = await beforeApi.post("/api/v1/notification-channels", {
    name: "Dead end",
    type: "webhook",
    config: { url: "http://127.0.0.1:9/hook" },
  });
  expect(deadEnd.status).toBe(201);
  const deadPolicy = await beforeApi.post("/api/v1/escalation-policies", {
    name: "Dead-end policy",
    repeat: 0,
    steps: [{ delay_seconds: 60, targets: [{ type: "channel", id: deadEnd.body.id }] }],
  });
  expect(deadPolicy.status).toBe(201);
  monitors.c = await createMonitor(beforeApi, { escalation_policy_id: deadPolicy.body.id });

  alerts.sourceOld = await fire(beforeApi, monitors.a, "source-old");
  await resolveBySource(beforeApi, monitors.a, "source-old");
  alerts.manualOld = await fire(beforeApi, monitors.a, "manual-old");
  expect((await beforeApi.post(`/api/v1/alerts/${alerts.manualOld}/resolve`, {})).status).toBe(200);
  alerts.openOld = await fire(beforeApi, monitors.a, "open-old");
  alerts.sourceRecent = await fire(beforeApi, monitors.a, "source-recent");
  await resolveBySource(beforeApi, monitors.a, "source-recent");
  alerts.pendingOld = await fire(beforeApi, monitors.c, "pending-old");
  await resolveBySource(beforeApi, monitors.c, "pending-old");
  alerts.other40 = await fire(beforeOther, monitors.b, "other-40");
  await resolveBySource(beforeOther, monitors.b, "other-40");
  alerts.other70 = await fire(beforeOther, monitors.b, "other-70");
  await resolveBySource(beforeOther, monitors.b, "other-70");

  // The first org's alerts paged the webhook, and the three resolved ones told it of the resolve.
  await eventually("the webhook deliveries", async () => {
    const res = await beforeApi.get(`/api/v1/notification-channels/${channelId}/deliveries?limit=100`);
    const sent = res.body.data.filter((d: { status: string }) => d.status === "sent");
    return sent.length === 7 ? true : undefined;
  });

  expect(await before.stop("SIGTERM")).toBe(0);
  expect(rowsOf(before.dataDir, "notification_deliveries", alerts.sourceOld)).toBe(2);
  expect(rowsOf(before.dataDir, "alert_timeline", alerts.sourceOld)).toBeGreaterThanOrEqual(2);
  const now = Date.now();
  onDisk(before.dataDir, (db) => {
    const age = db.prepare(
      "UPDATE alerts SET fired_at = ?1 - 3600000, resolved_at = CASE WHEN resolved_at IS NULL THEN NULL ELSE ?1 END WHERE id = ?2",
    );
    for (const [name, days] of [
      ["sourceOld", 40],
      ["manualOld", 40],
      ["openOld", 40],
      ["sourceRecent", 20],
      ["pendingOld", 40],
      ["other40", 40],
      ["other70", 70],
    ] as const) {
      expect(age.run(now - days * DAY, alerts[name]).changes).toBe(1);
    }
    // Its next try is tomorrow (as after hours of failures): the notification is still to be sent.
    const later = db.prepare(
      "UPDATE notification_deliveries SET next_attempt_at = ? WHERE alert_id = ? AND status = 'pending'",
    );
    expect(later.run(now + DAY, alerts.pendingOld).changes).toBeGreaterThan(0);
  });

  // The server now keeps alerts 60 days; the first org's 30 stays the shorter limit.
  server = await TestServer.start({
    dataDir: before.dataDir,
    init: false,
    env: { SVC_RETENTION_ALERTS_DAYS: "60" },
  });
  api = server.client(before.init?.api_key.secret);
  otherApi = api.as(other.key);
  await eventually("the retention job", async () =>
    (await api.get(`/api/v1/alerts/${alerts.sourceOld}`)).status === 404 &&
    (await otherApi.get(`/api/v1/alerts/${alerts.other70}`)).status === 404
      ? true
      : undefined,
  );
}, SLOW);

afterAll(async () => {
  await server?.dispose();
  receiver?.stop(true);
});

describe("alert retention", () => {
  test("a resolved alert older than the org's limit goes, with its timeline and deliveries", async () => {
    expect((await api.get(`/api/v1/alerts/${alerts.sourceOld}`)).status).toBe(404);
    expect((await api.get(`/api/v1/alerts/${alerts.sourceOld}/timeline`)).status).toBe(404);
    expect(rowsOf(server.dataDir, "alert_timeline", alerts.sourceOld)).toBe(0);
    expect(rowsOf(server.dataDir, "notification_deliveries", alerts.sourceOld)).toBe(0);
    const deliveries = await api.get(`/api/v1/notification-channels/${channelId}/deliveries?limit=100`);
    const left = new Set(deliveries.body.data.map((d: { alert_id: string }) => d.alert_id));
    expect(left).toEqual(new Set([alerts.manualOld, alerts.openOld, alerts.sourceRecent]));
    expect(deliveries.body.data).toHaveLength(5);
  });

  test("a resolved alert with a notification still pending stays until it is sent or dead", async () => {
    expect((await api.get(`/api/v1/alerts/${alerts.pendingOld}`)).status).toBe(200);
    expect(rowsOf(server.dataDir, "notification_deliveries", alerts.pendingOld)).toBeGreaterThan(0);
  });

  test("open alerts and resolves within the limit stay", async () => {
    const open = await api.get(`/api/v1/alerts/${alerts.openOld}`);
    expect(open.status).toBe(200);
    expect(open.body.status).toBe("firing");
    expect((await api.get(`/api/v1/alerts/${alerts.sourceRecent}`)).status).toBe(200);
  });

  test("without a setting of its own an org keeps the server's limit", async () => {
    expect((await otherApi.get(`/api/v1/alerts/${alerts.other40}`)).status).toBe(200);
    expect((await otherApi.get(`/api/v1/alerts/${alerts.other70}`)).status).toBe(404);
    expect(server.output).toContain('"msg":"alerts pruned"');
  });

  test("an alert resolved by hand while its source still reports the problem stays, and keeps holding back a new page", async () => {
    const kept = await api.get(`/api/v1/alerts/${alerts.manualOld}`);
    expect(kept.status).toBe(200);
    expect(kept.body.status).toBe("resolved");
    await eventsApi(
      api,
      (monitors.a as { integration_key: string }).integration_key,
      "trigger",
      "manual-old",
    );
    const all = await alertsFor(api, (monitors.a as { id: string }).id, "manual-old");
    expect(all.map((a) => a.id)).toEqual([alerts.manualOld]);
  });
});

describe("the effective limit", () => {
  test("an org's setting only shortens the server's; 0 keeps for ever", () => {
    expect(retentionDays(null, 60)).toBe(60);
    expect(retentionDays(30, 60)).toBe(30);
    // Saved while the server allowed more, then the server's limit was lowered.
    expect(retentionDays(90, 60)).toBe(60);
    expect(retentionDays(null, 0)).toBe(0);
    expect(retentionDays(30, 0)).toBe(30);
  });
});
