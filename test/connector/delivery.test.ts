/**
 * `svc connector` delivering to a real sink (DESIGN §8): binary mode with `K_CE_OVERRIDES`,
 * structured mode, `Prefer: reply`, retries of 5xx until the sink recovers, a 400 skipped and
 * logged, 401 pausing delivery (not ready) without skipping, the health endpoints and metrics.
 * The svc server, the sink and the connector are real processes or servers, talking HTTP.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { type Client, TestServer } from "../support/harness.ts";
import { ConnectorProcess, connectorArgs, eventsKey, fire, Sink, waitUntil } from "./support.ts";

const SLOW = 30_000;

let server: TestServer;
let api: Client;
let key: string;
let sink: Sink;
const running: ConnectorProcess[] = [];

beforeAll(async () => {
  server = await TestServer.start();
  api = server.client();
  key = await eventsKey(api);
}, SLOW);
afterAll(async () => {
  await server.dispose();
});
afterEach(async () => {
  for (const c of running.splice(0)) await c.kill("SIGKILL");
  sink?.stop();
});

/** A connector for events of `type`, started and connected (its starting position fixed). */
async function connect(type: string, extra: string[] = [], env: Record<string, string> = {}) {
  const c = ConnectorProcess.start(connectorArgs(server, key, sink, ["--filter", type, ...extra]), env);
  running.push(c);
  await c.waitForMsg("starting position fixed");
  return c;
}

async function metric(c: ConnectorProcess, name: string): Promise<number> {
  const text = await (await fetch(`${await c.healthBase()}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return Number(line?.split(" ")[1]);
}

describe("encoding", () => {
  test(
    "binary mode by default: ce-* headers, the data as body, Prefer: reply, overrides applied",
    async () => {
      sink = Sink.start();
      const type = "com.example.binary";
      const c = await connect(type, [], {
        K_CE_OVERRIDES: JSON.stringify({ extensions: { cluster: "prod-eu", team: "sre ops ü" } }),
      });
      const [id] = await fire(server, 1, type, () => ({
        subject: "db 1 — primary",
        time: "2024-05-01T10:00:00.123456+02:00",
        team: "original",
      }));
      await sink.until(() => sink.received.length >= 1);
      const r = sink.received[0] as (typeof sink.received)[number];
      expect(r.error).toBeNull();
      expect(r.headers.prefer).toBe("reply");
      expect(r.headers["content-type"]).toBe("application/json");
      expect(r.headers["ce-id"]).toBe(id as string);
      expect(r.headers["ce-specversion"]).toBe("1.0");
      expect(r.headers["ce-type"]).toBe(type);
      // Percent-encoded per the HTTP binding; the time exactly as ingested (not re-formatted).
      expect(r.headers["ce-subject"]).toBe("db%201%20%E2%80%94%20primary");
      expect(r.headers["ce-time"]).toBe("2024-05-01T10:00:00.123456+02:00");
      expect(r.headers["ce-cluster"]).toBe("prod-eu");
      expect(r.headers["ce-team"]).toBe("sre%20ops%20%C3%BC");
      expect(JSON.parse(r.body)).toEqual({ n: 0 });
      expect(r.event?.type).toBe(type);
      expect((r.event as any).cluster).toBe("prod-eu");
      expect(r.event?.data).toEqual({ n: 0 });
      await waitUntil(async () => (await metric(c, "svc_connector_events_delivered_total")) === 1);
    },
    SLOW,
  );

  test(
    "--structured: one application/cloudevents+json body, overrides applied, core attributes untouched",
    async () => {
      sink = Sink.start();
      const type = "com.example.structured";
      await connect(type, ["--structured"], { K_CE_OVERRIDES: '{"extensions":{"cluster":"prod-eu"}}' });
      const [id] = await fire(server, 1, type, () => ({ subject: "s1" }));
      await sink.until(() => sink.received.length >= 1);
      const r = sink.received[0] as (typeof sink.received)[number];
      expect(r.headers["content-type"]).toBe("application/cloudevents+json; charset=utf-8");
      expect(r.headers.prefer).toBe("reply");
      expect(JSON.parse(r.body)).toEqual({
        specversion: "1.0",
        id,
        source: "/tests/connector",
        type,
        subject: "s1",
        data: { n: 0 },
        cluster: "prod-eu",
      });
      expect(r.event?.id).toBe(id as string);
    },
    SLOW,
  );
});

describe("sink answers", () => {
  test(
    "500s are retried with backoff until the sink recovers: every event arrives, none is lost",
    async () => {
      sink = Sink.start();
      let failing = true;
      sink.behaviour = () => (failing ? new Response("down", { status: 500 }) : undefined);
      const type = "com.example.flaky";
      const c = await connect(type);
      const ids = await fire(server, 20, type);
      await waitUntil(() => sink.received.length >= 60, 15_000, "retries");
      expect(sink.accepted().size).toBe(0);
      failing = false;
      await sink.until(() => sink.accepted().size === 20, 20_000, "all 20 accepted");
      expect([...sink.accepted().keys()].sort()).toEqual([...ids].sort());
      expect(c.count("delivery failed: retrying")).toBeGreaterThanOrEqual(40);
      const retry = c.logs.find((l) => l.msg === "delivery failed: retrying");
      expect(retry).toMatchObject({ level: "warn", status: 500 });
      await waitUntil(async () => (await metric(c, "svc_connector_events_delivered_total")) === 20);
      expect(await metric(c, "svc_connector_delivery_retries_total")).toBeGreaterThanOrEqual(40);
      expect(await metric(c, "svc_connector_events_skipped_total")).toBe(0);
    },
    SLOW,
  );

  test(
    "404, 408, 409 and 429 are retried; a 429's Retry-After is honoured",
    async () => {
      sink = Sink.start();
      const statuses = [404, 408, 409, 429];
      sink.behaviour = (_r, attempt) => {
        const status = statuses[attempt - 1];
        if (status === undefined) return undefined;
        return new Response(null, { status, headers: status === 429 ? { "retry-after": "1" } : {} });
      };
      const type = "com.example.retried";
      await connect(type);
      const [id] = await fire(server, 1, type);
      await sink.until(() => sink.accepted().has(id as string), 15_000);
      expect(sink.received.map((r) => r.status)).toEqual([404, 408, 409, 429, 202]);
      const last = sink.received[4] as (typeof sink.received)[number];
      const before = sink.received[3] as (typeof sink.received)[number];
      expect(last.at - before.at).toBeGreaterThanOrEqual(950);
    },
    SLOW,
  );

  test(
    "a 400 is logged with the event id and skipped; the events after it go on",
    async () => {
      sink = Sink.start();
      const type = "com.example.bad";
      const c = await connect(type);
      sink.behaviour = (r) =>
        (r.event?.data as any)?.n === 2 ? new Response("no", { status: 400 }) : undefined;
      const ids = await fire(server, 5, type);
      const bad = ids[2] as string;
      await sink.until(() => sink.received.length >= 5);
      await Bun.sleep(300);
      expect(sink.received.filter((r) => r.event?.id === bad).length).toBe(1);
      expect([...sink.accepted().keys()].sort()).toEqual(ids.filter((id) => id !== bad).sort());
      const line = await c.waitForMsg("sink refused the event for good: skipped");
      expect(line).toMatchObject({ level: "error", event_id: bad, status: 400, event_type: type });
      expect(await metric(c, "svc_connector_events_skipped_total")).toBe(1);
      await waitUntil(async () => (await metric(c, "svc_connector_events_delivered_total")) === 4);
    },
    SLOW,
  );

  test.each([401, 403])(
    "%d pauses delivery: not ready, retried with backoff, never skipped; resumes when accepted",
    async (status) => {
      sink = Sink.start();
      let refuse = true;
      sink.behaviour = () => (refuse ? new Response(null, { status }) : undefined);
      const type = `com.example.auth${status}`;
      const c = await connect(type);
      const health = await c.healthBase();
      expect((await fetch(`${health}/readyz`)).status).toBe(200);
      const ids = await fire(server, 10, type);
      await c.waitForMsg("sink refuses the connector (401/403): delivery paused, retrying");
      const ready = await fetch(`${health}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toEqual({
        status: "not_ready",
        reasons: ["sink refuses the connector (401/403)"],
      });
      expect(await metric(c, "svc_connector_delivery_paused")).toBe(1);
      // Paused: the first attempts in flight all got 401; from then on one event probes, with
      // backoff, while the others wait instead of hammering the sink.
      await Bun.sleep(200);
      const before = sink.received.length;
      await Bun.sleep(2000);
      expect(sink.received.length - before).toBeLessThanOrEqual(3);
      refuse = false;
      await sink.until(() => sink.accepted().size === 10, 20_000, "all accepted after the pause");
      expect([...sink.accepted().keys()].sort()).toEqual([...ids].sort());
      await c.waitForMsg("sink accepts the connector again: delivery resumed");
      expect((await fetch(`${health}/readyz`)).status).toBe(200);
      expect(await metric(c, "svc_connector_events_skipped_total")).toBe(0);
    },
    SLOW,
  );
});

