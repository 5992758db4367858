/**
 * The PagerDuty Events API v2 at `POST /api/v1/events` through a real `svc serve` (DESIGN §6
 * "Events API"): trigger, acknowledge and resolve with their deduplication, the automatic
 * resolve after `freshness_seconds`, a manual resolve the source never undoes, paused monitors,
 * and PagerDuty's own error shape for bad bodies. Black-box: plain HTTP only.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Client, type Response2, TestServer } from "../support/harness.ts";

const SLOW = 30_000;
const ALERT_ID = /^alt_[0-9a-z]{26}$/;
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

let server: TestServer;
let api: Client;
let anon: Client;
let ownerId: string;

interface Monitor {
  id: string;
  integration_key: string;
  status: string;
}

beforeAll(async () => {
  server = await TestServer.start();
  api = server.client();
  anon = api.as();
  ownerId = server.init?.owner.id as string;
}, SLOW);
afterAll(() => server.dispose());

let monitorCount = 0;
async function createMonitor(extra: Record<string, unknown> = {}): Promise<Monitor> {
  monitorCount += 1;
  const res = await api.post("/api/v1/monitors", {
    name: `Events ${monitorCount}`,
    type: "event",
    freshness_seconds: 1,
    ...extra,
  });
  if (res.status !== 201) throw new Error(`create monitor: ${res.status} ${res.text}`);
  return res.body;
}

function send(body: unknown): Promise<Response2> {
  return anon.post("/api/v1/events", body);
}

function trigger(monitor: Monitor, dedupKey: string | undefined, payload: Record<string, unknown> = {}) {
  return send({
    routing_key: monitor.integration_key,
    event_action: "trigger",
    ...(dedupKey === undefined ? {} : { dedup_key: dedupKey }),
    payload: { summary: "Disk full on db01", source: "db01", severity: "critical", ...payload },
  });
}

function action(monitor: Monitor, eventAction: "acknowledge" | "resolve", dedupKey: string) {
  return send({ routing_key: monitor.integration_key, event_action: eventAction, dedup_key: dedupKey });
}

function expectAccepted(res: Response2, dedupKey: string) {
  expect(res.status).toBe(202);
  expect(res.body).toEqual({ status: "success", message: "Event processed", dedup_key: dedupKey });
}

async function alertsOf(monitor: Monitor): Promise<any[]> {
  const res = await api.get(`/api/v1/alerts?monitor_id=${monitor.id}&limit=200`);
  expect(res.status).toBe(200);
  return res.body.data;
}

async function getAlert(id: string): Promise<any> {
  const res = await api.get(`/api/v1/alerts/${id}`);
  expect(res.status).toBe(200);
  return res.body;
}

async function getMonitor(monitor: Monitor): Promise<any> {
  const res = await api.get(`/api/v1/monitors/${monitor.id}`);
  expect(res.status).toBe(200);
  return res.body;
}

async function timelineTypes(id: string): Promise<string[]> {
  const res = await api.get(`/api/v1/alerts/${id}/timeline`);
  expect(res.status).toBe(200);
  return res.body.data.map((e: { type: string }) => e.type);
}

/** Polls `read` until `done` holds or `timeoutMs` passes; returns the last value read. */
async function until<V>(read: () => Promise<V>, done: (v: V) => boolean, timeoutMs = 8_000): Promise<V> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await Bun.sleep(100);
  }
}

