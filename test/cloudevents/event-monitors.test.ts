/**
 * Event monitors fed by inbound CloudEvents through a real `svc serve` (DESIGN §6 monitors and
 * Events API semantics, §7 ingest): an inbound event whose type matches a monitor's
 * `config.cloudevents_type` glob triggers, acknowledges or reports the source up for the alert
 * whose dedup key is `data.dedup_key` (else the `subject`). Events are sent with the
 * `cloudevents` SDK (structured and binary mode) and as batches. Black-box: HTTP only.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { CloudEvent, HTTP } from "cloudevents";
import { type Client, secondOrg, TestServer } from "../support/harness.ts";

const SLOW = 30_000;
const SOURCE = "/tests/disks";
const ALERT_ID = /^alt_[0-9a-z]{26}$/;

let server: TestServer;
let api: Client;
let token: string;

interface Monitor {
  id: string;
  status: string;
  severity: string;
}

beforeAll(async () => {
  server = await TestServer.start({ env: { SVC_LIMITS_POLL_PER_MINUTE: "10000" } });
  api = server.client();
  token = server.init?.ingest_token.token as string;
}, SLOW);
afterAll(() => server.dispose());

let count = 0;
/** A fresh event monitor fed by CloudEvents whose type matches `glob`. */
async function monitor(glob: string, extra: Record<string, unknown> = {}, client = api): Promise<Monitor> {
  count += 1;
  const res = await client.post("/api/v1/monitors", {
    name: `Disks ${count}`,
    type: "event",
    severity: "warning",
    freshness_seconds: 1,
    config: { cloudevents_type: glob },
    ...extra,
  });
  if (res.status !== 201) throw new Error(`create monitor: ${res.status} ${res.text}`);
  expect(res.body.config).toEqual({ cloudevents_type: glob });
  return res.body;
}

/** A unique type namespace per test, so monitors of other tests never match. */
function ns(): string {
  return `com.example.t${Math.random().toString(36).slice(2, 8)}`;
}

/** Sends one SDK event (structured unless said otherwise) with the org's ingest token. */
async function send(
  type: string,
  data: Record<string, unknown> | undefined,
  options: { subject?: string; mode?: "structured" | "binary"; id?: string; with?: string } = {},
): Promise<CloudEvent<unknown>> {
  const ce = new CloudEvent<unknown>({
    id: options.id ?? crypto.randomUUID(),
    source: SOURCE,
    type,
    ...(options.subject === undefined ? {} : { subject: options.subject }),
    ...(data === undefined ? {} : { datacontenttype: "application/json", data }),
  });
  const message = options.mode === "binary" ? HTTP.binary(ce) : HTTP.structured(ce);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(message.headers)) {
    if (value !== undefined) headers[name] = String(value);
  }
  const res = await fetch(`${server.base}/api/v1/cloudevents/ingest/${options.with ?? token}`, {
    method: "POST",
    headers,
    body: message.body as string,
  });
  expect([res.status, await res.json()]).toEqual([202, { accepted: 1 }]);
  return ce;
}

async function alertsOf(m: { id: string }, client = api): Promise<any[]> {
  const res = await client.get(`/api/v1/alerts?monitor_id=${m.id}&limit=200`);
  expect(res.status).toBe(200);
  return res.body.data;
}

async function getAlert(id: string): Promise<any> {
  const res = await api.get(`/api/v1/alerts/${id}`);
  expect(res.status).toBe(200);
  return res.body;
}

async function getMonitor(m: { id: string }): Promise<any> {
  const res = await api.get(`/api/v1/monitors/${m.id}`);
  expect(res.status).toBe(200);
  return res.body;
}

async function timeline(id: string): Promise<{ type: string; data: any }[]> {
  const res = await api.get(`/api/v1/alerts/${id}/timeline`);
  expect(res.status).toBe(200);
  return res.body.data;
}

/** Polls `read` until `done` holds or `timeoutMs` passes; returns the last value read. */
async function until<V>(read: () => Promise<V>, done: (v: V) => boolean, timeoutMs = 6_000): Promise<V> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await Bun.sleep(100);
  }
}