describe("operations", () => {
  test(
    "/healthz, /readyz and /metrics on --health-listen",
    async () => {
      sink = Sink.start();
      const c = await connect("com.example.ops");
      const health = await c.healthBase();
      expect(await (await fetch(`${health}/healthz`)).json()).toEqual({ status: "ok" });
      expect(await (await fetch(`${health}/readyz`)).json()).toEqual({ status: "ready" });
      const res = await fetch(`${health}/metrics`);
      expect(res.headers.get("content-type")).toStartWith("text/plain; version=0.0.4");
      const text = await res.text();
      for (const name of [
        "svc_connector_events_delivered_total",
        "svc_connector_delivery_retries_total",
        "svc_connector_events_skipped_total",
        "svc_connector_replies_forwarded_total",
        "svc_connector_ready 1",
      ]) {
        expect(text).toContain(name);
      }
      expect((await fetch(`${health}/nope`)).status).toBe(404);
    },
    SLOW,
  );

  test(
    "svc refusing the API key: logged at error, retried, not ready",
    async () => {
      sink = Sink.start();
      const c = ConnectorProcess.start([
        "--url",
        server.base,
        "--api-key",
        "svc_0000000000000000000000000000000000000000",
        "--sink",
        sink.url,
        "--health-listen",
        "127.0.0.1:0",
      ]);
      running.push(c);
      const line = await c.waitForMsg("reading the source config failed: retrying");
      expect(line).toMatchObject({ level: "error", status: 401, code: "unauthenticated" });
      const ready = await fetch(`${await c.healthBase()}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toEqual({
        status: "not_ready",
        reasons: ["source config not read yet", "svc refuses the API key"],
      });
      expect(c.logs.map((l) => JSON.stringify(l)).join("\n")).not.toContain("svc_0000");
    },
    SLOW,
  );
});