describe("trigger", () => {
  test(
    "202 with the dedup key, and an alert with exactly the payload's fields",
    async () => {
      const monitor = await createMonitor({ group_id: "payments", severity: "info" });
      const before = Date.now();
      const res = await send({
        routing_key: monitor.integration_key,
        event_action: "trigger",
        dedup_key: "disk-db01",
        payload: {
          summary: "Disk full on db01",
          source: "db01.prod",
          severity: "error",
          component: "postgres",
          group: "storage",
          class: "disk",
          custom_details: { free_bytes: 0 },
        },
      });
      expectAccepted(res, "disk-db01");
      const alerts = await alertsOf(monitor);
      expect(alerts).toHaveLength(1);
      const alert = alerts[0];
      expect(alert.id).toMatch(ALERT_ID);
      expect(alert.fired_at).toMatch(TIMESTAMP);
      expect(Date.parse(alert.fired_at)).toBeGreaterThanOrEqual(before - 1000);
      expect(Date.parse(alert.fired_at)).toBeLessThanOrEqual(Date.now());
      expect(alert).toEqual({
        id: alert.id,
        monitor_id: monitor.id,
        group_id: "payments",
        dedup_key: "disk-db01",
        summary: "Disk full on db01",
        reason: "db01.prod / postgres",
        severity: "critical",
        status: "firing",
        labels: { source: "db01.prod", component: "postgres", group: "storage", class: "disk" },
        fired_at: alert.fired_at,
        acknowledged_at: null,
        acknowledged_by: null,
        resolved_at: null,
        resolved_by: null,
        escalation_policy_id: null,
        current_escalation_step: null,
        notification_count: 0,
      });
      expect(await getAlert(alert.id)).toEqual(alert);
      // No policy and no default channels: the timeline says nobody was notified.
      const timeline = await api.get(`/api/v1/alerts/${alert.id}/timeline`);
      expect(timeline.body).toEqual({
        data: [
          {
            type: "fired",
            at: alert.fired_at,
            data: { summary: "Disk full on db01", severity: "critical" },
          },
          { type: "nobody_notified", at: alert.fired_at, data: { reason: "no escalation policy" } },
        ],
      });
      expect((await getMonitor(monitor)).status).toBe("down");
    },
    SLOW,
  );

  test(
    "severities map critical and error to critical, warning and info to themselves",
    async () => {
      const monitor = await createMonitor({ severity: "critical" });
      const cases: [string, string][] = [
        ["critical", "critical"],
        ["error", "critical"],
        ["warning", "warning"],
        ["info", "info"],
      ];
      for (const [given] of cases) {
        expectAccepted(await trigger(monitor, `sev-${given}`, { severity: given }), `sev-${given}`);
      }
      const alerts = await alertsOf(monitor);
      const byKey = Object.fromEntries(alerts.map((a) => [a.dedup_key, a.severity]));
      expect(byKey).toEqual(Object.fromEntries(cases.map(([given, want]) => [`sev-${given}`, want])));
    },
    SLOW,
  );

  test(
    "a payload without component gives the source alone as reason and only the source label",
    async () => {
      const monitor = await createMonitor();
      expectAccepted(await trigger(monitor, "bare", { source: "cron-host" }), "bare");
      const [alert] = await alertsOf(monitor);
      expect({ reason: alert.reason, labels: alert.labels }).toEqual({
        reason: "cron-host",
        labels: { source: "cron-host" },
      });
    },
    SLOW,
  );

  test(
    "a trigger without dedup_key gets a generated one, a new one each time",
    async () => {
      const monitor = await createMonitor();
      const first = await trigger(monitor, undefined);
      const second = await trigger(monitor, undefined);
      for (const res of [first, second]) {
        expect(res.status).toBe(202);
        expect(res.body.status).toBe("success");
        expect(res.body.message).toBe("Event processed");
        expect(typeof res.body.dedup_key).toBe("string");
        expect(res.body.dedup_key.length).toBeGreaterThan(0);
      }
      expect(first.body.dedup_key).not.toBe(second.body.dedup_key);
      const alerts = await alertsOf(monitor);
      expect(alerts.map((a) => a.dedup_key).sort()).toEqual(
        [first.body.dedup_key, second.body.dedup_key].sort(),
      );
      // The generated key then works for the other actions.
      expectAccepted(await action(monitor, "acknowledge", first.body.dedup_key), first.body.dedup_key);
      const acked = alerts.find((a) => a.dedup_key === first.body.dedup_key);
      expect((await getAlert(acked.id)).status).toBe("acknowledged");
    },
    SLOW,
  );

  test(
    "the same dedup_key while the alert is open adds no alert, acknowledged or not",
    async () => {
      const monitor = await createMonitor();
      expectAccepted(await trigger(monitor, "same"), "same");
      const [alert] = await alertsOf(monitor);
      expectAccepted(await trigger(monitor, "same", { summary: "Another summary" }), "same");
      expectAccepted(await action(monitor, "acknowledge", "same"), "same");
      expectAccepted(await trigger(monitor, "same", { severity: "info" }), "same");
      const alerts = await alertsOf(monitor);
      expect(alerts.map((a) => a.id)).toEqual([alert.id]);
      expect(alerts[0].summary).toBe("Disk full on db01");
      expect(alerts[0].severity).toBe("critical");
      expect(alerts[0].status).toBe("acknowledged");
      expect(await timelineTypes(alert.id)).toEqual(["fired", "nobody_notified", "acknowledged"]);
    },
    SLOW,
  );

  test(
    "another dedup_key on the same monitor is another alert; the same key on another monitor too",
    async () => {
      const a = await createMonitor();
      const b = await createMonitor();
      expectAccepted(await trigger(a, "k1"), "k1");
      expectAccepted(await trigger(a, "k2"), "k2");
      expectAccepted(await trigger(b, "k1"), "k1");
      expect((await alertsOf(a)).map((x) => x.dedup_key).sort()).toEqual(["k1", "k2"]);
      expect((await alertsOf(b)).map((x) => x.dedup_key)).toEqual(["k1"]);
    },
    SLOW,
  );

  test(
    "a paused monitor answers 202 and fires nothing",
    async () => {
      const monitor = await createMonitor({ paused: true });
      expectAccepted(await trigger(monitor, "paused"), "paused");
      const generated = await trigger(monitor, undefined);
      expect(generated.status).toBe(202);
      expect(typeof generated.body.dedup_key).toBe("string");
      expectAccepted(await action(monitor, "acknowledge", "paused"), "paused");
      expectAccepted(await action(monitor, "resolve", "paused"), "paused");
      expect(await alertsOf(monitor)).toEqual([]);
      expect((await getMonitor(monitor)).status).toBe("up");
    },
    SLOW,
  );
});