describe("trigger", () => {
  test(
    "a matching event fires an alert with its summary, severity and dedup key",
    async () => {
      const n = ns();
      const m = await monitor(`${n}.disk.*`);
      expect(m.status).toBe("up");
      const before = Date.now();
      await send(`${n}.disk.full`, { dedup_key: "d1", summary: "Disk full", severity: "critical" });
      const alerts = await alertsOf(m);
      expect(alerts).toHaveLength(1);
      const alert = alerts[0];
      // (A copy: bun's toMatchObject writes asymmetric matchers into the object it checks.)
      expect({ ...alert }).toMatchObject({
        id: expect.stringMatching(ALERT_ID),
        monitor_id: m.id,
        dedup_key: "d1",
        summary: "Disk full",
        severity: "critical",
        status: "firing",
        acknowledged_by: null,
        resolved_at: null,
      });
      expect(Date.parse(alert.fired_at)).toBeGreaterThanOrEqual(before - 5);
      expect((await getMonitor(m)).status).toBe("down");
      expect((await timeline(alert.id)).map((e) => e.type)).toContain("fired");

      // The outbound fired event is on the consumer plane.
      const poll = await api.get(
        "/api/v1/cloudevents/poll?filter=run.service.alert.fired.v1&wait=0&limit=1000",
      );
      expect(poll.status).toBe(200);
      const fired = poll.body.data.filter((e: any) => e.subject === alert.id);
      expect(fired).toHaveLength(1);
      expect(fired[0].data).toMatchObject({ id: alert.id, summary: "Disk full", dedup_key: "d1" });
    },
    SLOW,
  );

  test(
    "a second event with the same dedup key adds no alert; another dedup key fires another",
    async () => {
      const n = ns();
      const m = await monitor(`${n}.disk.*`);
      await send(`${n}.disk.full`, { dedup_key: "d1", summary: "Disk full", severity: "critical" });
      await send(
        `${n}.disk.full`,
        { dedup_key: "d1", summary: "Disk still full", severity: "info" },
        { mode: "binary" },
      );
      await send(`${n}.disk.filling`, { dedup_key: "d1" });
      let alerts = await alertsOf(m);
      expect(alerts).toHaveLength(1);
      expect(alerts[0]).toMatchObject({ summary: "Disk full", severity: "critical", status: "firing" });
      await send(`${n}.disk.full`, { dedup_key: "d2", summary: "Other disk" });
      alerts = await alertsOf(m);
      expect(alerts.map((a) => a.dedup_key).sort()).toEqual(["d1", "d2"]);
    },
    SLOW,
  );

  test(
    "without data.dedup_key the subject is the dedup key (binary mode)",
    async () => {
      const n = ns();
      const m = await monitor(`${n}.disk.*`);
      await send(`${n}.disk.full`, { summary: "Volume 7 full" }, { subject: "vol-7", mode: "binary" });
      await send(`${n}.disk.full`, { summary: "Volume 7 again" }, { subject: "vol-7" });
      await send(`${n}.disk.full`, { summary: "Volume 8 full" }, { subject: "vol-8", mode: "binary" });
      const alerts = await alertsOf(m);
      expect(alerts.map((a) => [a.dedup_key, a.summary]).sort()).toEqual([
        ["vol-7", "Volume 7 full"],
        ["vol-8", "Volume 8 full"],
      ]);
      // data.dedup_key wins over the subject.
      await send(`${n}.disk.full`, { dedup_key: "explicit" }, { subject: "vol-7" });
      expect((await alertsOf(m)).map((a) => a.dedup_key).sort()).toEqual(["explicit", "vol-7", "vol-8"]);
    },
    SLOW,
  );

  test(
    "without data.summary the summary is the type; without data.severity, the monitor's severity",
    async () => {
      const n = ns();
      const m = await monitor(`${n}.disk.*`, { severity: "info" });
      await send(`${n}.disk.degraded`, { dedup_key: "plain" });
      const [alert] = await alertsOf(m);
      expect(alert).toMatchObject({ summary: `${n}.disk.degraded`, severity: "info", dedup_key: "plain" });
      // PagerDuty-style severities map as on the Events API.
      await send(`${n}.disk.degraded`, { dedup_key: "err", severity: "error" });
      const err = (await alertsOf(m)).find((a) => a.dedup_key === "err");
      expect(err.severity).toBe("critical");
    },
    SLOW,
  );

  test(
    "a type that does not match the glob fires nothing",
    async () => {
      const n = ns();
      const m = await monitor(`${n}.disk.*`);
      for (const type of [
        `${n}.cpu.high`,
        `${n}.disk`,
        `${n}.diskette.full`,
        `${n.toUpperCase()}.DISK.FULL`,
        `x${n}.disk.full`,
        `${n}.memory.disk.full`,
      ]) {
        await send(type, { dedup_key: "d1", summary: "Nope", severity: "critical" });
      }
      expect(await alertsOf(m)).toEqual([]);
      expect((await getMonitor(m)).status).toBe("up");
      // `?` is one character, `*` any run.
      const q = await monitor(`${n}.disk.v?`);
      await send(`${n}.disk.v1`, { dedup_key: "q" });
      await send(`${n}.disk.v10`, { dedup_key: "q2" });
      expect((await alertsOf(q)).map((a) => a.dedup_key)).toEqual(["q"]);
    },
    SLOW,
  );

  test(
    "every matching monitor gets its alert; another org's monitor with the same glob gets none",
    async () => {
      const n = ns();
      const a = await monitor(`${n}.disk.*`);
      const b = await monitor(`${n}.*`);
      const c = await monitor(`${n}.disk.full`);
      const created = await secondOrg(server);
      const otherApi = server.client(created.key);
      const foreign = await monitor(`${n}.disk.*`, {}, otherApi);
      await send(`${n}.disk.full`, { dedup_key: "d1", summary: "Disk full" });
      for (const m of [a, b, c]) expect((await alertsOf(m)).map((x) => x.summary)).toEqual(["Disk full"]);
      expect(await alertsOf(foreign, otherApi)).toEqual([]);
      // The other org's own token feeds its own monitor.
      await send(`${n}.disk.full`, { dedup_key: "d1", summary: "Theirs" }, { with: created.token });
      expect((await alertsOf(foreign, otherApi)).map((x) => x.summary)).toEqual(["Theirs"]);
      expect(await alertsOf(a)).toHaveLength(1);
    },
    SLOW,
  );

  test(
    "a paused monitor, or one without cloudevents_type, is not fed",
    async () => {
      const n = ns();
      const paused = await monitor(`${n}.disk.*`, { paused: true });
      const plain = await api.post("/api/v1/monitors", { name: "no glob", type: "event" });
      expect(plain.status).toBe(201);
      await send(`${n}.disk.full`, { dedup_key: "d1" });
      expect(await alertsOf(paused)).toEqual([]);
      expect(await alertsOf(plain.body)).toEqual([]);
    },
    SLOW,
  );

  test(
    "monitor changes apply to the very next event: created, paused, resumed with another glob, deleted",
    async () => {
      const n = ns();
      const keysOf = async (m: { id: string }) => (await alertsOf(m)).map((a) => a.dedup_key).sort();
      // Ingest has read (and kept) the org's monitor list before this monitor exists.
      await send(`${n}.disk.full`, { dedup_key: "before" });
      const m = await monitor(`${n}.disk.*`);
      await send(`${n}.disk.full`, { dedup_key: "created" });
      expect(await keysOf(m)).toEqual(["created"]);

      expect((await api.patch(`/api/v1/monitors/${m.id}`, { paused: true })).status).toBe(200);
      await send(`${n}.disk.full`, { dedup_key: "paused" });
      expect(await keysOf(m)).toEqual(["created"]);

      const resumed = await api.patch(`/api/v1/monitors/${m.id}`, {
        paused: false,
        config: { cloudevents_type: `${n}.cpu.*` },
      });
      expect(resumed.status).toBe(200);
      await send(`${n}.disk.full`, { dedup_key: "old-glob" });
      await send(`${n}.cpu.hot`, { dedup_key: "new-glob" });
      expect(await keysOf(m)).toEqual(["created", "new-glob"]);

      for (const alert of await alertsOf(m)) {
        expect((await api.post(`/api/v1/alerts/${alert.id}/resolve`, {})).status).toBe(200);
      }
      expect((await api.delete(`/api/v1/monitors/${m.id}`)).status).toBe(204);
      await send(`${n}.cpu.hot`, { dedup_key: "deleted" });
      const next = await monitor(`${n}.cpu.*`);
      await send(`${n}.cpu.hot`, { dedup_key: "second" });
      expect(await keysOf(next)).toEqual(["second"]);
    },
    SLOW,
  );

  test(
    "reply events never feed monitors, even one whose glob matches them",
    async () => {
      const m = await monitor("run.service.reply.*");
      await send("run.service.reply.alert.claimed.v1", {
        dedup_key: "r",
        alert_id: "alt_x",
        outbound_event_id: "evt_x",
      });
      expect(await alertsOf(m)).toEqual([]);
    },
    SLOW,
  );

  test(
    "re-sending the same event (same source and id) after a resolve fires nothing new",
    async () => {
      const n = ns();
      const m = await monitor(`${n}.disk.*`);
      const first = await send(`${n}.disk.full`, { dedup_key: "d1" });
      const [alert] = await alertsOf(m);
      expect((await api.post(`/api/v1/alerts/${alert.id}/resolve`, {})).status).toBe(200);
      await send(`${n}.disk.full`, { dedup_key: "up-again", status: "resolved" });
      // Same source and id as the first: stored once, not processed again.
      await send(`${n}.disk.full`, { dedup_key: "d1" }, { id: first.id });
      expect((await alertsOf(m)).map((a) => a.id)).toEqual([alert.id]);
    },
    SLOW,
  );
});

