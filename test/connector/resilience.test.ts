/**
 * `svc connector` across failures (DESIGN §8): `kill -9` mid-stream and a restart from the state
 * file (every event delivered at least once), SIGTERM (the event in flight finishes, exit 0, the
 * next start goes on after it), a 410 `cursor_expired` (restart from the oldest retained event),
 * the org's stream cap (auto mode polls meanwhile and streams again later), a svc restart
 * (reconnects), a change of mode in the source config (no event lost or repeated), and TLS to
 * the sink with `K_CA_CERTS`. Real processes throughout: svc, the connector, a Bun sink.
 */
import { Database } from "bun:sqlite";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { type Client, TestServer, tempDir } from "../support/harness.ts";
import {
  ConnectorProcess,
  connectorArgs,
  eventsKey,
  fire,
  SilencingProxy,
  Sink,
  waitUntil,
} from "./support.ts";

const SLOW = 30_000;
const VERY_SLOW = 60_000;

let dir: string;
const running: ConnectorProcess[] = [];
const sinks: Sink[] = [];
const servers: TestServer[] = [];

beforeAll(() => {
  dir = tempDir("svc-connector-");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(async () => {
  for (const c of running.splice(0)) await c.kill("SIGKILL");
  for (const s of sinks.splice(0)) s.stop();
  for (const s of servers.splice(0)) await s.dispose();
});

async function setup(
  env: Record<string, string> = {},
): Promise<{ server: TestServer; api: Client; key: string }> {
  const server = await TestServer.start({ env });
  servers.push(server);
  const api = server.client();
  return { server, api, key: await eventsKey(api) };
}

function startSink(): Sink {
  const sink = Sink.start();
  sinks.push(sink);
  return sink;
}

function start(args: string[], env: Record<string, string> = {}): ConnectorProcess {
  const c = ConnectorProcess.start(args, env);
  running.push(c);
  return c;
}

let stateCount = 0;
function stateFile(): string {
  stateCount += 1;
  return join(dir, `state-${stateCount}.json`);
}

async function metric(c: ConnectorProcess, name: string): Promise<number> {
  const text = await (await fetch(`${await c.healthBase()}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return Number(line?.split(" ")[1]);
}

describe("restarts", () => {
  test(
    "kill -9 mid-stream, then a restart from the state file: every event delivered at least once",
    async () => {
      const { server, key } = await setup();
      const sink = startSink();
      sink.behaviour = async () => {
        await Bun.sleep(2);
        return undefined;
      };
      const state = stateFile();
      const type = "com.example.crash";
      const args = connectorArgs(server, key, sink, [
        "--filter",
        type,
        "--state-file",
        state,
        "--concurrency",
        "8",
      ]);
      const first = start(args);
      await first.waitForMsg("starting position fixed");

      const ids: string[] = [];
      let firing = true;
      const firer = (async () => {
        while (firing) {
          ids.push(...(await fire(server, 25, type)));
          await Bun.sleep(10);
        }
      })();
      await sink.until(() => sink.accepted().size >= 400, 20_000, "400 events before the crash");
      expect(await first.kill("SIGKILL")).not.toBe(0);
      const atCrash = sink.accepted().size;
      // Events keep coming while the connector is down.
      await Bun.sleep(300);
      firing = false;
      await firer;
      ids.push(...(await fire(server, 100, type)));
      const saved = JSON.parse(readFileSync(state, "utf8"));
      expect(typeof saved.cursor).toBe("string");

      const second = start(args);
      const started = await second.waitForMsg("connector starting");
      expect(started.resume).toBe("saved cursor");
      await sink.until(
        () => {
          const accepted = sink.accepted();
          return ids.every((id) => accepted.has(id));
        },
        30_000,
        `all ${ids.length} events after the restart`,
      );
      const accepted = sink.accepted();
      const duplicates = [...accepted.values()].reduce((sum, n) => sum + n - 1, 0);
      // At least once: the only repeats are those the crash left uncommitted (delivered after the
      // last state write), never a replay from the start.
      expect(duplicates).toBeLessThan(atCrash);
      expect(ids.length).toBeGreaterThan(atCrash);
      expect(accepted.size).toBe(new Set(ids).size);
    },
    VERY_SLOW,
  );

  test(
    "SIGTERM: the event in flight finishes, exit 0, and the next start continues after it",
    async () => {
      const { server, key } = await setup();
      const sink = startSink();
      const started: string[] = [];
      sink.behaviour = async (r) => {
        started.push(r.event?.id as string);
        await Bun.sleep(700);
        return undefined;
      };
      const state = stateFile();
      const type = "com.example.term";
      const args = connectorArgs(server, key, sink, [
        "--filter",
        type,
        "--state-file",
        state,
        "--concurrency",
        "1",
      ]);
      const c = start(args);
      await c.waitForMsg("starting position fixed");
      const ids = await fire(server, 3, type);
      await waitUntil(() => started.length === 1, 10_000, "the first delivery in flight");
      expect(await c.kill("SIGTERM")).toBe(0);
      expect(c.logs.find((l) => l.msg === "stopping")).toMatchObject({ reason: "SIGTERM", in_flight: 1 });
      expect(c.logs.at(-1)).toMatchObject({ msg: "stopped" });
      // The delivery in flight was answered and committed before the exit.
      expect([...sink.accepted().keys()]).toEqual([ids[0] as string]);
      expect(JSON.parse(readFileSync(state, "utf8")).cursor).toEqual(expect.any(String));

      const again = start(args);
      await sink.until(() => sink.accepted().size === 3, 15_000, "the other two events");
      expect(sink.received.map((r) => r.event?.id)).toEqual(ids);
      expect(await again.kill("SIGTERM")).toBe(0);
    },
    SLOW,
  );

  test(
    "410 cursor_expired: logged at error, restart from the oldest retained event",
    async () => {
      const { server, key } = await setup();
      const sink = startSink();
      const type = "com.example.expired";
      const state = stateFile();
      const args = connectorArgs(server, key, sink, ["--filter", type, "--state-file", state]);
      const first = start(args);
      await first.waitForMsg("starting position fixed");
      const delivered = await fire(server, 3, type);
      await sink.until(() => sink.accepted().size === 3);
      expect(await first.kill("SIGTERM")).toBe(0);

      // While the connector is down, retention removes events it never read: svc's retention
      // job does this after `events_days`; here its two writes are made directly in the store.
      const missed = await fire(server, 4, type);
      const db = new Database(join(server.dataDir, "svc.db"));
      db.run("PRAGMA busy_timeout = 5000");
      const { seq, org_id } = db
        .query("SELECT seq, org_id FROM events WHERE id = ?")
        .get(missed[1] as string) as { seq: number; org_id: string };
      db.run("DELETE FROM events WHERE org_id = ? AND seq <= ?", [org_id, seq]);
      db.run(
        "INSERT INTO event_horizons (org_id, pruned_through) VALUES (?, ?) ON CONFLICT (org_id) DO UPDATE SET pruned_through = excluded.pruned_through",
        [org_id, seq],
      );
      db.close();

      const second = start(args);
      const line = await second.waitForLog((l) => String(l.msg).startsWith("CURSOR EXPIRED"));
      expect(line).toMatchObject({ level: "error", status: 410, code: "cursor_expired" });
      await second.waitForLog((l) => l.msg === "starting position fixed" && l.from === "earliest");
      await sink.until(() => sink.accepted().size === 5, 10_000, "the retained events");
      // The two removed events are gone for good; the two retained after them arrive.
      expect(sink.received.map((r) => r.event?.id)).toEqual([...delivered, ...missed.slice(2)]);
      expect(await metric(second, "svc_connector_cursor_expired_total")).toBe(1);
    },
    SLOW,
  );

  test(
    "no saved cursor: --start now skips what came before, --start earliest replays retention",
    async () => {
      const { server, key } = await setup();
      const type = "com.example.start";
      const before = await fire(server, 3, type);
      const sinkNow = startSink();
      const now = start(connectorArgs(server, key, sinkNow, ["--filter", type, "--state-file", stateFile()]));
      await now.waitForMsg("starting position fixed");
      const sinkEarliest = startSink();
      const earliest = start(
        connectorArgs(server, key, sinkEarliest, [
          "--filter",
          type,
          "--state-file",
          stateFile(),
          "--start",
          "earliest",
        ]),
      );
      await earliest.waitForMsg("starting position fixed");
      const after = await fire(server, 2, type);
      await sinkEarliest.until(() => sinkEarliest.accepted().size === 5);
      await sinkNow.until(() => sinkNow.accepted().size === 2);
      expect(sinkNow.received.map((r) => r.event?.id).sort()).toEqual([...after].sort());
      expect(sinkEarliest.received.map((r) => r.event?.id).sort()).toEqual([...before, ...after].sort());
    },
    SLOW,
  );
});

describe("consumption modes", () => {
  test(
    "the stream cap reached: auto mode polls meanwhile, then streams again once a stream is free",
    async () => {
      const { server, api, key } = await setup({ SVC_LIMITS_STREAMS_PER_ORG: "1" });
      // Another consumer holds the org's only stream.
      const blocker = new AbortController();
      const held = await fetch(`${server.base}/api/v1/cloudevents/stream?from=now`, {
        headers: { authorization: `Bearer ${key}` },
        signal: blocker.signal,
      });
      expect(held.status).toBe(200);
      // Read it, as a live consumer would (an unread response may be collected and closed).
      const reader = (held.body as ReadableStream<Uint8Array>).getReader();
      void (async () => {
        try {
          while (!(await reader.read()).done);
        } catch {
          // aborted below
        }
      })();
      const capped = await api.as(key).get("/api/v1/cloudevents/stream?from=now");
      expect(capped.status).toBe(429);

      const sink = startSink();
      const type = "com.example.capped";
      const c = start(connectorArgs(server, key, sink, ["--filter", type]));
      const fallback = await c.waitForMsg("event stream unavailable: polling meanwhile");
      expect(fallback).toMatchObject({ level: "warn", status: 429, code: "stream_limit_reached" });
      expect(fallback.poll_for_ms).toBeGreaterThanOrEqual(10_000);
      const ids = await fire(server, 5, type);
      await sink.until(() => sink.accepted().size === 5, 10_000, "events by polling");
      expect([...sink.accepted().keys()].sort()).toEqual([...ids].sort());
      expect(await metric(c, 'svc_connector_mode{mode="poll"}')).toBe(1);

      blocker.abort();
      await c.waitForMsg("event stream connected", 30_000);
      expect(await metric(c, 'svc_connector_mode{mode="stream"}')).toBe(1);
      const more = await fire(server, 5, type);
      await sink.until(() => sink.accepted().size === 10, 10_000, "events by streaming");
      expect(more.every((id) => sink.accepted().get(id) === 1)).toBe(true);
    },
    VERY_SLOW,
  );

  test(
    "svc restarts: the connector reconnects and loses nothing",
    async () => {
      const { server, key } = await setup();
      const sink = startSink();
      const type = "com.example.restart";
      const c = start(connectorArgs(server, key, sink, ["--filter", type]));
      await c.waitForMsg("event stream connected");
      const first = await fire(server, 10, type);
      await sink.until(() => sink.accepted().size === 10);

      const port = new URL(server.base).port;
      expect(await server.stop()).toBe(0);
      servers.splice(servers.indexOf(server), 1);
      await Bun.sleep(500);
      const restarted = await TestServer.start({
        dataDir: server.dataDir,
        init: false,
        args: ["--listen", `127.0.0.1:${port}`],
      });
      servers.push(restarted);
      expect(restarted.base).toBe(server.base);
      const second = await fire({ base: restarted.base, init: server.init }, 10, type);
      await sink.until(() => sink.accepted().size === 20, 20_000, "events after the restart");
      expect([...sink.accepted().keys()].sort()).toEqual([...first, ...second].sort());
      expect([...sink.accepted().values()].every((n) => n === 1)).toBe(true);
      await waitUntil(() => c.count("event stream connected") >= 2, 30_000, "the stream again");
    },
    VERY_SLOW,
  );

  test(
    "a stream that goes silent without closing is given up after 2 × heartbeat + 5 s and reopened",
    async () => {
      const { server, api, key } = await setup();
      const put = await api.put("/api/v1/org/settings", {
        cloudevents: { source: { mode: "stream", stream_heartbeat_seconds: 1 } },
      });
      expect(put.status).toBe(200);
      const proxy = await SilencingProxy.start(server.base);
      try {
        const sink = startSink();
        const type = "com.example.silent";
        const c = start([...connectorArgs(server, key, sink, ["--filter", type]), "--url", proxy.base]);
        await c.waitForMsg("event stream connected");
        const first = await fire(server, 3, type);
        await sink.until(() => sink.accepted().size === 3);

        proxy.silence();
        const silencedAt = Date.now();
        const second = await fire(server, 3, type);
        const gaveUp = await c.waitForMsg("event stream silent: reconnecting", 15_000);
        // Heartbeats every second stop arriving: 7 s of silence (checked every second) ends it.
        expect(Date.now() - silencedAt).toBeGreaterThanOrEqual(6_000);
        expect(gaveUp.silent_ms).toBeGreaterThan(7_000);
        await sink.until(() => sink.accepted().size === 6, 10_000, "the events sent while silent");
        expect([...sink.accepted().keys()].sort()).toEqual([...first, ...second].sort());
        expect([...sink.accepted().values()].every((n) => n === 1)).toBe(true);
        await waitUntil(() => c.count("event stream connected") === 2, 5_000, "the second connect line");
      } finally {
        proxy.stop();
      }
    },
    VERY_SLOW,
  );

  test(
    "a mode change in the source config applies without losing or repeating an event",
    async () => {
      const { server, api, key } = await setup();
      const put = await api.put("/api/v1/org/settings", {
        cloudevents: { source: { mode: "stream", refresh_after_seconds: 10, poll_interval_seconds: 1 } },
      });
      expect(put.status).toBe(200);
      const sink = startSink();
      const type = "com.example.modes";
      const c = start(connectorArgs(server, key, sink, ["--filter", type]));
      await c.waitForMsg("event stream connected");
      const ids: string[] = [];
      ids.push(...(await fire(server, 5, type)));
      await sink.until(() => sink.accepted().size === 5);

      const toPoll = await api.put("/api/v1/org/settings", {
        cloudevents: { source: { mode: "poll", refresh_after_seconds: 10, poll_interval_seconds: 1 } },
      });
      expect(toPoll.status).toBe(200);
      // Events keep arriving while the connector learns about the change (within 10 s).
      const changed = (async () => {
        await c.waitForMsg("source config changed", 15_000);
      })();
      let done = false;
      void changed.then(() => {
        done = true;
      });
      while (!done) {
        ids.push(...(await fire(server, 3, type)));
        await Bun.sleep(250);
      }
      await changed;
      ids.push(...(await fire(server, 5, type)));
      await sink.until(() => sink.accepted().size === ids.length, 15_000, "every event once");
      expect([...sink.accepted().values()].every((n) => n === 1)).toBe(true);
      expect(sink.received).toHaveLength(ids.length);
      expect(await metric(c, 'svc_connector_mode{mode="poll"}')).toBe(1);
    },
    VERY_SLOW,
  );
});

describe("TLS", () => {
  test(
    "K_CA_CERTS: the sink's certificate is trusted through the given PEM, and only then",
    async () => {
      const certDir = join(dir, "tls");
      const made = Bun.spawnSync(
        [
          "openssl",
          "req",
          "-x509",
          "-newkey",
          "ec",
          "-pkeyopt",
          "ec_paramgen_curve:prime256v1",
          "-nodes",
          "-days",
          "1",
          "-subj",
          "/CN=127.0.0.1",
          "-addext",
          "subjectAltName=IP:127.0.0.1",
          "-keyout",
          `${certDir}-key.pem`,
          "-out",
          `${certDir}-cert.pem`,
        ],
        { stderr: "pipe" },
      );
      expect(made.exitCode).toBe(0);
      const cert = readFileSync(`${certDir}-cert.pem`, "utf8");
      const tlsKey = readFileSync(`${certDir}-key.pem`, "utf8");
      const { server, key } = await setup();
      const sink = Sink.start({ cert, key: tlsKey });
      sinks.push(sink);
      expect(sink.url).toStartWith("https://");
      const type = "com.example.tls";

      const untrusted = start(connectorArgs(server, key, sink, ["--filter", type]));
      await untrusted.waitForMsg("starting position fixed");
      const trusted = start(connectorArgs(server, key, sink, ["--filter", type]), { K_CA_CERTS: cert });
      await trusted.waitForMsg("starting position fixed");
      const [id] = await fire(server, 1, type);
      await sink.until(() => sink.accepted().has(id as string));
      const failed = await untrusted.waitForMsg("delivery failed: retrying");
      expect(failed).toMatchObject({ event_id: id, status: 0 });
      expect(sink.accepted().get(id as string)).toBe(1);
    },
    SLOW,
  );
});