describe("acknowledge", () => {
  test(
    "acknowledges the open alert as monitor:<id>, once",
    async () => {
      const monitor = await createMonitor();
      expectAccepted(await trigger(monitor, "ack-me"), "ack-me");
      const [fired] = await alertsOf(monitor);
      const before = Date.now();
      expectAccepted(await action(monitor, "acknowledge", "ack-me"), "ack-me");
      const alert = await getAlert(fired.id);
      expect(alert.status).toBe("acknowledged");
      expect(alert.acknowledged_by).toBe(`monitor:${monitor.id}`);
      expect(Date.parse(alert.acknowledged_at)).toBeGreaterThanOrEqual(before - 1000);
      expect(alert.resolved_at).toBeNull();
      // A second acknowledge changes nothing and writes no second timeline entry.
      expectAccepted(await action(monitor, "acknowledge", "ack-me"), "ack-me");
      expect(await getAlert(fired.id)).toEqual(alert);
      const timeline = await api.get(`/api/v1/alerts/${fired.id}/timeline`);
      expect(timeline.body.data.map((e: { type: string }) => e.type)).toEqual([
        "fired",
        "nobody_notified",
        "acknowledged",
      ]);
      expect(timeline.body.data[2]).toEqual({
        type: "acknowledged",
        at: alert.acknowledged_at,
        data: { by: `monitor:${monitor.id}` },
      });
    },
    SLOW,
  );

  test(
    "acknowledging an unknown dedup_key or a resolved alert is accepted and changes nothing",
    async () => {
      const monitor = await createMonitor();
      expectAccepted(await action(monitor, "acknowledge", "never-fired"), "never-fired");
      expect(await alertsOf(monitor)).toEqual([]);
      expectAccepted(await trigger(monitor, "done"), "done");
      const [fired] = await alertsOf(monitor);
      const resolved = await api.post(`/api/v1/alerts/${fired.id}/resolve`, {});
      expect(resolved.status).toBe(200);
      expectAccepted(await action(monitor, "acknowledge", "done"), "done");
      const alert = await getAlert(fired.id);
      expect(alert.status).toBe("resolved");
      expect(alert.acknowledged_by).toBeNull();
      expect(alert.acknowledged_at).toBeNull();
    },
    SLOW,
  );
});

