/**
 * The Server-Sent Events consumer of the CloudEvents plane (DESIGN §7) through a real
 * `svc serve` and real clients: `curl -N` for the wire format (`id:` + one `data:` line),
 * resuming by `cursor` and by `Last-Event-ID`, the shared position with poll, heartbeats, the
 * `eventsource` package reconnecting across a server restart, and shutdown with streams open.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { EventSource } from "eventsource";
import { type Client, TestServer } from "../support/harness.ts";
import {
  CurlStream,
  ce,
  eventually,
  expectError,
  ingest,
  ingestMany,
  logLines,
  mark,
  poll,
  streamUrl,
} from "./support.ts";

const SLOW = 30_000;

let server: TestServer;
let api: Client;
let key: string;

beforeAll(async () => {
  server = await TestServer.start({ env: { SVC_LIMITS_POLL_PER_MINUTE: "100000" } });
  api = server.client();
  key = server.init?.api_key.secret as string;
}, SLOW);
afterAll(() => server.dispose());

/** Opens a curl stream, runs `fn`, always closes it. */
async function withStream<T>(
  query: Record<string, string | undefined>,
  fn: (s: CurlStream) => Promise<T>,
  headers: Record<string, string> = {},
): Promise<T> {
  const s = new CurlStream(streamUrl(server, query), key, headers);
  try {
    return await fn(s);
  } finally {
    await s.close();
  }
}

