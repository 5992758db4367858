/**
 * Replies through `svc connector` (DESIGN §7 replies, §8): an alert fired through the Events API
 * walks a policy to a trusted `cloudevents` channel; the connector (an API key and an ingest
 * token bound to that channel) delivers the `notified` event to a real sink, which answers 200
 * with a `run.service.reply.alert.claimed.v1` CloudEvent; the connector forwards it to ingest
 * and the alert ends up acknowledged by the channel. Events in answers that are not replies are
 * logged and dropped; a reply svc cannot take yet is retried.
 */
import { afterAll, afterEach, beforeAll, expect, test } from "bun:test";
import { type Client, TestServer } from "../support/harness.ts";
import { ConnectorProcess, connectorArgs, eventsKey, Sink, waitUntil } from "./support.ts";

const SLOW = 30_000;

let server: TestServer;
let api: Client;
let sink: Sink;
const running: ConnectorProcess[] = [];

beforeAll(async () => {
  server = await TestServer.start();
  api = server.client();
}, SLOW);
afterAll(() => server.dispose());
afterEach(async () => {
  for (const c of running.splice(0)) await c.kill("SIGKILL");
  sink?.stop();
});

async function created(path: string, body: Record<string, unknown>): Promise<any> {
  const res = await api.post(path, body);
  if (res.status !== 201) throw new Error(`POST ${path}: ${res.status} ${res.text}`);
  return res.body;
}

/** A cloudevents channel, a key and an ingest token bound to it, a policy and an event monitor. */
async function trustedChannel(trusted = true) {
  const channel = await created("/api/v1/notification-channels", {
    name: `Bridge ${Math.random().toString(36).slice(2, 8)}`,
    type: "cloudevents",
    config: {},
    trusted,
  });
  const key = await eventsKey(api, { channel_id: channel.id });
  const token = await created("/api/v1/org/ingest-tokens", { name: "connector", channel_id: channel.id });
  const policy = await created("/api/v1/escalation-policies", {
    name: `Policy ${Math.random()}`,
    repeat: 0,
    steps: [{ delay_seconds: 600, targets: [{ type: "channel", id: channel.id }] }],
  });
  const monitor = await created("/api/v1/monitors", {
    name: `Monitor ${Math.random()}`,
    type: "event",
    escalation_policy_id: policy.id,
  });
  return { channel, key, token: token.token as string, monitor };
}

async function trigger(monitor: { integration_key: string; id: string }, dedupKey: string): Promise<any> {
  const res = await api.as().post("/api/v1/events", {
    routing_key: monitor.integration_key,
    event_action: "trigger",
    dedup_key: dedupKey,
    payload: { summary: "Database down", source: "db01", severity: "critical" },
  });
  expect(res.status).toBe(202);
  const list = await api.get(`/api/v1/alerts?monitor_id=${monitor.id}`);
  return list.body.data[0];
}

function claimed(event: { id: string; data: any }, note: string) {
  return {
    specversion: "1.0",
    id: `reply-${event.id}`,
    source: "/bots/oncall",
    type: "run.service.reply.alert.claimed.v1",
    data: { alert_id: event.data.id, outbound_event_id: event.id, note },
  };
}

test(
  "a reply from the sink is relayed to ingest and acknowledges the alert through the trusted channel",
  async () => {
    const setup = await trustedChannel();
    sink = Sink.start();
    sink.behaviour = (r) => {
      if (r.event?.type === "run.service.alert.notified.v1") {
        // Structured-mode reply.
        return new Response(JSON.stringify(claimed(r.event as any, "on it")), {
          status: 200,
          headers: { "content-type": "application/cloudevents+json" },
        });
      }
      if (r.event?.type === "run.service.alert.fired.v1") {
        // Binary-mode answer with an event that is not a reply: logged and dropped.
        return new Response(JSON.stringify({ echo: true }), {
          status: 200,
          headers: {
            "content-type": "application/json",
            "ce-specversion": "1.0",
            "ce-id": `echo-${r.event.id}`,
            "ce-source": "/bots/echo",
            "ce-type": "com.example.echo",
          },
        });
      }
      return undefined;
    };
    const c = ConnectorProcess.start(
      connectorArgs(server, setup.key, sink, [
        "--filter",
        "run.service.alert.*",
        "--ingest-token",
        setup.token,
      ]),
    );
    running.push(c);
    await c.waitForMsg("starting position fixed");

    const alert = await trigger(setup.monitor, "db01-down");
    await sink.until(() => sink.received.some((r) => r.event?.type === "run.service.alert.notified.v1"));
    const notified = sink.received.find((r) => r.event?.type === "run.service.alert.notified.v1");
    // A key bound to the channel gets the channelid extension.
    expect(notified?.headers["ce-channelid"]).toBe(setup.channel.id);
    expect((notified?.event?.data as any)?.id).toBe(alert.id);

    await waitUntil(
      async () => (await api.get(`/api/v1/alerts/${alert.id}`)).body.status === "acknowledged",
      10_000,
      "the alert acknowledged",
    );
    const acknowledged = (await api.get(`/api/v1/alerts/${alert.id}`)).body;
    expect(acknowledged.acknowledged_by).toBe(`channel:${setup.channel.id}`);

    const forwarded = await c.waitForMsg("reply forwarded");
    expect(forwarded).toMatchObject({
      reply_type: "run.service.reply.alert.claimed.v1",
      event_id: notified?.event?.id,
    });
    const dropped = await c.waitForMsg("sink answered with an event that is not a reply: dropped");
    expect(dropped).toMatchObject({ level: "warn", response_event_type: "com.example.echo" });

    // The dispatcher's audit record: accepted, for the connector's channel.
    const adminKey = await api.post("/api/v1/api-keys", { name: "feed", scopes: ["admin"], service: true });
    const jwt = await api.as(adminKey.body.secret).post("/api/v1/auth/token", {});
    expect(jwt.status).toBe(201);
    const feed = await api
      .as(jwt.body.token)
      .get(`/api/v1/admin/cloudevents/replies?alert_id=${alert.id}&outcome=accepted`);
    expect(feed.status).toBe(200);
    expect(feed.body.data).toHaveLength(1);
    expect(feed.body.data[0]).toMatchObject({
      event_type: "run.service.reply.alert.claimed.v1",
      channel_id: setup.channel.id,
      outcome: "accepted",
    });
    // The connector never forwards the echo: the event log has no com.example.echo.
    const page = await api.get("/api/v1/cloudevents/poll?filter=com.example.echo&wait=0");
    expect(page.body.data).toEqual([]);

    const metrics = await (await fetch(`${await c.healthBase()}/metrics`)).text();
    expect(metrics).toContain("svc_connector_replies_forwarded_total 1");
    expect(metrics).toContain("svc_connector_response_events_dropped_total 1");
  },
  SLOW,
);