describe("resolve", () => {
  test(
    "the alert resolves automatically freshness_seconds later and the monitor is up again",
    async () => {
      const monitor = await createMonitor({ freshness_seconds: 1 });
      expectAccepted(await trigger(monitor, "flap"), "flap");
      const [fired] = await alertsOf(monitor);
      expect((await getMonitor(monitor)).status).toBe("down");
      const sentAt = Date.now();
      expectAccepted(await action(monitor, "resolve", "flap"), "flap");
      // Not at once: the source must stay up for freshness_seconds.
      expect((await getAlert(fired.id)).status).toBe("firing");
      const alert = await until(
        () => getAlert(fired.id),
        (a) => a.status === "resolved",
      );
      expect(alert.status).toBe("resolved");
      expect(alert.resolved_by).toBe(`monitor:${monitor.id}`);
      const resolvedAt = Date.parse(alert.resolved_at);
      expect(resolvedAt).toBeGreaterThanOrEqual(sentAt + 1000 - 50);
      expect(resolvedAt).toBeLessThanOrEqual(sentAt + 1000 + 2500);
      const timeline = await api.get(`/api/v1/alerts/${fired.id}/timeline`);
      expect(timeline.body.data.at(-1)).toEqual({
        type: "resolved",
        at: alert.resolved_at,
        data: { by: `monitor:${monitor.id}`, auto: true },
      });
      expect((await getMonitor(monitor)).status).toBe("up");
      expect(await alertsOf(monitor)).toHaveLength(1);
    },
    SLOW,
  );

  test(
    "an acknowledged alert resolves automatically too",
    async () => {
      const monitor = await createMonitor({ freshness_seconds: 1 });
      expectAccepted(await trigger(monitor, "acked"), "acked");
      const [fired] = await alertsOf(monitor);
      expectAccepted(await action(monitor, "acknowledge", "acked"), "acked");
      expectAccepted(await action(monitor, "resolve", "acked"), "acked");
      const alert = await until(
        () => getAlert(fired.id),
        (a) => a.status === "resolved",
      );
      expect(alert.status).toBe("resolved");
      expect(alert.acknowledged_by).toBe(`monitor:${monitor.id}`);
      expect(alert.resolved_by).toBe(`monitor:${monitor.id}`);
    },
    SLOW,
  );

  test(
    "the monitor stays down while another dedup_key is still open",
    async () => {
      const monitor = await createMonitor({ freshness_seconds: 1 });
      expectAccepted(await trigger(monitor, "one"), "one");
      expectAccepted(await trigger(monitor, "two"), "two");
      const one = (await alertsOf(monitor)).find((a) => a.dedup_key === "one");
      expectAccepted(await action(monitor, "resolve", "one"), "one");
      const alert = await until(
        () => getAlert(one.id),
        (a) => a.status === "resolved",
      );
      expect(alert.status).toBe("resolved");
      expect((await getMonitor(monitor)).status).toBe("down");
      const two = (await alertsOf(monitor)).find((a) => a.dedup_key === "two");
      expect(two.status).toBe("firing");
    },
    SLOW,
  );

  test(
    "a trigger before freshness_seconds have passed keeps the alert open, with no new alert",
    async () => {
      const monitor = await createMonitor({ freshness_seconds: 2 });
      expectAccepted(await trigger(monitor, "bouncy"), "bouncy");
      const [fired] = await alertsOf(monitor);
      expectAccepted(await action(monitor, "resolve", "bouncy"), "bouncy");
      expectAccepted(await trigger(monitor, "bouncy"), "bouncy");
      // Well past the freshness: still open, still the one alert.
      await Bun.sleep(3_500);
      const alerts = await alertsOf(monitor);
      expect(alerts.map((a) => [a.id, a.status])).toEqual([[fired.id, "firing"]]);
      expect((await getMonitor(monitor)).status).toBe("down");
      expect(await timelineTypes(fired.id)).toEqual(["fired", "nobody_notified"]);
      // A resolve afterwards still works.
      expectAccepted(await action(monitor, "resolve", "bouncy"), "bouncy");
      const alert = await until(
        () => getAlert(fired.id),
        (a) => a.status === "resolved",
      );
      expect(alert.resolved_by).toBe(`monitor:${monitor.id}`);
    },
    SLOW,
  );

  test(
    "a resolve for a dedup_key that never fired is accepted and fires nothing",
    async () => {
      const monitor = await createMonitor();
      expectAccepted(await action(monitor, "resolve", "ghost"), "ghost");
      expect(await alertsOf(monitor)).toEqual([]);
      expect((await getMonitor(monitor)).status).toBe("up");
    },
    SLOW,
  );

  test(
    "after an automatic resolve, the same dedup_key fires a new alert",
    async () => {
      const monitor = await createMonitor({ freshness_seconds: 1 });
      expectAccepted(await trigger(monitor, "again"), "again");
      const [first] = await alertsOf(monitor);
      expectAccepted(await action(monitor, "resolve", "again"), "again");
      await until(
        () => getAlert(first.id),
        (a) => a.status === "resolved",
      );
      expectAccepted(await trigger(monitor, "again"), "again");
      const alerts = await alertsOf(monitor);
      expect(alerts).toHaveLength(2);
      const second = alerts.find((a) => a.id !== first.id);
      expect(second.status).toBe("firing");
      expect(second.dedup_key).toBe("again");
      expect((await getMonitor(monitor)).status).toBe("down");
    },
    SLOW,
  );

  test(
    "a manual resolve wins: no new alert until the source has sent a resolve, then a trigger fires",
    async () => {
      const monitor = await createMonitor({ freshness_seconds: 1 });
      expectAccepted(await trigger(monitor, "manual"), "manual");
      const [first] = await alertsOf(monitor);
      const resolved = await api.post(`/api/v1/alerts/${first.id}/resolve`, { note: "fixed by hand" });
      expect(resolved.status).toBe(200);
      expect(resolved.body.resolved_by).toBe(ownerId);
      expect(resolved.body.already_resolved).toBe(false);

      // The source still reports the problem: nothing new fires.
      expectAccepted(await trigger(monitor, "manual"), "manual");
      expectAccepted(await trigger(monitor, "manual"), "manual");
      expect((await alertsOf(monitor)).map((a) => a.id)).toEqual([first.id]);
      expect((await getMonitor(monitor)).status).toBe("down");

      // The source comes up: the manual resolve is kept as it was.
      expectAccepted(await action(monitor, "resolve", "manual"), "manual");
      await Bun.sleep(2_000);
      const kept = await getAlert(first.id);
      expect(kept.resolved_by).toBe(ownerId);
      expect(kept.resolved_at).toBe(resolved.body.resolved_at);
      const timeline = await api.get(`/api/v1/alerts/${first.id}/timeline`);
      expect(
        timeline.body.data.filter((e: { type: string }) => e.type === "resolved").map((e: any) => e.data),
      ).toEqual([{ by: ownerId, auto: false, note: "fixed by hand" }]);

      // Down again: a new alert fires.
      expectAccepted(await trigger(monitor, "manual"), "manual");
      const alerts = await alertsOf(monitor);
      expect(alerts).toHaveLength(2);
      const second = alerts.find((a) => a.id !== first.id);
      expect({ status: second.status, dedup_key: second.dedup_key }).toEqual({
        status: "firing",
        dedup_key: "manual",
      });
    },
    SLOW,
  );

  test(
    "after a manual resolve and the source's resolve, the monitor is up again",
    async () => {
      const monitor = await createMonitor({ freshness_seconds: 1 });
      expectAccepted(await trigger(monitor, "by-hand"), "by-hand");
      const [alert] = await alertsOf(monitor);
      expect((await api.post(`/api/v1/alerts/${alert.id}/resolve`, {})).status).toBe(200);
      expect((await getMonitor(monitor)).status).toBe("down");
      expectAccepted(await action(monitor, "resolve", "by-hand"), "by-hand");
      const after = await until(
        () => getMonitor(monitor),
        (m) => m.status === "up",
      );
      expect(after.status).toBe("up");
    },
    SLOW,
  );
});

