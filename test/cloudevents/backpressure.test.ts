/**
 * Back-pressure on the SSE stream (DESIGN §7): a client that never reads must not hold the
 * server's memory or slow other consumers down. A raw TCP client opens a stream and never
 * reads while ~10 MB of events are ingested: the server drops it (`slow event stream dropped`),
 * a reading stream gets every event, and the server stays healthy.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { connect, type Socket } from "node:net";
import { TestServer } from "../support/harness.ts";
import { CurlStream, ce, eventually, ingest, logLines, poll, streamUrl } from "./support.ts";

const SLOW = 60_000;
const EVENTS = 100;
const EVENT_BYTES = 100 * 1024;

let server: TestServer;

beforeAll(async () => {
  server = await TestServer.start();
}, SLOW);
afterAll(() => server.dispose());

/** A stream request on a raw socket whose answer is never read. */
function stalledStream(): Promise<Socket> {
  const url = new URL(streamUrl(server, { from: "now" }));
  return new Promise((resolve, reject) => {
    const socket = connect({ host: url.hostname, port: Number(url.port) }, () => {
      socket.write(
        `GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\n` +
          `Authorization: Bearer ${server.init?.api_key.secret}\r\nAccept: text/event-stream\r\n\r\n`,
      );
      // Never read: no 'data' listener, and reading paused.
      socket.pause();
      resolve(socket);
    });
    socket.on("error", reject);
  });
}

test(
  "a stream that never reads is dropped; a reading stream gets every event; the server stays healthy",
  async () => {
    const stalled = await stalledStream();
    const reader = new CurlStream(streamUrl(server, { from: "now" }), server.init?.api_key.secret as string);
    try {
      await reader.opened();
      // Give the stalled request time to be registered before the flood.
      await Bun.sleep(300);
      const blob = "x".repeat(EVENT_BYTES);
      const sent: Record<string, unknown>[] = [];
      for (let i = 0; i < EVENTS; i += 10) {
        const batch = Array.from({ length: 10 }, (_, j) =>
          ce("com.example.big", { data: { i: i + j, blob } }),
        );
        sent.push(...(await ingest(server, batch)));
      }

      await eventually(
        () => logLines(server, "slow event stream dropped").length > 0,
        15_000,
        "the drop log line",
      );
      const [drop] = logLines(server, "slow event stream dropped");
      expect(drop?.level).toBe("warn");
      expect(drop?.queued_bytes).toBeGreaterThan(4 * 1024 * 1024);
      expect(drop?.org_id).toBe(server.init?.org.id);

      await reader.waitForEvents(EVENTS, 20_000);
      expect(reader.events.map((e) => e.data.id)).toEqual(sent.map((e) => e.id));
      expect(reader.events.every((e) => e.data.data.blob === blob)).toBe(true);
      expect(logLines(server, "slow event stream dropped")).toHaveLength(1);

      // Healthy: liveness, readiness, a poll, a new stream that receives.
      expect((await fetch(`${server.base}/healthz`)).status).toBe(200);
      expect((await fetch(`${server.base}/readyz`)).status).toBe(200);
      const page = await poll(server.client(), { limit: 1 });
      expect(page.data).toHaveLength(1);
      const fresh = new CurlStream(streamUrl(server, { from: "now" }), server.init?.api_key.secret as string);
      try {
        await fresh.opened();
        const after = await ingest(server, [ce("com.example.after-flood")]);
        await fresh.waitForEvents(1);
        expect(fresh.events.map((e) => e.data)).toEqual(after);
      } finally {
        await fresh.close();
      }
      // The dropped stream gave its slot back: metrics count only the reader.
      const metrics = await (await fetch(`${server.base}/metrics`)).text();
      const streams = metrics.split("\n").find((l) => l.startsWith("svc_cloudevents_streams{"));
      expect(streams).toBe(`svc_cloudevents_streams{org_id="${server.init?.org.id}"} 1`);
    } finally {
      stalled.destroy();
      await reader.close();
    }
  },
  SLOW,
);