describe("acknowledge and resolve", () => {
  test(
    "data.event_action acknowledge acknowledges the open alert as the monitor",
    async () => {
      const n = ns();
      const m = await monitor(`${n}.disk.*`);
      await send(`${n}.disk.full`, { dedup_key: "d1", summary: "Disk full", severity: "critical" });
      await send(`${n}.disk.full`, { dedup_key: "d1", event_action: "acknowledge" }, { mode: "binary" });
      const [alert] = await alertsOf(m);
      expect(alert).toMatchObject({ status: "acknowledged", acknowledged_by: `monitor:${m.id}` });
      expect(
        (await timeline(alert.id)).filter((e) => e.type === "acknowledged").map((e) => e.data.by),
      ).toEqual([`monitor:${m.id}`]);
      // An acknowledge for a key with no open alert fires nothing.
      await send(`${n}.disk.full`, { dedup_key: "none", event_action: "acknowledge" });
      expect(await alertsOf(m)).toHaveLength(1);
    },
    SLOW,
  );

  test(
    "data.status resolved: the alert resolves automatically after freshness_seconds",
    async () => {
      const n = ns();
      const m = await monitor(`${n}.disk.*`, { freshness_seconds: 1 });
      await send(`${n}.disk.full`, { dedup_key: "d1", summary: "Disk full", severity: "critical" });
      const [fired] = await alertsOf(m);
      const reported = Date.now();
      await send(`${n}.disk.full`, { dedup_key: "d1", status: "resolved" });
      // Not at once: the source has to stay up for freshness_seconds.
      expect((await getAlert(fired.id)).status).toBe("firing");
      const resolved = await until(
        () => getAlert(fired.id),
        (a) => a.status === "resolved",
      );
      expect(resolved).toMatchObject({ status: "resolved", resolved_by: `monitor:${m.id}` });
      expect(Date.parse(resolved.resolved_at)).toBeGreaterThanOrEqual(reported + 1_000 - 50);
      expect(Date.parse(resolved.resolved_at)).toBeLessThan(reported + 4_000);
      const entries = (await timeline(fired.id)).filter((e) => e.type === "resolved");
      expect(entries.map((e) => e.data)).toEqual([{ by: `monitor:${m.id}`, auto: true }]);
      expect(
        (
          await until(
            () => getMonitor(m),
            (x) => x.status === "up",
          )
        ).status,
      ).toBe("up");
    },
    SLOW,
  );

  test(
    "event_action resolve (any case) auto-resolves an acknowledged alert too",
    async () => {
      const n = ns();
      const m = await monitor(`${n}.disk.*`, { freshness_seconds: 1 });
      await send(`${n}.disk.full`, { dedup_key: "d1" });
      await send(`${n}.disk.full`, { dedup_key: "d1", event_action: "acknowledge" });
      await send(`${n}.disk.ok`, { dedup_key: "d1", event_action: "RESOLVE" }, { mode: "binary" });
      const [alert] = await alertsOf(m);
      const resolved = await until(
        () => getAlert(alert.id),
        (a) => a.status === "resolved",
      );
      expect(resolved).toMatchObject({ status: "resolved", acknowledged_by: `monitor:${m.id}` });
    },
    SLOW,
  );

  test(
    "a trigger after the resolve report, before freshness_seconds, keeps the alert open; no new alert",
    async () => {
      const n = ns();
      const m = await monitor(`${n}.disk.*`, { freshness_seconds: 1 });
      await send(`${n}.disk.full`, { dedup_key: "d1" });
      await send(`${n}.disk.full`, { dedup_key: "d1", status: "resolved" });
      await send(`${n}.disk.full`, { dedup_key: "d1" });
      // Past freshness_seconds and more than one scheduler tick.
      await Bun.sleep(2_500);
      const alerts = await alertsOf(m);
      expect(alerts).toHaveLength(1);
      expect(alerts[0].status).toBe("firing");
    },
    SLOW,
  );

  test(
    "trigger and resolve report in one batch: one alert, resolved after freshness_seconds",
    async () => {
      const n = ns();
      const m = await monitor(`${n}.disk.*`, { freshness_seconds: 1 });
      const events = [
        new CloudEvent({
          source: SOURCE,
          type: `${n}.disk.full`,
          data: { dedup_key: "b1", summary: "Batch" },
        }),
        new CloudEvent({
          source: SOURCE,
          type: `${n}.disk.full`,
          data: { dedup_key: "b1", status: "resolved" },
        }),
      ];
      const res = await api
        .as()
        .post(`/api/v1/cloudevents/ingest/${token}`, JSON.stringify(events.map((e) => e.toJSON())), {
          "content-type": "application/cloudevents-batch+json",
        });
      expect([res.status, res.body]).toEqual([202, { accepted: 2 }]);
      const [alert] = await alertsOf(m);
      expect(alert.summary).toBe("Batch");
      const resolved = await until(
        () => getAlert(alert.id),
        (a) => a.status === "resolved",
      );
      expect(resolved.status).toBe("resolved");
      expect(await alertsOf(m)).toHaveLength(1);
    },
    SLOW,
  );

  test(
    "after a manual resolve the source cannot reopen it until it came up; then a new alert fires",
    async () => {
      const n = ns();
      const m = await monitor(`${n}.disk.*`, { freshness_seconds: 1 });
      await send(`${n}.disk.full`, { dedup_key: "d1" });
      const [first] = await alertsOf(m);
      expect((await api.post(`/api/v1/alerts/${first.id}/resolve`, {})).status).toBe(200);
      await send(`${n}.disk.full`, { dedup_key: "d1" });
      expect(await alertsOf(m)).toHaveLength(1);
      await send(`${n}.disk.full`, { dedup_key: "d1", status: "resolved" });
      await send(`${n}.disk.full`, { dedup_key: "d1", summary: "Again" });
      const alerts = await alertsOf(m);
      expect(alerts).toHaveLength(2);
      expect(alerts.find((a) => a.id !== first.id)).toMatchObject({ status: "firing", summary: "Again" });
      expect((await getAlert(first.id)).status).toBe("resolved");
    },
    SLOW,
  );
});