describe("invalid events", () => {
  let monitor: Monitor;
  beforeAll(async () => {
    monitor = await createMonitor();
  });

  function expectInvalid(res: Response2, fragment: RegExp) {
    expect(res.status).toBe(400);
    expect(res.body.status).toBe("invalid event");
    expect(typeof res.body.message).toBe("string");
    expect(res.body.message.length).toBeGreaterThan(0);
    expect(Array.isArray(res.body.errors)).toBe(true);
    expect(res.body.errors.length).toBeGreaterThan(0);
    expect(res.body.errors.some((e: string) => fragment.test(e))).toBe(true);
    expect(Object.keys(res.body).sort()).toEqual(["errors", "message", "status"]);
  }

  const payload = { summary: "s", source: "src", severity: "critical" };

  test("an unknown routing_key", async () => {
    expectInvalid(
      await send({ routing_key: "nope-not-a-key", event_action: "trigger", payload }),
      /routing_key/,
    );
  });

  test("a heartbeat monitor's token is not a routing key", async () => {
    const heartbeat = await api.post("/api/v1/monitors", {
      name: "Heartbeat",
      type: "heartbeat",
      config: { interval_seconds: 60 },
    });
    expect(heartbeat.status).toBe(201);
    const token = String(heartbeat.body.ping_url).split("/").at(-1);
    expectInvalid(await send({ routing_key: token, event_action: "trigger", payload }), /routing_key/);
  });

  test("a trigger without payload", async () => {
    expectInvalid(
      await send({ routing_key: monitor.integration_key, event_action: "trigger", dedup_key: "x" }),
      /payload/,
    );
  });

  test("a payload missing summary or source", async () => {
    expectInvalid(
      await send({
        routing_key: monitor.integration_key,
        event_action: "trigger",
        payload: { source: "src", severity: "critical" },
      }),
      /summary/,
    );
    expectInvalid(
      await send({
        routing_key: monitor.integration_key,
        event_action: "trigger",
        payload: { summary: "s", severity: "critical" },
      }),
      /source/,
    );
  });

  test("a bad severity", async () => {
    expectInvalid(
      await send({
        routing_key: monitor.integration_key,
        event_action: "trigger",
        payload: { ...payload, severity: "disaster" },
      }),
      /severity/,
    );
  });

  test("a bad event_action, or none", async () => {
    expectInvalid(
      await send({ routing_key: monitor.integration_key, event_action: "explode", payload }),
      /event_action/,
    );
    expectInvalid(await send({ routing_key: monitor.integration_key, payload }), /event_action/);
  });

  test("a missing routing_key", async () => {
    expectInvalid(await send({ event_action: "trigger", payload }), /routing_key/);
  });

  test("acknowledge or resolve without dedup_key", async () => {
    for (const eventAction of ["acknowledge", "resolve"]) {
      expectInvalid(
        await send({ routing_key: monitor.integration_key, event_action: eventAction }),
        /dedup_key/,
      );
    }
  });

  test("a body that is not JSON, a JSON array, a JSON string, null or empty", async () => {
    for (const body of ["{not json", '[{"routing_key":"x"}]', '"trigger"', "null", "42", ""]) {
      const res = await anon.request("POST", "/api/v1/events", body, { "content-type": "application/json" });
      expect({ body, status: res.status, shape: res.body?.status }).toEqual({
        body,
        status: 400,
        shape: "invalid event",
      });
      expect(res.body.errors.length).toBeGreaterThan(0);
    }
  });

  test("wrong types never give a 500", async () => {
    const bodies: unknown[] = [
      { routing_key: 42, event_action: "trigger", payload },
      { routing_key: monitor.integration_key, event_action: "trigger", payload: "text" },
      { routing_key: monitor.integration_key, event_action: "trigger", payload: [] },
      { routing_key: monitor.integration_key, event_action: "trigger", dedup_key: 7, payload },
      { routing_key: monitor.integration_key, event_action: "trigger", dedup_key: "", payload },
      { routing_key: monitor.integration_key, event_action: "trigger", payload: { ...payload, summary: "" } },
      {
        routing_key: monitor.integration_key,
        event_action: "trigger",
        payload: { ...payload, component: 5 },
      },
      { routing_key: monitor.integration_key, event_action: null },
    ];
    for (const body of bodies) {
      const res = await send(body);
      expect({ body, status: res.status, shape: res.body?.status }).toEqual({
        body,
        status: 400,
        shape: "invalid event",
      });
    }
    expect(await alertsOf(monitor)).toEqual([]);
  });

  test("unknown extra fields are accepted and ignored", async () => {
    const res = await send({
      routing_key: monitor.integration_key,
      event_action: "trigger",
      dedup_key: "extras",
      client: "Sample Monitoring Service",
      client_url: "https://monitoring.example.com",
      images: [{ src: "https://example.com/chart.png" }],
      links: [{ href: "https://example.com", text: "runbook" }],
      payload: { ...payload, timestamp: "2026-01-01T00:00:00Z", custom_details: { a: [1, 2] }, extra: true },
    });
    expectAccepted(res, "extras");
    const alerts = await alertsOf(monitor);
    expect(alerts.map((a) => a.dedup_key)).toEqual(["extras"]);
  });

  test("the invalid events fired nothing and the server is healthy", async () => {
    const health = await anon.get("/healthz");
    expect(health.status).toBe(200);
    expect(server.output).not.toContain('"level":"error"');
  });
});