describe("wire format", () => {
  test("text/event-stream with no caching, opened by a comment", async () => {
    const controller = new AbortController();
    const res = await fetch(streamUrl(server, { from: "now" }), {
      headers: { authorization: `Bearer ${key}` },
      signal: controller.signal,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const { value } = await reader.read();
    expect(new TextDecoder().decode(value)).toStartWith(":");
    controller.abort();
  });

  test(
    "each event is `id: <cursor>` and one `data:` line holding the structured event",
    async () => {
      const start = await mark(api);
      const sent = await ingest(server, [
        ce("com.example.wire", { data: { text: "two\nlines\r\nand: colons", n: 1 } }),
        ce("com.example.wire", { datacontenttype: "text/plain", data: "plain\ntext" }),
        ce("com.example.wire", { data_base64: "AAEC", subject: "bin" }),
      ]);
      await withStream({ cursor: start }, async (s) => {
        await s.waitForEvents(3);
        await Bun.sleep(200);
        expect(s.events.map((e) => e.data)).toEqual(sent);
        for (const event of s.events) {
          expect(event.dataLines).toHaveLength(1);
          expect(event.raw.split("\n")).toEqual([`id: ${event.id}`, `data: ${event.dataLines[0]}`]);
          expect(event.id).toMatch(/^[A-Za-z0-9_-]+$/);
        }
        // The id is a cursor: polling from the first one returns the other two.
        const page = await poll(api, { cursor: s.events[0]?.id as string });
        expect(page.data).toEqual(sent.slice(1));
      });
    },
    SLOW,
  );

  test(
    "live events arrive promptly and in order",
    async () => {
      await withStream({ from: "now" }, async (s) => {
        await s.opened();
        const sent: Record<string, unknown>[] = [];
        for (let i = 0; i < 5; i++) {
          const began = Date.now();
          sent.push(...(await ingest(server, [ce("com.example.live", { data: { i } })])));
          await s.waitForEvents(i + 1, 2_000);
          expect(Date.now() - began).toBeLessThan(1_000);
        }
        expect(s.events.map((e) => e.data)).toEqual(sent);
      });
    },
    SLOW,
  );

  test("a bad cursor or filter is a JSON 400, not a stream", async () => {
    const headers = { authorization: `Bearer ${key}` };
    const bad = await api.get("/api/v1/cloudevents/stream?cursor=garbage");
    expectError(bad, 400, "invalid_cursor");
    const filter = await api.get("/api/v1/cloudevents/stream?filter=a,,b");
    expectError(filter, 400, "validation_failed");
    const lastEventId = await fetch(streamUrl(server), {
      headers: { ...headers, "last-event-id": "garbage" },
    });
    expect(lastEventId.status).toBe(400);
    expect(((await lastEventId.json()) as any).error.code).toBe("invalid_cursor");
  });
});

describe("resuming", () => {
  let sent: Record<string, unknown>[];
  let start: string;
  let ids: string[];

  beforeAll(async () => {
    start = await mark(api);
    sent = await ingestMany(server, "com.example.resume", 4);
    ids = await withStream({ cursor: start }, async (s) => {
      await s.waitForEvents(4);
      return s.events.map((e) => e.id as string);
    });
  });

  test("by the `cursor` query parameter: continues after the event it names", async () => {
    await withStream({ cursor: ids[1] }, async (s) => {
      await s.waitForEvents(2);
      await Bun.sleep(300);
      expect(s.events.map((e) => e.data)).toEqual(sent.slice(2));
      expect(s.events.map((e) => e.id)).toEqual(ids.slice(2));
    });
  });

  test("by the Last-Event-ID header: continues after the event it names", async () => {
    await withStream(
      {},
      async (s) => {
        await s.waitForEvents(1);
        await Bun.sleep(300);
        expect(s.events.map((e) => e.data)).toEqual(sent.slice(3));
      },
      { "Last-Event-ID": ids[2] as string },
    );
  });

  test("Last-Event-ID wins over the URL's cursor (a reconnecting EventSource keeps its URL)", async () => {
    await withStream(
      { cursor: start },
      async (s) => {
        await s.waitForEvents(2);
        await Bun.sleep(300);
        expect(s.events.map((e) => e.data)).toEqual(sent.slice(2));
      },
      { "Last-Event-ID": ids[1] as string },
    );
  });

  test("poll and stream with the same cursor resume from the same position", async () => {
    // A stream's id, polled.
    const polled = await poll(api, { cursor: ids[0] as string });
    expect(polled.data).toEqual(sent.slice(1));
    // A poll's next_cursor, streamed.
    const page = await poll(api, { cursor: start, limit: 2 });
    expect(page.data).toEqual(sent.slice(0, 2));
    await withStream({ cursor: page.next_cursor }, async (s) => {
      await s.waitForEvents(2);
      await Bun.sleep(300);
      expect(s.events.map((e) => e.data)).toEqual(sent.slice(2));
      // And the stream's last id, polled, is the end: nothing is left.
      const after = await poll(api, { cursor: s.events[1]?.id as string });
      expect(after).toEqual({ data: [], next_cursor: expect.any(String), has_more: false });
    });
  });

  test(
    "a filtered stream catches up past a long run of events its filter skips",
    async () => {
      const from = await mark(api);
      await ingestMany(server, "com.example.noise", 2_600);
      const [wanted] = await ingest(server, [ce("com.example.signal")]);
      await withStream({ cursor: from, filter: "com.example.signal" }, async (s) => {
        const began = Date.now();
        // Heartbeats are 20 s apart here: the event must not wait for one.
        await s.waitForEvents(1, 5_000);
        expect(Date.now() - began).toBeLessThan(5_000);
        expect(s.events.map((e) => e.data)).toEqual([wanted as Record<string, unknown>]);
        // And it then follows live events.
        const [next] = await ingest(server, [ce("com.example.signal")]);
        await s.waitForEvents(2, 3_000);
        expect(s.events[1]?.data).toEqual(next as Record<string, unknown>);
      });
    },
    SLOW,
  );

  test(
    "a long backlog streams in full and in order",
    async () => {
      const from = await mark(api);
      const backlog = await ingestMany(server, "com.example.backlog", 2_500);
      await withStream({ cursor: from }, async (s) => {
        await s.waitForEvents(2_500, 15_000);
        expect(s.events.map((e) => e.data.id)).toEqual(backlog.map((e) => e.id));
      });
    },
    SLOW,
  );
});

describe("heartbeats", () => {
  afterAll(async () => {
    await api.put("/api/v1/org/settings", {});
  });

  test(
    "none within a few seconds at the default of 20 s; every second once stream_heartbeat_seconds is 1",
    async () => {
      await withStream({ from: "now" }, async (s) => {
        await s.opened();
        await Bun.sleep(2_200);
        expect(s.parser.comments.filter((c) => c.text === ": heartbeat")).toEqual([]);
      });

      const put = await api.put("/api/v1/org/settings", {
        cloudevents: { source: { stream_heartbeat_seconds: 1 } },
      });
      expect(put.status).toBe(200);
      await withStream({ from: "now" }, async (s) => {
        await s.opened();
        const opened = Date.now();
        await s.parser.until(
          () => s.parser.comments.filter((c) => c.text === ": heartbeat").length >= 3,
          6_000,
          "three heartbeats",
        );
        const beats = s.parser.comments.filter((c) => c.text === ": heartbeat").map((c) => c.at);
        expect((beats[0] as number) - opened).toBeLessThan(1_600);
        for (let i = 1; i < beats.length; i++) {
          const gap = (beats[i] as number) - (beats[i - 1] as number);
          expect(gap).toBeGreaterThan(600);
          expect(gap).toBeLessThan(1_600);
        }
        // Heartbeats do not disturb events.
        const sent = await ingest(server, [ce("com.example.between-beats")]);
        await s.waitForEvents(1);
        expect(s.events.map((e) => e.data)).toEqual(sent);
      });
    },
    SLOW,
  );
});

describe("restart and shutdown", () => {
  test(
    "SIGTERM with open streams exits 0 promptly and ends the streams",
    async () => {
      const own = await TestServer.start();
      try {
        const secret = own.init?.api_key.secret as string;
        const streams = [
          new CurlStream(streamUrl(own, { from: "now" }), secret),
          new CurlStream(streamUrl(own), secret),
        ];
        await Promise.all(streams.map((s) => s.opened()));
        const sent = await ingest(own, [ce("com.example.before-stop")]);
        await streams[0]?.waitForEvents(1);
        expect(streams[0]?.events.map((e) => e.data)).toEqual(sent);

        const began = Date.now();
        const code = await own.stop("SIGTERM");
        expect(code).toBe(0);
        expect(Date.now() - began).toBeLessThan(3_000);
        // The streams ended: curl saw the end of the response and exited.
        const ended = await Promise.race([
          Promise.all(streams.map((s) => s.exited)).then(() => true),
          Bun.sleep(2_000).then(() => false),
        ]);
        expect(ended).toBe(true);
        expect(logLines(own, "stopped")).toHaveLength(1);
      } finally {
        await own.dispose();
      }
    },
    SLOW,
  );

  test(
    "the eventsource package reconnects after a restart and resumes by Last-Event-ID: nothing lost, nothing repeated",
    async () => {
      const first = await TestServer.start();
      const secret = first.init?.api_key.secret as string;
      const token = first.init?.ingest_token.token as string;
      const port = new URL(first.base).port;
      let second: TestServer | null = null;
      const requests: (string | null)[] = [];
      const start = await mark(first.client());
      const es = new EventSource(streamUrl(first, { cursor: start }), {
        fetch: (input, init) => {
          const headers = new Headers(init?.headers as ConstructorParameters<typeof Headers>[0]);
          requests.push(headers.get("last-event-id"));
          headers.set("authorization", `Bearer ${secret}`);
          return fetch(input, { ...init, headers });
        },
      });
      const received: { id: string; data: Record<string, any> }[] = [];
      es.onmessage = (message) => received.push({ id: message.lastEventId, data: JSON.parse(message.data) });
      try {
        const sent = await ingest(first, [ce("com.example.es"), ce("com.example.es"), ce("com.example.es")]);
        await eventually(() => received.length >= 3, 10_000, "the first three events");
        const lastBeforeStop = received[2]?.id;

        expect(await first.stop("SIGTERM")).toBe(0);
        second = await TestServer.start({
          init: false,
          dataDir: first.dataDir,
          args: ["--listen", `127.0.0.1:${port}`],
        });
        expect(second.base).toBe(first.base);
        // Written while the client is still away: it must get them after reconnecting.
        sent.push(...(await ingest(second, [ce("com.example.es"), ce("com.example.es")], token)));
        await eventually(() => received.length >= 5, 15_000, "the events written during the restart");
        sent.push(...(await ingest(second, [ce("com.example.es")], token)));
        await eventually(() => received.length >= 6, 5_000, "a live event after the reconnect");
        await Bun.sleep(300);

        expect(received.map((r) => r.data)).toEqual(sent);
        expect(new Set(received.map((r) => r.id)).size).toBe(6);
        // The first request had no Last-Event-ID; the reconnect sent the last id it saw.
        expect(requests[0]).toBeNull();
        expect(requests.filter((r) => r !== null)).toContain(lastBeforeStop as string);
        expect(requests.at(-1)).toBe(lastBeforeStop as string);
        expect(es.readyState).toBe(EventSource.OPEN);
      } finally {
        es.close();
        await second?.dispose();
        await first.dispose();
      }
    },
    SLOW,
  );
});