test(
  "a binary-mode reply is forwarded in structured mode with its attributes percent-decoded",
  async () => {
    const setup = await trustedChannel();
    sink = Sink.start();
    sink.behaviour = (r) => {
      if (r.event?.type !== "run.service.alert.notified.v1") return undefined;
      const event = r.event as any;
      return new Response(JSON.stringify({ alert_id: event.data.id, outbound_event_id: event.id }), {
        status: 200,
        headers: {
          "content-type": "application/json",
          "ce-specversion": "1.0",
          "ce-id": `bin-${event.id}`,
          "ce-source": "/bots/oncall",
          "ce-type": "run.service.reply.alert.resolved.v1",
          "ce-origin": "chat%20ops%20%C3%BC",
        },
      });
    };
    const c = ConnectorProcess.start(
      connectorArgs(server, setup.key, sink, [
        "--filter",
        "run.service.alert.*",
        "--ingest-token",
        setup.token,
      ]),
    );
    running.push(c);
    await c.waitForMsg("starting position fixed");
    const alert = await trigger(setup.monitor, "bin-reply");
    await waitUntil(
      async () => (await api.get(`/api/v1/alerts/${alert.id}`)).body.status === "resolved",
      10_000,
      "the alert resolved",
    ).catch((error) => {
      throw new Error(`${error.message}\n${c.dump()}`);
    });
    // The reply is in svc's log exactly once, as sent (the extension decoded, no invented time).
    const page = await api.get("/api/v1/cloudevents/poll?filter=run.service.reply.*&wait=0&limit=1000");
    const reply = page.body.data.find((e: any) => e.data?.alert_id === alert.id);
    expect(reply).toMatchObject({
      specversion: "1.0",
      source: "/bots/oncall",
      origin: "chat ops ü",
      type: "run.service.reply.alert.resolved.v1",
      datacontenttype: "application/json",
    });
    expect(reply.time).toBeUndefined();
  },
  SLOW,
);

test(
  "a reply that cannot be forwarded yet (503) is retried until svc takes it",
  async () => {
    const setup = await trustedChannel();
    // The connector talks to svc through a small proxy that answers the first three forwards 503.
    let proxyFailures = 3;
    const proxy = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(request) {
        const url = new URL(request.url);
        if (url.pathname.startsWith("/api/v1/cloudevents/ingest/") && proxyFailures > 0) {
          proxyFailures -= 1;
          return new Response("busy", { status: 503 });
        }
        return fetch(`${server.base}${url.pathname}${url.search}`, {
          method: request.method,
          headers: request.headers,
          body: request.method === "GET" ? undefined : await request.arrayBuffer(),
        });
      },
    });
    try {
      sink = Sink.start();
      sink.behaviour = (r) =>
        r.event?.type === "run.service.alert.notified.v1"
          ? new Response(JSON.stringify(claimed(r.event as any, "retry me")), {
              status: 200,
              headers: { "content-type": "application/cloudevents+json" },
            })
          : undefined;
      const c = ConnectorProcess.start([
        "--url",
        `http://127.0.0.1:${proxy.port}`,
        "--api-key",
        setup.key,
        "--sink",
        sink.url,
        "--filter",
        "run.service.alert.notified.v1",
        "--ingest-token",
        setup.token,
      ]);
      running.push(c);
      await c.waitForMsg("starting position fixed");
      const alert = await trigger(setup.monitor, "retry-reply");
      await waitUntil(
        async () => (await api.get(`/api/v1/alerts/${alert.id}`)).body.status === "acknowledged",
        15_000,
        "the alert acknowledged",
      );
      expect(c.count("forwarding a reply failed: retrying")).toBe(3);
      expect(c.logs.find((l) => l.msg === "forwarding a reply failed: retrying")).toMatchObject({
        level: "warn",
        status: 503,
      });
    } finally {
      proxy.stop(true);
    }
  },
  SLOW,
);
